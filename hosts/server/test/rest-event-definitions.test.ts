import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let it: TestServer;
let client: ApiClient;
let system: LoggedInUser;
let tenant: Tenant;
let other: Tenant;

const definitions = (environmentId = tenant.environmentId) => `/v1/environments/${environmentId}/event-definitions`;
const RECORD_FIELDS = ['client_allowed', 'created_at_ms', 'description', 'environment_id', 'key', 'value_type'];

before(async () => {
  it = await startTestServer({}, { share: true });
  client = api(it.base);
  system = await loginAdmin(client);
  tenant = await seedTenant(client, system.token, 'defs');
  other = await seedTenant(client, system.token, 'other');
});

after(async () => {
  await it.stop();
});

describe('event definitions: create, read, update, delete', () => {
  test('create answers 202 with the record {key, description, value_type, client_allowed, environment_id, created_at_ms}', async () => {
    const startedAt = Date.now();
    const created = expectStatus(
      await client.post(definitions(), { token: tenant.admin.token, body: { key: 'checkout.completed', description: 'Paid an order', value_type: 'bool' } }),
      202,
    );
    assert.deepEqual(Object.keys(created).sort(), RECORD_FIELDS);
    assert.equal(created.key, 'checkout.completed');
    assert.equal(created.description, 'Paid an order');
    assert.equal(created.value_type, 'bool');
    assert.equal(created.client_allowed, false, 'client keys may not send it unless marked');
    assert.equal(created.environment_id, tenant.environmentId);
    assert.ok(Number.isInteger(created.created_at_ms) && created.created_at_ms >= startedAt - 1_000);
  });

  test('an org_member may create; the description defaults to ""', async () => {
    const created = expectStatus(await client.post(definitions(), { token: tenant.member.token, body: { key: 'clicks', value_type: 'int' } }), 202);
    assert.equal(created.description, '');
    expectStatus(await client.post(definitions(), { token: tenant.member.token, body: { key: 'revenue', value_type: 'double', description: null } }), 202);
  });

  test('list answers 200 with every definition in key order; get one answers 200', async () => {
    const listed = expectStatus(await client.get(definitions(), { token: tenant.member.token }), 200);
    assert.deepEqual(
      listed.map((d: { key: string; value_type: string }) => [d.key, d.value_type]),
      [
        ['checkout.completed', 'bool'],
        ['clicks', 'int'],
        ['revenue', 'double'],
      ],
    );
    for (const record of listed) assert.deepEqual(Object.keys(record).sort(), RECORD_FIELDS);
    const one = expectStatus(await client.get(`${definitions()}/clicks`, { token: tenant.member.token }), 200);
    assert.deepEqual(one, listed[1]);
  });

  test('a key taken in the environment → 409 ALREADY_EXISTS', async () => {
    expectError(await client.post(definitions(), { token: tenant.admin.token, body: { key: 'clicks', value_type: 'bool' } }), 409, 'ALREADY_EXISTS');
  });

  test('update answers 202 with the record; fields left out keep their value', async () => {
    const described = expectStatus(
      await client.request('PUT', `${definitions()}/clicks`, { token: tenant.member.token, body: { description: 'Button clicks' } }),
      202,
    );
    assert.equal(described.description, 'Button clicks');
    assert.equal(described.value_type, 'int');
    const retyped = expectStatus(await client.request('PUT', `${definitions()}/clicks`, { token: tenant.member.token, body: { value_type: 'double' } }), 202);
    assert.equal(retyped.description, 'Button clicks');
    assert.equal(retyped.value_type, 'double');
    assert.equal(retyped.created_at_ms, described.created_at_ms);
    assert.deepEqual(expectStatus(await client.get(`${definitions()}/clicks`, { token: tenant.member.token }), 200), retyped);
  });

  test('a type change applies to the next event at once (the ingest cache is dropped)', async () => {
    const send = (value: unknown) =>
      client.post(`/v1/environments/${tenant.environmentId}/events`, { sdkKey: tenant.rawKey, body: { metric_key: 'revenue', context_type: 'user', context_key: 'u1', value } });
    assert.deepEqual(expectStatus(await send(true), 202), { accepted_count: 0, rejected_keys: ['revenue'], rejected: [{ index: 0, key: 'revenue', reason: 'wrong_value_type' }] });
    expectStatus(await client.request('PUT', `${definitions()}/revenue`, { token: tenant.member.token, body: { value_type: 'bool' } }), 202);
    assert.deepEqual(expectStatus(await send(true), 202), { accepted_count: 1, rejected_keys: [], rejected: [] });
    expectStatus(await client.delete(`${definitions()}/revenue`, { token: tenant.member.token }), 204);
    assert.deepEqual(expectStatus(await send(true), 202), { accepted_count: 0, rejected_keys: ['revenue'], rejected: [{ index: 0, key: 'revenue', reason: 'unknown_metric' }] });
  });

  test('update of the key itself → 400; of an unknown definition → 404', async () => {
    expectError(await client.request('PUT', `${definitions()}/clicks`, { token: tenant.member.token, body: { key: 'taps' } }), 400, 'INVALID_ARGUMENT');
    expectError(await client.request('PUT', `${definitions()}/missing`, { token: tenant.member.token, body: { description: 'x' } }), 404, 'NOT_FOUND');
  });

  test('delete answers 204; the definition is gone (404), a second delete is 404', async () => {
    expectStatus(await client.delete(`${definitions()}/checkout.completed`, { token: tenant.member.token }), 204);
    expectError(await client.get(`${definitions()}/checkout.completed`, { token: tenant.member.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(`${definitions()}/checkout.completed`, { token: tenant.member.token }), 404, 'NOT_FOUND');
    const keys = expectStatus(await client.get(definitions(), { token: tenant.member.token }), 200).map((d: { key: string }) => d.key);
    assert.deepEqual(keys, ['clicks']);
  });
});

describe('event definitions: validation', () => {
  test('keys in the flag-key format only', async () => {
    for (const key of ['', 'has space', '-leading', 'a'.repeat(129), 'slash/key', 'ümlaut']) {
      expectError(await client.post(definitions(), { token: tenant.admin.token, body: { key, value_type: 'bool' } }), 400, 'INVALID_ARGUMENT');
    }
    for (const key of ['a', 'A1', 'page:view', 'x_y-z.w', 'a'.repeat(128)]) {
      expectStatus(await client.post(definitions(), { token: tenant.admin.token, body: { key, value_type: 'bool' } }), 202, key);
    }
  });

  test('value_type bool, int or double only; key and value_type are required', async () => {
    for (const body of [
      { key: 'k1', value_type: 'string' },
      { key: 'k1', value_type: 'BOOL' },
      { key: 'k1', value_type: 1 },
      { key: 'k1' },
      { value_type: 'int' },
    ]) {
      expectError(await client.post(definitions(), { token: tenant.admin.token, body }), 400, 'INVALID_ARGUMENT');
    }
    expectError(await client.request('PUT', `${definitions()}/clicks`, { token: tenant.admin.token, body: { value_type: 'json' } }), 400, 'INVALID_ARGUMENT');
  });

  test('a description of at most 2000 characters', async () => {
    expectStatus(await client.post(definitions(), { token: tenant.admin.token, body: { key: 'long', value_type: 'int', description: 'd'.repeat(2000) } }), 202);
    expectError(
      await client.post(definitions(), { token: tenant.admin.token, body: { key: 'longer', value_type: 'int', description: 'd'.repeat(2001) } }),
      400,
      'INVALID_ARGUMENT',
    );
    expectError(await client.request('PUT', `${definitions()}/long`, { token: tenant.admin.token, body: { description: 'd'.repeat(2001) } }), 400, 'INVALID_ARGUMENT');
  });
});

describe('event definitions: who may use them', () => {
  test('no bearer token → 401; an SDK key is not accepted (bearer only)', async () => {
    expectError(await client.get(definitions()), 401, 'UNAUTHENTICATED');
    expectError(await client.get(definitions(), { sdkKey: tenant.rawKey }), 401, 'UNAUTHENTICATED');
    expectError(await client.post(definitions(), { sdkKey: tenant.rawKey, body: { key: 'sdk', value_type: 'bool' } }), 401, 'UNAUTHENTICATED');
  });

  test('a bearer token of another org → 404 on every route, and nothing changes', async () => {
    const token = other.admin.token;
    expectError(await client.get(definitions(), { token }), 404, 'NOT_FOUND');
    expectError(await client.post(definitions(), { token, body: { key: 'planted', value_type: 'bool' } }), 404, 'NOT_FOUND');
    expectError(await client.get(`${definitions()}/clicks`, { token }), 404, 'NOT_FOUND');
    expectError(await client.request('PUT', `${definitions()}/clicks`, { token, body: { description: 'hijacked' } }), 404, 'NOT_FOUND');
    expectError(await client.delete(`${definitions()}/clicks`, { token }), 404, 'NOT_FOUND');
    const mine = expectStatus(await client.get(`${definitions()}/clicks`, { token: tenant.admin.token }), 200);
    assert.equal(mine.description, 'Button clicks');
    expectError(await client.get(`${definitions()}/planted`, { token: tenant.admin.token }), 404, 'NOT_FOUND');
  });

  test('the other org has its own namespace of keys', async () => {
    expectStatus(await client.post(definitions(other.environmentId), { token: other.member.token, body: { key: 'clicks', value_type: 'bool' } }), 202);
    const theirs = expectStatus(await client.get(definitions(other.environmentId), { token: other.member.token }), 200);
    assert.deepEqual(theirs.map((d: { key: string }) => d.key), ['clicks']);
  });

  test('a system-org user → 403; an unknown environment → 404', async () => {
    expectError(await client.get(definitions(), { token: system.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(definitions('00000000-0000-4000-8000-000000000000'), { token: tenant.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(definitions('not-a-uuid'), { token: tenant.admin.token }), 404, 'NOT_FOUND');
  });
});
