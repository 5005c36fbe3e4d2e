import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';

/**
 * Promisified grpc-js clients for svc.events.v1.EventService and EventIngestionService, built from
 * the .proto the server loads (snake_case fields, proto3 defaults filled in, int64 as numbers,
 * enums as names). A failed call rejects with the grpc.ServiceError.
 */

export type MetricValueTypeName = 'METRIC_VALUE_TYPE_UNSPECIFIED' | 'METRIC_VALUE_TYPE_BOOL' | 'METRIC_VALUE_TYPE_INT' | 'METRIC_VALUE_TYPE_DOUBLE';

export interface MetricValue {
  bool_value?: boolean;
  int_value?: number;
  double_value?: number;
}
export interface EventMessage {
  metric_key?: string;
  context_type?: string;
  context_key?: string;
  value?: MetricValue | null;
  timestamp_ms?: number;
}
export interface IngestRequest {
  environment_id: string;
  events: EventMessage[];
}
export interface RejectionMessage {
  index: number;
  key: string;
  reason: string;
  /** "" when the reason names no field (proto3 default). */
  field: string;
}
export interface IngestResponse {
  accepted_count: number;
  rejected_keys: string[];
  rejected: RejectionMessage[];
}
export interface EventDefinitionMessage {
  key: string;
  description: string;
  value_type: MetricValueTypeName;
  client_allowed: boolean;
  environment_id: string;
  created_at_ms: number;
}

type Unary<Req, Res> = (request: Req, metadata?: grpc.Metadata) => Promise<Res>;

export interface EventClient {
  ingest: Unary<IngestRequest, IngestResponse>;
  createEventDefinition: Unary<{ environment_id: string; key: string; description?: string; value_type: MetricValueTypeName; client_allowed?: boolean }, EventDefinitionMessage>;
  getEventDefinition: Unary<{ environment_id: string; key: string }, EventDefinitionMessage>;
  listEventDefinitions: Unary<{ environment_id: string }, { event_definitions: EventDefinitionMessage[] }>;
  updateEventDefinition: Unary<
    { environment_id: string; key: string; description?: string; value_type?: MetricValueTypeName; client_allowed?: boolean },
    EventDefinitionMessage
  >;
  deleteEventDefinition: Unary<{ environment_id: string; key: string }, { key: string }>;
  close(): void;
}

export interface EventIngestionClient {
  ingestEvent: Unary<IngestRequest, IngestResponse>;
  close(): void;
}

type Callback = (error: grpc.ServiceError | null, response?: unknown) => void;
type RawMethod = (request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, callback: Callback) => grpc.ClientUnaryCall;

const eventsProto = loadProto('svc/events/v1/events.proto');
const EventServiceClient = lookup<grpc.ServiceClientConstructor>(eventsProto, 'svc.events.v1.EventService');
const EventIngestionServiceClient = lookup<grpc.ServiceClientConstructor>(eventsProto, 'svc.events.v1.EventIngestionService');

function promisified<T>(Constructor: grpc.ServiceClientConstructor, port: number): T {
  const client = new Constructor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const methods: Record<string, unknown> = { close: () => client.close() };
  for (const [name, definition] of Object.entries(Constructor.service)) {
    const camel = definition.originalName ?? name;
    const raw = (client as unknown as Record<string, RawMethod>)[camel];
    if (!raw) throw new Error(`client method ${camel} missing`);
    methods[camel] = (request: unknown, metadata = new grpc.Metadata()) =>
      new Promise((resolve, reject) => {
        raw.call(client, request, metadata, { deadline: Date.now() + 15_000 }, (error, response) => (error ? reject(error) : resolve(response)));
      });
  }
  return methods as T;
}

export const eventClient = (port: number): EventClient => promisified<EventClient>(EventServiceClient, port);
export const eventIngestionClient = (port: number): EventIngestionClient => promisified<EventIngestionClient>(EventIngestionServiceClient, port);

/** Metadata `x-sdk-key: <key>`. */
export function sdkKey(key: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('x-sdk-key', key);
  return metadata;
}
