import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { DomainError } from '@switchyard/core';
import { createRemoteServices } from '@switchyard/transport/remote/remote-services.ts';
import { eventually } from './support/flag-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { openSync, sdkKeyMetadata } from './support/sync-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Keys' last uses (issue 33, docs/contract.md "Last use of a key" `last_used_at_ms`) and the console's
// settings route, in both topologies: through a gateway the uses seen there reach the services in
// batches (KeyUsageGatewayService). Expected values are written out by hand from the rules: a key
// is marked when it evaluates (REST, OFREP single and bulk, server and client keys) or opens a
// sync stream, at most once a minute, and only in its own scope.

const PUBLIC_URL = 'https://flags.example.com';

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;

const keysPath = (tenant: Tenant) => `/v1/management/environments/${tenant.environmentId}/sdk-keys`;
const listKeys = async (tenant: Tenant): Promise<Json[]> => expectStatus(await client.get(keysPath(tenant), { token: tenant.admin.token }), 200, 'list keys');
const lastUse = async (tenant: Tenant, sdkKeyId: string): Promise<number | null> => {
  const key = (await listKeys(tenant)).find((candidate) => candidate.sdk_key_id === sdkKeyId);
  assert.ok(key, `key ${sdkKeyId} is listed`);
  return key.last_used_at_ms;
};
const newKey = async (tenant: Tenant, body?: unknown): Promise<{ id: string; raw: string }> => {
  const key = expectStatus(await client.post(keysPath(tenant), { token: tenant.admin.token, ...(body === undefined ? {} : { body }) }), 201, 'create key');
  return { id: key.sdk_key_id, raw: key.raw_key };
};
/** Waits until the key has a last use, and checks it lies within [from, to] (ms, floored by the database). */
async function usedBetween(tenant: Tenant, sdkKeyId: string, fromMs: number): Promise<number> {
  let seen: number | null = null;
  await eventually(`key ${sdkKeyId} marked used`, async () => (seen = await lastUse(tenant, sdkKeyId)) !== null, 10_000);
  assert.ok(seen! >= fromMs - 1 && seen! <= Date.now(), `last use ${seen} in [${fromMs}, now]`);
  return seen!;
}
const evaluate = (rawKey: string, tenant: Tenant) =>
  client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: rawKey, body: { context_type: 'user', context_key: 'u1' } });

before(async () => {
  ts = await startTestServer({ PUBLIC_URL });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'last-use-a');
  b = await seedTenant(client, root.token, 'last-use-b');
});
after(() => ts.stop());

describe('GET /v1/console/settings', () => {
  test('any signed-in user gets PUBLIC_URL, the public sync port and whether it speaks TLS; nothing else', async () => {
    const body = expectStatus(await client.get('/v1/console/settings', { token: a.member.token }), 200, 'settings');
    assert.deepEqual(body, { public_url: PUBLIC_URL, sync_port: ts.server.syncGrpcPort, sync_tls: false });
    assert.notEqual(ts.server.syncGrpcPort, 0, 'the port as it listens, not the configured 0');
  });

  test('no session, or an SDK key in place of one: 401', async () => {
    expectError(await client.get('/v1/console/settings'), 401, 'UNAUTHENTICATED');
    expectError(await client.get('/v1/console/settings', { sdkKey: a.rawKey }), 401, 'UNAUTHENTICATED');
  });
});

describe('last_used_at_ms', () => {
  test('a new key has none; REST evaluate marks it, and only it', async () => {
    const used = await newKey(a);
    const idle = await newKey(a);
    assert.equal(await lastUse(a, used.id), null);
    const from = Date.now();
    expectStatus(await evaluate(used.raw, a), 200, 'evaluate');
    await usedBetween(a, used.id, from);
    assert.equal(await lastUse(a, idle.id), null, 'a key that did nothing stays unmarked');
  });

  test('within the minute a second use writes nothing: the first use stays', async () => {
    const key = await newKey(a);
    expectStatus(await evaluate(key.raw, a), 200);
    const first = await usedBetween(a, key.id, 0);
    expectStatus(await evaluate(key.raw, a), 200, 'second evaluation');
    // A barrier: a fresh key's use goes in the same batch as (or one after) anything the second
    // evaluation would have sent, so once it is written the second use is settled too.
    const barrier = await newKey(a);
    expectStatus(await evaluate(barrier.raw, a), 200);
    await usedBetween(a, barrier.id, 0);
    assert.equal(await lastUse(a, key.id), first);
  });

  test('OFREP single and bulk with a server key, and OFREP bulk with a client key, mark their keys', async () => {
    const single = await newKey(a);
    const bulk = await newKey(a);
    const browser = await newKey(a, { kind: 'client', name: 'web', allowed_origins: ['https://app.example.com'] });
    const from = Date.now();
    // An unknown flag is a 404 answer, but the key evaluated: it counts.
    assert.equal((await client.post('/ofrep/v1/evaluate/flags/no-such-flag', { sdkKey: single.raw, body: { context: { targetingKey: 'u' } } })).status, 404);
    expectStatus(await client.post('/ofrep/v1/evaluate/flags', { sdkKey: bulk.raw, body: { context: { targetingKey: 'u' } } }), 200, 'bulk');
    expectStatus(
      await client.post('/ofrep/v1/evaluate/flags', { headers: { 'x-api-key': browser.raw, origin: 'https://app.example.com' }, body: { context: { targetingKey: 'u' } } }),
      200,
      'client bulk',
    );
    await usedBetween(a, single.id, from);
    await usedBetween(a, bulk.id, from);
    await usedBetween(a, browser.id, from);
  });

  test('opening a sync stream marks the key', async () => {
    const key = await newKey(a);
    const from = Date.now();
    const stream = openSync(ts.server.syncGrpcPort, { environment_id: a.environmentId }, sdkKeyMetadata(key.raw));
    try {
      await stream.next();
      await usedBetween(a, key.id, from);
    } finally {
      stream.cancel();
    }
  });

  test("a refused request marks nothing: another environment's id, a bearer token in place of the key", async () => {
    const key = await newKey(a);
    // A's key naming B's environment is refused (403) before it evaluates.
    expectError(await evaluate(key.raw, b), 403, 'PERMISSION_DENIED');
    expectError(await client.post(`/v1/environments/${a.environmentId}/evaluate`, { token: a.admin.token, body: { context_type: 'user', context_key: 'u' } }), 401, 'UNAUTHENTICATED');
    const barrier = await newKey(a);
    expectStatus(await evaluate(barrier.raw, a), 200);
    await usedBetween(a, barrier.id, 0);
    assert.equal(await lastUse(a, key.id), null);
  });

  test('another tenant sees none of it: B cannot list A\'s keys', async () => {
    expectError(await client.get(keysPath(a), { token: b.admin.token }), 404, 'NOT_FOUND');
  });
});

describe('KeyUsageGatewayService.RecordUses (the hop a gateway reports on)', () => {
  let channel: grpc.Channel;
  let remote: ReturnType<typeof createRemoteServices>;
  before(() => {
    channel = new grpc.Channel(`127.0.0.1:${ts.server.grpcPort}`, grpc.credentials.createInsecure(), {});
    remote = createRemoteServices({ channel, deadlineMs: 5_000, onDefinitionsChanged: () => {} });
  });
  after(() => channel.close());

  test("a use naming another tenant's scope marks nothing; the key's own scope does", async () => {
    const key = await newKey(a);
    await remote.keyUsage.recordUses([{ sdkKeyId: key.id, orgId: b.orgId, projectId: b.projectId, environmentId: b.environmentId }]);
    await remote.keyUsage.recordUses([{ sdkKeyId: key.id, orgId: a.orgId, projectId: a.projectId, environmentId: b.environmentId }]);
    assert.equal(await lastUse(a, key.id), null);
    const from = Date.now();
    await remote.keyUsage.recordUses([{ sdkKeyId: key.id, orgId: a.orgId, projectId: a.projectId, environmentId: a.environmentId }]);
    await usedBetween(a, key.id, from);
  });

  test('a report that is not a list of at most 500 uses is INVALID_ARGUMENT', async () => {
    const use = { sdkKeyId: a.sdkKeyId, orgId: a.orgId, projectId: a.projectId, environmentId: a.environmentId };
    for (const bad of [{ not: 'a list' }, [{ ...use, orgId: 7 }], Array.from({ length: 501 }, () => use)]) {
      await assert.rejects(remote.keyUsage.recordUses(bad), (error: unknown) => error instanceof DomainError && error.code === 'INVALID_ARGUMENT');
    }
  });
});
