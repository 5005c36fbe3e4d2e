import type * as grpc from '@grpc/grpc-js';
import { failedPrecondition, invalidArgument } from '@switchyard/core';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByMetadata } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';

const FlagsAsCodeServiceDefinition = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags.proto'), 'svc.flags.v1.FlagsAsCodeService');

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;

/** How many refusals a refused import's status message names (the dry run answers them all). */
const REFUSALS_NAMED = 10;

/**
 * svc.flags.v1.FlagsAsCodeService on the internal gRPC port: the REST export and import
 * (docs/flags-as-code.md) with the document as JSON text; every decision is FlagsAsCodeService's.
 */
export function addFlagsAsCodeGrpcService(server: grpc.Server, deps: { services: GatewayServices; logger: Logger }): void {
  const { services, logger } = deps;
  const flagsAsCode = services.flagsAsCode;
  const resolve = (call: { metadata: grpc.Metadata; request: { project_id: string } }) =>
    authenticateScoped(services.verifier, presentedByMetadata(call.metadata), 'bearer', (caller) => flagsAsCode.scope(caller, call.request.project_id));

  server.addService(FlagsAsCodeServiceDefinition.service, {
    exportFlags: unary(logger, async (call: Call<{ project_id: string; environment_ids: string[]; include_versions: boolean }>) => {
      const { principal, scope } = await resolve(call);
      const document = await flagsAsCode.export(principal, scope, { environmentIds: call.request.environment_ids, includeVersions: call.request.include_versions });
      return { document_json: JSON.stringify(document) };
    }),

    importFlags: unary(logger, async (call: Call<{ project_id: string; document_json: string; dry_run: boolean; prune: boolean }>) => {
      const { principal, scope } = await resolve(call);
      let document: unknown;
      try {
        document = JSON.parse(call.request.document_json);
      } catch {
        throw invalidArgument('document_json must be JSON', 'document_json');
      }
      const outcome = await flagsAsCode.import(principal, scope, document, { dryRun: call.request.dry_run, prune: call.request.prune });
      if (!outcome.dry_run && outcome.refused.length > 0) {
        const named = outcome.refused.slice(0, REFUSALS_NAMED).map((r) => `${r.kind} ${r.environment === undefined ? '' : `${r.environment}/`}${r.key}: ${r.error} (${r.code})`);
        const more = outcome.refused.length > REFUSALS_NAMED ? `; and ${outcome.refused.length - REFUSALS_NAMED} more (a dry run lists them all)` : '';
        throw failedPrecondition(`the import was refused; nothing was written: ${named.join('; ')}${more}`);
      }
      return { dry_run: outcome.dry_run, applied: outcome.applied, outcome_json: JSON.stringify(outcome) };
    }),
  });
}
