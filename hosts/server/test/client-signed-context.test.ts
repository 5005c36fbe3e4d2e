import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createFlag } from './support/flag-fixtures.ts';
import { createClientKey, createSigningSecret, signToken, signingSecretsOf } from './support/client-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type ApiResponse, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Signed contexts (docs/client-side.md "4. Signed contexts"): secrets per environment, and OFREP
// for client keys bound to the context a customer's backend signed. Tokens are made with jose's
// SignJWT here, independently of the server's verification.

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;

const SINGLE = (key: string) => `/ofrep/v1/evaluate/flags/${key}`;
const BULK = '/ofrep/v1/evaluate/flags';

/** `plan-flag`: `on` for plan = enterprise, else the default `off` (hand-derived expectations below). */
const PLAN_FLAG = {
  key: 'plan-flag',
  client_visible: true,
  value_type: 'bool' as const,
  variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
  enabled: true,
  off_variant_key: 'off',
  rules: [{ id: 'enterprise', conditions: [{ attribute: 'plan', op: 'eq', values: ['enterprise'] }], variant_key: 'on' }],
};
/** `vip-flag`: `yes` for the targeting key alice only, else `no`. */
const VIP_FLAG = {
  key: 'vip-flag',
  client_visible: true,
  value_type: 'string' as const,
  variants: [{ key: 'yes', value: 'Y' }, { key: 'no', value: 'N' }],
  enabled: true,
  off_variant_key: 'no',
  rules: [{ id: 'alice', conditions: [{ attribute: 'key', op: 'in', values: ['alice'] }], variant_key: 'yes' }],
};

let keyMode: { id: string; raw: string };
let contextMode: { id: string; raw: string };
let offMode: { id: string; raw: string };
let secretA: { kid: string; secret: string };
let secretB: { kid: string; secret: string };

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'sign-a');
  b = await seedTenant(client, root.token, 'sign-b');
  await createFlag(ts, client, a, PLAN_FLAG);
  await createFlag(ts, client, a, VIP_FLAG);
  keyMode = await createClientKey(client, a, { context_signing: 'key' });
  contextMode = await createClientKey(client, a, { context_signing: 'context' });
  offMode = await createClientKey(client, a, { context_signing: 'off' });
  secretA = await createSigningSecret(client, a);
  secretB = await createSigningSecret(client, b);
});
after(() => ts.stop());

/** An OFREP request as the stock web provider sends it with a client key: X-API-Key, and the token as Bearer. */
function ofrep(path: string, key: string, token: string | undefined, context: Record<string, unknown>): Promise<ApiResponse> {
  const headers: Record<string, string> = { 'x-api-key': key };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return client.post(path, { headers, body: { context } });
}

const variantOf = (body: Json, key: string): unknown => (body.flags as Json[]).find((entry) => entry.key === key)?.variant;

describe('context signing secrets', () => {
  test('created by an org_admin: a kid naming the environment and a 256-bit secret, shown once; listed without it; deleted', async () => {
    const created = expectStatus(await client.post(signingSecretsOf(a.environmentId), { token: a.admin.token }), 201);
    assert.match(created.kid, new RegExp(`^${a.environmentId}\\.[A-Za-z0-9_-]+$`));
    // cs_ + base64url of 32 random bytes (43 characters): 256 bits
    assert.match(created.secret, /^cs_[A-Za-z0-9_-]{43}$/);
    assert.equal(typeof created.created_at_ms, 'number');
    const listed = expectStatus(await client.get(signingSecretsOf(a.environmentId), { token: a.admin.token }), 200);
    assert.ok(listed.some((entry: Json) => entry.kid === created.kid));
    for (const entry of listed) assert.equal(entry.secret, undefined, 'a listed secret never carries its value');
    assert.ok(!JSON.stringify(listed).includes(created.secret));
    assert.equal((await client.delete(`${signingSecretsOf(a.environmentId)}/${encodeURIComponent(created.kid)}`, { token: a.admin.token })).status, 204);
    const after = expectStatus(await client.get(signingSecretsOf(a.environmentId), { token: a.admin.token }), 200);
    assert.ok(!after.some((entry: Json) => entry.kid === created.kid));
    expectError(await client.delete(`${signingSecretsOf(a.environmentId)}/${encodeURIComponent(created.kid)}`, { token: a.admin.token }), 404, 'NOT_FOUND');
    // audited, never with the secret
    const audit = await ts.server.database.sql<{ action: string; text: string }[]>`
      SELECT action, to_jsonb(audit_log)::text AS text FROM audit_log WHERE resource_id = ${created.kid} ORDER BY action`;
    assert.deepEqual(audit.map((row) => row.action), ['context_signing_secret.create', 'context_signing_secret.delete']);
    for (const row of audit) assert.ok(!row.text.includes(created.secret), 'the audit entry holds no secret');
    const stored = await ts.server.database.sql<{ sealed_secret: string }[]>`SELECT sealed_secret FROM context_signing_secrets WHERE kid = ${secretA.kid}`;
    assert.ok(!stored[0]!.sealed_secret.includes(secretA.secret.slice(3)), 'stored sealed, not in plaintext');
  });

  test('org members, SDK keys and other orgs cannot manage them; at most 10 per environment', async () => {
    expectError(await client.post(signingSecretsOf(a.environmentId), { token: a.member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(signingSecretsOf(a.environmentId), { token: a.member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(signingSecretsOf(a.environmentId), { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(`${signingSecretsOf(a.environmentId)}/${encodeURIComponent(secretA.kid)}`, { token: b.admin.token }), 404, 'NOT_FOUND');
    assert.equal((await client.post(signingSecretsOf(a.environmentId), { sdkKey: a.rawKey })).status, 401);
    const tenant = await seedTenant(client, root.token, 'sign-cap');
    for (let i = 0; i < 10; i++) expectStatus(await client.post(signingSecretsOf(tenant.environmentId), { token: tenant.admin.token }), 201);
    expectError(await client.post(signingSecretsOf(tenant.environmentId), { token: tenant.admin.token }), 409, 'FAILED_PRECONDITION');
  });
});

describe('OFREP with a signed context', () => {
  test("context mode: the token's attributes win over the body's, on the single and the bulk route", async () => {
    const token = await signToken(secretA.secret, secretA.kid, { ck: contextMode.id, sub: 'bob', ctx: { plan: 'free' } });
    // The body claims enterprise; the token vouches for free: off (without the binding: on).
    const single = expectStatus(await ofrep(SINGLE('plan-flag'), contextMode.raw, token, { targetingKey: 'bob', plan: 'enterprise' }), 200);
    assert.equal(single.variant, 'off');
    const bulk = expectStatus(await ofrep(BULK, contextMode.raw, token, { targetingKey: 'bob', plan: 'enterprise' }), 200);
    assert.equal(variantOf(bulk, 'plan-flag'), 'off');
    // A token that vouches for enterprise: on, whatever the body says.
    const enterprise = await signToken(secretA.secret, secretA.kid, { ck: contextMode.id, sub: 'bob', ctx: { plan: 'enterprise' } });
    assert.equal(expectStatus(await ofrep(SINGLE('plan-flag'), contextMode.raw, enterprise, { targetingKey: 'bob', plan: 'free' }), 200).variant, 'on');
    // No targetingKey in the body: the token's sub is the targeting key (alice gets yes).
    const alice = await signToken(secretA.secret, secretA.kid, { ck: contextMode.id, sub: 'alice', ctx: {} });
    assert.equal(expectStatus(await ofrep(SINGLE('vip-flag'), contextMode.raw, alice, {}), 200).variant, 'yes');
  });

  test('key mode: the targeting key must be the token’s sub; attributes stay the body’s', async () => {
    const token = await signToken(secretA.secret, secretA.kid, { ck: keyMode.id, sub: 'bob', ctx: { plan: 'free' } });
    assert.equal((await ofrep(SINGLE('vip-flag'), keyMode.raw, token, { targetingKey: 'alice' })).status, 403);
    assert.equal((await ofrep(BULK, keyMode.raw, token, { targetingKey: 'alice' })).status, 403);
    assert.equal(expectStatus(await ofrep(SINGLE('vip-flag'), keyMode.raw, token, { targetingKey: 'bob' }), 200).variant, 'no');
    // key mode vouches for the key only: the body's plan applies.
    assert.equal(expectStatus(await ofrep(SINGLE('plan-flag'), keyMode.raw, token, { targetingKey: 'bob', plan: 'enterprise' }), 200).variant, 'on');
  });

  test('missing, expired, forged, over-long, wrong-ck or unknown-kid tokens: 401; another environment’s: 403', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const ctx = { targetingKey: 'bob' };
    for (const [path, body] of [[SINGLE('plan-flag'), ctx], [BULK, ctx]] as const) {
      assert.equal((await ofrep(path, contextMode.raw, undefined, body)).status, 401, 'missing');
      const expired = await signToken(secretA.secret, secretA.kid, { ck: contextMode.id, sub: 'bob', iat: nowS - 7200, exp: nowS - 3600 });
      assert.equal((await ofrep(path, contextMode.raw, expired, body)).status, 401, 'expired');
      const forged = await signToken(`${secretA.secret}x`, secretA.kid, { ck: contextMode.id, sub: 'bob' });
      assert.equal((await ofrep(path, contextMode.raw, forged, body)).status, 401, 'forged');
      const tooLong = await signToken(secretA.secret, secretA.kid, { ck: contextMode.id, sub: 'bob', iat: nowS, exp: nowS + 24 * 3600 + 1 });
      assert.equal((await ofrep(path, contextMode.raw, tooLong, body)).status, 401, 'exp more than 24 h after iat');
      const otherKey = await signToken(secretA.secret, secretA.kid, { ck: keyMode.id, sub: 'bob' });
      assert.equal((await ofrep(path, contextMode.raw, otherKey, body)).status, 401, 'a token for another client key');
      const unknownKid = await signToken(secretA.secret, `${a.environmentId}.nope`, { ck: contextMode.id, sub: 'bob' });
      assert.equal((await ofrep(path, contextMode.raw, unknownKid, body)).status, 401, 'unknown kid');
      const none = await signToken(secretA.secret, secretA.kid, { ck: contextMode.id, sub: 'bob' }, 'HS512');
      assert.equal((await ofrep(path, contextMode.raw, none, body)).status, 401, 'not HS256');
      const otherEnvironment = await signToken(secretB.secret, secretB.kid, { ck: contextMode.id, sub: 'bob' });
      assert.equal((await ofrep(path, contextMode.raw, otherEnvironment, body)).status, 403, "another environment's secret");
    }
    // A token within 24 h works (the same claims, exp just inside the cap).
    const maximal = await signToken(secretA.secret, secretA.kid, { ck: contextMode.id, sub: 'bob', iat: nowS, exp: nowS + 24 * 3600 });
    assert.equal((await ofrep(SINGLE('plan-flag'), contextMode.raw, maximal, ctx)).status, 200);
  });

  test('signing off: a Bearer value beside the key is ignored', async () => {
    const answer = expectStatus(await ofrep(SINGLE('plan-flag'), offMode.raw, 'not-a-token', { targetingKey: 'bob', plan: 'enterprise' }), 200);
    assert.equal(answer.variant, 'on');
  });

  test('a deleted secret stops verifying at once; a rotated-in one works beside the old', async () => {
    const rotated = await createSigningSecret(client, a);
    const oldToken = await signToken(secretA.secret, secretA.kid, { ck: contextMode.id, sub: 'bob' });
    const newToken = await signToken(rotated.secret, rotated.kid, { ck: contextMode.id, sub: 'bob' });
    assert.equal((await ofrep(SINGLE('plan-flag'), contextMode.raw, oldToken, { targetingKey: 'bob' })).status, 200);
    assert.equal((await ofrep(SINGLE('plan-flag'), contextMode.raw, newToken, { targetingKey: 'bob' })).status, 200);
    assert.equal((await client.delete(`${signingSecretsOf(a.environmentId)}/${encodeURIComponent(rotated.kid)}`, { token: a.admin.token })).status, 204);
    assert.equal((await ofrep(SINGLE('plan-flag'), contextMode.raw, newToken, { targetingKey: 'bob' })).status, 401);
    assert.equal((await ofrep(SINGLE('plan-flag'), contextMode.raw, oldToken, { targetingKey: 'bob' })).status, 200);
  });
});
