import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { SyncMessage, SyncPayload, SyncStreamHandle } from '@switchyard/services';
import { createLogger } from '@switchyard/transport/logging.ts';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { EncodedSyncMessage, SyncEncoder, withEncodedSync, type SyncResponseMessage } from '@switchyard/transport/domains/sync/messages.ts';
import { GrpcSyncSink, WriteBudget } from '@switchyard/transport/domains/sync/sink.ts';

/** A grpc-js server call as the sink uses it: writes are kept with their flush callbacks. */
class FakeCall extends EventEmitter {
  cancelled = false;
  /** What write() answers: false = grpc-js's own buffer is full. */
  accepting = true;
  readonly writes: Array<{ message: EncodedSyncMessage; flush: () => void }> = [];
  readonly statuses: unknown[] = [];

  constructor() {
    super();
    this.on('error', (status) => this.statuses.push(status));
  }

  write(message: EncodedSyncMessage, flushed: () => void): boolean {
    this.writes.push({ message, flush: flushed });
    return this.accepting;
  }
}

const payload = (environmentId: string): SyncPayload => ({
  environmentId,
  projectId: 'project-1',
  experimentFlagKeys: [],
  features: [],
  fullSnapshot: true,
  serverTimestampMs: 1,
  flags: [],
  segments: [],
  removedFlagKeys: [],
  removedSegmentKeys: [],
});

/** Bodies of a fixed size, so the budget arithmetic is plain. */
const encoder = new SyncEncoder(() => Buffer.alloc(100));
const logger = createLogger({ filter: 'error', json: true }).forModule('sync');

function sinkOn(budget: WriteBudget): { call: FakeCall; sink: GrpcSyncSink; events: string[] } {
  const call = new FakeCall();
  const sink = new GrpcSyncSink(call as unknown as grpc.ServerWritableStream<unknown, unknown>, 'public', encoder, budget, logger, 'env');
  const events: string[] = [];
  sink.handle = { drained: () => events.push('drained'), cancel: () => events.push('cancel'), clientBehind: () => events.push('behind') } satisfies SyncStreamHandle;
  return { call, sink, events };
}

const message = (sequenceNumber: number): SyncMessage => ({ sequenceNumber, payload: payload('env') });

describe('the process-wide write budget of sync streams', () => {
  test('under the budget a message is written at once; its bytes count until grpc-js has flushed it', () => {
    const budget = new WriteBudget(1000);
    const { call, sink } = sinkOn(budget);
    assert.equal(sink.send(message(1)), 'sent');
    assert.equal(call.writes.length, 1);
    assert.equal(call.writes[0]?.message.sequenceNumber, 1);
    assert.equal(budget.bytesInFlight, 100);
    call.writes[0]?.flush();
    assert.equal(budget.bytesInFlight, 0);
    call.accepting = false;
    assert.equal(sink.send(message(2)), 'client_behind', "grpc-js's full buffer is the client's");
  });

  test('over the budget a message is held without a copy, then written when earlier bytes flush, first come first served', () => {
    const budget = new WriteBudget(200);
    const a = sinkOn(budget);
    const b = sinkOn(budget);
    const c = sinkOn(budget);
    assert.equal(a.sink.send(message(1)), 'sent');
    assert.equal(b.sink.send(message(1)), 'sent');
    assert.equal(budget.exhausted, true);
    assert.equal(c.sink.send(message(1)), 'server_busy', 'held: the hub waits for drained(), with no stall clock');
    assert.equal(c.call.writes.length, 0);
    a.call.writes[0]?.flush();
    assert.equal(c.call.writes.length, 1, 'written once there was room');
    assert.deepEqual(c.events, ['drained']);
    assert.equal(budget.bytesInFlight, 200);
  });

  test('a held message written into a full grpc-js buffer makes the client behind and waits for its drain event', () => {
    const budget = new WriteBudget(100);
    const a = sinkOn(budget);
    const b = sinkOn(budget);
    a.sink.send(message(1));
    assert.equal(b.sink.send(message(1)), 'server_busy');
    b.call.accepting = false;
    a.call.writes[0]?.flush();
    assert.equal(b.call.writes.length, 1);
    assert.deepEqual(b.events, ['behind'], 'from now on the client is behind: the stall clock runs');
    b.call.emit('drain');
    assert.deepEqual(b.events, ['behind', 'drained']);
  });

  test('a closed stream stops counting: its unflushed bytes are given back once, and its held message is dropped', () => {
    const budget = new WriteBudget(100);
    const stalled = sinkOn(budget);
    const waiting = sinkOn(budget);
    const next = sinkOn(budget);
    stalled.sink.send(message(1));
    waiting.sink.send(message(1));
    next.sink.send(message(1));
    waiting.sink.close('UNAUTHENTICATED', 'revoked');
    assert.equal(waiting.call.statuses.length, 1);
    // The stalled client never reads; the hub ends it. Its bytes no longer block the others.
    stalled.sink.close('RESOURCE_EXHAUSTED', 'not reading');
    assert.equal(next.call.writes.length, 1, 'the next in line got the room');
    assert.equal(waiting.call.writes.length, 0);
    assert.equal(budget.bytesInFlight, 100);
    stalled.call.writes[0]?.flush();
    assert.equal(budget.bytesInFlight, 100, 'a late flush of a closed stream is not given back twice');
  });

  test('a cancelled call gives its bytes back and tells the hub', () => {
    const budget = new WriteBudget(1000);
    const { call, sink, events } = sinkOn(budget);
    sink.send(message(1));
    call.cancelled = true;
    call.emit('cancelled');
    assert.equal(budget.bytesInFlight, 0);
    assert.deepEqual(events, ['cancel']);
    assert.equal(sink.send(message(2)), 'sent', 'writes to a cancelled call are dropped, not waited for');
    assert.equal(call.writes.length, 1);
  });
});

describe('the write budget with tens of thousands of held messages', () => {
  /** Sinks as the budget sees them: resume() writes the held message, taking its bytes. */
  function heldSinks(budget: WriteBudget, count: number, resumed: number[]): GrpcSyncSink[] {
    return Array.from({ length: count }, (_, i) => {
      const sink = { resume: () => (resumed.push(i), budget.take(1)) } as unknown as GrpcSyncSink;
      budget.wait(sink);
      return sink;
    });
  }

  test('they are written first come first served, skipping streams that ended while waiting', () => {
    const budget = new WriteBudget(1);
    budget.take(1);
    const resumed: number[] = [];
    const sinks = heldSinks(budget, 5, resumed);
    budget.leave(sinks[1]!);
    budget.leave(sinks[3]!);
    budget.wait(sinks[0]!); // already waiting: not queued twice
    for (let i = 0; i < 5; i++) budget.give(1);
    assert.deepEqual(resumed, [0, 2, 4]);
    assert.equal(budget.waitingSinks, 0);
  });

  test('streams that end while the budget stays full do not pile up in its queue', () => {
    // A key holder opening and closing streams in a loop while nothing drains: each waits, then ends.
    const budget = new WriteBudget(1);
    budget.take(1);
    const resumed: number[] = [];
    heldSinks(budget, 1, resumed);
    for (let i = 0; i < 50_000; i++) budget.leave(heldSinks(budget, 1, [])[0]!);
    assert.ok(budget.queuedEntries <= 2_000, `${budget.queuedEntries} entries queued for ${budget.waitingSinks} waiting`);
    budget.give(1);
    assert.deepEqual(resumed, [0], 'the stream still waiting is served first');
    assert.equal(budget.waitingSinks, 0);
  });

  test('100,000 held messages (a resync of as many streams) are released in linear time', () => {
    // Each flush makes room for one held message. A Set iterated from its start walks past every
    // sink resumed before (deleted entries stay in its storage until a rehash): ~5·10⁹ steps here,
    // tens of seconds; a queue needs 10⁵.
    const count = 100_000;
    const budget = new WriteBudget(1);
    budget.take(1);
    const resumed: number[] = [];
    heldSinks(budget, count, resumed);
    const started = performance.now();
    for (let i = 0; i < count; i++) budget.give(1);
    const ms = performance.now() - started;
    assert.equal(resumed.length, count);
    assert.ok(resumed.every((sink, i) => sink === i), 'in arrival order');
    assert.equal(budget.bytesInFlight, 1);
    assert.ok(ms < 5_000, `took ${ms.toFixed(0)} ms`);
  });
});

describe('encoding once per payload', () => {
  test('every stream gets the same encoded body; the sequence number is its own prefix', () => {
    let encodings = 0;
    const counting = new SyncEncoder(() => {
      encodings++;
      return Buffer.from([0x2a, 0x01, 0x78]); // field 5 (environment_id) = "x"
    });
    const shared = payload('x');
    const first = counting.message(1, shared, 'public');
    const second = counting.message(300, shared, 'public');
    assert.equal(encodings, 1);
    assert.equal(first.body, second.body);
    counting.message(1, shared, 'internal');
    assert.equal(encodings, 2, 'one encoding per shape');
  });

  test('a shared body plus the sequence prefix decodes as one SyncResponse, for large sequence numbers too', () => {
    const service = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags.proto'), 'svc.flags.v1.FlagSyncService').service;
    const method = withEncodedSync(service, ['SyncDefinitions']).SyncDefinitions!;
    const real = new SyncEncoder(service.SyncDefinitions!.responseSerialize as (value: object) => Buffer);
    const shared = { ...payload('env-42'), removedFlagKeys: ['gone'] };
    for (const sequence of [1, 127, 128, 300, 2 ** 31 + 5, 2 ** 40 + 1]) {
      const bytes = method.responseSerialize(real.message(sequence, shared, 'public'));
      const decoded = method.responseDeserialize(bytes) as SyncResponseMessage;
      assert.equal(decoded.sequence_number, sequence);
      assert.equal(decoded.environment_id, 'env-42');
      assert.equal(decoded.full_snapshot, true);
      assert.deepEqual(decoded.removed_flag_keys, ['gone']);
    }
    // Plain objects still go through the proto's own serializer.
    const plain = method.responseDeserialize(method.responseSerialize({ sequence_number: 7 })) as SyncResponseMessage;
    assert.equal(plain.sequence_number, 7);
  });
});
