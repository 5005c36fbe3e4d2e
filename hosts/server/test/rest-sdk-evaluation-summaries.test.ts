import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SwitchyardClient, silentLogger } from '@switchyard/sdk';
import { createClientKey } from './support/client-fixtures.ts';
import { createFlag } from './support/flag-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// SDK evaluation summaries (issue 40, docs/insights.md "SDK summaries"), in both topologies
// (TEST_TOPOLOGY=split: the gateway forwards the summary to the services over the hop). A
// summary is written before its 202, so every total is read at once, never polled; each expected
// total is the sum of the counts the test itself sent.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ORIGIN = 'https://app.example.com';

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let browserKey: string;

const summaryPath = (tenant: Tenant) => `/v1/environments/${tenant.environmentId}/evaluation-summaries`;
const readInsights = async (tenant: Tenant, key: string): Promise<Json> =>
  expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/${key}/insights`, { token: tenant.member.token }), 200, 'insights');
/** The series' counts per variant summed over its points. */
const totals = (series: Json[]): Record<string, number> => {
  const sum: Record<string, number> = {};
  for (const point of series) for (const [variant, n] of Object.entries(point.variants as Record<string, number>)) sum[variant] = (sum[variant] ?? 0) + n;
  return sum;
};
const summary = (counts: unknown[], overrides: Record<string, unknown> = {}) => ({ start_ms: Date.now() - 60_000, end_ms: Date.now(), counts, ...overrides });
const send = (tenant: Tenant, body: unknown, headers: Record<string, string> = {}, key = tenant.rawKey) => client.post(summaryPath(tenant), { sdkKey: key, headers, body });
const bool = { value_type: 'bool' as const, variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off' };

before(async () => {
  ts = await startTestServer({ INSIGHTS_FLUSH_MS: '200' });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'summaries-a');
  b = await seedTenant(client, root.token, 'summaries-b');
  for (const key of ['banner', 'retry', 'bounds']) await createFlag(ts, client, a, { key, ...bool, enabled: true });
  // Client-visible: the client-key tests count it too.
  await createFlag(ts, client, a, { key: 'sdk-flag', ...bool, enabled: true, client_visible: true });
  await createFlag(ts, client, a, { key: 'shown', ...bool, enabled: true, client_visible: true });
  await createFlag(ts, client, a, { key: 'hidden', ...bool, enabled: true, client_visible: false });
  await createFlag(ts, client, a, { key: 'retired', ...bool, enabled: true, client_visible: true });
  expectStatus(await client.post(`/v1/environments/${a.environmentId}/flags/retired/archive`, { token: a.admin.token }), 200, 'archive retired');
  await createFlag(ts, client, b, { key: 'only-b', ...bool, enabled: true });
  await createFlag(ts, client, b, { key: 'banner', ...bool, enabled: true });
  browserKey = (await createClientKey(client, a, { allow_missing_origin: false })).raw;
});
after(() => ts.stop());

describe('POST /v1/environments/{env_id}/evaluation-summaries', () => {
  test('counts land in the insights, per variant, with the last evaluation; unknown and foreign flags dropped', async () => {
    const before = Date.now();
    const answer = expectStatus(
      await send(a, summary([
        { flag_key: 'banner', variant_key: 'on', reason: 'TARGETING_MATCH', count: 40 },
        { flag_key: 'banner', variant_key: 'on', reason: 'SPLIT', count: 2 },
        { flag_key: 'banner', variant_key: 'off', reason: 'DEFAULT', count: 7 },
        { flag_key: 'no-such-flag', variant_key: 'on', reason: 'DEFAULT', count: 5 },
        { flag_key: 'only-b', variant_key: 'on', reason: 'DEFAULT', count: 9 },
        // Not a variant of banner: dropped (a public client key cannot invent variants).
        { flag_key: 'banner', variant_key: 'made-up', reason: 'DEFAULT', count: 11 },
        { flag_key: 'banner', variant_key: '', reason: 'ERROR', count: 1 },
      ])),
      202,
      'summary',
    );
    assert.deepEqual(answer, { received_count: 7 });
    // banner: on 40 + 2 = 42, off 7, "" 1 (made-up dropped) — committed before the 202, so read at once.
    const banner = await readInsights(a, 'banner');
    assert.deepEqual(totals(banner.series), { on: 42, off: 7, '': 1 });
    assert.ok(banner.last_evaluated_at_ms >= before - 1 && banner.last_evaluated_at_ms <= Date.now());
    // b's flags are b's: a's key cannot add to them, by key or by environment id.
    assert.deepEqual(totals((await readInsights(b, 'only-b')).series), {});
    assert.deepEqual(totals((await readInsights(b, 'banner')).series), {});
    expectError(await send(b, summary([{ flag_key: 'banner', variant_key: 'on', reason: 'DEFAULT', count: 1 }]), {}, a.rawKey), 403, 'PERMISSION_DENIED');
    assert.deepEqual(totals((await readInsights(b, 'banner')).series), {});
  });

  test('a retried summary with the same Idempotency-Key counts once; another key counts again', async () => {
    const body = summary([{ flag_key: 'retry', variant_key: 'on', reason: 'TARGETING_MATCH', count: 3 }]);
    const first = expectStatus(await send(a, body, { 'idempotency-key': 'summary-1' }), 202, 'first');
    const [again, concurrent] = await Promise.all([send(a, body, { 'idempotency-key': 'summary-1' }), send(a, body, { 'idempotency-key': 'summary-1' })]);
    assert.deepEqual(expectStatus(again, 202, 'repeat'), first);
    assert.deepEqual(expectStatus(concurrent, 202, 'repeat'), first);
    assert.deepEqual(totals((await readInsights(a, 'retry')).series), { on: 3 }, 'three repeats of 3: counted once');
    expectStatus(await send(a, body, { 'idempotency-key': 'summary-2' }), 202, 'a new summary');
    expectStatus(await send(a, body), 202, 'no key');
    // 3 (summary-1) + 3 (summary-2) + 3 (no key) = 9.
    assert.deepEqual(totals((await readInsights(a, 'retry')).series), { on: 9 });
    expectError(await send(a, body, { 'idempotency-key': 'bad key with spaces' }), 400, 'INVALID_ARGUMENT');
  });

  test('bounds: entries, counts, times and shapes are refused whole, nothing written', async () => {
    const entry = { flag_key: 'bounds', variant_key: 'on', reason: 'DEFAULT', count: 1 };
    const refused: Array<[string, unknown]> = [
      ['1,001 entries', summary(Array.from({ length: 1_001 }, () => entry))],
      ['a count of 0', summary([{ ...entry, count: 0 }])],
      ['a negative count', summary([{ ...entry, count: -5 }])],
      ['a fractional count', summary([{ ...entry, count: 1.5 }])],
      ['a count over 1e9', summary([{ ...entry, count: 1_000_000_001 }])],
      ['a count as a string', summary([{ ...entry, count: '3' }])],
      ['no flag key', summary([{ ...entry, flag_key: '' }])],
      ['a bad reason', summary([{ ...entry, reason: 'DROP TABLE' }])],
      ['a start older than two days', summary([entry], { start_ms: Date.now() - 2 * DAY - HOUR })],
      ['an end in the future', summary([entry], { end_ms: Date.now() + HOUR })],
      ['an end before the start', summary([entry], { start_ms: Date.now() - 1_000, end_ms: Date.now() - 60_000 })],
      ['counts not a list', summary([], { counts: { bounds: 1 } })],
      ['not an object', [entry]],
    ];
    for (const [what, body] of refused) {
      const response = await send(a, body);
      assert.equal(response.status, 400, `${what}: ${response.text}`);
      assert.ok(['INVALID_ARGUMENT', 'BAD_REQUEST'].includes(response.body.code), `${what}: ${response.text}`);
    }
    // Exactly 1,000 entries of one key: accepted and summed (1,000 × 1).
    expectStatus(await send(a, summary(Array.from({ length: 1_000 }, () => entry))), 202, '1,000 entries');
    assert.deepEqual(totals((await readInsights(a, 'bounds')).series), { on: 1_000 }, 'only the accepted summary counted');
    // A body over 1 MiB (server key): 413.
    const big = summary([{ ...entry, variant_key: 'x'.repeat(1_100_000) }]);
    assert.equal((await send(a, big)).status, 413);
  });

  test('keys only: anonymous 401, a user token 403', async () => {
    const body = summary([{ flag_key: 'banner', variant_key: 'on', reason: 'DEFAULT', count: 1 }]);
    expectError(await client.post(summaryPath(a), { body }), 401, 'UNAUTHENTICATED');
    const user = await client.post(summaryPath(a), { token: a.member.token, body });
    assert.equal(user.status, 403, user.text);
  });

  test('client keys: from an allowed origin counted (with CORS), from another origin refused', async () => {
    const body = summary([{ flag_key: 'sdk-flag', variant_key: 'off', reason: 'DEFAULT', count: 4 }]);
    const allowed = await client.post(summaryPath(a), { headers: { 'x-api-key': browserKey, origin: ORIGIN }, body });
    expectStatus(allowed, 202, 'allowed origin');
    assert.equal(allowed.headers.get('access-control-allow-origin'), ORIGIN);
    const preflight = await fetch(`${ts.base}${summaryPath(a)}`, {
      method: 'OPTIONS',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, x-api-key, idempotency-key' },
    });
    assert.ok(preflight.status === 204 || preflight.status === 200, `preflight ${preflight.status}`);
    const foreign = await client.post(summaryPath(a), { headers: { 'x-api-key': browserKey, origin: 'https://evil.example.com' }, body });
    assert.equal(foreign.status, 403, foreign.text);
    const missing = await client.post(summaryPath(a), { headers: { 'x-api-key': browserKey }, body });
    assert.equal(missing.status, 403, missing.text);
    assert.deepEqual(totals((await readInsights(a, 'sdk-flag')).series), { off: 4 }, 'only the allowed request counted');
  });
});

describe('a client key counts only the flags it can evaluate (client-visible, not archived)', () => {
  test('hidden and archived flags: dropped from a client key, with the same answer; counted from a server key', async () => {
    const entries = [
      { flag_key: 'shown', variant_key: 'on', reason: 'TARGETING_MATCH', count: 6 },
      { flag_key: 'hidden', variant_key: 'on', reason: 'TARGETING_MATCH', count: 50 },
      { flag_key: 'retired', variant_key: 'off', reason: 'DEFAULT', count: 70 },
      { flag_key: 'no-such-flag', variant_key: 'on', reason: 'DEFAULT', count: 90 },
    ];
    const fromBrowser = (headers: Record<string, string> = {}) =>
      client.post(summaryPath(a), { headers: { 'x-api-key': browserKey, origin: ORIGIN, ...headers }, body: summary(entries) });
    // The answer counts the entries sent (4), whichever were dropped: nothing tells a hidden flag from a missing one.
    assert.deepEqual(expectStatus(await fromBrowser(), 202, 'client key'), { received_count: 4 });
    assert.deepEqual(expectStatus(await fromBrowser({ 'idempotency-key': 'browser-summary-1' }), 202, 'client key, with an Idempotency-Key'), { received_count: 4 });
    // shown: 6 + 6 (both client summaries); hidden and retired: nothing, not even a last evaluation.
    assert.deepEqual(totals((await readInsights(a, 'shown')).series), { on: 12 });
    const hidden = await readInsights(a, 'hidden');
    assert.deepEqual(totals(hidden.series), {});
    assert.equal(hidden.last_evaluated_at_ms, null);
    const retired = await readInsights(a, 'retired');
    assert.deepEqual(totals(retired.series), {});
    assert.equal(retired.last_evaluated_at_ms, null);
    // The server key's summary of the same entries counts them all (unknown flag aside): shown 12 + 6,
    // hidden 50, retired 70.
    assert.deepEqual(expectStatus(await send(a, summary(entries)), 202, 'server key'), { received_count: 4 });
    assert.deepEqual(totals((await readInsights(a, 'shown')).series), { on: 18 });
    assert.deepEqual(totals((await readInsights(a, 'hidden')).series), { on: 50 });
    assert.deepEqual(totals((await readInsights(a, 'retired')).series), { off: 70 });
    assert.ok((await readInsights(a, 'hidden')).last_evaluated_at_ms !== null);
  });
});

describe('the Node SDK sends its evaluation counts', () => {
  test('N evaluations, then close: the insights show N', async () => {
    const sdk = new SwitchyardClient({
      sdkKey: a.rawKey,
      baseUrl: ts.base,
      syncUrl: `127.0.0.1:${ts.server.syncGrpcPort}`,
      logger: silentLogger,
      events: { enabled: false },
    });
    const baseline = totals((await readInsights(a, 'sdk-flag')).series);
    try {
      await sdk.waitForReady({ timeoutMs: 15_000 });
      // 25 evaluations of an enabled flag (on) and 5 of an unknown flag (dropped by the server).
      for (let i = 0; i < 25; i++) assert.equal(sdk.boolVariation('sdk-flag', { key: `u${i}` }, false), true);
      for (let i = 0; i < 5; i++) sdk.boolVariation('no-such-flag', { key: `u${i}` }, false);
    } finally {
      await sdk.close();
    }
    assert.deepEqual(sdk.evaluationCountStats(), { sentEvaluations: 30, droppedEvaluations: 0 });
    // The SDK's counts are committed by the time close() resolves: on 25 (plus the off 4 before).
    assert.deepEqual(totals((await readInsights(a, 'sdk-flag')).series), { ...baseline, on: 25 });
  });
});
