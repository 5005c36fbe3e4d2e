import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { SYNC_PROTOS_JSON } from '../src/generated/sync-protos.ts';

/** A FlagSyncService whose streams a test drives by hand (no database, no real server). */
export interface FakeStream {
  call: grpc.ServerWritableStream<{ environment_id: string }, unknown>;
  sdkKey: string;
  send(message: Record<string, unknown>): void;
  fail(code: grpc.status, details: string): void;
}

export interface FakeSyncServer {
  port: number;
  streams: FakeStream[];
  /** Called for every new stream (default: nothing is sent). */
  onStream: (stream: FakeStream) => void;
  nextStream(timeoutMs?: number): Promise<FakeStream>;
  stop(): Promise<void>;
}

const definition = protoLoader.fromJSON(SYNC_PROTOS_JSON, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
const service = (grpc.loadPackageDefinition(definition) as any).svc.flags.v1.FlagSyncService.service as grpc.ServiceDefinition;

/** `credentials`: plaintext unless given (e.g. grpc.ServerCredentials.createSsl for a TLS port). */
export async function startFakeSyncServer(port = 0, credentials: grpc.ServerCredentials = grpc.ServerCredentials.createInsecure()): Promise<FakeSyncServer> {
  const server = new grpc.Server();
  const waiters: Array<(stream: FakeStream) => void> = [];
  let seen = 0;
  const fake: FakeSyncServer = {
    port: 0,
    streams: [],
    onStream: () => {},
    nextStream(timeoutMs = 15_000) {
      if (fake.streams.length > seen) return Promise.resolve(fake.streams[seen++]!);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no new stream')), timeoutMs);
        waiters.push((stream) => {
          clearTimeout(timer);
          seen++;
          resolve(stream);
        });
      });
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.forceShutdown();
        resolve();
      }),
  };
  server.addService(service, {
    syncDefinitions: (call: grpc.ServerWritableStream<{ environment_id: string }, unknown>) => {
      const stream: FakeStream = {
        call,
        sdkKey: String(call.metadata.get('x-sdk-key')[0] ?? ''),
        send: (message) => call.write(message),
        fail: (code, details) => call.emit('error', { code, details }),
      };
      fake.streams.push(stream);
      fake.onStream(stream);
      const waiter = waiters.shift();
      if (waiter) waiter(stream);
    },
  });
  fake.port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, credentials, (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return fake;
}

const enc = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');

/** A bool FeatureFlag message serving `value` (off variant) with no rules. */
export const boolFlagMessage = (key: string, value: boolean, rules: unknown[] = []) => ({
  key,
  enabled: true,
  value_type: 'FLAG_VALUE_TYPE_BOOL',
  variants: [
    { key: 'on', value: { bool_value: true } },
    { key: 'off', value: { bool_value: false } },
  ],
  rules,
  off_variant_key: value ? 'on' : 'off',
  version: 1,
});

export const listRuleMessage = (segmentKey: string) => ({ rule_payload: enc({ conditions: [], segment_keys: [segmentKey] }), variant_key: 'on', id: 'r1' });

export const snapshotMessage = (sequence: number, flags: unknown[], extra: Record<string, unknown> = {}) => ({
  sequence_number: sequence,
  full_snapshot: true,
  environment_id: 'env-1',
  project_id: 'proj-1',
  server_timestamp_ms: Date.now(),
  flags,
  ...extra,
});
