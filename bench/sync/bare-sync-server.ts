/**
 * The baseline of bench/sync: a bare grpc-js server with the same FlagSyncService and the same
 * messages, and nothing else — no credential check, no database, no diff, no hub. Each call gets
 * `snapshot` at once; `broadcast` writes one message object to every open call, serialized per call
 * by grpc-js as any plain implementation would.
 */
import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';

const Service = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags.proto'), 'svc.flags.v1.FlagSyncService');

export interface BareSyncServer {
  port: number;
  broadcast(message: object): void;
  stop(): Promise<void>;
}

export async function startBareSyncServer(snapshot: object): Promise<BareSyncServer> {
  const calls = new Set<grpc.ServerWritableStream<unknown, unknown>>();
  // The product's keepalive settings, but a longer wait for a ping's answer: this server encodes the
  // snapshot for every new call, and on a busy machine opening tens of thousands of streams kept
  // its event loop from reading the answers for 10 s, which dropped whole connections mid-run.
  const server = new grpc.Server({ 'grpc.keepalive_time_ms': 30_000, 'grpc.keepalive_timeout_ms': 120_000, 'grpc.keepalive_permit_without_calls': 1 });
  server.addService(Service.service, {
    syncDefinitions: (call: grpc.ServerWritableStream<unknown, unknown>) => {
      calls.add(call);
      call.on('cancelled', () => calls.delete(call));
      call.write(snapshot);
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  return {
    port,
    broadcast(message) {
      for (const call of calls) call.write(message);
    },
    stop: () =>
      new Promise((resolve) => {
        for (const call of calls) call.end();
        server.tryShutdown(() => resolve());
      }),
  };
}
