import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { bearer, rejectsWithStatus } from './support/grpc-clients.ts';
import { eventClient, eventIngestionClient, sdkKey, type EventClient, type EventIngestionClient, type EventMessage } from './support/grpc-event-clients.ts';
import { api, loginAdmin, seedTenant, unique, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let it: TestServer;
let events: EventClient;
let ingestion: EventIngestionClient;
let tenant: Tenant;
let other: Tenant;

const event = (metric_key: string, context_key: string, extra: Partial<EventMessage> = {}): EventMessage => ({
  metric_key,
  context_type: 'user',
  context_key,
  ...extra,
});

async function stored(contextKey: string): Promise<Array<{ metric_key: string; value: number; timestamp_ms: number }>> {
  const sql = it.server.database.sql;
  const rows = await sql<Array<{ metric_key: string; value: number; timestamp_ms: number }>>`
    SELECT metric_key, value, timestamp_ms FROM events
    WHERE org_id = ${tenant.orgId} AND environment_id = ${tenant.environmentId} AND context_key = ${contextKey}
    ORDER BY metric_key, value`;
  return [...rows];
}

before(async () => {
  it = await startTestServer({}, { share: true });
  const client = api(it.base);
  const admin = await loginAdmin(client);
  tenant = await seedTenant(client, admin.token, 'grpc-events');
  other = await seedTenant(client, admin.token, 'grpc-other');
  events = eventClient(it.server.grpcPort);
  ingestion = eventIngestionClient(it.server.grpcPort);
});

after(async () => {
  events.close();
  ingestion.close();
  await it.stop();
});

describe('EventService definition calls', () => {
  test('create, get, list, update and delete with a bearer token', async () => {
    const env = tenant.environmentId;
    const created = await events.createEventDefinition(
      { environment_id: env, key: 'purchase', description: 'Bought', value_type: 'METRIC_VALUE_TYPE_DOUBLE' },
      bearer(tenant.member.token),
    );
    assert.equal(created.key, 'purchase');
    assert.equal(created.description, 'Bought');
    assert.equal(created.value_type, 'METRIC_VALUE_TYPE_DOUBLE');
    assert.equal(created.environment_id, env);
    assert.ok(created.created_at_ms > 0);
    await events.createEventDefinition({ environment_id: env, key: 'signup', value_type: 'METRIC_VALUE_TYPE_BOOL' }, bearer(tenant.admin.token));
    await events.createEventDefinition({ environment_id: env, key: 'clicks', value_type: 'METRIC_VALUE_TYPE_INT' }, bearer(tenant.admin.token));

    assert.deepEqual(await events.getEventDefinition({ environment_id: env, key: 'purchase' }, bearer(tenant.member.token)), created);
    const { event_definitions } = await events.listEventDefinitions({ environment_id: env }, bearer(tenant.member.token));
    assert.deepEqual(event_definitions.map((d) => d.key), ['clicks', 'purchase', 'signup']);

    const described = await events.updateEventDefinition({ environment_id: env, key: 'purchase', description: 'Paid' }, bearer(tenant.member.token));
    assert.equal(described.description, 'Paid');
    assert.equal(described.value_type, 'METRIC_VALUE_TYPE_DOUBLE', 'UNSPECIFIED keeps the type');
    const retyped = await events.updateEventDefinition({ environment_id: env, key: 'purchase', value_type: 'METRIC_VALUE_TYPE_INT' }, bearer(tenant.member.token));
    assert.equal(retyped.description, 'Paid', 'an unset description is kept');
    assert.equal(retyped.value_type, 'METRIC_VALUE_TYPE_INT');
    assert.equal(retyped.client_allowed, false, 'client keys may not send it unless marked');
    const opened = await events.updateEventDefinition({ environment_id: env, key: 'purchase', client_allowed: true }, bearer(tenant.member.token));
    assert.equal(opened.client_allowed, true);
    assert.equal(opened.value_type, 'METRIC_VALUE_TYPE_INT', 'an unset type is kept');
    const allowed = await events.createEventDefinition({ environment_id: env, key: 'page-view', value_type: 'METRIC_VALUE_TYPE_BOOL', client_allowed: true }, bearer(tenant.admin.token));
    assert.equal(allowed.client_allowed, true);

    await events.createEventDefinition({ environment_id: env, key: 'doomed', value_type: 'METRIC_VALUE_TYPE_BOOL' }, bearer(tenant.admin.token));
    assert.deepEqual(await events.deleteEventDefinition({ environment_id: env, key: 'doomed' }, bearer(tenant.admin.token)), { key: 'doomed' });
    await rejectsWithStatus(events.getEventDefinition({ environment_id: env, key: 'doomed' }, bearer(tenant.admin.token)), grpc.status.NOT_FOUND);
  });

  test('ALREADY_EXISTS, INVALID_ARGUMENT (key format, UNSPECIFIED type), NOT_FOUND', async () => {
    const env = tenant.environmentId;
    const token = bearer(tenant.admin.token);
    await rejectsWithStatus(events.createEventDefinition({ environment_id: env, key: 'signup', value_type: 'METRIC_VALUE_TYPE_INT' }, token), grpc.status.ALREADY_EXISTS);
    await rejectsWithStatus(events.createEventDefinition({ environment_id: env, key: 'bad key', value_type: 'METRIC_VALUE_TYPE_INT' }, token), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(events.createEventDefinition({ environment_id: env, key: 'typeless', value_type: 'METRIC_VALUE_TYPE_UNSPECIFIED' }, token), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(events.updateEventDefinition({ environment_id: env, key: 'missing', description: 'x' }, token), grpc.status.NOT_FOUND);
    await rejectsWithStatus(events.deleteEventDefinition({ environment_id: env, key: 'missing' }, token), grpc.status.NOT_FOUND);
  });

  test('an SDK key is not accepted (UNAUTHENTICATED); a bearer of another org is NOT_FOUND', async () => {
    const env = tenant.environmentId;
    await rejectsWithStatus(events.listEventDefinitions({ environment_id: env }, sdkKey(tenant.rawKey)), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(events.listEventDefinitions({ environment_id: env }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(events.listEventDefinitions({ environment_id: env }, bearer(other.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(
      events.createEventDefinition({ environment_id: env, key: 'planted', value_type: 'METRIC_VALUE_TYPE_BOOL' }, bearer(other.admin.token)),
      grpc.status.NOT_FOUND,
    );
  });
});

describe('EventService.Ingest and EventIngestionService.IngestEvent', () => {
  test('valid events are committed before the answer; values fit their definitions; 0 timestamp = receipt time', async () => {
    const user = `g-${unique()}`;
    const sentAt = Date.now();
    const answer = await events.ingest(
      {
        environment_id: tenant.environmentId,
        events: [
          event('signup', user),
          event('signup', user, { value: { bool_value: false } }),
          event('clicks', user, { value: { int_value: 4 } }),
          event('clicks', user, { value: { double_value: 5 }, timestamp_ms: 1_700_000_000_000 }),
          event('purchase', user, { value: { int_value: 12 } }),
        ],
      },
      sdkKey(tenant.rawKey),
    );
    assert.deepEqual(answer, { accepted_count: 5, rejected_keys: [], rejected: [] });
    const rows = await stored(user);
    assert.deepEqual(
      rows.map((row) => [row.metric_key, row.value]),
      [
        ['clicks', 4],
        ['clicks', 5],
        ['purchase', 12],
        ['signup', 0],
        ['signup', 1],
      ],
    );
    const signup = rows.find((row) => row.metric_key === 'signup');
    assert.ok(signup && signup.timestamp_ms >= sentAt && signup.timestamp_ms <= Date.now());
    assert.equal(rows.find((row) => row.value === 5)?.timestamp_ms, 1_700_000_000_000);
  });

  test('unknown keys, wrong value types and missing, bad or too long fields are rejected (each key once, each event with its reason) and not stored', async () => {
    const user = `r-${unique()}`;
    const answer = await ingestion.ingestEvent(
      {
        environment_id: tenant.environmentId,
        events: [
          event('unknown', user),
          event('signup', user, { value: { int_value: 1 } }),
          event('clicks', user, { value: { double_value: 1.5 } }),
          event('clicks', user, { value: { bool_value: true } }),
          event('clicks', user),
          event('purchase', user, { value: { bool_value: true } }),
          event('unknown', user, { value: { int_value: 2 } }),
          { metric_key: 'signup', context_type: 'user' },
          event('signup', user, { value: { bool_value: true } }),
          event('signup', user, { timestamp_ms: -1 }),
          event('signup', 'k'.repeat(513)),
        ],
      },
      bearer(tenant.member.token),
    );
    // proto3: `field` is "" when the reason names none.
    assert.deepEqual(answer, {
      accepted_count: 1,
      rejected_keys: ['unknown', 'signup', 'clicks', 'purchase'],
      rejected: [
        { index: 0, key: 'unknown', reason: 'unknown_metric', field: '' },
        { index: 1, key: 'signup', reason: 'wrong_value_type', field: '' },
        { index: 2, key: 'clicks', reason: 'wrong_value_type', field: '' },
        { index: 3, key: 'clicks', reason: 'wrong_value_type', field: '' },
        { index: 4, key: 'clicks', reason: 'missing_field', field: 'value' },
        { index: 5, key: 'purchase', reason: 'wrong_value_type', field: '' },
        { index: 6, key: 'unknown', reason: 'unknown_metric', field: '' },
        { index: 7, key: 'signup', reason: 'missing_field', field: 'context_key' },
        { index: 9, key: 'signup', reason: 'invalid_field', field: 'timestamp_ms' },
        { index: 10, key: 'signup', reason: 'field_too_long', field: 'context_key' },
      ],
    });
    assert.equal((await stored(user)).length, 1);
  });

  test('an event without a metric_key (unset, which proto3 delivers as "") fails the call with INVALID_ARGUMENT; nothing stored', async () => {
    const user = `m-${unique()}`;
    for (const hole of [{ context_type: 'user', context_key: user }, { metric_key: '', context_type: 'user', context_key: user }]) {
      const error = await rejectsWithStatus(
        ingestion.ingestEvent({ environment_id: tenant.environmentId, events: [event('signup', user), hole] }, bearer(tenant.member.token)),
        grpc.status.INVALID_ARGUMENT,
      );
      assert.match(error.details, /events\[1\]\.metric_key/);
    }
    assert.deepEqual(await stored(user), []);
  });

  test('idempotency-key metadata: a resend stores nothing and gets the first answer', async () => {
    const user = `i-${unique()}`;
    const metadata = sdkKey(tenant.rawKey);
    metadata.set('idempotency-key', `grpc-${unique()}`);
    const request = { environment_id: tenant.environmentId, events: [event('signup', user), event('nope', user)] };
    const [first, second] = await Promise.all([events.ingest(request, metadata), events.ingest(request, metadata)]);
    assert.deepEqual(first, { accepted_count: 1, rejected_keys: ['nope'], rejected: [{ index: 1, key: 'nope', reason: 'unknown_metric', field: '' }] });
    assert.deepEqual(second, first);
    assert.deepEqual(await ingestion.ingestEvent(request, metadata), first, 'IngestEvent shares the key space');
    assert.equal((await stored(user)).length, 1);
  });

  test('more than 10,000 events → RESOURCE_EXHAUSTED, nothing stored', async () => {
    const user = `m-${unique()}`;
    const many = Array.from({ length: 10_001 }, () => event('signup', user));
    const error = await rejectsWithStatus(events.ingest({ environment_id: tenant.environmentId, events: many }, sdkKey(tenant.rawKey)), grpc.status.RESOURCE_EXHAUSTED);
    assert.match(error.details, /10000/);
    assert.deepEqual(await stored(user), []);
  });

  test('no credential → UNAUTHENTICATED; another environment\'s SDK key → PERMISSION_DENIED; another org\'s bearer → NOT_FOUND', async () => {
    const user = `w-${unique()}`;
    const request = { environment_id: tenant.environmentId, events: [event('signup', user)] };
    await rejectsWithStatus(events.ingest(request), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(events.ingest(request, sdkKey('sk_invalid')), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(events.ingest(request, sdkKey(other.rawKey)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(ingestion.ingestEvent(request, bearer(other.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(events.ingest({ environment_id: '', events: [] }, sdkKey(tenant.rawKey)), grpc.status.INVALID_ARGUMENT);
    assert.deepEqual(await stored(user), []);
  });
});
