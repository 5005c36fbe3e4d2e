import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isDomainError, type EnvironmentScope } from '@switchyard/core';
import { BatchingWriter } from '../src/events/batching-writer.ts';

const envA: EnvironmentScope = { orgId: 'o1', projectId: 'p1', environmentId: 'e1' };
const envB: EnvironmentScope = { orgId: 'o1', projectId: 'p1', environmentId: 'e2' };

/** A write function whose calls the test settles by hand, recording what each call carried. */
function controlledStore() {
  const calls: Array<{ scope: EnvironmentScope; rows: number[]; settle(error?: Error): void }> = [];
  const committed: number[] = [];
  const write = (scope: EnvironmentScope, rows: number[]) =>
    new Promise<void>((resolve, reject) => {
      calls.push({
        scope,
        rows: [...rows],
        settle(error?: Error) {
          if (error) reject(error);
          else {
            committed.push(...rows);
            resolve();
          }
        },
      });
    });
  return { calls, committed, write };
}

const tick = (ms = 0) => new Promise((resolve) => setTimeout(resolve, ms));

/** Tracks whether a promise has settled yet, and how. */
function watch(promise: Promise<void>) {
  const state: { settled: boolean; error: unknown } = { settled: false, error: undefined };
  promise.then(
    () => (state.settled = true),
    (error: unknown) => {
      state.settled = true;
      state.error = error;
    },
  );
  return state;
}

describe('BatchingWriter', () => {
  test('concurrent requests of one environment share one write; each resolves only after it committed', async () => {
    const store = controlledStore();
    const writer = new BatchingWriter<number>(store.write, { maxDelayMs: 5 });
    const requests = [writer.write(envA, [1, 2]), writer.write(envA, [3]), writer.write(envA, [4, 5, 6])].map(watch);
    await tick(20);
    assert.equal(store.calls.length, 1);
    assert.deepEqual(store.calls[0]?.rows, [1, 2, 3, 4, 5, 6]);
    assert.ok(requests.every((r) => !r.settled), 'nothing is acknowledged before the commit');
    store.calls[0]?.settle();
    await tick();
    assert.ok(requests.every((r) => r.settled && r.error === undefined));
    assert.deepEqual(store.committed, [1, 2, 3, 4, 5, 6]);
    assert.deepEqual(writer.stats, { requests: 3, rows: 6, writes: 1, failedWrites: 0 });
  });

  test('a failed write rejects every request in it with the error, and stores none of their rows', async () => {
    const store = controlledStore();
    const writer = new BatchingWriter<number>(store.write, { maxDelayMs: 1 });
    const first = writer.write(envA, [1]);
    const second = writer.write(envA, [2]);
    await tick(10);
    const failure = Object.assign(new Error('connection lost'), { code: 'CONNECTION_CLOSED' });
    store.calls[0]?.settle(failure);
    await assert.rejects(first, failure);
    await assert.rejects(second, failure);
    assert.deepEqual(store.committed, []);
    assert.equal(writer.stats.failedWrites, 1);

    // The writer keeps working after a failure.
    const third = writer.write(envA, [3]);
    await tick(10);
    store.calls[1]?.settle();
    await third;
    assert.deepEqual(store.committed, [3]);
  });

  test('environments are written separately (one write each) and concurrently', async () => {
    const store = controlledStore();
    const writer = new BatchingWriter<number>(store.write, { maxDelayMs: 1 });
    const a = watch(writer.write(envA, [1]));
    const b = watch(writer.write(envB, [2]));
    await tick(10);
    assert.equal(store.calls.length, 2, 'both in flight at once');
    assert.deepEqual(
      store.calls.map((call) => [call.scope.environmentId, call.rows]),
      [
        ['e1', [1]],
        ['e2', [2]],
      ],
    );
    store.calls[1]?.settle(new Error('e2 failed'));
    await tick();
    assert.ok(b.settled && b.error instanceof Error);
    assert.ok(!a.settled, "one environment's failure does not touch the other");
    store.calls[0]?.settle();
    await tick();
    assert.ok(a.settled && a.error === undefined);
  });

  test("while an environment's write is in flight, its new rows wait and then go together", async () => {
    const store = controlledStore();
    const writer = new BatchingWriter<number>(store.write, { maxDelayMs: 1 });
    const first = writer.write(envA, [1]);
    await tick(10);
    assert.equal(store.calls.length, 1);
    const later = [writer.write(envA, [2]), writer.write(envA, [3]), writer.write(envA, [4])];
    await tick(10);
    assert.equal(store.calls.length, 1, 'no second write while the first is in flight');
    store.calls[0]?.settle();
    await first;
    await tick();
    assert.equal(store.calls.length, 2);
    assert.deepEqual(store.calls[1]?.rows, [2, 3, 4]);
    store.calls[1]?.settle();
    await Promise.all(later);
    assert.deepEqual(writer.stats, { requests: 4, rows: 4, writes: 2, failedWrites: 0 });
  });

  test('maxConcurrentWrites: 2 starts a second write while the first is in flight; later rows wait for one to end', async () => {
    const store = controlledStore();
    const writer = new BatchingWriter<number>(store.write, { maxDelayMs: 1, maxConcurrentWrites: 2 });
    const first = writer.write(envA, [1]);
    await tick(10);
    const second = writer.write(envA, [2]);
    await tick(10);
    assert.equal(store.calls.length, 2, 'a second write while the first is in flight');
    const later = [writer.write(envA, [3]), writer.write(envA, [4])];
    await tick(10);
    assert.equal(store.calls.length, 2, 'no third write while two are in flight');
    store.calls[1]?.settle();
    await second;
    await tick();
    assert.equal(store.calls.length, 3);
    assert.deepEqual(store.calls[2]?.rows, [3, 4]);
    const flushed = watch(writer.flush());
    await tick();
    assert.ok(!flushed.settled, 'flush waits for every write in flight');
    store.calls[0]?.settle();
    store.calls[2]?.settle();
    await Promise.all([first, ...later]);
    await tick();
    assert.ok(flushed.settled);
    assert.deepEqual(writer.stats, { requests: 4, rows: 4, writes: 3, failedWrites: 0 });
  });

  test('maxRows waiting starts the write at once, without waiting for the delay', async () => {
    const store = controlledStore();
    const writer = new BatchingWriter<number>(store.write, { maxDelayMs: 60_000, maxRows: 3 });
    void writer.write(envA, [1, 2]);
    await tick();
    assert.equal(store.calls.length, 0);
    void writer.write(envA, [3]);
    await tick();
    assert.equal(store.calls.length, 1);
    assert.deepEqual(store.calls[0]?.rows, [1, 2, 3]);
    store.calls[0]?.settle();
    await writer.close();
  });

  test('one request larger than maxRows is never split', async () => {
    const store = controlledStore();
    const writer = new BatchingWriter<number>(store.write, { maxRows: 5 });
    const rows = Array.from({ length: 12 }, (_, i) => i);
    const done = writer.write(envA, rows);
    await tick();
    assert.equal(store.calls.length, 1);
    assert.deepEqual(store.calls[0]?.rows, rows);
    store.calls[0]?.settle();
    await done;
  });

  test('an empty request resolves at once without a write', async () => {
    const store = controlledStore();
    const writer = new BatchingWriter<number>(store.write);
    await writer.write(envA, []);
    assert.equal(store.calls.length, 0);
    assert.equal(writer.stats.requests, 0);
  });

  test('close() writes what waits, waits for writes in flight, then refuses new rows with UNAVAILABLE', async () => {
    const committed: number[] = [];
    const writer = new BatchingWriter<number>(
      async (_scope, rows) => {
        await tick(5);
        committed.push(...rows);
      },
      { maxDelayMs: 60_000 },
    );
    const waiting = writer.write(envA, [1, 2]);
    const other = writer.write(envB, [3]);
    await writer.close();
    await Promise.all([waiting, other]);
    assert.deepEqual(committed.sort(), [1, 2, 3]);
    await assert.rejects(writer.write(envA, [4]), (error: unknown) => isDomainError(error) && error.code === 'UNAVAILABLE');
  });
});
