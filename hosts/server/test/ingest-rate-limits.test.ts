import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { rejectsWithStatus } from './support/grpc-clients.ts';
import { eventClient, sdkKey, type EventClient } from './support/grpc-event-clients.ts';
import { segmentClient, type SegmentClient } from './support/grpc-flag-clients.ts';
import { createSegment } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type ApiResponse, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * The ingest and list-check rate limits (docs/security.md "Ingest rate limits, row quota and event
 * retention"), in both topologies: in the split one the buckets are the services', behind the
 * gateway's REST. Each limit refills one entry per second, so within a test nothing worth
 * counting comes back; each test has its own tenant, hence its own buckets.
 */
const KEY_BURST = 10_000;
const ENVIRONMENT_BURST = 25_000;
const LIST_KEY_BURST = 1_000;
const LIST_ENVIRONMENT_BURST = 2_500;

let it: TestServer;
let client: ApiClient;
let admin: LoggedInUser;
let events: EventClient;
let segments: SegmentClient;

before(async () => {
  it = await startTestServer({
    INGEST_RATE_PER_KEY: '1',
    INGEST_BURST_PER_KEY: String(KEY_BURST),
    INGEST_RATE_PER_ENVIRONMENT: '1',
    INGEST_BURST_PER_ENVIRONMENT: String(ENVIRONMENT_BURST),
    LIST_CHECK_RATE_PER_KEY: '1',
    LIST_CHECK_BURST_PER_KEY: String(LIST_KEY_BURST),
    LIST_CHECK_RATE_PER_ENVIRONMENT: '1',
    LIST_CHECK_BURST_PER_ENVIRONMENT: String(LIST_ENVIRONMENT_BURST),
  });
  client = api(it.base);
  admin = await loginAdmin(client);
  events = eventClient(it.server.grpcPort);
  segments = segmentClient(it.server.grpcPort);
});

after(async () => {
  events.close();
  segments.close();
  await it.stop();
});

/** `count` events of one metric; `clicks` is defined as int in the tenants that store them. */
const eventsOf = (count: number, metric = 'clicks') =>
  Array.from({ length: count }, (_, i) => ({ metric_key: metric, context_type: 'user', context_key: `u${i}`, value: 1 }));

/** The same events as gRPC messages (the value is a oneof message). */
const grpcEventsOf = (count: number, metric: string) => eventsOf(count, metric).map(({ value, ...rest }) => ({ ...rest, value: { int_value: value } }));

const sendBatch = (environmentId: string, rawKey: string, count: number, metric?: string): Promise<ApiResponse> =>
  client.post(`/v1/environments/${environmentId}/events/batch`, { sdkKey: rawKey, body: { events: eventsOf(count, metric) } });

async function newKey(tenant: Tenant, environmentId = tenant.environmentId): Promise<string> {
  return expectStatus(await client.post(`/v1/management/environments/${environmentId}/sdk-keys`, { token: tenant.admin.token }), 201).raw_key as string;
}

async function newEnvironment(tenant: Tenant): Promise<string> {
  return expectStatus(await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name: 'staging' } }), 201)
    .environment_id as string;
}

/** A 429 RESOURCE_EXHAUSTED whose Retry-After (whole seconds) lies in [min, max]. */
function expectRateLimited(response: ApiResponse, min: number, max: number, what: string): void {
  expectError(response, 429, 'RESOURCE_EXHAUSTED');
  const retryAfter = Number(response.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= min && retryAfter <= max, `${what}: Retry-After ${response.headers.get('retry-after')} in [${min}, ${max}]`);
}

/**
 * Sends one-entry requests until one is refused (429, Retry-After 1 s) and answers how many were
 * accepted first. The bucket refills one entry per second, so on a slow machine a request can
 * find one refilled since the bucket was spent; never more than the seconds that have passed.
 */
async function refusedOnceSpent(send: () => Promise<ApiResponse>, spentAtMs: number, what: string): Promise<number> {
  for (let accepted = 0; ; accepted++) {
    const response = await send();
    if (response.status === 429) {
      expectRateLimited(response, 1, 1, what);
      return accepted;
    }
    expectStatus(response, 202, what);
    const refilled = Math.ceil((performance.now() - spentAtMs) / 1000);
    assert.ok(accepted + 1 <= refilled, `${what}: ${accepted + 1} accepted ${refilled} s after the bucket was spent`);
  }
}

async function storedEvents(environmentId: string): Promise<number> {
  const [row] = await it.db.sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM events WHERE environment_id = ${environmentId}`;
  return row?.n ?? 0;
}

describe('events and exposures per SDK key', () => {
  test('a batch counts as its events: after the burst a flood gets 429 with Retry-After, and nothing more is stored', async () => {
    const tenant = await seedTenant(client, admin.token, 'flood');
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/event-definitions`, { token: tenant.admin.token, body: { key: 'clicks', value_type: 'int' } }), 202);

    const spentAt = performance.now();
    const full = expectStatus(await sendBatch(tenant.environmentId, tenant.rawKey, KEY_BURST), 202, 'the whole burst in one batch');
    assert.equal(full.accepted_count, KEY_BURST);
    // 100 more events need 100 tokens at 1 per second: about 100 s, less what refilled meanwhile.
    expectRateLimited(await sendBatch(tenant.environmentId, tenant.rawKey, 100), 90, 100, 'a batch of 100');
    const singles = await refusedOnceSpent(() => client.post(`/v1/environments/${tenant.environmentId}/events`, { sdkKey: tenant.rawKey, body: eventsOf(1)[0] }), spentAt, 'one event');
    // Exposures draw on the same bucket: both are rows written.
    await refusedOnceSpent(
      () =>
        client.post(`/v1/environments/${tenant.environmentId}/exposures`, {
          sdkKey: tenant.rawKey,
          body: { exposures: [{ flag_key: 'f', variant_key: 'on', context_type: 'user', context_key: 'u1' }] },
        }),
      spentAt,
      'one exposure',
    );
    assert.equal(await storedEvents(tenant.environmentId), KEY_BURST + singles, 'the refused requests stored nothing');
  });

  test('another SDK key is refused only once the environment has spent its own burst; another environment is unaffected', async () => {
    const tenant = await seedTenant(client, admin.token, 'per-env');
    const second = await newKey(tenant);
    const third = await newKey(tenant);
    const siblingEnvironment = await newEnvironment(tenant);
    const siblingKey = await newKey(tenant, siblingEnvironment);
    // Undefined metrics: each event is rejected but still costs its token (validation is work).
    const spentAt = performance.now();
    expectStatus(await sendBatch(tenant.environmentId, tenant.rawKey, KEY_BURST, 'undefined'), 202);
    await refusedOnceSpent(() => sendBatch(tenant.environmentId, tenant.rawKey, 1, 'undefined'), spentAt, 'the first key, spent');

    expectStatus(await sendBatch(tenant.environmentId, second, KEY_BURST, 'undefined'), 202, 'a second key has its own bucket');
    // The environment has 25,000 - 20,000 = 5,000 left: a fresh key's full batch waits for the rest.
    const refused = await sendBatch(tenant.environmentId, third, KEY_BURST, 'undefined');
    expectRateLimited(refused, 4_900, 5_000, 'a fresh key in a spent environment');
    assert.match(refused.body.error as string, /environment/);
    expectStatus(await sendBatch(tenant.environmentId, third, 4_000, 'undefined'), 202, 'what the environment has left is still there');

    expectStatus(await sendBatch(siblingEnvironment, siblingKey, KEY_BURST, 'undefined'), 202, 'another environment has its own bucket');
  });

  test('gRPC EventService.Ingest draws on the same buckets: RESOURCE_EXHAUSTED with retry-after metadata', async () => {
    const tenant = await seedTenant(client, admin.token, 'grpc-flood');
    const spentAt = performance.now();
    const answer = await events.ingest({ environment_id: tenant.environmentId, events: grpcEventsOf(KEY_BURST, 'undefined') }, sdkKey(tenant.rawKey));
    assert.equal(answer.accepted_count, 0);
    const refused = await rejectsWithStatus(
      events.ingest({ environment_id: tenant.environmentId, events: grpcEventsOf(50, 'undefined') }, sdkKey(tenant.rawKey)),
      grpc.status.RESOURCE_EXHAUSTED,
    );
    const retryAfter = Number(refused.metadata.get('retry-after')[0]);
    assert.ok(retryAfter >= 40 && retryAfter <= 50, `retry-after ${retryAfter} s for 50 events at 1 per second`);
    await refusedOnceSpent(() => sendBatch(tenant.environmentId, tenant.rawKey, 1, 'undefined'), spentAt, 'REST after gRPC spent the key');
  });
});

describe('list-checks', () => {
  test('a batch counts as its checks; past the burst REST answers 429 and gRPC RESOURCE_EXHAUSTED; another key goes on', async () => {
    const tenant = await seedTenant(client, admin.token, 'list-flood');
    await createSegment(client, tenant.admin.token, tenant.environmentId, { key: 'beta', context_type: 'user', kind: 'list', included_keys: ['u1'] });
    const checks = (count: number) => Array.from({ length: count }, (_, i) => ({ segment_key: 'beta', context_type: 'user', context_key: `u${i}` }));
    const base = `/v1/environments/${tenant.environmentId}/segments`;

    const answers = expectStatus(await client.post(`${base}/list-check/batch`, { sdkKey: tenant.rawKey, body: checks(LIST_KEY_BURST) }), 200);
    assert.equal(answers.filter((a: { is_member: boolean }) => a.is_member).length, 1);
    expectRateLimited(await client.post(`${base}/list-check`, { sdkKey: tenant.rawKey, body: checks(1)[0] }), 1, 1, 'one more check');
    expectRateLimited(await client.post(`${base}/batch-list-check`, { sdkKey: tenant.rawKey, body: checks(20) }), 15, 20, 'a batch of 20');
    await rejectsWithStatus(
      segments.evaluateMembership({ environment_id: tenant.environmentId, segment_key: 'beta', context_key: 'u1', context_type: 'user' }, sdkKey(tenant.rawKey)),
      grpc.status.RESOURCE_EXHAUSTED,
    );

    const other = await newKey(tenant);
    assert.deepEqual(expectStatus(await client.post(`${base}/list-check`, { sdkKey: other, body: checks(2)[1] }), 200), { is_member: true });
  });
});
