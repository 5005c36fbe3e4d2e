import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Evaluation keeps things between requests, process-wide: each flag's compiled rules and hash
// suffix, the JSON of its answers, the condition memo, and OFREP's ETags by context. Two tenants
// with a flag of the same key, the same variant keys, rules and conditions but other values must
// never be answered from each other's: every cache is keyed by the flag object or the environment,
// never by a key a tenant chooses.

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;

/** The same flag in shape for both tenants; only the values differ. */
const sharedFlag = (prefix: string) => ({
  key: 'checkout',
  enabled: true,
  flag: {
    value_type: 'string',
    variants: [
      { key: 'control', value: `${prefix}-control` },
      { key: 'treatment', value: `${prefix}-treatment` },
      { key: 'vip', value: `${prefix}-vip` },
    ],
    off_variant_key: 'control',
    rules: [
      { id: 'vip', conditions: [{ attribute: 'plan', op: 'eq', values: ['enterprise'] }], variant_key: 'vip' },
      {
        id: 'half',
        conditions: [],
        allocation: { buckets: [{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }] },
      },
    ],
  },
});

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'isolation-a');
  b = await seedTenant(client, root.token, 'isolation-b');
  for (const [tenant, prefix] of [[a, 'a'], [b, 'b']] as const) {
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: sharedFlag(prefix) }), 201);
  }
});
after(() => ts.stop());

const evaluateOne = async (tenant: Tenant, body: Json): Promise<Json> =>
  expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_type: 'user', ...body } }), 200);

test('the same flag key, rules and context in two tenants: each is answered with its own values, one flag and all flags', async () => {
  for (let i = 0; i < 40; i++) {
    const plan = i % 4 === 0 ? 'enterprise' : 'free';
    // Interleaved, so whatever one tenant's request keeps is there when the other's comes.
    for (const [tenant, prefix] of [[a, 'a'], [b, 'b'], [a, 'a']] as const) {
      const one = await evaluateOne(tenant, { context_key: `user-${i}`, attributes: { plan }, flag_key: 'checkout' });
      assert.ok(String(one.value).startsWith(`${prefix}-`), `tenant ${prefix} got ${String(one.value)}`);
      if (plan === 'enterprise') assert.equal(one.value, `${prefix}-vip`);
      const all = await evaluateOne(tenant, { context_key: `user-${i}`, attributes: { plan } });
      const flags = all.flags as Json[];
      assert.equal(flags.length, 1);
      assert.equal(flags[0]!.value, one.value, 'all flags and one flag agree');
    }
  }
});

test("OFREP: each tenant's own values, and one tenant's ETag for the same context is not a 304 in another", async () => {
  const context = { context: { targetingKey: 'user-7', plan: 'free' } };
  const bulk = async (tenant: Tenant, etag?: string) =>
    client.post('/ofrep/v1/evaluate/flags', { sdkKey: tenant.rawKey, body: context, headers: etag === undefined ? {} : { 'if-none-match': etag } });
  const fromA = await bulk(a);
  assert.equal(fromA.status, 200);
  const etagA = fromA.headers.get('etag');
  assert.ok(etagA);
  assert.match(String((fromA.body as { flags: Json[] }).flags[0]!.value), /^a-/);
  // B presents A's ETag for the very same context: B's answer differs, so it is sent in full.
  const fromB = await bulk(b, etagA);
  assert.equal(fromB.status, 200, 'another tenant’s ETag is not a match');
  assert.match(String((fromB.body as { flags: Json[] }).flags[0]!.value), /^b-/);
  assert.notEqual(fromB.headers.get('etag'), etagA);
  // A's own ETag still gives A its 304.
  assert.equal((await bulk(a, etagA)).status, 304);
  const single = await client.post('/ofrep/v1/evaluate/flags/checkout', { sdkKey: b.rawKey, body: context });
  assert.equal(single.status, 200);
  assert.match(String((single.body as Json).value), /^b-/);
});
