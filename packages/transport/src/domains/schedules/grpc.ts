import type * as grpc from '@grpc/grpc-js';
import { invalidArgument } from '@switchyard/core';
import type { ScheduledChangeRecord } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByMetadata } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';
import { featureFlagMessage } from '../flags/messages.ts';

const ScheduledChangeServiceDefinition = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/scheduled_changes.proto'), 'svc.flags.v1.ScheduledChangeService');

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;
type Long = number | string | { toString(): string };

/** int64 fields arrive as numbers, strings or Longs depending on the loader options. */
const int = (value: Long | undefined | null): number => (value === undefined || value === null ? 0 : Number(value.toString()));

function operationsFrom(bytes: Buffer | Uint8Array | undefined, field: string): unknown {
  if (!bytes || bytes.length === 0) return undefined;
  try {
    return JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw invalidArgument(`${field} must be the operations as UTF-8 JSON`, field);
  }
}

const message = (record: ScheduledChangeRecord) => ({
  ...record,
  operations_json: Buffer.from(JSON.stringify(record.operations), 'utf8'),
  reason: record.reason ?? '',
  applied_at_ms: record.applied_at_ms ?? 0,
});

interface Ref {
  environment_id: string;
  flag_key: string;
  id: string;
}

/**
 * svc.flags.v1.ScheduledChangeService on the internal gRPC port (docs/workflow.md "Scheduled
 * changes", "Revert"): every decision is the ScheduledChangeService's, exactly as for REST.
 */
export function addScheduledChangeGrpcService(server: grpc.Server, deps: { services: GatewayServices; logger: Logger }): void {
  const { services, logger } = deps;
  const schedules = services.scheduledChanges;
  const resolve = (call: { metadata: grpc.Metadata; request: { environment_id: string } }) =>
    authenticateScoped(services.verifier, presentedByMetadata(call.metadata), 'bearer', (principal) => schedules.scope(principal, call.request.environment_id));

  server.addService(ScheduledChangeServiceDefinition.service, {
    createScheduledChange: unary(logger, async (call: Call<{ environment_id: string; flag_key: string; execute_at_ms: Long; operations_json: Buffer; comment: string }>) => {
      const { principal, scope } = await resolve(call);
      const { flag_key, execute_at_ms, operations_json, comment } = call.request;
      const answer = await schedules.create(principal, scope, flag_key, { execute_at_ms: int(execute_at_ms), operations: operationsFrom(operations_json, 'operations_json'), comment });
      return { scheduled_change: message(answer), contending: answer.contending.map(message) };
    }),

    listScheduledChanges: unary(logger, async (call: Call<{ environment_id: string; flag_key: string; status: string; from_ms: Long; to_ms: Long; limit: number }>) => {
      const { principal, scope } = await resolve(call);
      const { flag_key, status, from_ms, to_ms, limit } = call.request;
      const query = {
        ...(status ? { status } : {}),
        ...(int(from_ms) > 0 ? { from_ms: int(from_ms) } : {}),
        ...(int(to_ms) > 0 ? { to_ms: int(to_ms) } : {}),
        ...(limit ? { limit } : {}),
      };
      const calendar = await schedules.calendar(principal, scope, query, flag_key === '' ? null : flag_key);
      return { scheduled_changes: calendar.scheduled_changes.map(message), change_requests_json: Buffer.from(JSON.stringify(calendar.change_requests), 'utf8') };
    }),

    getScheduledChange: unary(logger, async (call: Call<Ref>) => {
      const { principal, scope } = await resolve(call);
      return message(await schedules.get(principal, scope, call.request.flag_key, call.request.id));
    }),

    updateScheduledChange: unary(logger, async (call: Call<Ref & { execute_at_ms: Long; operations_json: Buffer; comment?: string; version: Long }>) => {
      const { principal, scope } = await resolve(call);
      const { flag_key, id, execute_at_ms, operations_json, comment, version } = call.request;
      const operations = operationsFrom(operations_json, 'operations_json');
      const body = {
        ...(int(execute_at_ms) > 0 ? { execute_at_ms: int(execute_at_ms) } : {}),
        ...(operations === undefined ? {} : { operations }),
        ...(comment === undefined || comment === null ? {} : { comment }),
        ...(int(version) > 0 ? { version: int(version) } : {}),
      };
      const answer = await schedules.update(principal, scope, flag_key, id, body);
      return { scheduled_change: message(answer), contending: answer.contending.map(message) };
    }),

    cancelScheduledChange: unary(logger, async (call: Call<Ref>) => {
      const { principal, scope } = await resolve(call);
      return message(await schedules.cancel(principal, scope, call.request.flag_key, call.request.id));
    }),

    revertFlag: unary(logger, async (call: Call<{ environment_id: string; flag_key: string; audit_entry_id: string }>) => {
      const { principal, scope } = await resolve(call);
      const answer = await schedules.revert(principal, scope, call.request.flag_key, { audit_entry_id: call.request.audit_entry_id });
      return 'flag' in answer ? { flag: featureFlagMessage(answer.flag) } : { change_request_json: Buffer.from(JSON.stringify(answer.change_request), 'utf8') };
    }),
  });
}
