import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { welchTTest, type SampleSummary } from '@switchyard/core';
import { eventually } from './support/flag-fixtures.ts';
import { ACTIVE, createExperiment, experimentPath, moveThrough, prepareEnvironment } from './support/experiment-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * The whole path of an experiment over REST with the server's own worker loop: a flag split 50/50,
 * the experiment made ACTIVE, exposures and metric events ingested, a recompute queued and run,
 * then the results checked against numbers computed here from the same per-participant data —
 * and the purchase p-value against the SciPy fixture it was built to match.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;

const INTERVAL_MS = 60_000;

before(async () => {
  ts = await startTestServer({ STATS_POLL_MS: '25', STATS_INTERVAL_MS: String(INTERVAL_MS) });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'results');
  await prepareEnvironment(client, a);
});
after(() => ts.stop());

/** welch.json's case "bool 120/1000 vs 150/1000" (SciPy's ttest_ind on the 0/1 samples). */
function fixturePValue(): number {
  const text = readFileSync(new URL('../../../packages/core/test-vectors/stats/welch.json', import.meta.url), 'utf8');
  const found = (JSON.parse(text) as { cases: Array<{ name: string; expected: { p_value: number } | null }> }).cases.find((c) => c.name === 'bool 120/1000 vs 150/1000');
  assert.ok(found?.expected, 'fixture case');
  return found.expected.p_value;
}

/** Two-pass mean and sample variance of the per-participant values (zeros included). */
function summary(values: number[]): SampleSummary {
  const n = values.length;
  const mean = values.reduce((s, v) => s + v, 0) / n;
  return { n, mean, variance: values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1) };
}

function assertRelative(actual: number, expected: number, what: string, tolerance = 1e-9): void {
  assert.ok(Math.abs(actual - expected) <= tolerance * Math.abs(expected), `${what}: got ${actual}, expected ${expected}`);
}

const PER_VARIANT = 1000;
const controlKey = (i: number) => `c-${i}`;
const treatmentKey = (i: number) => `t-${i}`;
/** Revenue events: some participants buy several times; values chosen to exercise the sums. */
const controlRevenue = (i: number): number[] => (i < 300 ? [(i % 7) * 3.5, ...(i % 10 === 0 ? [12.25] : [])] : []);
const treatmentRevenue = (i: number): number[] => (i < 400 ? [(i % 5) * 4.25] : []);

async function post(path: string, body: unknown): Promise<void> {
  const answer = expectStatus(await client.post(`/v1/environments/${a.environmentId}/${path}`, { sdkKey: a.rawKey, body }), 202, path);
  assert.deepEqual(answer.rejected_keys, [], `${path}: nothing rejected`);
}

describe('full flow: 50/50 flag → ACTIVE → exposures and events → recompute → results', () => {
  test('participant counts, metric values and p-values match the computation from the same data', async () => {
    const experiment = await createExperiment(client, a, { metric_keys: ['purchase', 'revenue'] });
    await moveThrough(client, a, experiment.id, [ACTIVE]);
    const [iteration] = expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/iterations`, { token: a.admin.token }), 200);
    const t = iteration.started_at_ms as number;

    // 1. Exposures: 1000 per variant. c-999 also saw the treatment, later: its first exposure wins.
    //    Noise that must not count: another flag, and a context exposed before the iteration.
    const exposures = [];
    for (let i = 0; i < PER_VARIANT; i += 1) {
      exposures.push({ flag_key: 'checkout', variant_key: 'control', context_type: 'user', context_key: controlKey(i), timestamp_ms: t + i });
      exposures.push({ flag_key: 'checkout', variant_key: 'treatment', context_type: 'user', context_key: treatmentKey(i), timestamp_ms: t + i });
    }
    exposures.push({ flag_key: 'checkout', variant_key: 'treatment', context_type: 'user', context_key: controlKey(999), timestamp_ms: t + 5000 });
    exposures.push({ flag_key: 'checkout', variant_key: 'treatment', context_type: 'user', context_key: 'early-bird', timestamp_ms: t - 1 });
    await post('exposures', { exposures });

    // 2. Events: purchase converts 120 controls and 150 treatments (c-120..c-199 send false);
    //    revenue as above; plus events of a non-participant, which must not count.
    const events: Json[] = [];
    const event = (contextKey: string, metricKey: string, value: unknown) => events.push({ metric_key: metricKey, context_type: 'user', context_key: contextKey, value, timestamp_ms: t + 10 });
    for (let i = 0; i < 200; i += 1) event(controlKey(i), 'purchase', i < 120);
    for (let i = 0; i < 150; i += 1) event(treatmentKey(i), 'purchase', true);
    for (let i = 0; i < 10; i += 1) event(treatmentKey(i), 'purchase', true); // repeat buyers still count once
    for (let i = 0; i < PER_VARIANT; i += 1) for (const value of controlRevenue(i)) event(controlKey(i), 'revenue', value);
    for (let i = 0; i < PER_VARIANT; i += 1) for (const value of treatmentRevenue(i)) event(treatmentKey(i), 'revenue', value);
    event('stranger', 'purchase', true);
    event('stranger', 'revenue', 1000);
    await post('events/batch', { events });

    // 3. Recompute through the REST route; the server's worker loop runs the job.
    const queued = expectStatus(await client.post(`/v1/experiments/${experiment.id}/recompute`, { token: a.member.token }), 202);
    let finished: Json;
    await eventually('the job to finish', async () => {
      finished = expectStatus(await client.get(`/v1/jobs/${queued.job_id}`, { token: a.member.token }), 200);
      return finished.status === 'completed' || finished.status === 'failed';
    }, 15_000);
    assert.equal(finished.status, 'completed', finished.error);
    assert.equal(finished.error, '');

    // 4. The results.
    const results = expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/results`, { token: a.member.token }), 200);
    assert.deepEqual(Object.keys(results).sort(), ['computation_status', 'computed_at_ms', 'experiment_id', 'is_stale', 'next_run_at_ms', 'srm_p_value', 'variant_results']);
    assert.deepEqual([results.experiment_id, results.computation_status, results.is_stale], [experiment.id, 'completed', false]);
    assert.equal(results.next_run_at_ms, results.computed_at_ms + INTERVAL_MS);
    assert.equal(results.srm_p_value, 1, '1000 vs 1000 on a 50/50 plan');
    const [control, treatment] = results.variant_results;
    assert.deepEqual(Object.keys(control).sort(), ['metric_stats', 'metric_values', 'p_value', 'p_value_present', 'participant_count', 'variant_key']);
    assert.deepEqual([control.variant_key, control.participant_count, treatment.variant_key, treatment.participant_count], ['control', PER_VARIANT, 'treatment', PER_VARIANT]);

    // purchase: the fixture's data exactly, so the p-value is SciPy's.
    assert.deepEqual([control.metric_values.purchase, treatment.metric_values.purchase], [0.12, 0.15]);
    assert.deepEqual([control.p_value_present, control.p_value], [false, 0]);
    assert.equal(treatment.p_value_present, true);
    const purchase = (i: number, converted: number) => (i < converted ? 1 : 0);
    const expectedPurchase = welchTTest(
      summary(Array.from({ length: PER_VARIANT }, (_, i) => purchase(i, 120))),
      summary(Array.from({ length: PER_VARIANT }, (_, i) => purchase(i, 150))),
    );
    assert.ok(expectedPurchase);
    assertRelative(treatment.p_value, expectedPurchase.pValue, 'purchase p vs welchTTest on the raw 0/1 data', 1e-12);
    assertRelative(treatment.p_value, fixturePValue(), 'purchase p vs the SciPy fixture');
    assertRelative(treatment.metric_stats.purchase.ci_low, expectedPurchase.ciLow, 'purchase ci_low', 1e-9);
    assertRelative(treatment.metric_stats.purchase.lift, 0.25, 'purchase lift');
    assert.deepEqual(control.metric_stats.purchase, { mean: 0.12, variance: control.metric_stats.purchase.variance, lift: null, ci_low: null, ci_high: null, p_value: null });

    // revenue: per participant sums, zeros for those without events.
    const sums = (values: (i: number) => number[]) => Array.from({ length: PER_VARIANT }, (_, i) => values(i).reduce((s, v) => s + v, 0));
    const controlSummary = summary(sums(controlRevenue));
    const treatmentSummary = summary(sums(treatmentRevenue));
    const expectedRevenue = welchTTest(controlSummary, treatmentSummary);
    assert.ok(expectedRevenue);
    assertRelative(control.metric_values.revenue, controlSummary.mean, 'control revenue mean', 1e-12);
    assertRelative(control.metric_stats.revenue.variance, controlSummary.variance, 'control revenue variance', 1e-12);
    assertRelative(treatment.metric_values.revenue, treatmentSummary.mean, 'treatment revenue mean', 1e-12);
    assertRelative(treatment.metric_stats.revenue.variance, treatmentSummary.variance, 'treatment revenue variance', 1e-12);
    assertRelative(treatment.metric_stats.revenue.p_value, expectedRevenue.pValue, 'revenue p', 1e-9);
    assertRelative(treatment.metric_stats.revenue.ci_high, expectedRevenue.ciHigh, 'revenue ci_high', 1e-9);

    // 5. One more event of a metric: the results are stale until recomputed.
    await post('events', { metric_key: 'revenue', context_type: 'user', context_key: controlKey(1), value: 1 });
    assert.equal(expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/results`, { token: a.member.token }), 200).is_stale, true);
  });
});
