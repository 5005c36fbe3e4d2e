import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from './support/flag-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Context attributes (issue 33, docs/contract.md "Context attributes"): the attribute names the
// contexts keys evaluated used, listed for members who may read flags, in both topologies (through
// a gateway they reach the services with keys' last uses, KeyUsageGatewayService). Expectations are
// written by hand from the rules: names only, never values; at most 50 new names of an environment
// per batch and 200 remembered per environment and process within a minute; only flag readers see them.

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let c: Tenant;

const attributesPath = (tenant: Tenant) => `/v1/environments/${tenant.environmentId}/context-attributes`;
const listAttributes = async (tenant: Tenant): Promise<Json[]> =>
  (expectStatus(await client.get(attributesPath(tenant), { token: tenant.member.token }), 200, 'list context attributes') as { attributes: Json[] }).attributes;
const pairs = (attributes: Json[]): string[] => attributes.map((attribute) => `${attribute.context_type}.${attribute.name}`).sort();
const evaluate = (tenant: Tenant, body: unknown, rawKey = tenant.rawKey) => client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: rawKey, body });
const newKey = async (tenant: Tenant, body?: unknown): Promise<{ id: string; raw: string }> => {
  const key = expectStatus(
    await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token, ...(body === undefined ? {} : { body }) }),
    201,
    'create key',
  );
  return { id: key.sdk_key_id, raw: key.raw_key };
};
/** Names of `count` attributes with a prefix, each with a value that must never be listed. */
const named = (prefix: string, count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`${prefix}${i}`, `value-${prefix}${i}`]));

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'attrs-a');
  b = await seedTenant(client, root.token, 'attrs-b');
  c = await seedTenant(client, root.token, 'attrs-c');
});
after(() => ts.stop());

describe('GET /v1/environments/{env_id}/context-attributes', () => {
  test('REST evaluate, OFREP single and bulk (server and client keys): names listed per context type, values never', async () => {
    const from = Date.now();
    assert.deepEqual(await listAttributes(a), [], 'nothing evaluated yet');
    expectStatus(
      await evaluate(a, {
        context_type: 'user',
        context_key: 'u1',
        attributes: { plan: 'gold-secret', email: 'alice@example.com', ignored: null },
        contexts: [{ context_type: 'org', key: 'o1', attributes: { tier: 'enterprise-secret' } }],
      }),
      200,
      'evaluate',
    );
    assert.equal((await client.post('/ofrep/v1/evaluate/flags/no-such-flag', { sdkKey: a.rawKey, body: { context: { targetingKey: 'd1', kind: 'device', os: 'linux-secret' } } })).status, 404);
    expectStatus(await client.post('/ofrep/v1/evaluate/flags', { sdkKey: a.rawKey, body: { context: { targetingKey: 'u2', country: 'fr-secret' } } }), 200, 'OFREP bulk');
    const browser = await newKey(a, { kind: 'client', name: 'web', allowed_origins: ['https://app.example.com'] });
    expectStatus(
      await client.post('/ofrep/v1/evaluate/flags', { headers: { 'x-api-key': browser.raw, origin: 'https://app.example.com' }, body: { context: { targetingKey: 'u3', locale: 'fr-FR' } } }),
      200,
      'client OFREP bulk',
    );
    const expected = ['device.os', 'org.tier', 'user.country', 'user.email', 'user.locale', 'user.plan'];
    let listed: Json[] = [];
    await eventually('every name listed', async () => pairs((listed = await listAttributes(a))).join() === expected.join(), 10_000);
    for (const attribute of listed) {
      assert.deepEqual(Object.keys(attribute).sort(), ['context_type', 'last_seen_at_ms', 'name']);
      assert.ok(attribute.last_seen_at_ms >= from - 1 && attribute.last_seen_at_ms <= Date.now(), `last seen ${attribute.last_seen_at_ms} in [${from}, now]`);
    }
    const times = listed.map((attribute) => attribute.last_seen_at_ms as number);
    assert.deepEqual(times, [...times].sort((x, y) => y - x), 'newest first');
    const text = JSON.stringify(listed);
    for (const value of ['gold-secret', 'alice@example.com', 'enterprise-secret', 'linux-secret', 'fr-secret', 'fr-FR', 'u1', 'd1']) assert.ok(!text.includes(value), `${value} is not listed`);
    assert.deepEqual(pairs(await listAttributes(b)), [], "another environment's list is its own");
  });

  test('bounds: 50 new names of an environment per batch, 200 remembered per environment, never more', async () => {
    // Each request brings 100 new names (a context's most); each batch takes 50 of them until 200 are remembered.
    for (const [round, expected] of [[0, 50], [1, 100], [2, 150], [3, 200]] as const) {
      expectStatus(await evaluate(c, { context_type: 'user', context_key: 'u', attributes: named(`r${round}n`, 100) }), 200);
      await eventually(`${expected} names listed`, async () => (await listAttributes(c)).length === expected, 10_000);
    }
    expectStatus(await evaluate(c, { context_type: 'user', context_key: 'u', attributes: named('r4n', 100) }), 200);
    // A barrier: a fresh key's use goes in the batch of anything the last request noted (or a later one).
    const barrier = await newKey(c);
    expectStatus(await evaluate(c, { context_type: 'user', context_key: 'u' }, barrier.raw), 200);
    await eventually('barrier key used', async () => {
      const keys = expectStatus(await client.get(`/v1/management/environments/${c.environmentId}/sdk-keys`, { token: c.admin.token }), 200) as Json[];
      return keys.find((key) => key.sdk_key_id === barrier.id)?.last_used_at_ms != null;
    }, 10_000);
    const listed = await listAttributes(c);
    assert.equal(listed.length, 200);
    assert.ok(!listed.some((attribute) => String(attribute.name).startsWith('r4n')), 'the fifth round is not noted');
  });

  test('a name longer than 64 characters is not noted', async () => {
    expectStatus(await evaluate(b, { context_type: 'user', context_key: 'u', attributes: { ['n'.repeat(65)]: 1, short: 2 } }), 200);
    await eventually('short listed', async () => pairs(await listAttributes(b)).join() === 'user.short', 10_000);
  });

  test("refused: another tenant's member or admin and an unknown id (404), an SDK or client key (401), no credentials (401)", async () => {
    expectError(await client.get(attributesPath(a), { token: b.member.token }), 404, 'NOT_FOUND');
    expectError(await client.get(attributesPath(a), { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(attributesPath(a), { sdkKey: a.rawKey }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(attributesPath(a), { headers: { authorization: `Bearer ${a.rawKey}` } }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(attributesPath(a)), 401, 'UNAUTHENTICATED');
    expectError(await client.get('/v1/environments/00000000-0000-4000-8000-000000000000/context-attributes', { token: a.member.token }), 404, 'NOT_FOUND');
    expectStatus(await client.get(attributesPath(a), { token: a.admin.token }), 200, 'the org admin reads too');
  });
});
