import type * as grpc from '@grpc/grpc-js';
import type { EnvironmentComparisonRecord } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByMetadata } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';

const EnvironmentCopyServiceDefinition = lookup<grpc.ServiceClientConstructor>(
  loadProto('svc/flags/v1/environment_copy.proto'),
  'svc.flags.v1.EnvironmentCopyService',
);

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;

interface CopyRequestMessage {
  target_environment_id: string;
  from_environment_id: string;
  flag_keys: string[];
  include: string[];
  versions: Record<string, number>;
}

const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value ?? null), 'utf8');

/** The comparison record as its message: each field's values as UTF-8 JSON bytes. */
const comparisonMessage = (record: EnvironmentComparisonRecord) => ({
  ...record,
  flags: record.flags.map((flag) => ({
    ...flag,
    fields: flag.fields.map((difference) => ({ field: difference.field, before_json: json(difference.before), after_json: json(difference.after) })),
  })),
});

/**
 * svc.flags.v1.EnvironmentCopyService on the internal gRPC port (docs/contract.md "Environment
 * compare and copy"): bearer token as `authorization` metadata, the target environment resolved
 * for the caller; every decision is the EnvironmentCopyService's, exactly as for the REST routes.
 */
export function addEnvironmentCopyGrpcService(server: grpc.Server, deps: { services: GatewayServices; logger: Logger }): void {
  const { services, logger } = deps;
  const environmentCopy = services.environmentCopy;

  const resolve = (call: { metadata: grpc.Metadata; request: { target_environment_id: string } }) =>
    authenticateScoped(services.verifier, presentedByMetadata(call.metadata), 'bearer', (principal) => environmentCopy.scope(principal, call.request.target_environment_id));

  server.addService(EnvironmentCopyServiceDefinition.service, {
    compareEnvironments: unary(logger, async (call: Call<{ target_environment_id: string; from_environment_id: string }>) => {
      const { principal, scope } = await resolve(call);
      return comparisonMessage(await environmentCopy.compare(principal, scope, call.request.from_environment_id));
    }),

    copyEnvironment: unary(logger, async (call: Call<CopyRequestMessage>) => {
      const { principal, scope } = await resolve(call);
      const { from_environment_id, flag_keys, include, versions } = call.request;
      // proto3 has no absent map: an empty one is "no versions".
      return environmentCopy.copy(principal, scope, {
        from_environment_id,
        flag_keys,
        include,
        ...(Object.keys(versions ?? {}).length > 0 ? { versions } : {}),
      });
    }),
  });
}
