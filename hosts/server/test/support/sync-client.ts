import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import type { SyncResponseMessage } from '@switchyard/transport/domains/sync/messages.ts';

export type { SyncResponseMessage };

/**
 * grpc-js clients of the definitions streams, from the same .proto the server loads:
 * svc.flags.v1.FlagSyncService.SyncDefinitions (sync port) and svc.flags.v1.FlagService.Sync
 * (internal port).
 */

/**
 * How long next(), until() and endsWith() wait by default: an event that does happen arrives far
 * sooner even on a busy 2-core machine; timing itself is measured in bench/, never asserted here.
 */
export const DEFAULT_WAIT_MS = 15_000;

const flagsProto = loadProto('svc/flags/v1/flags.proto');
const FlagSyncServiceClient = lookup<grpc.ServiceClientConstructor>(flagsProto, 'svc.flags.v1.FlagSyncService');
const FlagServiceClient = lookup<grpc.ServiceClientConstructor>(flagsProto, 'svc.flags.v1.FlagService');

type RawStream = (request: unknown, metadata: grpc.Metadata, options?: grpc.CallOptions) => grpc.ClientReadableStream<SyncResponseMessage>;

/** A client with its own connection (no subchannel sharing), so tests can close it independently. */
function makeClient(Constructor: grpc.ServiceClientConstructor, port: number, options: grpc.ChannelOptions): grpc.Client {
  return new Constructor(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1, ...options });
}

export interface OpenStream {
  call: grpc.ClientReadableStream<SyncResponseMessage>;
  /** Every message received so far, in order. */
  messages: SyncResponseMessage[];
  /** The next message not yet returned by next(); rejects after `timeoutMs` or when the stream ends first. */
  next(timeoutMs?: number): Promise<SyncResponseMessage>;
  /** Waits for a message matching `predicate` (skipping others); rejects after `timeoutMs`. */
  until(predicate: (message: SyncResponseMessage) => boolean, timeoutMs?: number): Promise<SyncResponseMessage>;
  /** Resolves with the final status: the ServiceError, or null when the stream ended with OK. */
  ended: Promise<grpc.ServiceError | null>;
  /** Cancels the call (and, with `closeClient`, the connection). */
  cancel(): void;
}

function track(call: grpc.ClientReadableStream<SyncResponseMessage>, onCancel: () => void): OpenStream {
  const messages: SyncResponseMessage[] = [];
  let read = 0;
  const waiters = new Set<() => void>();
  let finished: grpc.ServiceError | null | undefined;
  const wake = (): void => {
    for (const waiter of [...waiters]) waiter();
  };
  call.on('data', (message: SyncResponseMessage) => {
    messages.push(message);
    wake();
  });
  const ended = new Promise<grpc.ServiceError | null>((resolve) => {
    call.on('error', (error: grpc.ServiceError) => {
      finished = error;
      resolve(error);
      wake();
    });
    call.on('status', (status: grpc.StatusObject) => {
      if (status.code === grpc.status.OK) {
        finished = null;
        resolve(null);
        wake();
      }
    });
  });

  const waitFor = (take: () => SyncResponseMessage | undefined, what: string, timeoutMs: number): Promise<SyncResponseMessage> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const message = take();
        if (message) {
          done();
          resolve(message);
        } else if (finished !== undefined) {
          done();
          reject(new Error(`stream ended (${finished ? `${grpc.status[finished.code]}: ${finished.details}` : 'OK'}) before ${what}`));
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received ${messages.length} messages`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        waiters.delete(check);
      };
      waiters.add(check);
      check();
    });

  return {
    call,
    messages,
    ended,
    next: (timeoutMs = DEFAULT_WAIT_MS) => waitFor(() => (read < messages.length ? messages[read++] : undefined), `message #${read + 1}`, timeoutMs),
    until: (predicate, timeoutMs = DEFAULT_WAIT_MS) =>
      waitFor(
        () => {
          while (read < messages.length) {
            const message = messages[read++]!;
            if (predicate(message)) return message;
          }
          return undefined;
        },
        'a matching message',
        timeoutMs,
      ),
    cancel: () => {
      call.cancel();
      onCancel();
    },
  };
}

export function sdkKeyMetadata(rawKey: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  metadata.set('x-sdk-key', rawKey);
  return metadata;
}

/** FlagSyncService.SyncDefinitions on its own connection; cancel() also closes the connection. */
export function openSync(port: number, request: { environment_id?: string }, metadata: grpc.Metadata, options: grpc.ChannelOptions = {}): OpenStream {
  const client = makeClient(FlagSyncServiceClient, port, options);
  const raw = (client as unknown as Record<string, RawStream>).SyncDefinitions;
  assert.ok(raw, 'client method SyncDefinitions');
  const stream = track(raw.call(client, request, metadata), () => client.close());
  void stream.ended.then(() => client.close());
  return stream;
}

/** FlagService.Sync (internal port) on its own connection. */
export function openInternalSync(
  port: number,
  request: { environment_id?: string; contexts?: unknown[] },
  metadata: grpc.Metadata,
  method: 'Sync' | 'SyncForClientEvaluation' = 'Sync',
): OpenStream {
  const client = makeClient(FlagServiceClient, port, {});
  const raw = (client as unknown as Record<string, RawStream>)[method];
  assert.ok(raw, `client method ${method}`);
  const stream = track(raw.call(client, request, metadata), () => client.close());
  void stream.ended.then(() => client.close());
  return stream;
}

/** A shared client for many streams over a few connections (one HTTP/2 connection each). */
export function syncClients(port: number, connections: number): { open(request: { environment_id?: string }, metadata: grpc.Metadata): OpenStream; close(): void } {
  const clients = Array.from({ length: connections }, () => makeClient(FlagSyncServiceClient, port, {}));
  let opened = 0;
  return {
    open(request, metadata) {
      const client = clients[opened++ % clients.length]!;
      const raw = (client as unknown as Record<string, RawStream>).SyncDefinitions!;
      return track(raw.call(client, request, metadata), () => {});
    },
    close: () => {
      for (const client of clients) client.close();
    },
  };
}

/** Asserts that the stream ends with `status` within `timeoutMs`. */
export async function endsWith(stream: OpenStream, status: grpc.status, timeoutMs = DEFAULT_WAIT_MS): Promise<grpc.ServiceError> {
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    stream.ended,
    new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    }),
  ]);
  clearTimeout(timer);
  assert.notEqual(outcome, 'timeout', `the stream did not end within ${timeoutMs} ms`);
  assert.ok(outcome, 'the stream ended with OK');
  const error = outcome as grpc.ServiceError;
  assert.equal(grpc.status[error.code], grpc.status[status], `expected ${grpc.status[status]}, got ${grpc.status[error.code]}: ${error.details}`);
  return error;
}

/** A flag message's rule payloads and values are bytes and oneofs; tests mostly look at keys. */
export const flagKeys = (message: SyncResponseMessage): string[] => message.flags.map((flag) => flag.key).sort();
export const segmentKeys = (message: SyncResponseMessage): string[] =>
  message.segments.map((segment) => segment.rule_segment?.key ?? segment.list_segment?.key ?? '?').sort();
