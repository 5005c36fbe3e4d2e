import type * as grpc from '@grpc/grpc-js';
import { invalidArgument, type EnvironmentScope, type Principal, type Segment } from '@switchyard/core';
import type { SegmentBody } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByMetadata } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';
import {
  listSegmentBody,
  listSegmentMessage,
  listSegmentMeta,
  ruleSegmentBody,
  ruleSegmentMessage,
  type ListSegmentMessage,
  type RuleSegmentMessage,
} from './messages.ts';

const SegmentationServiceDefinition = lookup<grpc.ServiceClientConstructor>(
  loadProto('svc/segments/v1/segments.proto'),
  'svc.segments.v1.SegmentationService',
);

/** Members carried inline per list (segments.proto): bigger lists are paged over REST. */
export const INLINE_MEMBERS_LIMIT = 1000;

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;

interface MutateSegmentRequest {
  environment_id: string;
  kind: string | number;
  /** Which member of the `segment` oneof is set. */
  segment?: 'rule_segment' | 'list_segment';
  rule_segment?: RuleSegmentMessage | null;
  list_segment?: ListSegmentMessage | null;
  version: number;
}

const SEGMENT_KINDS = ['SEGMENT_MUTATION_KIND_CREATE', 'SEGMENT_MUTATION_KIND_UPDATE', 'SEGMENT_MUTATION_KIND_DELETE'];

/**
 * svc.segments.v1.SegmentationService on the internal gRPC port. Bearer token as `authorization`
 * metadata (EvaluateMembership also takes `x-sdk-key`, as REST list-check does); every decision
 * is the SegmentService's, as on REST.
 */
export function addSegmentGrpcService(server: grpc.Server, deps: { services: GatewayServices; logger: Logger }): void {
  const { services, logger } = deps;
  const segments = services.segments;

  const resolve = async (
    call: { metadata: grpc.Metadata; request: { environment_id: string } },
    accept: 'bearer' | 'bearer_or_sdk' = 'bearer',
  ): Promise<{ principal: Principal; scope: EnvironmentScope }> => {
    return authenticateScoped(services.verifier, presentedByMetadata(call.metadata), accept, (principal) => segments.scope(principal, call.request.environment_id));
  };

  /** A segment in the message of its kind; a list segment with the first page of each list. */
  const messageOf = async (principal: Principal, scope: EnvironmentScope, segment: Segment) => {
    if (segment.kind === 'rule') return { rule_segment: ruleSegmentMessage(segment) };
    const [included, excluded] = await Promise.all([
      segments.listMembers(principal, scope, segment.key, 'included', null, INLINE_MEMBERS_LIMIT),
      segments.listMembers(principal, scope, segment.key, 'excluded', null, INLINE_MEMBERS_LIMIT),
    ]);
    return { list_segment: listSegmentMessage(segment, included.items, excluded.items) };
  };

  const mutationAnswer = async (principal: Principal, scope: EnvironmentScope, segment: Segment) => ({
    rule_segment: null,
    list_segment: null,
    ...(await messageOf(principal, scope, segment)),
    version: segment.version,
  });

  server.addService(SegmentationServiceDefinition.service, {
    getSegment: unary(logger, async (call: Call<{ environment_id: string; segment_key: string }>) => {
      const { principal, scope } = await resolve(call);
      const segment = await segments.get(principal, scope, call.request.segment_key);
      const message = await messageOf(principal, scope, segment);
      return {
        rule_segments: message.rule_segment ? [message.rule_segment] : [],
        list_segments: message.list_segment ? [message.list_segment] : [],
      };
    }),

    listSegments: unary(logger, async (call: Call<{ environment_id: string }>) => {
      const { principal, scope } = await resolve(call);
      const all = await segments.list(principal, scope);
      return {
        rule_segments: all.filter((s) => s.kind === 'rule').map(ruleSegmentMessage),
        list_segments: all.filter((s) => s.kind === 'list').map(listSegmentMeta),
      };
    }),

    evaluateMembership: unary(
      logger,
      async (call: Call<{ environment_id: string; segment_key: string; context_key: string; context_type: string }>) => {
        const { principal, scope } = await resolve(call, 'bearer_or_sdk');
        const { segment_key, context_key, context_type } = call.request;
        const [isMember] = await segments.checkMembership(principal, scope, [{ segment_key, context_key, context_type }]);
        return { is_member: isMember === true };
      },
    ),

    mutateSegment: unary(logger, async (call: Call<MutateSegmentRequest>) => {
      const { principal, scope } = await resolve(call);
      const { kind, version } = call.request;
      if (typeof kind !== 'string' || !SEGMENT_KINDS.includes(kind)) {
        throw invalidArgument('kind must be SEGMENT_MUTATION_KIND_CREATE, _UPDATE or _DELETE', 'kind');
      }
      const which = call.request.segment;
      const message = which === 'rule_segment' ? call.request.rule_segment : which === 'list_segment' ? call.request.list_segment : null;
      if (!which || !message) throw invalidArgument('one of rule_segment or list_segment is required', 'segment');
      const key = message.key;
      if (key === '') throw invalidArgument(`${which}.key is required`, `${which}.key`);
      const body = (): SegmentBody =>
        which === 'rule_segment' ? ruleSegmentBody(message as RuleSegmentMessage) : listSegmentBody(message as ListSegmentMessage);

      if (kind === 'SEGMENT_MUTATION_KIND_CREATE') {
        return mutationAnswer(principal, scope, await segments.create(principal, scope, body()));
      }
      if (kind === 'SEGMENT_MUTATION_KIND_UPDATE') {
        // The request's version always guards an update (proto3 has no "absent": 0 is a version).
        return mutationAnswer(principal, scope, await segments.update(principal, scope, key, { ...body(), version }));
      }
      // DELETE answers with the segment as it was; remove() checks the version, so a change made
      // in between fails with ABORTED instead of deleting state the caller has not seen.
      const before = await segments.get(principal, scope, key);
      const answer = await mutationAnswer(principal, scope, before);
      await segments.remove(principal, scope, key, version);
      return answer;
    }),
  });
}
