import type * as grpc from '@grpc/grpc-js';
import { invalidArgument, type EventDefinition, type MetricValueType } from '@switchyard/core';
import type { IncomingEvent, IngestAnswer } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateCall } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';

const eventsProto = loadProto('svc/events/v1/events.proto');
const EventServiceDefinition = lookup<grpc.ServiceClientConstructor>(eventsProto, 'svc.events.v1.EventService');
const EventIngestionServiceDefinition = lookup<grpc.ServiceClientConstructor>(eventsProto, 'svc.events.v1.EventIngestionService');

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;

/** svc.events.v1.MetricValue as decoded (oneofs: the virtual `value` names the set field). */
interface MetricValueMessage {
  bool_value?: boolean;
  int_value?: number;
  double_value?: number;
  value?: 'bool_value' | 'int_value' | 'double_value';
}
interface EventMessage {
  metric_key: string;
  context_type: string;
  context_key: string;
  value: MetricValueMessage | null;
  timestamp_ms: number;
}
interface IngestRequest {
  environment_id: string;
  events: EventMessage[];
}
type ValueTypeName = 'METRIC_VALUE_TYPE_UNSPECIFIED' | 'METRIC_VALUE_TYPE_BOOL' | 'METRIC_VALUE_TYPE_INT' | 'METRIC_VALUE_TYPE_DOUBLE';

const TYPE_NAMES: Record<MetricValueType, ValueTypeName> = {
  bool: 'METRIC_VALUE_TYPE_BOOL',
  int: 'METRIC_VALUE_TYPE_INT',
  double: 'METRIC_VALUE_TYPE_DOUBLE',
};

/** Enum name → REST value type; UNSPECIFIED is undefined (on create the service refuses it, on update it means "unchanged"). */
function valueTypeOf(name: ValueTypeName | string): MetricValueType | undefined {
  const entry = Object.entries(TYPE_NAMES).find(([, enumName]) => enumName === name);
  if (entry) return entry[0] as MetricValueType;
  if (name === 'METRIC_VALUE_TYPE_UNSPECIFIED' || name === '') return undefined;
  throw invalidArgument('unknown value_type', 'value_type');
}

const definitionMessage = (definition: EventDefinition) => ({
  key: definition.key,
  description: definition.description,
  value_type: TYPE_NAMES[definition.valueType],
  client_allowed: definition.clientAllowed,
  environment_id: definition.environmentId,
  created_at_ms: definition.createdAtMs,
});

/** The JS value of the set oneof field; no field set → absent (a bool definition counts it as true). */
function incomingEvent(event: EventMessage): IncomingEvent {
  const field = event.value?.value;
  return {
    metric_key: event.metric_key,
    context_type: event.context_type,
    context_key: event.context_key,
    value: field === undefined ? undefined : event.value?.[field],
    timestamp_ms: event.timestamp_ms,
  };
}

/** The optional `idempotency-key` metadata (same meaning as the REST header). */
function idempotencyKey(metadata: grpc.Metadata): string | undefined {
  const values = metadata.get('idempotency-key');
  if (values.length > 1) throw invalidArgument('more than one idempotency-key metadata value', 'idempotency-key');
  return values.length === 0 ? undefined : String(values[0]);
}

/**
 * svc.events.v1.EventService and EventIngestionService on the internal gRPC port: the same
 * services, RBAC and guarantees as the REST routes (an answer only after the accepted events are
 * committed). Ingest takes `x-sdk-key` or `authorization: Bearer` metadata; definitions the bearer.
 */
export function addEventGrpcServices(server: grpc.Server, deps: { services: GatewayServices; logger: Logger }): void {
  const { services, logger } = deps;
  const { verifier, ingest, eventDefinitions } = services;

  const ingestHandler = unary(logger, async (call: Call<IngestRequest>): Promise<IngestAnswer> => {
    const principal = await authenticateCall(verifier, call.metadata, 'bearer_or_sdk');
    if (!call.request.environment_id) throw invalidArgument('environment_id is required', 'environment_id');
    const scope = await ingest.scope(principal, call.request.environment_id);
    return ingest.ingestEvents(principal, scope, call.request.events.map(incomingEvent), { idempotencyKey: idempotencyKey(call.metadata) });
  });

  async function definitionScope(call: Call<{ environment_id: string }>) {
    const principal = await authenticateCall(verifier, call.metadata, 'bearer');
    if (!call.request.environment_id) throw invalidArgument('environment_id is required', 'environment_id');
    return { principal, scope: await eventDefinitions.scope(principal, call.request.environment_id) };
  }

  server.addService(EventServiceDefinition.service, {
    ingest: ingestHandler,
    createEventDefinition: unary(
      logger,
      async (call: Call<{ environment_id: string; key: string; description: string; value_type: ValueTypeName; client_allowed: boolean }>) => {
        const { principal, scope } = await definitionScope(call);
        const { key, description, client_allowed } = call.request;
        const valueType = valueTypeOf(call.request.value_type);
        return definitionMessage(await eventDefinitions.create(principal, scope, { key, description, client_allowed, ...(valueType ? { value_type: valueType } : {}) }));
      },
    ),
    getEventDefinition: unary(logger, async (call: Call<{ environment_id: string; key: string }>) => {
      const { principal, scope } = await definitionScope(call);
      return definitionMessage(await eventDefinitions.get(principal, scope, call.request.key));
    }),
    listEventDefinitions: unary(logger, async (call: Call<{ environment_id: string }>) => {
      const { principal, scope } = await definitionScope(call);
      return { event_definitions: (await eventDefinitions.list(principal, scope)).map(definitionMessage) };
    }),
    updateEventDefinition: unary(
      logger,
      async (call: Call<{ environment_id: string; key: string; description?: string; value_type: ValueTypeName; client_allowed?: boolean }>) => {
        const { principal, scope } = await definitionScope(call);
        const valueType = valueTypeOf(call.request.value_type);
        const body = {
          ...(call.request.description === undefined ? {} : { description: call.request.description }),
          ...(valueType ? { value_type: valueType } : {}),
          ...(call.request.client_allowed === undefined ? {} : { client_allowed: call.request.client_allowed }),
        };
        return definitionMessage(await eventDefinitions.update(principal, scope, call.request.key, body));
      },
    ),
    deleteEventDefinition: unary(logger, async (call: Call<{ environment_id: string; key: string }>) => {
      const { principal, scope } = await definitionScope(call);
      await eventDefinitions.remove(principal, scope, call.request.key);
      return { key: call.request.key };
    }),
  });
  server.addService(EventIngestionServiceDefinition.service, { ingestEvent: ingestHandler });
}
