import * as grpc from '@grpc/grpc-js';
import { DomainError, type EnvironmentScope } from '@switchyard/core';
import type { EnvironmentSnapshot } from '@switchyard/services';
import { loadProto, lookup } from '../grpc/proto.ts';
import { credentialMetadata, credentialOf } from './forwarded-credential.ts';
import { domainErrorFromServices } from './grpc-status-errors.ts';
import { SERVICES_CHANNEL_OPTIONS } from './services-channel.ts';

const SegmentationServiceClient = lookup<grpc.ServiceClientConstructor>(
  loadProto('svc/segments/v1/segments.proto'),
  'svc.segments.v1.SegmentationService',
);

interface EvaluateMembershipRequest {
  environment_id: string;
  segment_key: string;
  context_key: string;
  context_type: string;
}

interface SegmentationClient {
  EvaluateMembership(
    request: EvaluateMembershipRequest,
    metadata: grpc.Metadata,
    options: grpc.CallOptions,
    callback: (error: grpc.ServiceError | null, response?: { is_member: boolean }) => void,
  ): grpc.ClientUnaryCall;
  close(): void;
}

export interface RemoteListMembershipOptions {
  /** Deadline of each EvaluateMembership call (default 5 s); past it the evaluation answers UNAVAILABLE. */
  callTimeoutMs?: number;
}

/**
 * List-segment membership for a gateway's EvaluationService (it has no database): what
 * `repos.segments.checkMembers` answers in-process, asked of the services with
 * svc.segments.v1.SegmentationService.EvaluateMembership, one call per pair, in parallel, with the
 * caller's forwarded credential (an SDK key: segments.proto accepts `x-sdk-key` there).
 *
 * EvaluateMembership also wants the context type and answers false for a context of another type
 * than the segment's; EvaluationService only asks about a context of the segment's type (its type
 * taken from the same snapshot), so the answers agree with checkMembers. The two differences are
 * mapped here: a rule segment is false without a call, and NOT_FOUND (a segment, or environment,
 * the services no longer have) is null, the repository's answer for an unknown segment.
 */
export class RemoteListMembership {
  private readonly client: SegmentationClient;
  private readonly callTimeoutMs: number;

  constructor(
    address: string,
    credentials: grpc.ChannelCredentials,
    /** The snapshots evaluation reads: the segments' kinds and context types come from them. */
    private readonly snapshots: { current(environmentId: string): EnvironmentSnapshot | undefined; get(scope: EnvironmentScope): Promise<EnvironmentSnapshot> },
    options: RemoteListMembershipOptions = {},
  ) {
    this.callTimeoutMs = options.callTimeoutMs ?? 5_000;
    this.client = new SegmentationServiceClient(address, credentials, SERVICES_CHANNEL_OPTIONS) as unknown as SegmentationClient;
  }

  /** One answer per pair, in order: true/false, or null for a segment unknown to the environment. */
  async checkMembers(scope: EnvironmentScope, pairs: Array<{ segmentKey: string; contextKey: string }>): Promise<Array<boolean | null>> {
    if (pairs.length === 0) return [];
    const credential = credentialOf(scope);
    if (!credential) throw new DomainError('INTERNAL', 'no credential is linked to the evaluation scope');
    const snapshot = this.snapshots.current(scope.environmentId) ?? (await this.snapshots.get(scope));
    return Promise.all(
      pairs.map(async ({ segmentKey, contextKey }) => {
        const segment = snapshot.segments.get(segmentKey);
        if (!segment) return null;
        if (segment.kind !== 'list') return false;
        const request = { environment_id: scope.environmentId, segment_key: segmentKey, context_key: contextKey, context_type: segment.context_type };
        try {
          return await this.isMember(request, credentialMetadata(credential));
        } catch (error) {
          const status = error as grpc.ServiceError;
          if (status.code === grpc.status.NOT_FOUND) return null;
          throw domainErrorFromServices(status);
        }
      }),
    );
  }

  close(): void {
    this.client.close();
  }

  private isMember(request: EvaluateMembershipRequest, metadata: grpc.Metadata): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.client.EvaluateMembership(request, metadata, { deadline: Date.now() + this.callTimeoutMs }, (error, response) =>
        error ? reject(error) : resolve(response?.is_member === true),
      );
    });
  }
}
