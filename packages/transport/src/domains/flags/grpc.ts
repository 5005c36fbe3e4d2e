import type * as grpc from '@grpc/grpc-js';
import { invalidArgument, type Principal } from '@switchyard/core';
import type { FlagTarget } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticatePresented, authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByMetadata } from '../../grpc/grpc-credentials.ts';
import { serverStream, unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';
import { syncStreamHandler } from '../sync/grpc.ts';
import { withEncodedSync } from '../sync/messages.ts';
import { featureFlagMessage, flagFieldsFromMessage, hashingJson, hashingMessages, lifetimeFromEnum, type FeatureFlagMessage, type FlagHashingConfigMessage } from './messages.ts';

const FlagServiceDefinition = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags.proto'), 'svc.flags.v1.FlagService');

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;

interface MutateFlagRequest {
  environment_id: string;
  /** An enum name; a number for a kind this proto does not know. */
  kind: string | number;
  flag: FeatureFlagMessage | null;
  version: number;
}

/**
 * svc.flags.v1.FlagService on the internal gRPC port. The caller's bearer token comes as
 * `authorization` metadata; every decision (RBAC, tenancy, validation, optimistic locking) is the
 * FlagService's, exactly as for the REST flag routes, so both transports behave alike.
 */
export function addFlagGrpcService(server: grpc.Server, deps: { services: GatewayServices; logger: Logger; onSyncMessage?: () => void }): void {
  const { services, logger } = deps;
  const flags = services.flags;

  /** The caller and the environment the request names (never a project: see flags.proto). */
  const resolve = async (call: { metadata: grpc.Metadata; request: { environment_id: string } }): Promise<{ principal: Principal; target: FlagTarget }> => {
    const { principal, scope } = await authenticateScoped(services.verifier, presentedByMetadata(call.metadata), 'bearer', (caller) =>
      flags.target(caller, call.request.environment_id, 'environment'),
    );
    return { principal, target: scope };
  };

  server.addService(withEncodedSync(FlagServiceDefinition.service, ['Sync', 'SyncForClientEvaluation']), {
    getFlag: unary(logger, async (call: Call<{ environment_id: string; flag_key: string }>) => {
      const { principal, target } = await resolve(call);
      return featureFlagMessage(await flags.get(principal, target, call.request.flag_key));
    }),

    listFlags: unary(logger, async (call: Call<{ environment_id: string; tags?: string[]; lifetime?: string | number }>) => {
      const { principal, target } = await resolve(call);
      const lifetime = lifetimeFromEnum(call.request.lifetime, 'lifetime');
      const query = { tag: call.request.tags ?? [], ...(lifetime === undefined ? {} : { lifetime }) };
      return { flags: (await flags.list(principal, target, query)).map(featureFlagMessage) };
    }),

    getFlagInsights: unary(logger, async (call: Call<{ environment_id: string; flag_key: string; from_ms: number; to_ms: number; granularity: string }>) => {
      const { from_ms: from, to_ms: to, granularity } = call.request;
      const { principal, scope } = await authenticateScoped(services.verifier, presentedByMetadata(call.metadata), 'bearer', (caller) =>
        services.insights.scope(caller, call.request.environment_id),
      );
      const answer = await services.insights.flagInsights(principal, scope, call.request.flag_key, {
        ...(from ? { from } : {}),
        ...(to ? { to } : {}),
        ...(granularity ? { granularity } : {}),
      });
      return {
        series: answer.series.map((point) => ({ at_ms: point.atMs, variants: point.variants })),
        ...(answer.lastEvaluatedAtMs === null ? {} : { last_evaluated_at_ms: answer.lastEvaluatedAtMs }),
        status: answer.status,
      };
    }),

    getFlagLifecycle: unary(logger, async (call: Call<{ project_id: string; stage: string }>) => {
      const principal = await authenticatePresented(services.verifier, presentedByMetadata(call.metadata), 'bearer');
      const answer = await services.insights.projectLifecycle(principal, call.request.project_id, call.request.stage ? { stage: call.request.stage } : {});
      return {
        ...answer,
        flags: answer.flags.map((flag) => ({
          ...flag,
          environments: Object.fromEntries(
            Object.entries(flag.environments).map(([id, e]) => [id, { status: e.status, ...(e.last_evaluated_at_ms === null ? {} : { last_evaluated_at_ms: e.last_evaluated_at_ms }) }]),
          ),
        })),
      };
    }),

    mutateFlag: unary(logger, async (call: Call<MutateFlagRequest>) => {
      const { principal, target } = await resolve(call);
      const { kind, flag: message, version } = call.request;
      if (kind !== 'MUTATION_KIND_CREATE' && kind !== 'MUTATION_KIND_UPDATE' && kind !== 'MUTATION_KIND_DELETE' && kind !== 'MUTATION_KIND_ARCHIVE') {
        throw invalidArgument('kind must be MUTATION_KIND_CREATE, _UPDATE, _DELETE or _ARCHIVE', 'kind');
      }
      if (!message || message.key === '') throw invalidArgument('flag.key is required', 'flag.key');
      const key = message.key;
      switch (kind) {
        case 'MUTATION_KIND_CREATE': {
          const flag = await flags.create(principal, target, { flag: flagFieldsFromMessage(message) });
          return { flag: featureFlagMessage(flag), version: flag.version };
        }
        case 'MUTATION_KIND_UPDATE': {
          // The request's version always guards an update (proto3 has no "absent": 0 is a version).
          const flag = await flags.update(principal, target, key, { flag: flagFieldsFromMessage(message), version });
          return { flag: featureFlagMessage(flag), version: flag.version };
        }
        case 'MUTATION_KIND_DELETE': {
          // Read first: the answer carries the flag that was deleted; the version check itself is
          // remove()'s, so a change in between fails with ABORTED rather than deleting unseen state.
          const before = await flags.get(principal, target, key);
          await flags.remove(principal, target, key, version);
          return { flag: featureFlagMessage(before), version: before.version };
        }
        case 'MUTATION_KIND_ARCHIVE': {
          const flag = await flags.archive(principal, target, key, true, version);
          return { flag: featureFlagMessage(flag), version: flag.version };
        }
      }
    }),

    getFlagDefinitions: serverStream(logger, async function* (call: grpc.ServerWritableStream<{ environment_id: string }, unknown>) {
      const { principal, target } = await resolve(call);
      for (const flag of await flags.list(principal, target)) yield featureFlagMessage(flag);
    }),

    updateFlagHashing: unary(
      logger,
      async (call: Call<{ environment_id: string; flag_key: string; configs: FlagHashingConfigMessage[] }>) => {
        const { principal, target } = await resolve(call);
        const { flag, configs } = await flags.updateHashing(principal, target, call.request.flag_key, hashingJson(call.request.configs));
        return { flag: featureFlagMessage(flag), configs: hashingMessages(configs) };
      },
    ),

    // The definitions stream FlagSyncService passes through (docs/contract.md "Sync stream").
    sync: syncStreamHandler('internal', {
      sync: services.sync,
      verifier: services.verifier,
      logger,
      keyUses: services.keyUses,
      ...(deps.onSyncMessage ? { onMessage: deps.onSyncMessage } : {}),
    }),
    // A gateway's definitions for answering a client key (docs/client-side.md "Keys").
    syncForClientEvaluation: syncStreamHandler('internal', {
      sync: services.sync,
      verifier: services.verifier,
      logger,
      purpose: 'client_evaluation',
      ...(deps.onSyncMessage ? { onMessage: deps.onSyncMessage } : {}),
    }),
  });
}
