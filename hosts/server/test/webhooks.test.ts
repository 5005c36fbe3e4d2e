import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type * as grpc from '@grpc/grpc-js';
import { Webhook } from 'standardwebhooks';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { bearer, promisified, type Unary } from './support/grpc-clients.ts';
import { recordChange } from '@switchyard/services';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { eventually } from './support/flag-fixtures.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';
import { startReceiver, type TestReceiver } from './support/webhook-receiver.ts';

/**
 * Signed webhooks over real HTTP and PostgreSQL, in both topologies (docs/workflow.md "Webhooks"):
 * the outbox commits with the write or not at all, deliveries verify with an independent Standard
 * Webhooks implementation (the `standardwebhooks` package), 410 and 20 failures in a row disable,
 * Retry-After is honoured, the secret is shown once, and only org admins reach the routes.
 * Retry timing, connect-time refusals and leases: webhook-delivery.test.ts.
 */

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
let receiver: TestReceiver;

before(async () => {
  receiver = await startReceiver();
  ts = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
  // Runs are made by the tests (runOnce): the scheduled first run, a minute after start, would race them on a slow machine.
  ts.server.pruner.unschedule();
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'hooks-a');
  b = await seedTenant(client, root.token, 'hooks-b');
});
after(async () => {
  await ts.stop();
  await receiver.close();
});

const hooksPath = (tenant: Tenant, rest = '') => `/v1/management/orgs/${tenant.orgId}/webhooks${rest}`;
const flagBody = (key: string) => ({
  flag: { key, value_type: 'string', variants: [{ key: 'on', value: 'ON' }, { key: 'off', value: 'OFF' }], off_variant_key: 'off', rules: [] },
  enabled: true,
});

/**
 * A flag's creation records two entries (its definition in the project, its configuration in the
 * environment): endpoints here keep the environment's by default, so one write is one delivery.
 */
async function createHook(tenant: Tenant, body: Record<string, unknown>, path = `/${unique()}`): Promise<Json> {
  const defaults = { name: `hook ${unique()}`, url: receiver.url(path), event_types: ['flag.*'], filters: { environment_ids: [tenant.environmentId] } };
  return expectStatus(await client.post(hooksPath(tenant), { token: tenant.admin.token, body: { ...defaults, ...body } }), 201, 'create webhook');
}

async function createFlag(tenant: Tenant, key = `wh-${unique()}`): Promise<string> {
  expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: flagBody(key) }), 201, 'create flag');
  return key;
}

const receivedAt = (path: string) => receiver.received.filter((request) => request.path === path);
const deliveriesOf = async (tenant: Tenant, hookId: string) => expectStatus(await client.get(hooksPath(tenant, `/${hookId}/deliveries`), { token: tenant.admin.token }), 200).deliveries as Json[];
const hookOf = async (tenant: Tenant, hookId: string) => expectStatus(await client.get(hooksPath(tenant, `/${hookId}`), { token: tenant.admin.token }), 200);
const auditOf = async (tenant: Tenant, query: string) => expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/audit-log?${query}`, { token: tenant.admin.token }), 200).entries as Json[];
const headersOf = (request: { headers: Record<string, unknown> }) => ({
  'webhook-id': String(request.headers['webhook-id']),
  'webhook-timestamp': String(request.headers['webhook-timestamp']),
  'webhook-signature': String(request.headers['webhook-signature']),
});
const drain = () => ts.server.webhookWorker.runOnce();

describe('endpoints and their secret', () => {
  test('the create answer carries the secret (whsec_ + base64 of 32 bytes); no other answer, entry or log line does', async () => {
    const created = await createHook(a, { format: 'standard' });
    assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 32);
    const listed = expectStatus(await client.get(hooksPath(a), { token: a.admin.token }), 200);
    const rotated = expectStatus(await client.post(hooksPath(a, `/${created.id}/rotate-secret`), { token: a.admin.token }), 200);
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, created.secret);
    const read = await hookOf(a, created.id);
    assert.equal(read.secret, undefined);
    assert.ok(read.previous_secret_expires_at_ms > Date.now() + 23 * 3_600_000, 'the old secret signs for 24 h');
    for (const text of [JSON.stringify(listed), JSON.stringify(read), JSON.stringify(await auditOf(a, 'resource_type=webhook')), ts.logs.join('\n')]) {
      assert.ok(!text.includes(created.secret.slice(6)), 'first secret leaked');
      assert.ok(!text.includes(rotated.secret.slice(6)), 'rotated secret leaked');
    }
    const entries = await auditOf(a, `resource_type=webhook&resource_id=${created.id}`);
    assert.deepEqual(entries.map((entry) => entry.action).sort(), ['webhook.create', 'webhook.rotate_secret']);
    // A member does not see webhook entries (their address may carry a token).
    const memberView = expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/audit-log?resource_type=webhook`, { token: a.member.token }), 200);
    assert.equal(memberView.entries.length, 0);
  });

  test('bad input answers 400 naming the field, never 500', async () => {
    const bad = [
      { name: 'x', url: 'ftp://example.com/', event_types: ['*'] },
      { name: 'x', url: receiver.url(), event_types: [] },
      { name: 'x', url: receiver.url(), event_types: ['flag.(a+)+'] },
      { name: 'x', url: receiver.url(), event_types: ['*'], format: 'teams' },
      { name: 'x', url: receiver.url(), event_types: ['*'], filters: { project_ids: [b.projectId] } },
      { name: 'x', url: 'http://user:pw@127.0.0.1/', event_types: ['*'] },
    ];
    for (const body of bad) {
      const response = await client.post(hooksPath(a), { token: a.admin.token, body });
      assert.equal(response.status, 400, `${JSON.stringify(body)}: ${response.text}`);
      assert.equal(response.body.code, 'INVALID_ARGUMENT');
    }
  });
});

describe('the outbox', () => {
  test('a committed write is delivered once per matching endpoint, signed (standardwebhooks verifies), data = the change-history entry', async () => {
    const hook = await createHook(a, {}, '/signed');
    const other = await createHook(a, { event_types: ['segment.*'] }, '/segments-only');
    await createHook(a, { filters: { environment_ids: [], project_ids: [] } }, '/everywhere');
    const key = await createFlag(a);
    await drain();
    // The flag's creation: its definition (project) and its configuration (environment) entries.
    const entries = await auditOf(a, `resource_type=flag&resource_id=${key}`);
    assert.equal(entries.length, 2);
    await eventually('the deliveries', async () => receivedAt('/signed').length === 1 && receivedAt('/everywhere').length === 2);
    assert.equal(receivedAt('/segments-only').length, 0, 'a glob that does not match sends nothing');
    const [request] = receivedAt('/signed');
    const payload = new Webhook(hook.secret).verify(request!.body, headersOf(request!)) as Json;
    const entry = entries.find((e) => e.environment_id === a.environmentId);
    assert.equal(request!.headers['webhook-id'], entry.id);
    assert.deepEqual(payload, { type: entry.action, timestamp: new Date(entry.at_ms).toISOString(), data: entry });
    assert.throws(() => new Webhook(other.secret).verify(request!.body, headersOf(request!)), "another endpoint's secret does not verify");
    assert.deepEqual(new Set(receivedAt('/everywhere').map((r) => r.headers['webhook-id'])), new Set(entries.map((e) => e.id)), 'one delivery per entry');
    const [logged] = await deliveriesOf(a, hook.id);
    assert.deepEqual([logged.status, logged.status_code, logged.attempts, logged.message_id], ['delivered', 204, 1, entry.id]);
    assert.equal(typeof logged.duration_ms, 'number');
  });

  test('a refused write, and a unit of work rolled back after its entry, send nothing', async () => {
    const hook = await createHook(a, { event_types: ['*'] }, '/atomic');
    const key = await createFlag(a);
    await drain();
    const before = (await deliveriesOf(a, hook.id)).length;
    // Refused: the key exists (409), and a member may not create webhooks (403).
    expectStatus(await client.post(`/v1/environments/${a.environmentId}/flags`, { token: a.admin.token, body: flagBody(key) }), 409);
    expectStatus(await client.post(hooksPath(a), { token: a.member.token, body: { name: 'm', url: receiver.url(), event_types: ['*'] } }), 403);
    // Rolled back after recordChange wrote its entry and deliveries.
    await assert.rejects(
      ts.server.repos.unitOfWork.run(async (tx) => {
        await recordChange(tx, { type: 'system', id: 'test' }, { orgId: a.orgId, action: 'flag.update', resourceType: 'flag', resourceId: key, projectId: a.projectId, environmentId: a.environmentId }, Date.now());
        assert.equal((await tx.webhooks.listDeliveries(a.orgId, hook.id, 100, null)).length, before + 1, 'written inside the transaction');
        throw new Error('rolled back');
      }),
      /rolled back/,
    );
    await drain();
    assert.equal((await deliveriesOf(a, hook.id)).length, before);
    assert.equal(receivedAt('/atomic').length, before);
  });

  test('filters: an endpoint of another environment or project gets nothing', async () => {
    const project = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: a.admin.token, body: { name: `p-${unique()}` } }), 201);
    const hook = await createHook(a, { filters: { project_ids: [project.project_id], environment_ids: [] } }, '/filtered');
    await createFlag(a);
    await drain();
    assert.equal((await deliveriesOf(a, hook.id)).length, 0);
  });

  test('format slack: a readable message with a link to the flag history in the console', async () => {
    await createHook(a, { format: 'slack' }, '/slack');
    const key = await createFlag(a);
    await drain();
    await eventually('the slack message', async () => receivedAt('/slack').length === 1);
    const message = JSON.parse(receivedAt('/slack')[0]!.body);
    assert.match(message.text, new RegExp(`flag.create on flag ${key}`));
    assert.ok(JSON.stringify(message.blocks).includes(`/#/env/${a.environmentId}/flags/${key}/history`));
  });
});

describe('failures', () => {
  test('410 Gone disables the endpoint, with an entry by the webhooks system actor', async () => {
    const hook = await createHook(a, {}, '/gone');
    receiver.answer = (request) => (request.path === '/gone' ? { status: 410 } : { status: 204 });
    await createFlag(a);
    await drain();
    await eventually('disabled', async () => (await hookOf(a, hook.id)).enabled === false);
    assert.equal((await hookOf(a, hook.id)).disabled_reason, 'the endpoint answered 410 Gone');
    const [entry] = await auditOf(a, `resource_type=webhook&resource_id=${hook.id}`);
    assert.deepEqual([entry.action, entry.actor, entry.details], ['webhook.disable', { type: 'system', id: 'webhooks' }, { reason: 'the endpoint answered 410 Gone' }]);
    receiver.answer = () => ({ status: 204 });
  });

  test('Retry-After is honoured: the next attempt waits what the answer asked', async () => {
    const hook = await createHook(a, {}, '/busy');
    receiver.answer = (request) => (request.path === '/busy' ? { status: 503, headers: { 'retry-after': '120' }, body: 'busy '.repeat(400) } : { status: 204 });
    await createFlag(a);
    const startedAt = Date.now();
    await drain();
    await eventually('attempted', async () => (await deliveriesOf(a, hook.id))[0]?.status_code === 503);
    const [delivery] = await deliveriesOf(a, hook.id);
    assert.equal(delivery.status, 'pending');
    assert.ok(delivery.next_attempt_at_ms >= startedAt + 120_000 && delivery.next_attempt_at_ms <= Date.now() + 120_000, `next attempt ${delivery.next_attempt_at_ms - startedAt} ms after`);
    assert.equal(Buffer.byteLength(delivery.response), 1024, 'the first 1 KiB of the answer');
    receiver.answer = () => ({ status: 204 });
  });

  test('a test send to an enabled endpoint is delivered once: the worker running meanwhile does not send it too', async () => {
    const path = `/${unique()}`;
    const hook = await createHook(a, {}, path);
    const previous = receiver.answer;
    let drained: Promise<unknown> | undefined;
    // The endpoint answers the test send only after a worker pass ran while the attempt was in flight.
    receiver.answer = (got) => {
      if (got.path !== path || drained !== undefined) return previous(got);
      drained = drain();
      return drained.then(() => ({ status: 204 }));
    };
    try {
      const sent = expectStatus(await client.post(hooksPath(a, `/${hook.id}/test`), { token: a.admin.token }), 200);
      await drained;
      await drain();
      assert.deepEqual([sent.status, sent.attempts], ['delivered', 1]);
      assert.equal(receivedAt(path).length, 1, 'one request');
    } finally {
      receiver.answer = previous;
    }
  });

  test('20 failed attempts in a row disable the endpoint (19 do not); a successful test send enables it again', async () => {
    const hook = await createHook(a, {}, '/failing');
    receiver.answer = (request) => (request.path === '/failing' ? { status: 500 } : { status: 204 });
    for (let i = 0; i < 19; i += 1) await createFlag(a);
    await drain();
    await eventually('19 failures', async () => (await hookOf(a, hook.id)).consecutive_failures === 19);
    assert.equal((await hookOf(a, hook.id)).enabled, true, '19 failures leave it enabled');
    await createFlag(a);
    await drain();
    await eventually('disabled', async () => (await hookOf(a, hook.id)).enabled === false);
    assert.equal((await hookOf(a, hook.id)).disabled_reason, '20 failed attempts in a row');
    const [entry] = await auditOf(a, `resource_type=webhook&resource_id=${hook.id}`);
    assert.equal(entry.action, 'webhook.disable');

    receiver.answer = () => ({ status: 200, body: 'ok' });
    const sent = expectStatus(await client.post(hooksPath(a, `/${hook.id}/test`), { token: a.admin.token }), 200);
    assert.deepEqual([sent.status, sent.status_code, sent.response, sent.event_type], ['delivered', 200, 'ok', 'webhook.test']);
    const test = receivedAt('/failing').at(-1)!;
    assert.equal(JSON.parse(test.body).type, 'webhook.test');
    assert.doesNotThrow(() => new Webhook(hook.secret).verify(test.body, headersOf(test)));
    const enabled = await hookOf(a, hook.id);
    assert.deepEqual([enabled.enabled, enabled.consecutive_failures, enabled.disabled_reason], [true, 0, undefined]);
    const [enable] = await auditOf(a, `resource_type=webhook&resource_id=${hook.id}`);
    assert.equal(enable.action, 'webhook.enable');
    // The failed deliveries wait for their next attempt (30 s ± 20 % after the first), not lost.
    const waiting = (await deliveriesOf(a, hook.id)).filter((d) => d.event_type !== 'webhook.test');
    assert.equal(waiting.length, 20);
    assert.ok(waiting.every((d) => d.status === 'pending' && d.attempts === 1 && d.next_attempt_at_ms > Date.now()));
  });

  test('redeliver sends a failed delivery again', async () => {
    const hook = await createHook(a, {}, '/redeliver');
    receiver.answer = (request) => (request.path === '/redeliver' ? { status: 410 } : { status: 204 });
    await createFlag(a);
    await drain();
    await eventually('failed', async () => (await deliveriesOf(a, hook.id))[0]?.status === 'failed');
    receiver.answer = () => ({ status: 204 });
    expectStatus(await client.request('PATCH', hooksPath(a, `/${hook.id}`), { token: a.admin.token, body: { enabled: true } }), 200);
    const [failed] = await deliveriesOf(a, hook.id);
    const again = expectStatus(await client.post(hooksPath(a, `/${hook.id}/deliveries/${failed.id}/redeliver`), { token: a.admin.token }), 200);
    assert.equal(again.status, 'pending');
    await drain();
    await eventually('delivered', async () => (await deliveriesOf(a, hook.id))[0]?.status === 'delivered');
    const sent = receivedAt('/redeliver');
    assert.equal(sent.at(-1)!.headers['webhook-id'], sent[0]!.headers['webhook-id'], 'webhook-id is stable across attempts');
  });
});

describe('rotation', () => {
  test('during the overlap each delivery is signed with the new and the old secret', async () => {
    const hook = await createHook(a, {}, '/rotated');
    const rotated = expectStatus(await client.post(hooksPath(a, `/${hook.id}/rotate-secret`), { token: a.admin.token }), 200);
    await createFlag(a);
    await drain();
    await eventually('delivered', async () => receivedAt('/rotated').length === 1);
    const [request] = receivedAt('/rotated');
    assert.equal(String(request!.headers['webhook-signature']).split(' ').length, 2);
    assert.doesNotThrow(() => new Webhook(rotated.secret).verify(request!.body, headersOf(request!)));
    assert.doesNotThrow(() => new Webhook(hook.secret).verify(request!.body, headersOf(request!)));
  });
});

describe('who may manage webhooks', () => {
  test("another org's admin: 404; a member: 403; anonymous: 401; an SDK key: refused; an org-wide admin API token: allowed, a viewer token: 403", async () => {
    const hook = await createHook(a, {}, '/acl');
    expectError(await client.get(hooksPath(a, `/${hook.id}`), { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(hooksPath(a), { token: b.admin.token }), 404, 'NOT_FOUND');
    assert.equal((await client.get(hooksPath(b, `/${hook.id}`), { token: b.admin.token })).status, 404, 'not through another org either');
    expectError(await client.get(hooksPath(a), { token: a.member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(hooksPath(a, `/${hook.id}/test`), { token: a.member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(hooksPath(a)), 401, 'UNAUTHENTICATED');
    const keyed = await client.get(hooksPath(a), { sdkKey: a.rawKey });
    assert.equal(keyed.status, 401, keyed.text);
    const keyAsBearer = await client.get(hooksPath(a), { token: a.rawKey });
    assert.ok(keyAsBearer.status === 401 || keyAsBearer.status === 403, keyAsBearer.text);
    const adminToken = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/api-tokens`, { token: a.admin.token, body: { name: `ci-${unique()}`, role: 'admin' } }), 201);
    expectStatus(await client.get(hooksPath(a), { token: adminToken.token }), 200);
    const viewerToken = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/api-tokens`, { token: a.admin.token, body: { name: `ro-${unique()}`, role: 'viewer' } }), 201);
    expectError(await client.get(hooksPath(a), { token: viewerToken.token }), 403, 'PERMISSION_DENIED');
  });
});

describe('metrics', () => {
  test('deliveries by outcome and their latency, on the services process', async () => {
    const text = await ts.server.metrics.registry.metrics();
    const delivered = /^switchyard_webhook_deliveries_total\{outcome="delivered"\} (\d+)/m.exec(text);
    assert.ok(delivered && Number(delivered[1]) > 0, text.split('\n').filter((line) => line.includes('webhook')).join('\n'));
    assert.match(text, /^switchyard_webhook_deliveries_total\{outcome="retried"\} [1-9]/m);
    assert.match(text, /^switchyard_webhook_delivery_duration_seconds_count [1-9]/m);
  });
});

describe('the pruner bounds the delivery log', () => {
  test('deliveries older than the retention go; newer ones stay', async () => {
    const hook = await createHook(a, {}, '/pruned');
    await createFlag(a);
    await drain();
    await eventually('delivered', async () => (await deliveriesOf(a, hook.id)).length === 1);
    await ts.db.sql`UPDATE webhook_deliveries SET created_at_ms = created_at_ms - ${15 * 86_400_000} WHERE endpoint_id = ${hook.id}`;
    await createFlag(a);
    const report = await ts.server.pruner.runOnce();
    assert.ok(report !== null && report.webhookDeliveries >= 1);
    const left = await deliveriesOf(a, hook.id);
    assert.equal(left.length, 1, 'the recent one stays');
  });
});

describe('over gRPC (svc.management.v1.WebhookService, the services port)', () => {
  test('create (the secret in that answer only), update by field mask, test send, delivery log; another org: NOT_FOUND; a member: PERMISSION_DENIED', async () => {
    const Service = lookup<grpc.ServiceClientConstructor>(loadProto('svc/management/v1/webhooks.proto'), 'svc.management.v1.WebhookService');
    const hooks = promisified<{
      createWebhook: Unary<object, Json>;
      listWebhooks: Unary<object, Json>;
      updateWebhook: Unary<object, Json>;
      testWebhook: Unary<object, Json>;
      listWebhookDeliveries: Unary<object, Json>;
    }>(Service, ts.server.grpcPort);
    try {
      const created = await hooks.createWebhook({ org_id: a.orgId, name: 'grpc hook', url: receiver.url('/grpc'), event_types: ['flag.*'], filters: { environment_ids: [a.environmentId] } }, bearer(a.admin.token));
      assert.match(created.secret, /^whsec_/);
      assert.deepEqual([created.webhook.enabled, created.webhook.format, created.webhook.filters.environment_ids], [true, 'standard', [a.environmentId]]);
      const listed = await hooks.listWebhooks({ org_id: a.orgId }, bearer(a.admin.token));
      assert.ok(!JSON.stringify(listed).includes(created.secret.slice(6)));
      const renamed = await hooks.updateWebhook({ org_id: a.orgId, webhook_id: created.webhook.id, update_fields: ['name'], name: 'renamed', url: 'ignored' }, bearer(a.admin.token));
      assert.deepEqual([renamed.name, renamed.url], ['renamed', receiver.url('/grpc')]);
      const sent = await hooks.testWebhook({ org_id: a.orgId, webhook_id: created.webhook.id }, bearer(a.admin.token));
      assert.deepEqual([sent.status, sent.status_code, sent.attempts], ['delivered', 204, 1]);
      const page = await hooks.listWebhookDeliveries({ org_id: a.orgId, webhook_id: created.webhook.id }, bearer(a.admin.token));
      assert.equal(page.deliveries[0].id, sent.id);
      await assert.rejects(hooks.listWebhooks({ org_id: a.orgId }, bearer(b.admin.token)), (error: grpc.ServiceError) => error.code === 5);
      await assert.rejects(hooks.listWebhooks({ org_id: a.orgId }, bearer(a.member.token)), (error: grpc.ServiceError) => error.code === 7);
    } finally {
      hooks.client.close();
    }
  });
});
