import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ACTIVE, experimentsOf, moveThrough } from './support/experiment-fixtures.ts';
import { createClientKey, createSigningSecret, markClientVisible, signToken } from './support/client-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type ApiResponse, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Exposures and events from client keys (docs/client-side.md "5. Exposures and events"): the key
// is public, so each attack below is a test that fails without its defence.

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
let open: { id: string; raw: string };
let signed: { id: string; raw: string };
let secretA: { kid: string; secret: string };
let secretB: { kid: string; secret: string };

const FIVE_MINUTES = 5 * 60_000;

/** enterprise → treatment; everyone else → control (a rule without conditions): hand-derived. */
const planFlag = (key: string) => ({
  flag: {
    key,
    value_type: 'string',
    variants: [{ key: 'control', value: 'old' }, { key: 'treatment', value: 'new' }],
    off_variant_key: 'control',
    rules: [
      { id: 'enterprise', conditions: [{ attribute: 'plan', op: 'eq', values: ['enterprise'] }], variant_key: 'treatment' },
      { id: 'everyone', conditions: [], variant_key: 'control' },
      // Starting an experiment needs a rule splitting traffic between its arms (docs/decisions.md
      // "Experiments and statistics"); behind 'everyone', no context of these tests reaches it.
      { id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }] } },
    ],
  },
  enabled: true,
});

async function startExperiment(tenant: Tenant, flagKey: string): Promise<void> {
  const experiment = expectStatus(
    await client.post(experimentsOf(tenant.environmentId), { token: tenant.admin.token, body: { name: `${flagKey} test`, flag_key: flagKey } }),
    201,
    'create experiment',
  );
  await moveThrough(client, tenant, experiment.experiment_id ?? experiment.id, [ACTIVE]);
}

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'cexp-a');
  b = await seedTenant(client, root.token, 'cexp-b');
  for (const key of ['pricing', 'hidden', 'no-experiment']) {
    expectStatus(await client.post(`/v1/environments/${a.environmentId}/flags`, { token: a.admin.token, body: planFlag(key) }), 201, `create ${key}`);
  }
  await markClientVisible(ts, a, ['pricing', 'no-experiment']);
  // Starting the experiments changes the definitions: the services' snapshots reload with the visibility above.
  await startExperiment(a, 'pricing');
  await startExperiment(a, 'hidden');
  for (const [key, clientAllowed] of [['signup', true], ['internal', false]] as const) {
    expectStatus(
      await client.post(`/v1/environments/${a.environmentId}/event-definitions`, { token: a.admin.token, body: { key, value_type: 'bool', client_allowed: clientAllowed } }),
      202,
      `define ${key}`,
    );
  }
  open = await createClientKey(client, a, { context_signing: 'off' });
  signed = await createClientKey(client, a, { context_signing: 'context' });
  secretA = await createSigningSecret(client, a);
  secretB = await createSigningSecret(client, b);
});
after(() => ts.stop());

function post(path: 'exposures' | 'events/batch', key: string, body: unknown, token?: string): Promise<ApiResponse> {
  const headers: Record<string, string> = { 'x-api-key': key };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  return client.post(`/v1/environments/${a.environmentId}/${path}`, { headers, body });
}

const exposure = (contextKey: string, variant: string, plan: string, extra: Record<string, unknown> = {}) => ({
  flag_key: 'pricing',
  variant_key: variant,
  context_type: 'user',
  context_key: contextKey,
  attributes: { plan },
  ...extra,
});

async function storedExposures(contextKey: string): Promise<Array<{ flag_key: string; variant_key: string; timestamp_ms: number }>> {
  return [...await ts.server.database.sql<Array<{ flag_key: string; variant_key: string; timestamp_ms: number }>>`
    SELECT flag_key, variant_key, timestamp_ms::float8 AS timestamp_ms FROM exposures
    WHERE environment_id = ${a.environmentId} AND context_key = ${contextKey} ORDER BY timestamp_ms`];
}

async function storedEvents(contextKey: string): Promise<Array<{ metric_key: string; timestamp_ms: number }>> {
  return [...await ts.server.database.sql<Array<{ metric_key: string; timestamp_ms: number }>>`
    SELECT metric_key, timestamp_ms::float8 AS timestamp_ms FROM events
    WHERE environment_id = ${a.environmentId} AND context_key = ${contextKey} ORDER BY timestamp_ms`];
}

describe('exposures from client keys', () => {
  test('the variant the server serves that context is accepted; another variant is rejected (a client cannot pick its arm)', async () => {
    const answer = expectStatus(await post('exposures', open.raw, [exposure('u-fair', 'control', 'free'), exposure('u-cheat', 'treatment', 'free')]), 202);
    assert.deepEqual(answer, { accepted_count: 1, rejected_keys: ['pricing'], rejected: [{ index: 1, key: 'pricing', reason: 'variant_not_served' }] });
    assert.deepEqual((await storedExposures('u-fair')).map((row) => row.variant_key), ['control']);
    assert.deepEqual(await storedExposures('u-cheat'), []);
    // The attributes as evaluated decide: enterprise is served treatment.
    expectStatus(await post('exposures', open.raw, [exposure('u-ent', 'treatment', 'enterprise')]), 202);
    assert.deepEqual((await storedExposures('u-ent')).map((row) => row.variant_key), ['treatment']);
    // A client cannot name the rule either (to join an experiment's split): the server's own
    // evaluation decides, and a targeting rule served this one: no allocation, ''.
    expectStatus(await post('exposures', open.raw, [exposure('u-forger', 'control', 'free', { rule_id: 'split' })]), 202);
    const [forged] = await ts.server.database.sql<Array<{ rule_id: string | null }>>`
      SELECT rule_id FROM exposures WHERE environment_id = ${a.environmentId} AND context_key = 'u-forger'`;
    assert.equal(forged?.rule_id, '');
  });

  test('only client-visible flags under an ACTIVE experiment; a hidden flag is as unknown as a missing one', async () => {
    const answer = expectStatus(
      await post('exposures', open.raw, [
        exposure('u-scope', 'control', 'free', { flag_key: 'hidden' }),
        exposure('u-scope', 'control', 'free', { flag_key: 'no-experiment' }),
        exposure('u-scope', 'control', 'free', { flag_key: 'never-created' }),
      ]),
      202,
    );
    // "hidden" is under an ACTIVE experiment but not client-visible: the same reason as a flag that does not exist.
    assert.deepEqual(answer, {
      accepted_count: 0,
      rejected_keys: ['hidden', 'no-experiment', 'never-created'],
      rejected: [
        { index: 0, key: 'hidden', reason: 'unknown_flag' },
        { index: 1, key: 'no-experiment', reason: 'no_active_experiment' },
        { index: 2, key: 'never-created', reason: 'unknown_flag' },
      ],
    });
    // The server key still reports exposures of any flag, as before.
    const server = expectStatus(
      await client.post(`/v1/environments/${a.environmentId}/exposures`, { sdkKey: a.rawKey, body: [{ flag_key: 'hidden', variant_key: 'treatment', context_type: 'user', context_key: 'u-server' }] }),
      202,
    );
    assert.equal(server.accepted_count, 1);
  });

  test('timestamps are clamped to receipt time ± 5 minutes (back-dated and future ones)', async () => {
    const sentAt = Date.now();
    expectStatus(
      await post('exposures', open.raw, [
        exposure('u-past', 'control', 'free', { timestamp_ms: sentAt - 24 * 3_600_000 }),
        exposure('u-future', 'control', 'free', { timestamp_ms: sentAt + 24 * 3_600_000 }),
      ]),
      202,
    );
    const receivedBy = Date.now();
    const [past] = await storedExposures('u-past');
    const [future] = await storedExposures('u-future');
    assert.ok(past!.timestamp_ms >= sentAt - FIVE_MINUTES && past!.timestamp_ms <= receivedBy - FIVE_MINUTES, `back-dated clamped: ${past!.timestamp_ms}`);
    assert.ok(future!.timestamp_ms >= sentAt + FIVE_MINUTES && future!.timestamp_ms <= receivedBy + FIVE_MINUTES, `future clamped: ${future!.timestamp_ms}`);
  });

  test('each rejected entry says why: a variant the flag does not have is "not served" (the flag\'s variants stay private), bad fields, a context the server cannot evaluate', async () => {
    const tooManyAttributes = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`a${i}`, 'x']));
    const answer = expectStatus(
      await post('exposures', open.raw, [
        exposure('u-why', 'no-such-variant', 'free'),
        exposure('u-why', 'control', 'free', { attributes: 'free' }),
        exposure('u-why', 'control', 'free', { attributes: tooManyAttributes }),
        exposure('u-why', 'control', 'free', { context_type: '' }),
        exposure('u-why', 'control', 'free', { timestamp_ms: -1 }),
        exposure('u-why', '', 'free'),
        exposure('k'.repeat(513), 'control', 'free'),
        exposure('u-why', 'control', 'free'),
      ]),
      202,
    );
    assert.deepEqual(answer, {
      accepted_count: 1,
      rejected_keys: ['pricing'],
      rejected: [
        { index: 0, key: 'pricing', reason: 'variant_not_served' },
        { index: 1, key: 'pricing', reason: 'invalid_field', field: 'attributes' },
        { index: 2, key: 'pricing', reason: 'invalid_context' },
        { index: 3, key: 'pricing', reason: 'missing_field', field: 'context_type' },
        { index: 4, key: 'pricing', reason: 'invalid_field', field: 'timestamp_ms' },
        { index: 5, key: 'pricing', reason: 'missing_field', field: 'variant_key' },
        { index: 6, key: 'pricing', reason: 'field_too_long', field: 'context_key' },
      ],
    });
    assert.deepEqual((await storedExposures('u-why')).map((row) => row.variant_key), ['control']);
  });

  test('a duplicate exposure (context, flag, variant, iteration) is stored once', async () => {
    expectStatus(await post('exposures', open.raw, [exposure('u-dup', 'control', 'free'), exposure('u-dup', 'control', 'free')]), 202);
    expectStatus(await post('exposures', open.raw, [exposure('u-dup', 'control', 'free', { timestamp_ms: Date.now() - 1000 })]), 202);
    assert.equal((await storedExposures('u-dup')).length, 1);
  });

  test('more than 100 entries: 400', async () => {
    const many = Array.from({ length: 101 }, (_, i) => exposure(`u-many-${i}`, 'control', 'free'));
    expectError(await post('exposures', open.raw, many), 400, 'INVALID_ARGUMENT');
    expectStatus(await post('exposures', open.raw, many.slice(0, 100)), 202);
  });

  test('with signing: the signed context only; the attributes it vouches for come from the token', async () => {
    const token = await signToken(secretA.secret, secretA.kid, { ck: signed.id, sub: 'u-signed', ctx: { plan: 'free' } });
    // Body says enterprise (treatment); the token vouches for free: treatment is refused, control accepted.
    assert.deepEqual(expectStatus(await post('exposures', signed.raw, [exposure('u-signed', 'treatment', 'enterprise')], token), 202), {
      accepted_count: 0,
      rejected_keys: ['pricing'],
      rejected: [{ index: 0, key: 'pricing', reason: 'variant_not_served' }],
    });
    assert.deepEqual(expectStatus(await post('exposures', signed.raw, [exposure('u-signed', 'control', 'enterprise')], token), 202), { accepted_count: 1, rejected_keys: [], rejected: [] });
    // Another context than the token's: rejected.
    assert.deepEqual(expectStatus(await post('exposures', signed.raw, [exposure('u-other', 'control', 'free')], token), 202), {
      accepted_count: 0,
      rejected_keys: ['pricing'],
      rejected: [{ index: 0, key: 'pricing', reason: 'context_mismatch' }],
    });
    assert.deepEqual(await storedExposures('u-other'), []);
  });

  test('with signing: missing, expired or forged tokens are 401, another environment’s 403', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const entries = [exposure('u-signed', 'control', 'free')];
    assert.equal((await post('exposures', signed.raw, entries)).status, 401);
    const expired = await signToken(secretA.secret, secretA.kid, { ck: signed.id, sub: 'u-signed', iat: nowS - 7200, exp: nowS - 3600 });
    assert.equal((await post('exposures', signed.raw, entries, expired)).status, 401);
    const forged = await signToken('cs_forged', secretA.kid, { ck: signed.id, sub: 'u-signed' });
    assert.equal((await post('exposures', signed.raw, entries, forged)).status, 401);
    const otherEnvironment = await signToken(secretB.secret, secretB.kid, { ck: signed.id, sub: 'u-signed' });
    assert.equal((await post('exposures', signed.raw, entries, otherEnvironment)).status, 403);
  });
});

describe('events from client keys', () => {
  test('only client_allowed definitions; timestamps clamped; at most 100', async () => {
    const sentAt = Date.now();
    const answer = expectStatus(
      await post('events/batch', open.raw, [
        { metric_key: 'signup', context_type: 'user', context_key: 'u-ev', timestamp_ms: sentAt - 24 * 3_600_000 },
        { metric_key: 'internal', context_type: 'user', context_key: 'u-ev' },
      ]),
      202,
    );
    // "internal" exists but is not client_allowed: as unknown to a public key as a missing definition.
    assert.deepEqual(answer, { accepted_count: 1, rejected_keys: ['internal'], rejected: [{ index: 1, key: 'internal', reason: 'unknown_metric' }] });
    const rows = await storedEvents('u-ev');
    assert.deepEqual(rows.map((row) => row.metric_key), ['signup']);
    assert.ok(rows[0]!.timestamp_ms >= sentAt - FIVE_MINUTES, 'back-dated event clamped');
    const many = Array.from({ length: 101 }, () => ({ metric_key: 'signup', context_type: 'user', context_key: 'u-many' }));
    expectError(await post('events/batch', open.raw, many), 400, 'INVALID_ARGUMENT');
    // The server key sends any defined event, as before.
    assert.equal(expectStatus(await client.post(`/v1/environments/${a.environmentId}/events/batch`, { sdkKey: a.rawKey, body: [{ metric_key: 'internal', context_type: 'user', context_key: 'u-srv' }] }), 202).accepted_count, 1);
  });

  test('client_allowed is part of the definition record, changed by update', async () => {
    const path = `/v1/environments/${a.environmentId}/event-definitions/internal`;
    assert.equal(expectStatus(await client.get(path, { token: a.admin.token }), 200).client_allowed, false);
    const updated = expectStatus(await client.request('PUT', path, { token: a.admin.token, body: { client_allowed: true } }), 202);
    assert.equal(updated.client_allowed, true);
    assert.equal(expectStatus(await post('events/batch', open.raw, [{ metric_key: 'internal', context_type: 'user', context_key: 'u-now' }]), 202).accepted_count, 1);
    expectStatus(await client.request('PUT', path, { token: a.admin.token, body: { client_allowed: false } }), 202);
  });

  test('with signing: a token is required and binds the context key', async () => {
    const token = await signToken(secretA.secret, secretA.kid, { ck: signed.id, sub: 'u-ev-signed' });
    assert.equal((await post('events/batch', signed.raw, [{ metric_key: 'signup', context_type: 'user', context_key: 'u-ev-signed' }])).status, 401);
    const answer = expectStatus(
      await post('events/batch', signed.raw, [
        { metric_key: 'signup', context_type: 'user', context_key: 'u-ev-signed' },
        { metric_key: 'signup', context_type: 'user', context_key: 'u-ev-impostor' },
      ], token),
      202,
    );
    assert.deepEqual(answer, { accepted_count: 1, rejected_keys: ['signup'], rejected: [{ index: 1, key: 'signup', reason: 'context_mismatch' }] });
    assert.equal((await storedEvents('u-ev-impostor')).length, 0);
  });
});

describe('Idempotency-Key: a client key never shares answers with other credentials', () => {
  test("a client key replaying a server key's Idempotency-Key stores and learns nothing of it (hidden flag keys); a server key's batch is not pre-empted", async () => {
    // The server key's answer names a hidden flag among its rejected keys (an unknown variant).
    const serverKey = `shared-${Date.now()}`;
    const server = expectStatus(
      await client.post(`/v1/environments/${a.environmentId}/exposures`, {
        sdkKey: a.rawKey,
        headers: { 'idempotency-key': serverKey },
        body: [{ flag_key: 'hidden', variant_key: 'no-such-variant', context_type: 'user', context_key: 'u-idem-server' }],
      }),
      202,
    );
    assert.deepEqual(server, { accepted_count: 0, rejected_keys: ['hidden'], rejected: [{ index: 0, key: 'hidden', reason: 'unknown_variant' }] });
    // The public key with the same Idempotency-Key: judged on its own (hand-derived: control for free).
    const replay = expectStatus(
      await client.post(`/v1/environments/${a.environmentId}/exposures`, {
        headers: { 'x-api-key': open.raw, 'idempotency-key': serverKey },
        body: [exposure('u-idem-client', 'control', 'free')],
      }),
      202,
    );
    assert.deepEqual(replay, { accepted_count: 1, rejected_keys: [], rejected: [] }, 'not the server key\'s answer');
    // Pre-emption: the client key first, then a server key's batch under the same Idempotency-Key is stored.
    const clientFirst = `preempt-${Date.now()}`;
    expectStatus(
      await client.post(`/v1/environments/${a.environmentId}/events/batch`, {
        headers: { 'x-api-key': open.raw, 'idempotency-key': clientFirst },
        body: [{ metric_key: 'internal', context_type: 'user', context_key: 'u-idem-pre' }],
      }),
      202,
    );
    const after = expectStatus(
      await client.post(`/v1/environments/${a.environmentId}/events/batch`, {
        sdkKey: a.rawKey,
        headers: { 'idempotency-key': clientFirst },
        body: [{ metric_key: 'internal', context_type: 'user', context_key: 'u-idem-pre' }],
      }),
      202,
    );
    assert.deepEqual(after, { accepted_count: 1, rejected_keys: [], rejected: [] });
    assert.equal((await storedEvents('u-idem-pre')).length, 1);
  });

  test('a signed key replaying its own Idempotency-Key without a token: still 401', async () => {
    const token = await signToken(secretA.secret, secretA.kid, { ck: signed.id, sub: 'u-idem-signed' });
    const key = `signed-${Date.now()}`;
    expectStatus(
      await client.post(`/v1/environments/${a.environmentId}/events/batch`, {
        headers: { 'x-api-key': signed.raw, 'idempotency-key': key, authorization: `Bearer ${token}` },
        body: [{ metric_key: 'signup', context_type: 'user', context_key: 'u-idem-signed' }],
      }),
      202,
    );
    const replay = await client.post(`/v1/environments/${a.environmentId}/events/batch`, {
      headers: { 'x-api-key': signed.raw, 'idempotency-key': key },
      body: [{ metric_key: 'signup', context_type: 'user', context_key: 'u-idem-signed' }],
    });
    assert.equal(replay.status, 401, replay.text);
  });
});

describe('a revoked or expired client key writes nothing, at once', () => {
  const keysPath = () => `/v1/management/environments/${a.environmentId}/sdk-keys`;
  const signupEvent = (contextKey: string) => [{ metric_key: 'signup', context_type: 'user', context_key: contextKey }];

  test('revoked: exposures and events 401 right after the DELETE', async () => {
    const key = await createClientKey(client, a, { context_signing: 'off' });
    expectStatus(await post('exposures', key.raw, [exposure('u-rev-1', 'control', 'free')]), 202, 'works, and is now cached');
    expectStatus(await post('events/batch', key.raw, signupEvent('u-rev-1')), 202);
    expectStatus(await client.delete(`${keysPath()}/${key.id}`, { token: a.admin.token }), 204, 'revoke');
    assert.equal((await post('exposures', key.raw, [exposure('u-rev-2', 'control', 'free')])).status, 401);
    assert.equal((await post('events/batch', key.raw, signupEvent('u-rev-2'))).status, 401);
    assert.deepEqual(await storedExposures('u-rev-2'), []);
    assert.deepEqual(await storedEvents('u-rev-2'), []);
  });

  test('expired: exposures and events 401 once its expiry passes, cached or not', async () => {
    const key = await createClientKey(client, a, { context_signing: 'off' });
    expectStatus(await post('events/batch', key.raw, signupEvent('u-exp-1')), 202, 'works, and is now cached');
    const soon = Date.now() + 1_000;
    expectStatus(await client.request('PATCH', `${keysPath()}/${key.id}`, { token: a.admin.token, body: { expires_at_ms: soon } }), 200);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, soon - Date.now()) + 200));
    assert.equal((await post('exposures', key.raw, [exposure('u-exp-2', 'control', 'free')])).status, 401);
    assert.equal((await post('events/batch', key.raw, signupEvent('u-exp-2'))).status, 401);
    assert.deepEqual(await storedEvents('u-exp-2'), []);
  });
});
