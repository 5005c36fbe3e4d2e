import * as grpc from '@grpc/grpc-js';
import { isKeyPrincipal } from '@switchyard/core';
import type { KeyUsageRecorder, SyncHub, SyncPurpose } from '@switchyard/services';
import type { CallerVerifier } from '../../gateway-services.ts';
import { authenticateCall } from '../../grpc/grpc-credentials.ts';
import { toGrpcError } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';
import { SyncEncoder, withEncodedSync, type SyncShape } from './messages.ts';
import { GrpcSyncSink, WriteBudget } from './sink.ts';

const flagsProto = loadProto('svc/flags/v1/flags.proto');
const FlagSyncServiceDefinition = lookup<grpc.ServiceClientConstructor>(flagsProto, 'svc.flags.v1.FlagSyncService');

export const FLAG_SYNC_SERVICE_NAME = 'svc.flags.v1.FlagSyncService';

/** The one encoder of this process: both streams' payloads are encoded with SyncResponse's serializer. */
const encoder = new SyncEncoder(FlagSyncServiceDefinition.service.SyncDefinitions!.responseSerialize as (value: object) => Buffer);

/** Unflushed bytes of all sync streams of this process (both ports), see WriteBudget. */
export const syncWriteBudget = new WriteBudget();

interface SyncRequestMessage {
  environment_id: string;
  contexts: unknown[];
}

export interface SyncDeps {
  sync: SyncHub;
  verifier: CallerVerifier;
  logger: Logger;
  /** Told about every message written to a stream (metrics). */
  onMessage?: () => void;
  /** `client_evaluation`: a gateway's stream for answering a client key (SyncHub.authorize). */
  purpose?: SyncPurpose;
  /** Told the key of every stream opened (its last use); not for a gateway's client-evaluation feed. */
  keyUses?: Pick<KeyUsageRecorder, 'used'>;
}

/**
 * The handler of both definition streams: FlagSyncService.SyncDefinitions (public, `x-sdk-key`
 * only) and FlagService.Sync (internal, `x-sdk-key` or a bearer token). The credential and the
 * environment are checked before anything is sent; from then on the hub drives the stream.
 */
export function syncStreamHandler(shape: SyncShape, deps: SyncDeps): grpc.handleServerStreamingCall<SyncRequestMessage, unknown> {
  const { sync, verifier, logger, onMessage } = deps;
  return (call) => {
    void (async () => {
      try {
        const principal = await authenticateCall(verifier, call.metadata, shape === 'public' ? 'sdk' : 'bearer_or_sdk');
        const scope = await sync.authorize(principal, call.request.environment_id, deps.purpose);
        if (call.cancelled) return;
        if (deps.purpose !== 'client_evaluation') deps.keyUses?.used(principal);
        const sink = new GrpcSyncSink(call, shape, encoder, syncWriteBudget, logger, scope.environmentId, onMessage);
        // A gateway's stream for client-key evaluation feeds the gateway, never the client, so it is
        // not bound to the key that opened it: that key's creation and changes are announced like
        // revocations (docs/decisions.md "Client keys"), which must not cut the gateway's feed.
        const holder =
          deps.purpose === 'client_evaluation'
            ? {}
            : isKeyPrincipal(principal)
            ? { sdkKeyId: principal.sdkKeyId }
            : principal.kind !== 'user' || principal.sessionId === undefined
              ? {}
              : { session: { userId: principal.userId, orgId: principal.orgId, sessionId: principal.sessionId } };
        sink.handle = sync.open(scope, holder, sink);
        logger.debug({ environment_id: scope.environmentId, shape }, 'sync stream opened');
      } catch (error) {
        if (!call.cancelled) call.emit('error', toGrpcError(error, logger, call.getPath()));
      }
    })();
  };
}

/** svc.flags.v1.FlagSyncService on the public sync port. */
export function addFlagSyncService(server: grpc.Server, deps: SyncDeps): void {
  server.addService(withEncodedSync(FlagSyncServiceDefinition.service, ['SyncDefinitions']), {
    syncDefinitions: syncStreamHandler('public', deps),
  });
}
