import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { connect } from '../src/connect.ts';
import { isDriverWriteOnClosedSocket } from '../src/availability.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase();
});
after(() => db.drop());

test('a backend killed inside sql.begin: the driver\'s uncatchable throw is recognised, and the pool serves again', async () => {
  const uncaught: unknown[] = [];
  // The driver's throw surfaces as an uncaught exception, or (node:test on Node 24 listens for
  // them itself) as an unhandled rejection: both are captured here instead of failing the run.
  type Listener = (...args: unknown[]) => void;
  const events = ['uncaughtException', 'unhandledRejection'] as const;
  const listeners = new Map<string, Listener[]>();
  for (const event of events) listeners.set(event, process.listeners(event as 'uncaughtException') as unknown as Listener[]);
  const capture = (error: unknown): void => {
    uncaught.push(error);
  };
  for (const event of events) {
    process.removeAllListeners(event);
    process.on(event, capture);
  }
  const sql = connect(db.url, { poolSize: 2 });
  try {
    let pid: number | null = null;
    const transaction = sql.begin(async (tx) => {
      const [row] = await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
      pid = row?.pid ?? null;
      await tx`SELECT pg_sleep(2)`;
    });
    while (pid === null) await new Promise((resolve) => setTimeout(resolve, 20));
    await db.sql`SELECT pg_terminate_backend(${pid})`;
    await assert.rejects(transaction);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Whether the driver throws depends on timing; whatever it throws must be recognised.
    for (const error of uncaught) assert.equal(isDriverWriteOnClosedSocket(error), true, String(error));
    let answered = false;
    for (let attempt = 0; attempt < 3 && !answered; attempt++) {
      answered = await sql`SELECT 1 AS one`.then(() => true, () => false);
    }
    assert.equal(answered, true, 'the pool reconnects');
  } finally {
    for (const event of events) {
      process.removeListener(event, capture);
      for (const listener of listeners.get(event) ?? []) process.on(event, listener);
    }
    await sql.end({ timeout: 1 });
  }
});

test('other errors are not mistaken for the driver bug', () => {
  assert.equal(isDriverWriteOnClosedSocket(new TypeError('x is undefined')), false);
  assert.equal(isDriverWriteOnClosedSocket(new Error('nextWrite')), false);
  assert.equal(isDriverWriteOnClosedSocket('text'), false);
});
