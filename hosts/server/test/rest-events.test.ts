import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  api,
  expectError,
  expectStatus,
  loginAdmin,
  seedTenant,
  unique,
  type ApiClient,
  type Tenant,
} from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let it: TestServer;
let client: ApiClient;
let tenant: Tenant;
let other: Tenant;
/** A second environment of tenant's project, with its own SDK key. */
let sibling: { environmentId: string; rawKey: string };

const events = () => `/v1/environments/${tenant.environmentId}/events`;
const batch = () => `/v1/environments/${tenant.environmentId}/events/batch`;

interface StoredEvent {
  metric_key: string;
  context_type: string;
  context_key: string;
  value: number;
  timestamp_ms: number;
  received_at_ms: number;
}

/** The stored events of one context key (each test uses its own keys). */
async function storedFor(contextKey: string): Promise<StoredEvent[]> {
  const sql = it.server.database.sql;
  const rows = await sql<StoredEvent[]>`
    SELECT metric_key, context_type, context_key, value, timestamp_ms, received_at_ms FROM events
    WHERE org_id = ${tenant.orgId} AND environment_id = ${tenant.environmentId} AND context_key = ${contextKey}
    ORDER BY value, metric_key`;
  return [...rows];
}

async function storedCount(): Promise<number> {
  const sql = it.server.database.sql;
  const [row] = await sql<{ n: number }[]>`
    SELECT count(*)::int8 AS n FROM events WHERE org_id = ${tenant.orgId} AND environment_id = ${tenant.environmentId}`;
  return row?.n ?? 0;
}

const event = (metric_key: string, context_key: string, extra: Record<string, unknown> = {}) => ({
  metric_key,
  context_type: 'user',
  context_key,
  ...extra,
});

before(async () => {
  it = await startTestServer({}, { share: true });
  client = api(it.base);
  const admin = await loginAdmin(client);
  tenant = await seedTenant(client, admin.token, 'events');
  other = await seedTenant(client, admin.token, 'intruder');
  const environment = expectStatus(
    await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name: 'staging' } }),
    201,
  );
  const key = expectStatus(await client.post(`/v1/management/environments/${environment.environment_id}/sdk-keys`, { token: tenant.admin.token }), 201);
  sibling = { environmentId: environment.environment_id, rawKey: key.raw_key };
  for (const [key, valueType] of [
    ['signup', 'bool'],
    ['clicks', 'int'],
    ['revenue', 'double'],
  ] as const) {
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/event-definitions`, { token: tenant.member.token, body: { key, value_type: valueType } }),
      202,
      `define ${key}`,
    );
  }
});

after(async () => {
  await it.stop();
});

describe('POST /events: one event', () => {
  test('with the SDK key: 202 {accepted_count: 1, rejected_keys: []}; a bool without value is stored as 1 at receipt time', async () => {
    const user = `u-${unique()}`;
    const sentAt = Date.now();
    const answer = expectStatus(await client.post(events(), { sdkKey: tenant.rawKey, body: event('signup', user) }), 202);
    const answeredAt = Date.now();
    assert.deepEqual(answer, { accepted_count: 1, rejected_keys: [], rejected: [] });
    const [stored] = await storedFor(user);
    assert.ok(stored, 'the event is committed before the answer');
    assert.equal(stored.metric_key, 'signup');
    assert.equal(stored.context_type, 'user');
    assert.equal(stored.value, 1);
    assert.ok(stored.timestamp_ms >= sentAt && stored.timestamp_ms <= answeredAt, `timestamp ${stored.timestamp_ms} is the receipt time`);
    assert.ok(stored.received_at_ms >= sentAt && stored.received_at_ms <= answeredAt);
  });

  test('with a bearer token of the org (a member) and a client timestamp, which is kept', async () => {
    const user = `u-${unique()}`;
    const answer = expectStatus(
      await client.post(events(), { token: tenant.member.token, body: event('revenue', user, { value: 19.99, timestamp_ms: 1_700_000_000_123 }) }),
      202,
    );
    assert.deepEqual(answer, { accepted_count: 1, rejected_keys: [], rejected: [] });
    const [stored] = await storedFor(user);
    assert.equal(stored?.value, 19.99);
    assert.equal(stored?.timestamp_ms, 1_700_000_000_123);
  });

  test('an unknown key or a value of the wrong type: 202 with the key in rejected_keys and why in rejected, nothing stored', async () => {
    const user = `u-${unique()}`;
    const cases: Array<[ReturnType<typeof event>, Record<string, string>]> = [
      [event('never-defined', user), { reason: 'unknown_metric' }],
      [event('signup', user, { value: 1 }), { reason: 'wrong_value_type' }],
      [event('signup', user, { value: 'true' }), { reason: 'wrong_value_type' }],
      [event('clicks', user, { value: 1.5 }), { reason: 'wrong_value_type' }],
      [event('clicks', user, { value: true }), { reason: 'wrong_value_type' }],
      [event('clicks', user), { reason: 'missing_field', field: 'value' }],
      [event('revenue', user, { value: '19.99' }), { reason: 'wrong_value_type' }],
      [event('revenue', user, { value: null }), { reason: 'missing_field', field: 'value' }],
    ];
    for (const [body, why] of cases) {
      const answer = expectStatus(await client.post(events(), { sdkKey: tenant.rawKey, body }), 202, JSON.stringify(body));
      assert.deepEqual(answer, { accepted_count: 0, rejected_keys: [body.metric_key], rejected: [{ index: 0, key: body.metric_key, ...why }] }, JSON.stringify(body));
    }
    assert.deepEqual(await storedFor(user), []);
  });

  test('an event missing a field other than metric_key (or with a bad or too long one) is rejected alone, with its key and the field', async () => {
    const user = `u-${unique()}`;
    const cases: Array<[Record<string, unknown>, Record<string, string>]> = [
      [{ metric_key: 'signup', context_type: 'user' }, { reason: 'missing_field', field: 'context_key' }],
      [event('signup', user, { timestamp_ms: -5 }), { reason: 'invalid_field', field: 'timestamp_ms' }],
      [event('signup', user, { context_key: 42 }), { reason: 'invalid_field', field: 'context_key' }],
      [event('signup', user, { context_type: 't'.repeat(65) }), { reason: 'field_too_long', field: 'context_type' }],
    ];
    for (const [body, why] of cases) {
      const answer = expectStatus(await client.post(events(), { sdkKey: tenant.rawKey, body }), 202, JSON.stringify(body));
      assert.deepEqual(answer, { accepted_count: 0, rejected_keys: ['signup'], rejected: [{ index: 0, key: 'signup', ...why }] }, JSON.stringify(body));
    }
    assert.deepEqual(await storedFor(user), []);
  });

  test('an event without a metric_key (missing, null, not a string, empty) is not an event: 400 naming metric_key', async () => {
    const user = `u-${unique()}`;
    for (const metric_key of [undefined, null, 42, '']) {
      const body = { metric_key, context_type: 'user', context_key: user, value: true };
      expectError(await client.post(events(), { sdkKey: tenant.rawKey, body }), 400, 'INVALID_ARGUMENT', /^metric_key is required/);
    }
    assert.deepEqual(await storedFor(user), []);
  });

  test('a body that is not an event: 400 INVALID_ARGUMENT', async () => {
    for (const body of ['signup', 42, [event('signup', 'u1')], null]) {
      expectError(await client.post(events(), { sdkKey: tenant.rawKey, body }), 400, 'INVALID_ARGUMENT');
    }
    expectError(
      await client.request('POST', events(), { sdkKey: tenant.rawKey, headers: { 'content-type': 'application/json' }, body: undefined }),
      400,
      'INVALID_ARGUMENT',
    );
  });
});

describe('POST /events/batch', () => {
  test('a bare array: each event on its own; bool stored as 1/0, ints and doubles as sent', async () => {
    const user = `u-${unique()}`;
    const body = [
      event('signup', user, { value: true }),
      event('signup', user, { value: false }),
      event('clicks', user, { value: 3 }),
      event('revenue', user, { value: 2.5 }),
      event('nope', user),
      event('clicks', user, { value: 'three' }),
      event('nope', user, { value: 1 }),
    ];
    const answer = expectStatus(await client.post(batch(), { sdkKey: tenant.rawKey, body }), 202);
    assert.deepEqual(
      answer,
      {
        accepted_count: 4,
        rejected_keys: ['nope', 'clicks'],
        rejected: [
          { index: 4, key: 'nope', reason: 'unknown_metric' },
          { index: 5, key: 'clicks', reason: 'wrong_value_type' },
          { index: 6, key: 'nope', reason: 'unknown_metric' },
        ],
      },
      'each rejected key once, in order; each rejected entry with its index',
    );
    const stored = await storedFor(user);
    assert.deepEqual(
      stored.map((row) => [row.metric_key, row.value]),
      [
        ['signup', 0],
        ['signup', 1],
        ['revenue', 2.5],
        ['clicks', 3],
      ],
    );
  });

  test('the {events: [...]} form, with a bearer token', async () => {
    const user = `u-${unique()}`;
    const answer = expectStatus(
      await client.post(batch(), { token: tenant.admin.token, body: { events: [event('clicks', user, { value: 7 }), event('signup', user)] } }),
      202,
    );
    assert.deepEqual(answer, { accepted_count: 2, rejected_keys: [], rejected: [] });
    assert.equal((await storedFor(user)).length, 2);
  });

  test('an empty batch is accepted with nothing to store', async () => {
    assert.deepEqual(expectStatus(await client.post(batch(), { sdkKey: tenant.rawKey, body: [] }), 202), { accepted_count: 0, rejected_keys: [], rejected: [] });
    assert.deepEqual(expectStatus(await client.post(batch(), { sdkKey: tenant.rawKey, body: { events: [] } }), 202), { accepted_count: 0, rejected_keys: [], rejected: [] });
  });

  test('an entry without a metric_key: 400 naming events[i].metric_key, and none of the batch is stored', async () => {
    const user = `u-${unique()}`;
    const withHole = (hole: Record<string, unknown>) => [event('signup', user), event('clicks', user, { value: 1 }), { context_type: 'user', context_key: user, ...hole }];
    for (const hole of [{}, { metric_key: '' }, { metric_key: null }, { metric_key: 7 }]) {
      expectError(await client.post(batch(), { sdkKey: tenant.rawKey, body: withHole(hole) }), 400, 'INVALID_ARGUMENT', /^events\[2\]\.metric_key is required/);
      expectError(await client.post(batch(), { sdkKey: tenant.rawKey, body: { events: withHole(hole) } }), 400, 'INVALID_ARGUMENT', /events\[2\]\.metric_key/);
    }
    assert.deepEqual(await storedFor(user), []);
  });

  test('a body that is not events: 400 INVALID_ARGUMENT', async () => {
    for (const body of ['x', 7, { event: [] }, { events: 'signup' }, ['signup'], [event('signup', 'u1'), 3], null]) {
      expectError(await client.post(batch(), { sdkKey: tenant.rawKey, body }), 400, 'INVALID_ARGUMENT');
    }
    const malformed = await client.request('POST', batch(), { sdkKey: tenant.rawKey, headers: { 'content-type': 'application/json' } });
    expectError(malformed, 400, 'INVALID_ARGUMENT');
    const notJson = await fetch(it.base + batch(), { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': tenant.rawKey }, body: '[{"metric_key":' });
    assert.equal(notJson.status, 400);
  });

  test('exactly 10,000 events are accepted; 10,001 → 413 RESOURCE_EXHAUSTED and nothing stored', async () => {
    const user = `max-${unique()}`;
    const many = Array.from({ length: 10_000 }, (_, i) => ({ metric_key: 'clicks', context_type: 'user', context_key: user, value: i }));
    assert.deepEqual(expectStatus(await client.post(batch(), { sdkKey: tenant.rawKey, body: many }), 202), { accepted_count: 10_000, rejected_keys: [], rejected: [] });
    assert.equal((await storedFor(user)).length, 10_000);

    const tooMany = `over-${unique()}`;
    const overLimit = Array.from({ length: 10_001 }, () => ({ metric_key: 'signup', context_type: 'u', context_key: tooMany }));
    expectError(await client.post(batch(), { sdkKey: tenant.rawKey, body: { events: overLimit } }), 413, 'RESOURCE_EXHAUSTED', /10000/);
    assert.deepEqual(await storedFor(tooMany), []);
  });

  test('a body over 1 MiB → 413 RESOURCE_EXHAUSTED', async () => {
    const user = `big-${unique()}`;
    const big = Array.from({ length: 2_000 }, () => event('signup', user, { padding: 'x'.repeat(600) }));
    expectError(await client.post(batch(), { sdkKey: tenant.rawKey, body: big }), 413, 'RESOURCE_EXHAUSTED');
    assert.deepEqual(await storedFor(user), []);
  });
});

describe('Idempotency-Key', () => {
  test('a resend within 24 h is not stored twice and gets the first answer (even after definitions changed)', async () => {
    const user = `idem-${unique()}`;
    const key = `batch-${unique()}`;
    const body = [event('signup', user), event('clicks', user, { value: 2 }), event('later', user, { value: 1 })];
    const first = expectStatus(await client.post(batch(), { sdkKey: tenant.rawKey, body, headers: { 'idempotency-key': key } }), 202);
    assert.deepEqual(first, { accepted_count: 2, rejected_keys: ['later'], rejected: [{ index: 2, key: 'later', reason: 'unknown_metric' }] });
    // 'later' becomes known: a fresh request would now accept 3, the resend still answers as the first time.
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/event-definitions`, { token: tenant.admin.token, body: { key: 'later', value_type: 'int' } }),
      202,
    );
    const again = expectStatus(await client.post(batch(), { sdkKey: tenant.rawKey, body, headers: { 'idempotency-key': key } }), 202);
    assert.deepEqual(again, first);
    assert.equal((await storedFor(user)).length, 2, 'stored once');

    const fresh = expectStatus(await client.post(batch(), { sdkKey: tenant.rawKey, body, headers: { 'idempotency-key': `${key}-2` } }), 202);
    assert.deepEqual(fresh, { accepted_count: 3, rejected_keys: [], rejected: [] }, 'another key is another request');
    assert.equal((await storedFor(user)).length, 5);
  });

  test('two concurrent resends with the same key: stored once, both get the one answer', async () => {
    const user = `race-${unique()}`;
    const key = `race-${unique()}`;
    const body = { events: Array.from({ length: 50 }, (_, i) => event('clicks', user, { value: i })) };
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => client.post(batch(), { sdkKey: tenant.rawKey, body, headers: { 'idempotency-key': key } })),
    );
    for (const answer of answers) assert.deepEqual(expectStatus(answer, 202), { accepted_count: 50, rejected_keys: [], rejected: [] });
    assert.equal((await storedFor(user)).length, 50);
  });

  test('keys are per environment: the same key in another environment is another request', async () => {
    const key = `env-${unique()}`;
    expectStatus(await client.post(batch(), { sdkKey: tenant.rawKey, body: [event('signup', 'x')], headers: { 'idempotency-key': key } }), 202);
    const elsewhere = await client.post(`/v1/environments/${sibling.environmentId}/events/batch`, {
      sdkKey: sibling.rawKey,
      body: [event('signup', 'x')],
      headers: { 'idempotency-key': key },
    });
    assert.deepEqual(expectStatus(elsewhere, 202), { accepted_count: 0, rejected_keys: ['signup'], rejected: [{ index: 0, key: 'signup', reason: 'unknown_metric' }] }, 'signup is not defined there');
  });

  test('an answer stored before `rejected` existed (within 24 h of an upgrade) is replayed as stored, without it', async () => {
    const key = `old-${unique()}`;
    const stored = { accepted_count: 2, rejected_keys: ['later'] };
    // The row an older server wrote for a server key's events request (IngestService's `events:<key>`).
    await it.server.database.sql`
      INSERT INTO idempotency_keys (environment_id, key, answer, expires_at_ms)
      VALUES (${tenant.environmentId}, ${`events:${key}`}, ${it.server.database.sql.json(stored)}, ${Date.now() + 3_600_000})`;
    const replay = await client.post(batch(), { sdkKey: tenant.rawKey, body: [event('signup', `old-${key}`)], headers: { 'idempotency-key': key } });
    assert.deepEqual(expectStatus(replay, 202), stored);
    assert.deepEqual(await storedFor(`old-${key}`), [], 'a repeat stores nothing');
  });

  test('a malformed key is 400', async () => {
    expectError(
      await client.post(batch(), { sdkKey: tenant.rawKey, body: [event('signup', 'x')], headers: { 'idempotency-key': 'x'.repeat(256) } }),
      400,
      'INVALID_ARGUMENT',
    );
  });
});

describe('group commit', () => {
  test('20 concurrent single-event requests are all committed in fewer transactions than requests', async (t) => {
    const user = `group-${unique()}`;
    const before = it.server.services.ingest.eventWriter.stats;
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client.post(events(), { sdkKey: tenant.rawKey, body: event('clicks', user, { value: i }) })),
    );
    for (const answer of answers) assert.deepEqual(expectStatus(answer, 202), { accepted_count: 1, rejected_keys: [], rejected: [] });
    const after = it.server.services.ingest.eventWriter.stats;
    assert.equal(after.requests - before.requests, 20);
    const writes = after.writes - before.writes;
    t.diagnostic(`20 concurrent requests → ${writes} transactions`);
    assert.ok(writes < 20, `20 requests were written in ${writes} transactions`);
    assert.equal((await storedFor(user)).length, 20);
  });
});

describe('who may send events', () => {
  test('no credential or an invalid SDK key → 401', async () => {
    expectError(await client.post(events(), { body: event('signup', 'x') }), 401, 'UNAUTHENTICATED');
    expectError(await client.post(batch(), { sdkKey: 'sk_not_a_key', body: [] }), 401, 'UNAUTHENTICATED');
  });

  test("an SDK key of another environment → 403; a bearer token of another org → 404; nothing stored", async () => {
    const user = `who-${unique()}`;
    expectError(await client.post(events(), { sdkKey: sibling.rawKey, body: event('signup', user) }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(batch(), { sdkKey: other.rawKey, body: [event('signup', user)] }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(events(), { token: other.admin.token, body: event('signup', user) }), 404, 'NOT_FOUND');
    expectError(await client.post(batch(), { token: other.member.token, body: { events: [event('signup', user)] } }), 404, 'NOT_FOUND');
    assert.deepEqual(await storedFor(user), []);
  });

  test('the other tenant sees none of these events', async () => {
    assert.ok((await storedCount()) > 0);
    const sql = it.server.database.sql;
    const [row] = await sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM events WHERE org_id = ${other.orgId}`;
    assert.equal(row?.n, 0);
  });
});
