import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { auditLogPath, only, readAll } from './support/audit-log.ts';
import { api, assertNoSecrets, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Client keys over REST (docs/client-side.md "Keys"; issue 32): create, validation, PATCH, list,
// revocation, expiry and audit. Expected values are the rules written out by hand.

let ts: TestServer;
let client: ApiClient;
let a: Tenant;

const keysPath = (tenant: Tenant) => `/v1/management/environments/${tenant.environmentId}/sdk-keys`;
const keyPath = (tenant: Tenant, id: string) => `${keysPath(tenant)}/${id}`;
const create = (tenant: Tenant, body: unknown) => client.post(keysPath(tenant), { token: tenant.admin.token, body });
const patch = (tenant: Tenant, id: string, body: unknown) => client.request('PATCH', keyPath(tenant, id), { token: tenant.admin.token, body });
const listKeys = async (tenant: Tenant): Promise<Json[]> => expectStatus(await client.get(keysPath(tenant), { token: tenant.admin.token }), 200, 'list keys');
const ofrepWith = (rawKey: string) =>
  client.post('/ofrep/v1/evaluate/flags', { headers: { 'x-api-key': rawKey, origin: 'https://app.example.com' }, body: { context: { targetingKey: 'u' } } });

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'client-keys');
  // A gateway opens an environment's definitions with a server key's credential (see
  // client-key-access.test.ts): one server-key evaluation, so client keys can evaluate here.
  expectStatus(await client.post('/ofrep/v1/evaluate/flags', { sdkKey: a.rawKey, body: { context: { targetingKey: 'u' } } }), 200, 'server-key evaluation');
});
after(() => ts.stop());

describe('creating a client key', () => {
  test('kind "client": 201 with a ck_ raw key (once) and its settings, defaults filled in', async () => {
    const body = expectStatus(
      await create(a, { kind: 'client', name: 'Storefront', allowed_origins: ['https://app.example.com', 'https://*.shop.example.com', 'https://app.example.com'] }),
      201,
      'create',
    );
    assert.match(body.raw_key, /^ck_[A-Za-z0-9_-]{43}$/, '256 random bits, base64url, after ck_');
    assert.equal(body.key_prefix, body.raw_key.slice(0, body.key_prefix.length));
    assert.ok(body.key_prefix.length < body.raw_key.length);
    assert.equal(body.kind, 'client');
    assert.equal(body.name, 'Storefront');
    assert.deepEqual(body.allowed_origins, ['https://app.example.com', 'https://*.shop.example.com'], 'a repeated origin is kept once');
    assert.equal(body.allow_missing_origin, false);
    assert.equal(body.context_signing, 'off');
    assert.equal(body.include_disabled, false);
    assert.equal(body.expires_at_ms, null);
    assert.equal(body.environment_id, a.environmentId);
    assert.equal(typeof body.sdk_key_id, 'string');
    assert.equal((await ofrepWith(body.raw_key)).status, 200, 'the key works at once');
  });

  test('no body (or kind "server") keeps making server keys (sdk_)', async () => {
    const none = expectStatus(await client.post(keysPath(a), { token: a.admin.token }), 201);
    assert.match(none.raw_key, /^sdk_/);
    assert.equal(none.kind, 'server');
    const server = expectStatus(await create(a, { kind: 'server' }), 201);
    assert.match(server.raw_key, /^sdk_/);
    assert.equal(server.kind, 'server');
    assert.deepEqual(server.allowed_origins, []);
  });

  test('a native-app key: no origins, allow_missing_origin; every setting can be given', async () => {
    const expires = Date.now() + 86_400_000;
    const body = expectStatus(
      await create(a, { kind: 'client', name: 'iOS', allowed_origins: [], allow_missing_origin: true, context_signing: 'key', include_disabled: true, expires_at_ms: expires }),
      201,
    );
    assert.deepEqual(
      { origins: body.allowed_origins, missing: body.allow_missing_origin, signing: body.context_signing, disabled: body.include_disabled, expires: body.expires_at_ms },
      { origins: [], missing: true, signing: 'key', disabled: true, expires },
    );
  });

  test('exactly 50 origins are accepted; 51 are refused', async () => {
    const origins = (n: number) => Array.from({ length: n }, (_, i) => `https://app${i}.example.com`);
    expectStatus(await create(a, { kind: 'client', name: 'many', allowed_origins: origins(50) }), 201);
    expectError(await create(a, { kind: 'client', name: 'too many', allowed_origins: origins(51) }), 400, 'INVALID_ARGUMENT', /at most 50/);
  });

  test('origins not written as browsers send them are refused, naming the entry (400)', async () => {
    for (const origin of [
      'https://app.example.com/', // trailing slash
      'https://app.example.com/app', // path
      'https://app.example.com:443', // default port
      'http://app.example.com:80',
      'https://App.Example.com', // upper case
      '*', // wildcard forms
      'https://*',
      'https://*.com',
      '*.example.com',
      'https://a.*.example.com',
      'https://*example.com',
      'null',
      'app.example.com',
      'ftp://app.example.com',
    ]) {
      const response = await create(a, { kind: 'client', name: 'bad', allowed_origins: [origin] });
      expectError(response, 400, 'INVALID_ARGUMENT');
      assert.match(response.body.error, /allowed_origins/, origin);
    }
    expectError(await create(a, { kind: 'client', name: 'bad', allowed_origins: [42] }), 400, 'INVALID_ARGUMENT');
    expectError(await create(a, { kind: 'client', name: 'bad', allowed_origins: 'https://app.example.com' }), 400, 'INVALID_ARGUMENT');
  });

  test('other bad bodies: unknown kind, client fields on a server key, nothing allowed, wrong types, past expiry', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ kind: 'mobile', name: 'x', allowed_origins: ['https://a.example.com'] }, /kind/],
      [{ allowed_origins: ['https://a.example.com'] }, /client keys only/],
      [{ kind: 'server', allow_missing_origin: true }, /client keys only/],
      [{ kind: 'server', context_signing: 'key' }, /client keys only/],
      [{ kind: 'client', name: 'x' }, /allowed_origins|allow_missing_origin/],
      [{ kind: 'client', name: 'x', allowed_origins: [] }, /allowed_origins|allow_missing_origin/],
      [{ kind: 'client', name: 'x', allowed_origins: ['https://a.example.com'], allow_missing_origin: 'yes' }, /allow_missing_origin/],
      [{ kind: 'client', name: 'x', allowed_origins: ['https://a.example.com'], context_signing: 'sometimes' }, /context_signing/],
      [{ kind: 'client', name: 42, allowed_origins: ['https://a.example.com'] }, /name/],
      [{ kind: 'client', name: 'x'.repeat(201), allowed_origins: ['https://a.example.com'] }, /name/],
      [{ kind: 'client', name: 'x', allowed_origins: ['https://a.example.com'], expires_at_ms: Date.now() - 60_000 }, /expires_at_ms/],
      [{ kind: 'client', name: 'x', allowed_origins: ['https://a.example.com'], expires_at_ms: 'tomorrow' }, /expires_at_ms/],
      [{ kind: 'client', name: 'x', allowed_origins: ['https://a.example.com'], expires_at_ms: 1.5 }, /expires_at_ms/],
      [[{ kind: 'client' }], /object/],
    ];
    for (const [body, message] of cases) {
      const response = await create(a, body);
      expectError(response, 400, 'INVALID_ARGUMENT');
      assert.match(response.body.error, message, JSON.stringify(body));
    }
  });

  test('a member may not create keys; another org’s environment is not found', async () => {
    assert.equal((await client.post(keysPath(a), { token: a.member.token, body: { kind: 'client', name: 'x', allowed_origins: ['https://a.example.com'] } })).status, 403);
    const root = await loginAdmin(client);
    const b = await seedTenant(client, root.token, 'client-keys-b');
    const foreign = await client.post(keysPath(b), { token: a.admin.token, body: { kind: 'client', name: 'x', allowed_origins: ['https://a.example.com'] } });
    assert.equal(foreign.status, 404);
  });
});

describe('changing a client key (PATCH)', () => {
  let key: Json;

  before(async () => {
    key = expectStatus(await create(a, { kind: 'client', name: 'web', allowed_origins: ['https://app.example.com'], context_signing: 'off' }), 201);
  });

  test('only the given fields change', async () => {
    const renamed = expectStatus(await patch(a, key.sdk_key_id, { name: 'web (renamed)' }), 200, 'patch name');
    assert.equal(renamed.name, 'web (renamed)');
    assert.deepEqual(renamed.allowed_origins, ['https://app.example.com']);
    assert.equal(renamed.allow_missing_origin, false);
    assert.equal(renamed.context_signing, 'off');
    assert.equal(renamed.raw_key, undefined, 'a PATCH never shows the key');
    const moved = expectStatus(await patch(a, key.sdk_key_id, { allowed_origins: ['https://*.example.com'], include_disabled: true }), 200);
    assert.equal(moved.name, 'web (renamed)');
    assert.deepEqual(moved.allowed_origins, ['https://*.example.com']);
    assert.equal(moved.include_disabled, true);
    const listed = (await listKeys(a)).find((entry) => entry.sdk_key_id === key.sdk_key_id);
    assert.deepEqual(listed.allowed_origins, ['https://*.example.com'], 'the list shows the change');
  });

  test('a bad change is refused and changes nothing', async () => {
    expectError(await patch(a, key.sdk_key_id, { name: 'new name', allowed_origins: ['https://app.example.com/'] }), 400, 'INVALID_ARGUMENT');
    expectError(await patch(a, key.sdk_key_id, { allowed_origins: [] }), 400, 'INVALID_ARGUMENT');
    expectError(await patch(a, key.sdk_key_id, { kind: 'server' }), 400, 'INVALID_ARGUMENT');
    expectError(await patch(a, key.sdk_key_id, { expires_at_ms: Date.now() - 1 }), 400, 'INVALID_ARGUMENT');
    const listed = (await listKeys(a)).find((entry) => entry.sdk_key_id === key.sdk_key_id);
    assert.equal(listed.name, 'web (renamed)');
    assert.deepEqual(listed.allowed_origins, ['https://*.example.com']);
  });

  test('a server key, an unknown id or a revoked key: 404', async () => {
    expectError(await patch(a, a.sdkKeyId, { name: 'x' }), 404, 'NOT_FOUND');
    expectError(await patch(a, '00000000-0000-4000-8000-000000000000', { name: 'x' }), 404, 'NOT_FOUND');
    expectError(await patch(a, 'not-a-uuid', { name: 'x' }), 404, 'NOT_FOUND');
    const gone = expectStatus(await create(a, { kind: 'client', name: 'gone', allowed_origins: ['https://a.example.com'] }), 201);
    expectStatus(await client.delete(keyPath(a, gone.sdk_key_id), { token: a.admin.token }), 204);
    expectError(await patch(a, gone.sdk_key_id, { name: 'x' }), 404, 'NOT_FOUND');
  });
});

describe('listing, revoking and expiring', () => {
  test('the list holds both kinds with their settings, and never a raw key', async () => {
    const listed = await listKeys(a);
    const kinds = new Set(listed.map((entry) => entry.kind));
    assert.deepEqual([...kinds].sort(), ['client', 'server']);
    for (const entry of listed) {
      assert.equal(entry.raw_key, undefined);
      for (const field of ['name', 'allowed_origins', 'allow_missing_origin', 'context_signing', 'include_disabled', 'expires_at_ms']) assert.ok(field in entry, `${field} listed`);
    }
    const server = listed.find((entry) => entry.sdk_key_id === a.sdkKeyId);
    assert.equal(server.kind, 'server');
  });

  test('a client key may be revoked even when it is the only one; the last server key still may not', async () => {
    const root = await loginAdmin(client);
    const c = await seedTenant(client, root.token, 'client-keys-c');
    expectStatus(await client.post('/ofrep/v1/evaluate/flags', { sdkKey: c.rawKey, body: { context: { targetingKey: 'u' } } }), 200);
    const only = expectStatus(await create(c, { kind: 'client', name: 'only', allowed_origins: ['https://app.example.com'] }), 201);
    assert.equal((await ofrepWith(only.raw_key)).status, 200);
    expectStatus(await client.delete(keyPath(c, only.sdk_key_id), { token: c.admin.token }), 204, 'revoke the only client key');
    assert.equal((await ofrepWith(only.raw_key)).status, 401, 'revoked at once');
    expectError(await client.delete(keyPath(c, c.sdkKeyId), { token: c.admin.token }), 409, 'FAILED_PRECONDITION');
    assert.ok(!(await listKeys(c)).some((entry) => entry.sdk_key_id === only.sdk_key_id), 'gone from the list');
  });

  test('a key whose expiry passes stops authenticating, cached or not', async () => {
    const key = expectStatus(await create(a, { kind: 'client', name: 'short-lived', allowed_origins: ['https://app.example.com'] }), 201);
    assert.equal((await ofrepWith(key.raw_key)).status, 200, 'works, and is now cached');
    const soon = Date.now() + 1_000;
    expectStatus(await patch(a, key.sdk_key_id, { expires_at_ms: soon }), 200);
    assert.equal((await ofrepWith(key.raw_key)).status, 200, 'still before its expiry');
    await sleep(Math.max(0, soon - Date.now()) + 200);
    const expired = await ofrepWith(key.raw_key);
    assert.equal(expired.status, 401, 'expired');
    assert.equal((await ofrepWith(key.raw_key)).status, 401, 'and stays refused');
  });
});

describe('audit', () => {
  test('create, update and delete of a client key are recorded, without the raw key', async () => {
    const created = expectStatus(await create(a, { kind: 'client', name: 'audited', allowed_origins: ['https://app.example.com'] }), 201);
    expectStatus(await patch(a, created.sdk_key_id, { allowed_origins: ['https://other.example.com'] }), 200);
    expectStatus(await client.delete(keyPath(a, created.sdk_key_id), { token: a.admin.token }), 204);
    const entries = await readAll(client, a.admin.token, (query) => auditLogPath(a.orgId, query), { resource_type: 'sdk_key' });
    const createEntry = only(entries, 'sdk_key.create', created.sdk_key_id);
    assert.equal(createEntry.after.kind, 'client');
    assert.deepEqual(createEntry.after.allowed_origins, ['https://app.example.com']);
    const updateEntry = only(entries, 'sdk_key.update', created.sdk_key_id);
    assert.deepEqual(updateEntry.before.allowed_origins, ['https://app.example.com']);
    assert.deepEqual(updateEntry.after.allowed_origins, ['https://other.example.com']);
    only(entries, 'sdk_key.delete', created.sdk_key_id);
    const text = JSON.stringify(entries);
    assert.ok(!text.includes(created.raw_key), 'no raw key in the audit log');
    assert.ok(!text.includes('raw_key'), 'no raw_key field at all');
  });

  test('no log line holds a raw key or a token', () => {
    assertNoSecrets(ts.logs, client, ['password', 'token', 'raw_key']);
  });
});
