/**
 * The client side of bench/sync, run as a child process so that decoding thousands of messages
 * does not share the server's event loop (and the server's RSS is the parent's alone).
 *
 * Protocol over the IPC channel:
 *   → {type: 'open', port, streams, perConnection, sdkKey, environmentId}
 *   ← {type: 'opened', ms}                       every stream has its first message
 *   → {type: 'expect', marker}                    a change is about to be made
 *   ← {type: 'delivered', times, lost}            epoch ms (sub-ms) at which each stream got it
 *                                                 (NaN for streams lost: ended by an error after opening)
 *   → {type: 'close'}  ← {type: 'closed'}
 */
import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';

/** Messages stay bytes: see RawClient. */
type Message = Buffer;

type Command =
  | { type: 'open'; port: number; streams: number; perConnection: number; sdkKey: string; environmentId: string }
  | { type: 'expect'; marker: string }
  | { type: 'close' };

const method = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags.proto'), 'svc.flags.v1.FlagSyncService').service.SyncDefinitions!;
/**
 * FlagSyncService with responses left undecoded: a change is recognised by its marker (a unique
 * flag description) in the bytes. In production every stream's client decodes its own messages
 * in its own process; decoding all 10,000 one after another here would time this one process,
 * not the server's delivery. Both servers under test are read the same way.
 */
const RawClient = grpc.makeGenericClientConstructor(
  { SyncDefinitions: { ...method, responseDeserialize: (bytes: Buffer) => bytes } },
  'FlagSyncService',
);
type RawStream = (request: unknown, metadata: grpc.Metadata) => grpc.ClientReadableStream<Message>;

/** The same clock in both processes: wall-clock origin plus the monotonic offset. */
const nowMs = (): number => performance.timeOrigin + performance.now();
const send = (message: unknown): void => {
  // The parent may be gone (it failed): nothing left to tell.
  if (process.connected) process.send?.(message);
};

let clients: grpc.Client[] = [];
let calls: grpc.ClientReadableStream<Message>[] = [];
let expectation: { marker: Buffer; times: number[]; pending: number } | null = null;
/** Streams that ended with an error after opening (e.g. the server dropped their connection). */
let lost = new Set<number>();

function finish(waiting: { times: number[]; pending: number }): void {
  if (waiting.pending > 0) return;
  expectation = null;
  send({ type: 'delivered', times: waiting.times, lost: lost.size });
}

function onLost(index: number): void {
  if (lost.has(index)) return;
  lost.add(index);
  const waiting = expectation;
  if (!waiting || !Number.isNaN(waiting.times[index]!)) return;
  waiting.pending -= 1;
  finish(waiting);
}

function onMessage(index: number, message: Message): void {
  const waiting = expectation;
  if (!waiting || !Number.isNaN(waiting.times[index]!)) return;
  if (!message.includes(waiting.marker)) return;
  waiting.times[index] = nowMs();
  waiting.pending -= 1;
  finish(waiting);
}

async function open(command: Extract<Command, { type: 'open' }>): Promise<void> {
  const started = nowMs();
  const connections = Math.ceil(command.streams / command.perConnection);
  // A local subchannel pool per client: one HTTP/2 connection each, not one shared by all. The
  // connection's receive window is what `perConnection` SDKs with a connection each would have
  // together (64 KiB each): with the default 64 KiB for all of them, a change or a snapshot to 100
  // streams would wait for this process to hand back window many times over, which is the bench's
  // multiplexing, not the server.
  const options = { 'grpc.use_local_subchannel_pool': 1, 'grpc-node.flow_control_window': command.perConnection * 65_535 };
  clients = Array.from({ length: connections }, () => new RawClient(`127.0.0.1:${command.port}`, grpc.credentials.createInsecure(), options));
  const metadata = new grpc.Metadata();
  metadata.set('x-sdk-key', command.sdkKey);
  // Opened in batches, each waiting for its snapshots: a burst of 10,000 snapshots at once would
  // measure the burst, not the steady state the RSS figure is about.
  const batch = 500;
  for (let first = 0; first < command.streams; first += batch) {
    const opened: Promise<void>[] = [];
    for (let index = first; index < Math.min(first + batch, command.streams); index++) {
      const client = clients[index % connections]!;
      const call = (client as unknown as Record<string, RawStream>).SyncDefinitions!.call(client, { environment_id: command.environmentId }, metadata);
      calls.push(call);
      opened.push(
        new Promise((resolve, reject) => {
          call.once('data', () => resolve());
          call.once('error', reject);
        }),
      );
      call.on('data', (message: Message) => onMessage(index, message));
      call.on('error', () => onLost(index));
    }
    await Promise.all(opened);
  }
  send({ type: 'opened', ms: nowMs() - started });
}

function close(): void {
  for (const call of calls) call.cancel();
  for (const client of clients) client.close();
  calls = [];
  clients = [];
  lost = new Set();
  send({ type: 'closed' });
}

process.on('message', (command: Command) => {
  switch (command.type) {
    case 'open':
      open(command).catch((error: unknown) => {
        send({ type: 'error', message: (error as Error).message });
      });
      break;
    case 'expect':
      expectation = { marker: Buffer.from(command.marker, 'utf8'), times: new Array<number>(calls.length).fill(Number.NaN), pending: calls.length - lost.size };
      send({ type: 'expecting' });
      break;
    case 'close':
      close();
      break;
  }
});
process.on('disconnect', () => process.exit(0));
