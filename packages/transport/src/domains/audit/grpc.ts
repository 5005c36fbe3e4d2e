import type * as grpc from '@grpc/grpc-js';
import type { AuditEntryRecord, AuditPageRecord } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { authenticateCall, presentedByMetadata } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';

const AuditLogServiceDefinition = lookup<grpc.ServiceClientConstructor>(loadProto('svc/management/v1/audit.proto'), 'svc.management.v1.AuditLogService');

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;

const jsonText = (value: unknown): string => (value === undefined ? '' : JSON.stringify(value));

/** The REST entry as its proto message: JSON parts as JSON text, absent ones empty. */
const entryMessage = (entry: AuditEntryRecord) => ({
  id: entry.id,
  at_ms: entry.at_ms,
  actor: { type: entry.actor.type, id: entry.actor.id, email: entry.actor.email ?? '' },
  action: entry.action,
  resource_type: entry.resource_type,
  resource_id: entry.resource_id,
  project_id: entry.project_id ?? '',
  environment_id: entry.environment_id ?? '',
  before_json: jsonText(entry.before),
  after_json: jsonText(entry.after),
  details_json: jsonText(entry.details),
  comment: entry.comment ?? '',
});

// proto3 has no absent int32: limit 0 means the default page (audit.proto).
const pageMessage = (page: AuditPageRecord) => ({ entries: page.entries.map(entryMessage), next_cursor: page.next_cursor ?? '' });

/**
 * svc.management.v1.AuditLogService on the internal gRPC port: the same AuditLogService calls as
 * the REST routes, with the caller's bearer token as `authorization` metadata.
 */
export function addAuditGrpcService(server: grpc.Server, deps: { services: GatewayServices; logger: Logger }): void {
  const { services, logger } = deps;
  const { auditLog, verifier } = services;

  server.addService(AuditLogServiceDefinition.service, {
    listAuditLog: unary(
      logger,
      async (call: Call<{ org_id: string; resource_type: string; resource_id: string; environment_id: string; cursor: string; limit: number }>) => {
        const principal = await authenticateCall(verifier, call.metadata, 'bearer');
        const { org_id, resource_type, resource_id, environment_id, cursor, limit } = call.request;
        return pageMessage(await auditLog.list(principal, org_id || principal.orgId, { resourceType: resource_type, resourceId: resource_id, environmentId: environment_id, cursor, limit: limit || null }));
      },
    ),
    getFlagHistory: unary(logger, async (call: Call<{ environment_id: string; flag_key: string; cursor: string; limit: number }>) => {
      const { principal, scope } = await authenticateScoped(verifier, presentedByMetadata(call.metadata), 'bearer', (caller) =>
        auditLog.scope(caller, call.request.environment_id),
      );
      return pageMessage(await auditLog.flagHistory(principal, scope, call.request.flag_key, { cursor: call.request.cursor, limit: call.request.limit || null }));
    }),
  });
}
