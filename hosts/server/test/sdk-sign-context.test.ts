import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { signContext } from '@switchyard/sdk';
import { createFlag } from './support/flag-fixtures.ts';
import { createClientKey, createSigningSecret } from './support/client-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// The Node SDK's signContext (docs/sdk.md "Signed contexts for browsers and apps"): checked with
// jose independently, then presented to OFREP as a browser would.

let ts: TestServer;
let client: ApiClient;
let a: Tenant;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  a = await seedTenant(client, (await loginAdmin(client)).token, 'sdk-sign');
  await createFlag(ts, client, a, {
    key: 'plan-flag',
    client_visible: true,
    value_type: 'bool',
    variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
    enabled: true,
    off_variant_key: 'off',
    rules: [{ id: 'enterprise', conditions: [{ attribute: 'plan', op: 'eq', values: ['enterprise'] }], variant_key: 'on' }],
  });
});
after(() => ts.stop());

test('signContext makes an HS256 token jose verifies, with kid, ck, sub, ctx, iat and exp = iat + ttl', async () => {
  const nowMs = Date.UTC(2026, 0, 1);
  const token = signContext({ secret: 'cs_test-secret', kid: 'env.kid', clientKeyId: 'key-id' }, { targetingKey: 'alice', plan: 'enterprise', seats: 5 }, { ttlMs: 600_000, nowMs });
  assert.deepEqual(decodeProtectedHeader(token), { alg: 'HS256', typ: 'JWT', kid: 'env.kid' });
  const { payload } = await jwtVerify(token, new TextEncoder().encode('cs_test-secret'), { algorithms: ['HS256'], currentDate: new Date(nowMs + 1000) });
  assert.deepEqual(payload, { ck: 'key-id', sub: 'alice', ctx: { plan: 'enterprise', seats: 5 }, iat: 1767225600, exp: 1767226200 });
  await assert.rejects(jwtVerify(token, new TextEncoder().encode('cs_other'), { algorithms: ['HS256'], currentDate: new Date(nowMs) }));
  assert.throws(() => signContext({ secret: 's', kid: 'k', clientKeyId: 'c' }, { targetingKey: 'a' }, { ttlMs: 24 * 3_600_000 + 1000 }), RangeError);
});

test('a token from signContext is accepted by OFREP and binds the context', async () => {
  const key = await createClientKey(client, a, { context_signing: 'context' });
  const { kid, secret } = await createSigningSecret(client, a);
  const token = signContext({ secret, kid, clientKeyId: key.id }, { targetingKey: 'alice', plan: 'free' }, { ttlMs: 60_000 });
  const answer = expectStatus(
    await client.post('/ofrep/v1/evaluate/flags/plan-flag', { headers: { 'x-api-key': key.raw, authorization: `Bearer ${token}` }, body: { context: { targetingKey: 'alice', plan: 'enterprise' } } }),
    200,
  );
  assert.equal(answer.variant, 'off', 'the signed plan (free) wins over the body (enterprise)');
});
