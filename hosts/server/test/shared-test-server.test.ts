import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { api, expectError, expectStatus, loginAdmin, seedTenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Files that say `share: true` share one server in a batch process (support/test-server.ts,
 * scripts/test-batches.ts): the same server for the same topology and settings, each file's
 * `stop()` leaving it running for the next, the batch's end stopping it; every file starting
 * from no failed logins; and outside a batch, a server of the file's own as always. This file
 * plays the batch itself (the global a batch's entry sets), restoring what was there.
 */

type Batch = { cleanups: Array<() => Promise<void>> };
const holder = globalThis as { __switchyardTestBatch?: Batch };
const outer = holder.__switchyardTestBatch;
const own: TestServer[] = [];
after(async () => {
  holder.__switchyardTestBatch = outer;
  for (const server of own) await server.stop();
});

const answers = (base: string) => fetch(`${base}/healthz`).then((response) => response.status === 200, () => false);

test('in a batch: one server per settings, left running by each file, stopped at the batch end; failed logins start at none', async () => {
  const batch: Batch = { cleanups: [] };
  holder.__switchyardTestBatch = batch;
  try {
    const first = await startTestServer({}, { share: true });
    const client = api(first.base);
    const root = await loginAdmin(client);
    const tenant = await seedTenant(client, root.token, 'shared');
    for (let i = 0; i < 10; i++) expectError(await client.post('/v1/auth/login', { body: { email: tenant.member.email, password: 'pw-wrong' } }), 401, 'UNAUTHENTICATED');
    expectError(await client.post('/v1/auth/login', { body: { email: tenant.member.email, password: tenant.member.password } }), 429, 'RESOURCE_EXHAUSTED');
    await first.stop();

    const second = await startTestServer({}, { share: true });
    assert.equal(second.base, first.base, 'the same server');
    assert.ok(await answers(second.base), "still running after the first file's stop()");
    // The next file's client is 127.0.0.1 too: it starts from no failures, as on a server of its own.
    expectStatus(await client.post('/v1/auth/login', { body: { email: tenant.member.email, password: tenant.member.password } }), 200);

    const other = await startTestServer({ STATS_POLL_MS: '3600000' }, { share: true });
    assert.notEqual(other.base, first.base, 'other settings, another server');
    await second.stop();
    await other.stop();

    assert.equal(batch.cleanups.length, 2);
    for (const cleanUp of batch.cleanups.splice(0)) await cleanUp();
    assert.equal(await answers(first.base), false, 'stopped at the batch end');
    assert.equal(await answers(other.base), false);
  } finally {
    holder.__switchyardTestBatch = outer;
    // What a failed assertion above left running (else the process would wait for it).
    for (const cleanUp of batch.cleanups) await cleanUp();
  }
});

test('outside a batch, or without share: a server of its own each time', async () => {
  holder.__switchyardTestBatch = undefined;
  const a = await startTestServer({}, { share: true });
  own.push(a);
  const b = await startTestServer();
  own.push(b);
  holder.__switchyardTestBatch = { cleanups: [] };
  const c = await startTestServer();
  own.push(c);
  holder.__switchyardTestBatch = outer;
  assert.equal(new Set([a.base, b.base, c.base]).size, 3);
});
