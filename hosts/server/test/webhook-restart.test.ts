// topologies: single — it starts real server processes itself, one after the other on one database.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import { api, expectStatus, loginAdmin, seedTenant } from './support/rest-client.ts';
import { portFrom, spawnServer, stopProcess, type ServerProcess } from './support/server-process.ts';
import { TEST_ADMIN, TEST_JWT_SECRET } from './support/test-server.ts';
import { startReceiver, type TestReceiver } from './support/webhook-receiver.ts';

/**
 * A committed write's webhook survives its process (docs/workflow.md "Webhooks"): a real server
 * process commits a flag write whose delivery fails (503, Retry-After: 1) and is killed (SIGKILL,
 * no shutdown); another process on the same database delivers it, with the entry's id.
 */

let db: TestDatabase;
let receiver: TestReceiver;
const processes: ServerProcess[] = [];

before(async () => {
  db = await createTestDatabase({ migrate: false });
  receiver = await startReceiver();
});
after(async () => {
  for (const process of processes) await stopProcess(process);
  await receiver.close();
  await db.drop();
});

async function start(): Promise<{ process: ServerProcess; base: string }> {
  const process = spawnServer({
    DATABASE_URL: db.url,
    JWT_SECRET: TEST_JWT_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: TEST_ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: TEST_ADMIN.password,
    APP_ENV: 'test',
    PASSWORD_HASH_COST: '4',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
  });
  processes.push(process);
  const port = portFrom(await process.waitForLine(/REST listening/, 90_000));
  return { process, base: `http://127.0.0.1:${port}` };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('a delivery committed by a process that is killed is delivered by the next one', async () => {
  const first = await start();
  const client = api(first.base);
  const root = await loginAdmin(client);
  const tenant = await seedTenant(client, root.token, 'restart');
  const hook = expectStatus(
    await client.post(`/v1/management/orgs/${tenant.orgId}/webhooks`, {
      token: tenant.admin.token,
      body: { name: 'restart', url: receiver.url('/restart'), event_types: ['flag.*'], filters: { environment_ids: [tenant.environmentId] } },
    }),
    201,
  );
  receiver.answer = () => ({ status: 503, headers: { 'retry-after': '1' } });
  const key = `restart-${Date.now()}`;
  expectStatus(
    await client.post(`/v1/environments/${tenant.environmentId}/flags`, {
      token: tenant.admin.token,
      body: { flag: { key, value_type: 'string', variants: [{ key: 'on', value: 'ON' }, { key: 'off', value: 'OFF' }], off_variant_key: 'off', rules: [] }, enabled: true },
    }),
    201,
  );
  const [entry] = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/audit-log?resource_type=flag&resource_id=${key}&environment_id=${tenant.environmentId}`, { token: tenant.admin.token }), 200).entries;
  // The first process tried once (503) and is killed without a shutdown.
  for (let waited = 0; receiver.received.length === 0; waited += 50) {
    assert.ok(waited < 20_000, 'the first process never tried');
    await sleep(50);
  }
  await sleep(300);
  first.process.child.kill('SIGKILL');
  await first.process.exited;
  receiver.answer = () => ({ status: 204 });
  const tried = receiver.received.length;

  const second = await start();
  for (let waited = 0; receiver.received.length === tried; waited += 50) {
    assert.ok(waited < 30_000, 'the second process never delivered');
    await sleep(50);
  }
  const delivered = receiver.received.at(-1)!;
  assert.equal(delivered.headers['webhook-id'], entry.id);
  assert.equal(JSON.parse(delivered.body).data.id, entry.id);
  // The session is in the database: the same token works against the second process.
  const secondClient = api(second.base);
  let deliveries: Array<{ status: string; attempts: number }> = [];
  for (let waited = 0; deliveries[0]?.status !== 'delivered'; waited += 100) {
    assert.ok(waited < 10_000, `still ${JSON.stringify(deliveries)}`);
    deliveries = expectStatus(await secondClient.get(`/v1/management/orgs/${tenant.orgId}/webhooks/${hook.id}/deliveries`, { token: tenant.admin.token }), 200).deliveries;
    await sleep(100);
  }
  assert.equal(deliveries.length, 1);
  assert.ok(deliveries[0]!.attempts >= 2);
});
