import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { patch } from './support/flag-client.ts';
import { eventually } from './support/flag-fixtures.ts';
import { ACTIVE, createExperiment, experimentPath, experimentsOf, moveThrough, prepareEnvironment } from './support/experiment-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Quantile metrics through the product (docs/statistics.md §15): the definition and its
 * refusals at the edge, then an experiment with a per-participant p50 and a per-event p90 run by
 * the server's worker, its results checked against the order statistics and the normal
 * approximation worked out by hand below (not the engine's code). In either topology
 * (TEST_TOPOLOGY=split: a gateway in front of the services).
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;

before(async () => {
  ts = await startTestServer({ STATS_POLL_MS: '25', STATS_INTERVAL_MS: '3600000' }, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'quantile');
  await prepareEnvironment(client, a);
});
after(() => ts.stop());

const create = (metrics: unknown[]) => client.post(experimentsOf(a.environmentId), { token: a.admin.token, body: { name: 'q', flag_key: 'checkout', metrics } });

describe('quantile metric definitions', () => {
  test('answered as given; aggregation defaults to sum per participant and is null per event', async () => {
    const experiment = await createExperiment(client, a, {
      metrics: [
        { key: 'revenue_p50', event_key: 'revenue', quantile: { p: 0.5 } },
        { key: 'revenue_p90_event', event_key: 'revenue', quantile: { p: 0.9, unit: 'event' }, direction: 'decrease', window_ms: 60_000 },
        { key: 'revenue_mean', event_key: 'revenue', aggregation: 'mean' },
      ],
    });
    assert.deepEqual(experiment.metrics[0], {
      key: 'revenue_p50', event_key: 'revenue', aggregation: 'sum', window_ms: null, direction: 'increase', capping: null, cuped: null, guardrail: null,
      quantile: { p: 0.5, unit: 'participant' },
    });
    assert.deepEqual(experiment.metrics[1], {
      key: 'revenue_p90_event', event_key: 'revenue', aggregation: null, window_ms: 60_000, direction: 'decrease', capping: null, cuped: null, guardrail: null,
      quantile: { p: 0.9, unit: 'event' },
    });
    // Other metrics are answered as before (no quantile field).
    assert.equal('quantile' in experiment.metrics[2], false);
    // The answer is valid input as it stands.
    const again = expectStatus(await patch(client, experimentPath(a.environmentId, experiment.id), { token: a.admin.token, body: { metrics: experiment.metrics } }), 200);
    assert.deepEqual(again.metrics, experiment.metrics);
  });

  test('refusals: 400 INVALID_ARGUMENT naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ event_key: 'revenue', quantile: {} }, /metrics\[0\]\.quantile\.p is required/],
      [{ event_key: 'revenue', quantile: { p: 0 } }, /quantile\.p must be from 0\.001 to 0\.999/],
      [{ event_key: 'revenue', quantile: { p: 1 } }, /quantile\.p must be/],
      [{ event_key: 'revenue', quantile: { p: 'half' } }, /quantile\.p must be a finite number/],
      [{ event_key: 'revenue', quantile: { p: 0.5, unit: 'session' } }, /quantile\.unit must be one of participant, event/],
      [{ event_key: 'revenue', quantile: { p: 0.5, extra: 1 } }, /quantile/],
      [{ event_key: 'revenue', quantile: { p: 0.5 }, cuped: {} }, /cuped: CUPED adjusts means/],
      [{ event_key: 'revenue', quantile: { p: 0.5 }, capping: { kind: 'absolute', upper: 10 } }, /capping: a quantile metric is not capped/],
      [{ event_key: 'revenue', quantile: { p: 0.5, unit: 'event' }, aggregation: 'sum' }, /aggregation: a per-event quantile/],
      [{ key: 'r', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'purchase', aggregation: 'count' } }, quantile: { p: 0.5 } },
        /a ratio metric cannot be a quantile metric/],
    ];
    for (const [metric, message] of cases) expectError(await create([metric]), 400, 'INVALID_ARGUMENT', message);
  });
});

/** z_{0.975}, the level of the default α = 0.05. */
const Z = 1.959963984540054;
const close = (actual: unknown, expected: number, what: string) =>
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected)), `${what}: ${String(actual)} vs ${expected}`);

describe('quantile metrics through the worker', () => {
  test('p50 per participant and p90 per event: each arm\'s quantile and outer interval, the difference, the verdict', async () => {
    const experiment = await createExperiment(client, a, {
      metrics: [
        { key: 'p50', event_key: 'revenue', quantile: { p: 0.5 } },
        { key: 'p90e', event_key: 'revenue', quantile: { p: 0.9, unit: 'event' } },
      ],
    });
    await moveThrough(client, a, experiment.id, [ACTIVE]);
    const [iteration] = expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/iterations`, { token: a.admin.token }), 200);
    const t = iteration.started_at_ms as number;
    // control participant i (0..99): one revenue event i + 1; treatment participant i: two events, each i + 101.
    const exposures: Json[] = [];
    const events: Json[] = [];
    for (let i = 0; i < 100; i += 1) {
      exposures.push({ flag_key: 'checkout', variant_key: 'control', context_type: 'user', context_key: `c-${i}`, timestamp_ms: t + i });
      exposures.push({ flag_key: 'checkout', variant_key: 'treatment', context_type: 'user', context_key: `t-${i}`, timestamp_ms: t + i });
      events.push({ metric_key: 'revenue', context_type: 'user', context_key: `c-${i}`, value: i + 1, timestamp_ms: t + 10_000 });
      for (const k of [0, 1]) events.push({ metric_key: 'revenue', context_type: 'user', context_key: `t-${i}`, value: i + 101, timestamp_ms: t + 10_000 + k });
    }
    expectStatus(await client.post(`/v1/environments/${a.environmentId}/exposures`, { sdkKey: a.rawKey, body: { exposures } }), 202);
    expectStatus(await client.post(`/v1/environments/${a.environmentId}/events/batch`, { sdkKey: a.rawKey, body: { events } }), 202);

    const queued = expectStatus(await client.post(`/v1/experiments/${experiment.id}/recompute`, { token: a.member.token }), 202);
    await eventually('the job to finish', async () => {
      const job = expectStatus(await client.get(`/v1/jobs/${queued.job_id}`, { token: a.member.token }), 200);
      assert.notEqual(job.status, 'failed', job.error);
      return job.status === 'completed';
    }, 15_000);
    const results = expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/results`, { token: a.member.token }), 200);
    const arm = (key: string) => results.variant_results.find((v: Json) => v.variant_key === key);
    const control = arm('control').metric_stats;
    const treatment = arm('treatment').metric_stats;

    // p50 per participant. control: values 1..100, n = 100, np = 50 → X_(50) = 50;
    // z·√(100·¼) = 9.7998 → L = ⌊40.2⌋ = 40, U = ⌈59.8⌉ = 60 → [40, 60].
    // treatment: sums 2(i + 101) = 202, 204, …, 400 → X_(50) = 300, [X_(40), X_(60)] = [280, 320].
    const seC = 20 / (2 * Z);
    const seT = 40 / (2 * Z);
    assert.deepEqual({ ...control.p50.quantile, se: 0 }, { p: 0.5, unit: 'participant', n: 100, estimate: 50, ci_low: 40, ci_high: 60, se: 0 });
    close(control.p50.quantile.se, seC, 'control se');
    assert.deepEqual({ ...treatment.p50.quantile, se: 0 }, { p: 0.5, unit: 'participant', n: 100, estimate: 300, ci_low: 280, ci_high: 320, se: 0 });
    close(treatment.p50.mean, 300, 'mean is the quantile');
    close(arm('treatment').metric_values.p50, 300, 'metric_values too');
    // Difference 250 with se √(se_C² + se_T²); relative 250/50 = 5 with se_r² = se_T²/50² + 300²·se_C²/50⁴.
    const se = Math.sqrt(seC ** 2 + seT ** 2);
    close(treatment.p50.absolute.estimate, 250, 'absolute');
    close(treatment.p50.absolute.ci_low, 250 - Z * se, 'absolute ci_low');
    close(treatment.p50.absolute.ci_high, 250 + Z * se, 'absolute ci_high');
    const seR = Math.sqrt(seT ** 2 / 2500 + (90000 * seC ** 2) / 50 ** 4);
    close(treatment.p50.relative.estimate, 5, 'relative');
    close(treatment.p50.relative.ci_low, 5 - Z * seR, 'relative ci_low');
    assert.ok(treatment.p50.relative.p_value < 1e-6);
    assert.equal(treatment.p50.verdict, 'better');
    assert.equal(control.p50.relative, null);

    // p90 per event. control: one event per participant, N = 100 → X_(90) = 90; S_i = 1 for the 90
    // values ≤ 90: S̄ = 0.9, N̄ = 1, s²_S = 9/99, s²_N = s_SN = 0 → σ² = 9/99;
    // z·√(9/99·100) = 5.9095 → L = ⌊84.09⌋ = 84, U = ⌈95.91⌉ = 96 → [84, 96].
    assert.deepEqual({ ...control.p90e.quantile, se: 0 }, { p: 0.9, unit: 'event', n: 100, estimate: 90, ci_low: 84, ci_high: 96, se: 0 });
    // treatment: N = 200 events (each value twice), X_(180) = 190; S_i = 2 for the 90 participants
    // with i + 101 ≤ 190, else 0: S̄ = 1.8, N̄ = 2, s²_S = 36/99, s²_N = s_SN = 0 → σ² = 18/99;
    // z·√(18/99·200) = 11.819 → L = ⌊168.18⌋ = 168, U = ⌈191.82⌉ = 192; X_(k) = 101 + ⌊(k − 1)/2⌋
    // → [184, 196]. (As if the 200 events were independent: z·√(200·0.09) = 8.3 → [171, 189], narrower.)
    assert.deepEqual({ ...treatment.p90e.quantile, se: 0 }, { p: 0.9, unit: 'event', n: 200, estimate: 190, ci_low: 184, ci_high: 196, se: 0 });
    close(treatment.p90e.absolute.estimate, 100, 'p90e absolute');
    close(treatment.p90e.absolute.ci_high, 100 + Z * Math.sqrt((12 / (2 * Z)) ** 2 + (12 / (2 * Z)) ** 2), 'p90e ci_high');
  });
});
