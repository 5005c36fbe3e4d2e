import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { createFlag } from './support/flag-fixtures.ts';
import { segmentClient } from './support/grpc-flag-clients.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type ApiResponse, type Tenant } from './support/rest-client.ts';
import { endsWith, openInternalSync, openSync, sdkKeyMetadata } from './support/sync-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// What a client key may do (docs/client-side.md "Keys"): OFREP, exposures and events; everything
// else refused — deny by default (packages/core/src/rbac/authorize.ts). Each refusal below is an
// attack of issue 32 ("a client key on the sync stream, list-check, REST evaluate, management")
// and fails if a client key were treated as a server key or a user.

const ORIGIN = 'https://app.example.com';

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let clientKey: string;
let root: { token: string };
let clientKeyId: string;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'ck-access');
  const created = expectStatus(
    await client.post(`/v1/management/environments/${a.environmentId}/sdk-keys`, {
      token: a.admin.token,
      body: { kind: 'client', name: 'web', allowed_origins: [ORIGIN], allow_missing_origin: true },
    }),
    201,
    'create client key',
  );
  clientKey = created.raw_key;
  clientKeyId = created.sdk_key_id;
  assert.match(clientKey, /^ck_/);
  // A flag and a list segment, so that a refusal is not an empty answer by accident.
  await createFlag(ts, client, a, { key: 'checkout', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], enabled: true });
  expectStatus(
    await client.post(`/v1/environments/${a.environmentId}/segments`, {
      token: a.admin.token,
      body: { key: 'banned', kind: 'list', context_type: 'user', included_keys: ['mallory'] },
    }),
    201,
    'create list segment',
  );
});
after(() => ts.stop());

const expect403 = (response: ApiResponse, what: string) => {
  assert.equal(response.status, 403, `${what}: ${response.text}`);
  assert.equal(response.body?.code, 'PERMISSION_DENIED', what);
};

describe('a client key is refused everywhere but its own routes', () => {
  test('the public sync stream: PERMISSION_DENIED, with or without an environment id', async () => {
    for (const request of [{ environment_id: a.environmentId }, {}]) {
      const stream = openSync(ts.server.syncGrpcPort, request, sdkKeyMetadata(clientKey));
      await endsWith(stream, grpc.status.PERMISSION_DENIED);
      assert.equal(stream.messages.length, 0, 'no definitions were sent');
    }
  });

  test('FlagService.Sync on the internal port: PERMISSION_DENIED', async () => {
    const stream = openInternalSync(ts.server.grpcPort, { environment_id: a.environmentId }, sdkKeyMetadata(clientKey));
    await endsWith(stream, grpc.status.PERMISSION_DENIED);
    assert.equal(stream.messages.length, 0);
  });

  test('FlagService.SyncForClientEvaluation (a gateway answering a client key) refuses server keys and other environments', async () => {
    const server = openInternalSync(ts.server.grpcPort, { environment_id: a.environmentId }, sdkKeyMetadata(a.rawKey), 'SyncForClientEvaluation');
    await endsWith(server, grpc.status.PERMISSION_DENIED);
    assert.equal(server.messages.length, 0, 'a server key syncs through Sync, not here');
    const b = await seedTenant(client, root.token, 'ck-sync-other');
    const other = openInternalSync(ts.server.grpcPort, { environment_id: b.environmentId }, sdkKeyMetadata(clientKey), 'SyncForClientEvaluation');
    await endsWith(other, grpc.status.PERMISSION_DENIED);
    assert.equal(other.messages.length, 0, 'another environment');
  });

  test('list-check (REST, both batch spellings, and gRPC EvaluateMembership): 403 / PERMISSION_DENIED', async () => {
    const query = { segment_key: 'banned', context_key: 'mallory', context_type: 'user' };
    const variants: Array<Record<string, string>> = [{ 'x-sdk-key': clientKey }, { 'x-sdk-key': clientKey, origin: ORIGIN }];
    for (const headers of variants) {
      expect403(await client.post(`/v1/environments/${a.environmentId}/segments/list-check`, { headers, body: query }), 'list-check');
      expect403(await client.post(`/v1/environments/${a.environmentId}/segments/list-check/batch`, { headers, body: [query] }), 'list-check/batch');
      expect403(await client.post(`/v1/environments/${a.environmentId}/segments/batch-list-check`, { headers, body: [query] }), 'batch-list-check');
    }
    const segments = segmentClient(ts.server.grpcPort);
    try {
      await assert.rejects(segments.evaluateMembership({ environment_id: a.environmentId, ...query }, sdkKeyMetadata(clientKey)), (error: grpc.ServiceError) => {
        assert.equal(grpc.status[error.code], 'PERMISSION_DENIED', error.details);
        return true;
      });
    } finally {
      segments.close();
    }
  });

  test('REST evaluate: 403', async () => {
    const body = { context_key: 'user-1', context_type: 'user' };
    expect403(await client.post(`/v1/environments/${a.environmentId}/evaluate`, { sdkKey: clientKey, body }), 'evaluate');
    expect403(await client.post(`/v1/environments/${a.environmentId}/evaluate`, { sdkKey: clientKey, body: { ...body, flag_key: 'checkout' } }), 'evaluate one flag');
  });

  test('management and definitions: 401 where only a user token is accepted, 403 where a key is a credential of the wrong kind', async () => {
    const env = a.environmentId;
    // Routes that take a user's bearer token only: a key is no credential at all there.
    for (const [method, path] of [
      ['GET', `/v1/management/environments/${env}/sdk-keys`],
      ['POST', `/v1/management/environments/${env}/sdk-keys`],
      ['GET', `/v1/environments/${env}/flags`],
      ['GET', `/v1/environments/${env}/flags/checkout`],
      ['GET', `/v1/management/orgs/${a.orgId}/audit-log`],
    ] as const) {
      const ways: Array<Record<string, string>> = [{ 'x-sdk-key': clientKey }, { authorization: `Bearer ${clientKey}` }, { 'x-api-key': clientKey }];
      for (const headers of ways) {
        const response = await client.request(method, path, { headers, ...(method === 'POST' ? { body: {} } : {}) });
        assert.equal(response.status, 401, `${method} ${path} ${Object.keys(headers)[0]}: ${response.text}`);
      }
    }
    // Segment routes take a key (for list-check): the key authenticates and RBAC refuses it.
    expect403(await client.get(`/v1/environments/${env}/segments`, { sdkKey: clientKey }), 'list segments');
    expect403(await client.get(`/v1/environments/${env}/segments/banned`, { sdkKey: clientKey }), 'read a segment');
    expect403(
      await client.post(`/v1/environments/${env}/segments`, { sdkKey: clientKey, body: { key: 'x', kind: 'list', context_type: 'user' } }),
      'create a segment',
    );
    // The key was refused, not unknown: it still works where it belongs.
    const ok = await client.post('/ofrep/v1/evaluate/flags', { headers: { 'x-api-key': clientKey }, body: { context: { targetingKey: 'u' } } });
    assert.notEqual(ok.status, 401);
  });
});

describe('a client key may use OFREP, exposures and events', () => {
  const bulk = (headers: Record<string, string>) => client.post('/ofrep/v1/evaluate/flags', { headers, body: { context: { targetingKey: 'user-1' } } });

  test(
    'OFREP answers a client key in an environment no server key has opened on this instance',
    // A gateway loads definitions with its first caller's credential; a client key, which may not
    // sync, opens them through FlagService.SyncForClientEvaluation (internal port only).
    async () => {
      const response = await bulk({ 'x-api-key': clientKey, origin: ORIGIN });
      assert.equal(response.status, 200, response.text);
    },
  );

  test('OFREP takes the key as X-API-Key, x-sdk-key or Authorization: Bearer', async () => {
    expectStatus(await bulk({ 'x-sdk-key': a.rawKey }), 200, 'server key');
    const ways: Array<Record<string, string>> = [{ 'x-api-key': clientKey }, { 'x-sdk-key': clientKey }, { authorization: `Bearer ${clientKey}` }];
    const origins: Array<Record<string, string>> = [{}, { origin: ORIGIN }];
    for (const headers of ways) {
      for (const origin of origins) {
        const response = await bulk({ ...headers, ...origin });
        assert.equal(response.status, 200, `${JSON.stringify(Object.keys({ ...headers, ...origin }))}: ${response.text}`);
        assert.ok(Array.isArray(response.body.flags));
      }
    }
    const single = await client.post('/ofrep/v1/evaluate/flags/checkout', { headers: { 'x-api-key': clientKey, origin: ORIGIN }, body: { context: { targetingKey: 'u' } } });
    assert.notEqual(single.status, 401);
    assert.notEqual(single.status, 403);
  });

  test('with the key in X-API-Key, a Bearer beside it is not taken for a user token (it is the signed-context slot)', async () => {
    expectStatus(await bulk({ 'x-sdk-key': a.rawKey }), 200, 'server key');
    // A user's valid token beside the client key: still the client key's request, not the user's.
    const response = await bulk({ 'x-api-key': clientKey, authorization: `Bearer ${a.admin.token}`, origin: ORIGIN });
    assert.notEqual(response.status, 403, 'not refused as a user token on OFREP');
    // A user token alone is a credential of the wrong kind on OFREP, as before.
    assert.equal((await bulk({ authorization: `Bearer ${a.admin.token}` })).status, 403);
  });

  test('two different keys in X-API-Key and x-sdk-key: 401', async () => {
    assert.equal((await bulk({ 'x-api-key': clientKey, 'x-sdk-key': a.rawKey })).status, 401);
  });

  test('exposures, events and event batches accept the key in X-API-Key or x-sdk-key (202)', async () => {
    const ways: Array<Record<string, string>> = [{ 'x-api-key': clientKey, origin: ORIGIN }, { 'x-sdk-key': clientKey, origin: ORIGIN }];
    for (const headers of ways) {
      for (const [path, body] of [
        [`/v1/environments/${a.environmentId}/exposures`, []],
        [`/v1/environments/${a.environmentId}/events/batch`, []],
      ] as const) {
        const response = await client.post(path, { headers, body });
        assert.equal(response.status, 202, `${path}: ${response.text}`);
        assert.match(response.headers.get('access-control-allow-origin') ?? '', /^https:\/\/app\.example\.com$/);
      }
    }
    // One event to a metric no definition names: accepted as a request, rejected as an entry.
    const single = await client.post(`/v1/environments/${a.environmentId}/events`, {
      headers: { 'x-api-key': clientKey, origin: ORIGIN },
      body: { metric_key: 'no-such-metric', context_type: 'user', context_key: 'u' },
    });
    assert.notEqual(single.status, 401, single.text);
    assert.notEqual(single.status, 403, single.text);
  });

  test('a key of another environment is refused on exposures and events (403)', async () => {
    const root = await loginAdmin(client);
    const b = await seedTenant(client, root.token, 'ck-other');
    const other = expectStatus(
      await client.post(`/v1/management/environments/${b.environmentId}/sdk-keys`, {
        token: b.admin.token,
        body: { kind: 'client', name: 'web', allowed_origins: [ORIGIN] },
      }),
      201,
    );
    const response = await client.post(`/v1/environments/${a.environmentId}/events/batch`, { headers: { 'x-api-key': other.raw_key, origin: ORIGIN }, body: [] });
    assert.ok(response.status === 403 || response.status === 404, response.text);
  });

  test('the client key is the caller: its id is what the verifier resolves', async () => {
    const principal = await ts.server.services.verifier.verifySdkKey(clientKey);
    assert.equal(principal.kind, 'client_key');
    assert.equal((principal as { sdkKeyId: string }).sdkKeyId, clientKeyId);
  });
});

describe('an evaluation scope a client key was given on OFREP grants nothing elsewhere', () => {
  test('after OFREP answers the key (its scope now known to the instance), REST evaluate still refuses it: 403', async () => {
    const ofrep = await client.post('/ofrep/v1/evaluate/flags', { headers: { 'x-api-key': clientKey, origin: ORIGIN }, body: { context: { targetingKey: 'u-1' } } });
    assert.equal(ofrep.status, 200, ofrep.text);
    const body = { context_key: 'u-1', context_type: 'user' };
    for (let i = 0; i < 2; i++) {
      // The same key as x-sdk-key (the route's hot path reads that header from memory), without an Origin.
      expect403(await client.post(`/v1/environments/${a.environmentId}/evaluate`, { sdkKey: clientKey, body }), `evaluate (${i})`);
      expect403(await client.post(`/v1/environments/${a.environmentId}/evaluate`, { sdkKey: clientKey, body: { ...body, flag_key: 'checkout' } }), `evaluate one flag (${i})`);
    }
  });
});
