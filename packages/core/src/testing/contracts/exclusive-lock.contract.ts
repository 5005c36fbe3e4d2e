import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ExclusiveLock } from '../../ports/maintenance-ports.ts';

/**
 * Two locks on one name as two instances hold them (two connection pools in PostgreSQL), and a
 * lock on another name.
 */
export type MakeExclusiveLocks = () => Promise<{ a: ExclusiveLock; b: ExclusiveLock; otherName: ExclusiveLock; close(): Promise<void> }>;

async function withLocks(make: MakeExclusiveLocks, body: (locks: Awaited<ReturnType<MakeExclusiveLocks>>) => Promise<void>): Promise<void> {
  const locks = await make();
  try {
    await body(locks);
  } finally {
    await locks.close();
  }
}

/** A body that runs until released, and says when it started. */
function gatedBody(): { body: () => Promise<string>; started: Promise<void>; release: () => void } {
  let release = (): void => {};
  let markStarted = (): void => {};
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const gate = new Promise<void>((resolve) => (release = resolve));
  return {
    started,
    release,
    body: async () => {
      markStarted();
      await gate;
      return 'done';
    },
  };
}

/** The behaviour every ExclusiveLock must show; run against the fake and PostgreSQL. */
export function exclusiveLockContract(name: string, makeLocks: MakeExclusiveLocks): void {
  describe(`ExclusiveLock contract: ${name}`, () => {
    test('while one holder runs, another tries and skips at once; afterwards it runs', () =>
      withLocks(makeLocks, async ({ a, b }) => {
        const held = gatedBody();
        const first = a.tryRun(held.body);
        await held.started;
        let ranSecond = false;
        assert.deepEqual(await b.tryRun(async () => (ranSecond = true)), { ran: false });
        assert.deepEqual(await a.tryRun(async () => (ranSecond = true)), { ran: false }, 'the same holder does not run twice either');
        assert.equal(ranSecond, false);
        held.release();
        assert.deepEqual(await first, { ran: true, value: 'done' });
        assert.deepEqual(await b.tryRun(async () => 42), { ran: true, value: 42 });
      }));

    test('a body that throws releases the lock and the error reaches the caller', () =>
      withLocks(makeLocks, async ({ a, b }) => {
        await assert.rejects(a.tryRun(async () => {
          throw new Error('boom');
        }), /boom/);
        assert.deepEqual(await b.tryRun(async () => 'after'), { ran: true, value: 'after' });
      }));

    test('a lock of another name is not excluded', () =>
      withLocks(makeLocks, async ({ a, otherName }) => {
        const held = gatedBody();
        const first = a.tryRun(held.body);
        await held.started;
        assert.deepEqual(await otherName.tryRun(async () => 'other'), { ran: true, value: 'other' });
        held.release();
        await first;
      }));
  });
}
