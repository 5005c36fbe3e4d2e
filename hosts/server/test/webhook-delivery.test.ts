// topologies: single — no server is started: the worker and the guard run on their own database.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createPostgresRepositories, type Sql } from '@switchyard/postgres';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import type { Repositories, WebhookEndpointSettings } from '@switchyard/core';
import {
  ALLOW_PRIVATE_HINT,
  createGuardedFetch,
  recordChange,
  SecretBox,
  sealedFor,
  newWebhookSecret,
  WebhookDeliveryWorker,
  WebhookService,
  type RetrySchedule,
} from '@switchyard/services';
import { startReceiver, type TestReceiver } from './support/webhook-receiver.ts';

/**
 * The delivery worker on its own database, with an injected clock and schedule (no sleeping):
 * the retry schedule and its last attempt, the network guard at save and at connect time, and a
 * crashed worker's claim taken over once its lease ends (what a services restart relies on).
 */

let db: TestDatabase;
let repos: Repositories;
let receiver: TestReceiver;
let orgId: string;
const box = new SecretBox('webhook-delivery-test-key-of-at-least-32-chars');
const permissive = createGuardedFetch({ allowPrivateNetworks: true, timeoutMs: 2_000 });
const strict = createGuardedFetch({ allowPrivateNetworks: false, allowHint: ALLOW_PRIVATE_HINT, timeoutMs: 2_000 });

before(async () => {
  db = await createTestDatabase();
  repos = createPostgresRepositories(db.sql as Sql);
  receiver = await startReceiver();
  const [org] = await db.sql<Array<{ id: string }>>`INSERT INTO orgs (name) VALUES ('webhook-delivery') RETURNING id`;
  orgId = org!.id;
});
after(async () => {
  await receiver.close();
  await db.drop();
});

let clock = 1_800_000_000_000;
const now = () => clock;

/** An endpoint written straight to the store (the save-time check is WebhookService's; see below). */
async function endpoint(path: string, settings: Partial<WebhookEndpointSettings> = {}): Promise<string> {
  const id = crypto.randomUUID();
  const all: WebhookEndpointSettings = { name: path, url: receiver.url(path), enabled: true, eventTypes: ['*'], projectIds: [], environmentIds: [], format: 'standard', ...settings };
  await repos.webhooks.createEndpoint(orgId, id, all, box.seal(newWebhookSecret(), sealedFor(id)), clock);
  return id;
}

/** A committed write's entry (and so its deliveries), as any service writes it. */
const write = (resourceId = crypto.randomUUID()) =>
  repos.unitOfWork.run((tx) => recordChange(tx, { type: 'system', id: 'test' }, { orgId, action: 'flag.update', resourceType: 'flag', resourceId }, clock));

const deliveriesOf = (endpointId: string) => repos.webhooks.listDeliveries(orgId, endpointId, 100, null);

describe('the retry schedule', () => {
  test('waits 1 s, 2 s, 4 s (capped at 5 s) after failures, with the drawn jitter, and fails after the last attempt', async () => {
    const id = await endpoint('/always-500');
    receiver.answer = (request) => (request.path === '/always-500' ? { status: 500 } : { status: 204 });
    // Hand-derived: wait(n) = min(cap, first × 2^(n−1)) × (1 − jitter + 2 × jitter × random).
    // random = 0.75 and jitter 0.2 give the factor 1.1: 1,100 ms, 2,200 ms, 4,400 ms, then 5,500 ms (cap 5,000).
    const schedule: RetrySchedule = { firstRetryMs: 1_000, capMs: 5_000, jitter: 0.2, maxAttempts: 5 };
    const worker = new WebhookDeliveryWorker(repos, box, permissive, { now, random: () => 0.75, schedule, maxConsecutiveFailures: 1_000 });
    await write();
    const waits: number[] = [];
    for (let attempt = 1; attempt <= 5; attempt += 1) {
      const before = clock;
      assert.deepEqual(await worker.runOnce(), attempt < 5 ? { delivered: 0, retried: 1, failed: 0 } : { delivered: 0, retried: 0, failed: 1 });
      const [delivery] = await deliveriesOf(id);
      if (attempt < 5) {
        waits.push(delivery!.nextAttemptAtMs - before);
        // Not due a millisecond early.
        clock = delivery!.nextAttemptAtMs - 1;
        assert.deepEqual(await worker.runOnce(), { delivered: 0, retried: 0, failed: 0 });
        clock += 1;
      } else {
        assert.deepEqual([delivery!.status, delivery!.attempts, delivery!.lastStatusCode], ['failed', 5, 500]);
      }
    }
    assert.deepEqual(waits, [1_100, 2_200, 4_400, 5_500]);
    await repos.webhooks.deleteEndpoint(orgId, id);
    receiver.answer = () => ({ status: 204 });
  });

  test('a Retry-After date is honoured, bounded by the cap', async () => {
    const id = await endpoint('/later');
    receiver.answer = (request) => (request.path === '/later' ? { status: 429, headers: { 'retry-after': new Date(clock + 3_000_000).toUTCString() } } : { status: 204 });
    const schedule: RetrySchedule = { firstRetryMs: 1_000, capMs: 600_000, jitter: 0, maxAttempts: 5 };
    const worker = new WebhookDeliveryWorker(repos, box, permissive, { now, schedule, maxConsecutiveFailures: 1_000 });
    await write();
    await worker.runOnce();
    const [delivery] = await deliveriesOf(id);
    assert.equal(delivery!.nextAttemptAtMs - clock, 600_000, 'asked for 50 min, capped at 10 min');
    await repos.webhooks.deleteEndpoint(orgId, id);
    receiver.answer = () => ({ status: 204 });
  });
});

describe('the network guard', () => {
  test('at save: loopback, private, link-local and metadata addresses are refused unless WEBHOOK_ALLOW_PRIVATE_NETWORKS', async () => {
    const service = new WebhookService(repos, box, { allowPrivateNetworks: false, fetch: strict, publicUrl: () => 'https://flags.example.com' });
    const admin = { kind: 'user', userId: crypto.randomUUID(), orgId, role: 'org_admin', isSystem: false } as const;
    for (const url of ['https://127.0.0.1/hook', 'https://localhost/hook', 'https://10.1.2.3/', 'https://169.254.169.254/latest/meta-data', 'https://[::1]/', 'https://[::ffff:127.0.0.1]/', `http://93.184.216.34/`]) {
      await assert.rejects(service.create(admin, orgId, { name: 'x', url, event_types: ['*'] }), (error: { code?: string; message?: string }) => {
        assert.equal(error.code, 'INVALID_ARGUMENT', url);
        return true;
      });
    }
    const relaxed = new WebhookService(repos, box, { allowPrivateNetworks: true, fetch: permissive, publicUrl: () => 'https://flags.example.com' });
    const created = await relaxed.create(admin, orgId, { name: 'ok', url: receiver.url('/allowed'), event_types: ['nothing.matches'] });
    assert.match(created.secret, /^whsec_/);
  });

  test('at connect time: an endpoint whose name now resolves to loopback is refused, nothing reaches it', async () => {
    // Saved while its name answered a public address (written straight to the store here); its
    // name (localhost) now answers 127.0.0.1: the socket's own lookup refuses it.
    const id = await endpoint('/rebound', { url: `http://localhost:${receiver.port}/rebound` });
    const worker = new WebhookDeliveryWorker(repos, box, strict, { now, maxConsecutiveFailures: 1_000 });
    await write();
    const seen = receiver.received.length;
    await worker.runOnce();
    assert.equal(receiver.received.length, seen, 'no request reached the receiver');
    const [delivery] = await deliveriesOf(id);
    assert.equal(delivery!.status, 'pending');
    assert.match(delivery!.lastError ?? '', /private or loopback address; set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true/);
    await repos.webhooks.deleteEndpoint(orgId, id);
  });

  test('redirects are not followed: a 302 is a failed attempt', async () => {
    const id = await endpoint('/moved');
    receiver.answer = (request) => (request.path === '/moved' ? { status: 302, headers: { location: receiver.url('/target') } } : { status: 204 });
    const worker = new WebhookDeliveryWorker(repos, box, permissive, { now, maxConsecutiveFailures: 1_000 });
    await write();
    await worker.runOnce();
    assert.equal(receiver.received.filter((r) => r.path === '/target').length, 0);
    const [delivery] = await deliveriesOf(id);
    assert.deepEqual([delivery!.status, delivery!.lastStatusCode], ['pending', 302]);
    await repos.webhooks.deleteEndpoint(orgId, id);
    receiver.answer = () => ({ status: 204 });
  });
});

describe('leases', () => {
  test("a worker that claimed a delivery and died: another takes it over once the lease ends, and delivers it once", async () => {
    const id = await endpoint('/leased');
    await write();
    // The dead worker: claimed with a 10 s lease, never recorded anything.
    const claimed = await repos.webhooks.claimDue(clock, 10_000, 100);
    assert.ok(claimed.some((d) => d.endpointId === id));
    const survivor = new WebhookDeliveryWorker(createPostgresRepositories(db.sql as Sql), box, permissive, { now });
    const seen = receiver.received.filter((r) => r.path === '/leased').length;
    await survivor.runOnce();
    assert.equal(receiver.received.filter((r) => r.path === '/leased').length, seen, 'not while the lease holds');
    clock += 10_001;
    await survivor.runOnce();
    assert.equal(receiver.received.filter((r) => r.path === '/leased').length, seen + 1);
    const [delivery] = await deliveriesOf(id);
    assert.deepEqual([delivery!.status, delivery!.attempts], ['delivered', 2]);
    await repos.webhooks.deleteEndpoint(orgId, id);
  });
});
