import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import { DomainError } from '@switchyard/core';
import { createRemoteServices } from '@switchyard/transport/remote/remote-services.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { createFlag, eventually } from './support/flag-fixtures.ts';
import { bearer, rejectsWithStatus } from './support/grpc-clients.ts';
import { flagClient } from './support/grpc-flag-clients.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Evaluation counts (issue 40, docs/insights.md), in both topologies (TEST_TOPOLOGY=split: the
// gateway counts what it evaluates and sends it over the hop; a client key's OFREP answers come
// from the services, which count them). Every expected count is derived by hand from the requests
// each test sends; flushes run every 200 ms, so totals are polled, then checked again after
// several more flushes (nothing counted twice).

const FLUSH_MS = 200;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let browserKey: string;

const insightsPath = (tenant: Tenant, key: string, query = '') => `/v1/environments/${tenant.environmentId}/flags/${key}/insights${query}`;
const readInsights = async (tenant: Tenant, key: string, query = ''): Promise<Json> => expectStatus(await client.get(insightsPath(tenant, key, query), { token: tenant.member.token }), 200, 'insights');
/** The series' counts per variant summed over its points (a run may cross an hour). */
const totals = (series: Json[]): Record<string, number> => {
  const sum: Record<string, number> = {};
  for (const point of series) for (const [variant, n] of Object.entries(point.variants as Record<string, number>)) sum[variant] = (sum[variant] ?? 0) + n;
  return sum;
};
const ofrepContext = (key: string) => ({ context: { targetingKey: key } });

/** The REST and OFREP requests of one round, against `base`; returns nothing (the counts are derived below). */
async function evaluateRound(base: ApiClient, tenant: Tenant): Promise<void> {
  // REST evaluate, one flag × 3: banner/on 3.
  for (let i = 0; i < 3; i++) expectStatus(await base.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_type: 'user', context_key: `u${i}`, flag_key: 'banner' } }), 200, 'evaluate one');
  // REST evaluate, every flag × 2: banner/on 2, dark/off 2, never/off 2.
  for (let i = 0; i < 2; i++) expectStatus(await base.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_type: 'user', context_key: `v${i}` } }), 200, 'evaluate all');
  // OFREP single × 4: banner/on 4.
  for (let i = 0; i < 4; i++) expectStatus(await base.post('/ofrep/v1/evaluate/flags/banner', { sdkKey: tenant.rawKey, body: ofrepContext(`o${i}`) }), 200, 'OFREP single');
  // OFREP bulk (server key) × 1: banner/on 1, dark/off 1, never/off 1.
  expectStatus(await base.post('/ofrep/v1/evaluate/flags', { sdkKey: tenant.rawKey, body: ofrepContext('bulk') }), 200, 'OFREP bulk');
}
// One round, by flag: banner on 3 + 2 + 4 + 1 = 10; dark off 2 + 1 = 3; never off 2 + 1 = 3.

before(async () => {
  ts = await startTestServer({ INSIGHTS_FLUSH_MS: String(FLUSH_MS) });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'insights-a');
  b = await seedTenant(client, root.token, 'insights-b');
  for (const tenant of [a, b]) {
    await createFlag(ts, client, tenant, { key: 'banner', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', enabled: true, client_visible: true });
    await createFlag(ts, client, tenant, { key: 'dark', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', enabled: false });
    await createFlag(ts, client, tenant, { key: 'never', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', enabled: false });
  }
  const key = expectStatus(
    await client.post(`/v1/management/environments/${a.environmentId}/sdk-keys`, { token: a.admin.token, body: { kind: 'client', name: 'web', allowed_origins: ['https://app.example.com'] } }),
    201,
    'client key',
  );
  browserKey = key.raw_key;
});
after(() => ts.stop());

describe('GET /v1/environments/{env_id}/flags/{flag_id}/insights', () => {
  test('REST evaluate and OFREP (server and client keys) are each counted once per flag, variant and hour; last evaluation known', async () => {
    const startedAt = Date.now();
    assert.deepEqual(await readInsights(a, 'banner'), { series: [], last_evaluated_at_ms: null, status: 'new' }, 'nothing evaluated yet: new');
    await evaluateRound(client, a);
    // A client key's OFREP bulk × 2 (answered by the services in the split topology): banner/on 2
    // (dark and never are not client-visible).
    for (let i = 0; i < 2; i++) {
      expectStatus(await client.post('/ofrep/v1/evaluate/flags', { headers: { 'x-api-key': browserKey, origin: 'https://app.example.com' }, body: ofrepContext(`c${i}`) }), 200, 'client OFREP bulk');
    }
    // banner: on 10 + 2 = 12; dark: off 3.
    await eventually('banner counted', async () => totals((await readInsights(a, 'banner')).series).on === 12, 15_000);
    await sleep(5 * FLUSH_MS);
    const banner = await readInsights(a, 'banner');
    assert.deepEqual(totals(banner.series), { on: 12 }, 'still 12 after more flushes: nothing counted twice');
    for (const point of banner.series) assert.equal(point.at_ms % HOUR, 0, 'hourly points start on the hour');
    assert.ok(banner.last_evaluated_at_ms >= startedAt - 1 && banner.last_evaluated_at_ms <= Date.now(), `last evaluated ${banner.last_evaluated_at_ms}`);
    await eventually('dark counted', async () => totals((await readInsights(a, 'dark')).series).off === 3, 10_000);
    assert.deepEqual(totals((await readInsights(b, 'banner')).series), {}, "another environment's counts are its own");
    // Daily: the same totals in today's point (or yesterday's and today's, around midnight).
    assert.deepEqual(totals((await readInsights(a, 'banner', '?granularity=day')).series), { on: 12 });
  });

  test('two instances on one database add up exactly', async () => {
    const other = await ts.startAnotherInstance();
    const otherClient = api(`http://127.0.0.1:${other.httpPort}`);
    // b: one round on each instance → banner on 10 × 2 = 20, dark off 3 × 2 = 6, never off 6.
    await Promise.all([evaluateRound(client, b), evaluateRound(otherClient, b)]);
    await eventually('both instances flushed', async () => totals((await readInsights(b, 'banner')).series).on === 20, 15_000);
    await sleep(5 * FLUSH_MS);
    assert.deepEqual(totals((await readInsights(b, 'banner')).series), { on: 20 });
    assert.deepEqual(totals((await readInsights(b, 'dark')).series), { off: 6 });
    assert.deepEqual(totals((await readInsights(b, 'never')).series), { off: 6 });
  });

  test('flag lists carry last_evaluated_at_ms with include=insights only', async () => {
    await eventually('a.never evaluated', async () => (await readInsights(a, 'never')).last_evaluated_at_ms !== null, 10_000);
    const plain = expectStatus(await client.get(`/v1/environments/${a.environmentId}/flags`, { token: a.member.token }), 200, 'list');
    assert.ok(plain.every((flag: Json) => !('last_evaluated_at_ms' in flag)), 'not without include');
    await createFlag(ts, client, a, { key: 'fresh', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', enabled: false });
    const listed = expectStatus(await client.get(`/v1/environments/${a.environmentId}/flags?include=insights`, { token: a.member.token }), 200, 'list with insights');
    const byKey = Object.fromEntries(listed.map((flag: Json) => [flag.key, flag.last_evaluated_at_ms]));
    assert.equal(byKey.fresh, null, 'never evaluated');
    assert.equal(byKey.banner, (await readInsights(a, 'banner')).last_evaluated_at_ms);
    assert.equal(typeof byKey.dark, 'number');
    expectError(await client.get(`/v1/environments/${a.environmentId}/flags?include=everything`, { token: a.member.token }), 400, 'INVALID_ARGUMENT');
  });

  test('retention: the pruner rolls old hours into days and deletes hours past 30 days; the daily series keeps them', async () => {
    ts.server.pruner.unschedule();
    const now = Date.now();
    const dayStart = (ms: number) => ms - (ms % DAY);
    const threeDays = dayStart(now - 3 * DAY) + 2 * HOUR;
    const fortyDays = dayStart(now - 40 * DAY) + 2 * HOUR;
    // Written as a flush 3 and 40 days ago would have (the repository, as the flusher's statement).
    const [flag] = await ts.db.sql<{ id: string }[]>`SELECT id FROM flags WHERE project_id = ${a.projectId} AND key = 'dark'`;
    for (const [hour, n] of [[threeDays, 5], [fortyDays, 7]] as const) {
      await ts.db.sql`
        INSERT INTO flag_evaluation_hours (environment_id, flag_id, hour, variant_key, reason, org_id, project_id, count)
        VALUES (${a.environmentId}, ${flag!.id}, to_timestamp(${hour / 1000}::float8), 'off', 'DISABLED', ${a.orgId}, ${a.projectId}, ${n})`;
    }
    assert.ok((await ts.server.pruner.runOnce()) !== null);
    // Hourly: the 3-day-old hour is kept (30 days), the 40-day-old one is gone.
    assert.deepEqual((await readInsights(a, 'dark', `?from=${threeDays}&to=${threeDays + HOUR}`)).series, [{ at_ms: threeDays, variants: { off: 5 } }]);
    assert.deepEqual((await readInsights(a, 'dark', `?from=${fortyDays}&to=${fortyDays + HOUR}`)).series, []);
    // Daily over 60 days: 7 (40 days ago), 5 (3 days ago), 3 (today's round; around midnight, split over two days).
    const daily = (await readInsights(a, 'dark', `?granularity=day&from=${now - 60 * DAY}&to=${now + 1}`)).series;
    assert.deepEqual(daily.slice(0, 2), [
      { at_ms: dayStart(fortyDays), variants: { off: 7 } },
      { at_ms: dayStart(threeDays), variants: { off: 5 } },
    ]);
    assert.deepEqual(totals(daily.slice(2)), { off: 3 });
  });

  test('refused: another tenant, no credential, an SDK key, a bad or huge range, an unknown flag', async () => {
    // b's member asks for a's environment: not found in b's org (nothing revealed).
    expectError(await client.get(insightsPath(a, 'banner'), { token: b.member.token }), 404, 'NOT_FOUND');
    expectError(await client.get(insightsPath(a, 'banner')), 401, 'UNAUTHENTICATED');
    assert.ok([401, 403].includes((await client.get(insightsPath(a, 'banner'), { sdkKey: a.rawKey })).status), 'an SDK key reads no insights');
    const now = Date.now();
    expectError(await client.get(insightsPath(a, 'banner', `?from=${now}&to=${now}`), { token: a.member.token }), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(insightsPath(a, 'banner', `?from=${now - 32 * DAY}&to=${now}`), { token: a.member.token }), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(insightsPath(a, 'banner', `?granularity=day&from=0&to=${now}`), { token: a.member.token }), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(insightsPath(a, 'banner', '?granularity=minute'), { token: a.member.token }), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(insightsPath(a, 'banner', '?from=yesterday'), { token: a.member.token }), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(insightsPath(a, 'no-such-flag'), { token: a.member.token }), 404, 'NOT_FOUND');
  });

  test('gRPC FlagService.GetFlagInsights answers as the REST route, with the same refusals', async () => {
    const flags = flagClient(ts.server.grpcPort);
    try {
      const rest = await readInsights(a, 'banner');
      const answer = await flags.getFlagInsights({ environment_id: a.environmentId, flag_key: 'banner' }, bearer(a.member.token));
      assert.deepEqual(answer.series, rest.series);
      assert.equal(answer.last_evaluated_at_ms, rest.last_evaluated_at_ms);
      const fresh = await flags.getFlagInsights({ environment_id: a.environmentId, flag_key: 'fresh' }, bearer(a.member.token));
      assert.deepEqual(fresh.series, []);
      assert.equal(fresh.last_evaluated_at_ms, undefined, 'never evaluated: absent');
      await rejectsWithStatus(flags.getFlagInsights({ environment_id: a.environmentId, flag_key: 'banner' }, bearer(b.member.token)), grpc.status.NOT_FOUND);
      await rejectsWithStatus(flags.getFlagInsights({ environment_id: a.environmentId, flag_key: 'banner' }), grpc.status.UNAUTHENTICATED);
      const now = Date.now();
      await rejectsWithStatus(flags.getFlagInsights({ environment_id: a.environmentId, flag_key: 'banner', from_ms: now - 40 * DAY, to_ms: now }, bearer(a.member.token)), grpc.status.INVALID_ARGUMENT);
    } finally {
      flags.close();
    }
  });
});

describe("a gateway's count report over the hop (InsightsGatewayService.RecordCounts)", () => {
  let channel: grpc.Channel;
  let remote: ReturnType<typeof createRemoteServices>;
  before(async () => {
    // The services' internal port, as a gateway calls it (in both topologies).
    channel = new grpc.Channel(`127.0.0.1:${ts.server.grpcPort}`, grpc.credentials.createInsecure(), {});
    remote = createRemoteServices({ channel, deadlineMs: 5_000, onDefinitionsChanged: () => {} });
    for (const tenant of [a, b]) {
      await createFlag(ts, client, tenant, { key: 'reported', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', enabled: true });
    }
  });
  after(() => channel.close());

  test('a report sent again with its id (a retry after a lost answer) counts once; another id counts again; a bad id is refused', async () => {
    const hour = Date.now() - (Date.now() % HOUR);
    const named = (tenant: Tenant) => ({ orgId: tenant.orgId, projectId: tenant.projectId, environmentId: tenant.environmentId, flagKey: 'reported' });
    const report = (reportId: unknown) => ({
      reportId,
      counts: [{ ...named(a), variantKey: 'on', reason: 'TARGETING_MATCH', hourMs: hour, count: 5 }, { ...named(b), variantKey: 'off', reason: 'DEFAULT', hourMs: hour, count: 2 }],
      lastEvaluated: [{ ...named(a), atMs: Date.now() }],
    });
    const first = report(randomUUID());
    assert.equal(await remote.insights.recordCounts(first), 2, 'two count rows written');
    // The same report again, once alone and twice at once: nothing written.
    assert.equal(await remote.insights.recordCounts(first), 0);
    assert.deepEqual(await Promise.all([remote.insights.recordCounts(first), remote.insights.recordCounts(first)]), [0, 0]);
    assert.deepEqual(totals((await readInsights(a, 'reported')).series), { on: 5 });
    assert.deepEqual(totals((await readInsights(b, 'reported')).series), { off: 2 });
    // The same counts in another report (another id): counted again, 5 + 5 and 2 + 2.
    assert.equal(await remote.insights.recordCounts(report(randomUUID())), 2);
    assert.deepEqual(totals((await readInsights(a, 'reported')).series), { on: 10 });
    assert.deepEqual(totals((await readInsights(b, 'reported')).series), { off: 4 });
    // No id, or one that is not a lowercase UUID: INVALID_ARGUMENT, nothing written.
    for (const bad of [undefined, '', 'retry-1', randomUUID().toUpperCase(), 7]) {
      await assert.rejects(remote.insights.recordCounts(report(bad)), (error: unknown) => error instanceof DomainError && error.code === 'INVALID_ARGUMENT', String(bad));
    }
    assert.deepEqual(totals((await readInsights(a, 'reported')).series), { on: 10 });
  });
});

describe('INSIGHTS_COUNTING=false (docs/configuration.md)', () => {
  test('nothing the server (and, split, its gateway) answers is counted, even at stop', async () => {
    const server = await startTestServer({ INSIGHTS_FLUSH_MS: String(HOUR), INSIGHTS_COUNTING: 'false' });
    try {
      const own = api(server.base);
      const tenant = await seedTenant(own, (await loginAdmin(own)).token, 'insights-off');
      await createFlag(server, own, tenant, { key: 'banner', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', enabled: true });
      // One round (banner on 10 when counting, as in the shutdown test below): none counted.
      await evaluateRound(own, tenant);
      await server.server.stop();
      const [after] = await server.db.sql<{ n: number; last: number }[]>`
        SELECT (SELECT coalesce(sum(count), 0)::int FROM flag_evaluation_hours WHERE environment_id = ${tenant.environmentId}) AS n,
               (SELECT count(*)::int FROM flag_evaluation_last WHERE environment_id = ${tenant.environmentId}) AS last`;
      assert.deepEqual({ ...after }, { n: 0, last: 0 });
    } finally {
      await server.stop();
    }
  });
});

describe('shutdown', () => {
  test('counts held when a server (and, split, its gateway) stops are written, not lost', async () => {
    // An hour between flushes: only the stop writes them.
    const server = await startTestServer({ INSIGHTS_FLUSH_MS: String(HOUR) });
    try {
      const own = api(server.base);
      const tenant = await seedTenant(own, (await loginAdmin(own)).token, 'insights-stop');
      await createFlag(server, own, tenant, { key: 'banner', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', enabled: true });
      // One round: banner on 10 (evaluateRound's derivation).
      await evaluateRound(own, tenant);
      const before = await server.db.sql<{ n: number }[]>`SELECT coalesce(sum(count), 0)::int AS n FROM flag_evaluation_hours WHERE environment_id = ${tenant.environmentId}`;
      assert.equal(before[0]!.n, 0, 'nothing flushed yet');
      await server.server.stop();
      const [after] = await server.db.sql<{ on: number; last: number }[]>`
        SELECT (SELECT coalesce(sum(count), 0)::int FROM flag_evaluation_hours WHERE environment_id = ${tenant.environmentId} AND variant_key = 'on') AS on,
               (SELECT count(*)::int FROM flag_evaluation_last WHERE environment_id = ${tenant.environmentId}) AS last`;
      assert.deepEqual({ ...after }, { on: 10, last: 1 });
    } finally {
      await server.stop();
    }
  });
});

