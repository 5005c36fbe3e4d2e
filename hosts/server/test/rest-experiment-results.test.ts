import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { createFlag } from './support/flag-client.ts';
import { eventually } from './support/flag-fixtures.ts';
import { ACTIVE, createExperiment, experimentPath, moveThrough, prepareEnvironment, splitFlag } from './support/experiment-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * The whole path of an experiment over REST with the server's own worker loop: a flag split 50/50,
 * the experiment made ACTIVE, exposures and metric events ingested, a recompute queued and run,
 * then the results checked against numbers that do not come from the code under test: the data
 * is laid out so that each variant's per-participant values are the sample of a case of the SciPy
 * fixtures (packages/stats/test-vectors/welch.json), whose means, variances, p-values and
 * confidence intervals are then the expected answer; the rest (lift, means of sums) is worked out
 * by hand in the comments.
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

interface WelchCase {
  name: string;
  control: { n: number; mean: number; variance: number };
  treatment: { n: number; mean: number; variance: number };
  expected: { p_value: number; diff: number; ci_low: number; ci_high: number };
}

/** A case of welch.json (SciPy's ttest_ind / ttest_ind_from_stats, Welch). */
function welchCase(name: string): WelchCase {
  const text = readFileSync(new URL('../../../packages/stats/test-vectors/welch.json', import.meta.url), 'utf8');
  const found = (JSON.parse(text) as { cases: WelchCase[] }).cases.find((c) => c.name === name);
  assert.ok(found?.expected, `fixture case ${name}`);
  return found;
}

/** Relative agreement, as packages/core/test/stats-fixtures.test.ts requires of the fixtures. */
function assertRelative(actual: number, expected: number, what: string, tolerance = 1e-9): void {
  assert.equal(typeof actual, 'number', `${what}: got ${actual}`);
  assert.ok(Math.abs(actual - expected) <= tolerance * Math.abs(expected), `${what}: got ${actual}, expected ${expected}`);
}

/** The control's and the treatment's stats of one metric against a fixture case. */
function assertMatchesFixture(control: Json, treatment: Json, metric: string, fixture: WelchCase): void {
  assertRelative(control.metric_values[metric], fixture.control.mean, `${metric}: control mean`);
  assertRelative(control.metric_stats[metric].mean, fixture.control.mean, `${metric}: control stats mean`);
  assertRelative(control.metric_stats[metric].variance, fixture.control.variance, `${metric}: control variance`);
  assert.deepEqual([control.metric_stats[metric].lift, control.metric_stats[metric].ci_low, control.metric_stats[metric].ci_high, control.metric_stats[metric].p_value], [null, null, null, null], `${metric}: the control is not compared with itself`);
  assertRelative(treatment.metric_values[metric], fixture.treatment.mean, `${metric}: treatment mean`);
  assertRelative(treatment.metric_stats[metric].variance, fixture.treatment.variance, `${metric}: treatment variance`);
  assertRelative(treatment.metric_stats[metric].p_value, fixture.expected.p_value, `${metric}: p`);
  assertRelative(treatment.metric_stats[metric].ci_low, fixture.expected.ci_low, `${metric}: ci_low`);
  assertRelative(treatment.metric_stats[metric].ci_high, fixture.expected.ci_high, `${metric}: ci_high`);
  // lift = (treatment mean - control mean) / control mean, from the fixture's own numbers.
  assertRelative(treatment.metric_stats[metric].lift, fixture.expected.diff / fixture.control.mean, `${metric}: lift`);
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

/** Queues a recompute through the REST route and waits for the server's worker to complete it. */
async function recomputeAndWait(experimentId: string): Promise<void> {
  const queued = expectStatus(await client.post(`/v1/experiments/${experimentId}/recompute`, { token: a.member.token }), 202);
  let finished: Json;
  await eventually('the job to finish', async () => {
    finished = expectStatus(await client.get(`/v1/jobs/${queued.job_id}`, { token: a.member.token }), 200);
    return finished.status === 'completed' || finished.status === 'failed';
  }, 15_000);
  assert.equal(finished.status, 'completed', finished.error);
  assert.equal(finished.error, '');
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
    // Every event comes after its participant's first exposure (t + i, i < 1000) ...
    const event = (contextKey: string, metricKey: string, value: unknown, timestampMs = t + 2000) =>
      events.push({ metric_key: metricKey, context_type: 'user', context_key: contextKey, value, timestamp_ms: timestampMs });
    for (let i = 0; i < 200; i += 1) event(controlKey(i), 'purchase', i < 120);
    for (let i = 0; i < 150; i += 1) event(treatmentKey(i), 'purchase', true);
    for (let i = 0; i < 10; i += 1) event(treatmentKey(i), 'purchase', true); // repeat buyers still count once
    for (let i = 0; i < PER_VARIANT; i += 1) for (const value of controlRevenue(i)) event(controlKey(i), 'revenue', value);
    for (let i = 0; i < PER_VARIANT; i += 1) for (const value of treatmentRevenue(i)) event(treatmentKey(i), 'revenue', value);
    event('stranger', 'purchase', true);
    event('stranger', 'revenue', 1000);
    // ... except these, before c-500's and t-500's first exposures (t + 500): they do not count
    // (docs/statistics.md "Attribution and aggregation"; before, they would have).
    for (const key of [controlKey(500), treatmentKey(500)]) {
      event(key, 'purchase', true, t + 100);
      event(key, 'revenue', 1000, t + 100);
    }
    await post('events/batch', { events });

    // 3. Recompute through the REST route; the server's worker loop runs the job.
    await recomputeAndWait(experiment.id);

    // 4. The results.
    const results = expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/results`, { token: a.member.token }), 200);
    assert.deepEqual(Object.keys(results).sort(), ['analysis', 'computation_status', 'computed_at_ms', 'experiment_id', 'is_stale', 'next_run_at_ms', 'sequential_srm_p_value', 'srm_p_value', 'srm_warning', 'variant_results']);
    assert.deepEqual([results.experiment_id, results.computation_status, results.is_stale], [experiment.id, 'completed', false]);
    assert.equal(results.next_run_at_ms, results.computed_at_ms + INTERVAL_MS);
    assert.equal(results.srm_p_value, 1, '1000 vs 1000 on a 50/50 plan');
    const [control, treatment] = results.variant_results;
    assert.deepEqual(Object.keys(control).sort(), ['metric_stats', 'metric_values', 'p_value', 'p_value_present', 'participant_count', 'variant_key']);
    assert.deepEqual([control.variant_key, control.participant_count, treatment.variant_key, treatment.participant_count], ['control', PER_VARIANT, 'treatment', PER_VARIANT]);

    // purchase: 120 and 150 of 1000 converted, exactly the data of the fixture case, whose numbers
    // (SciPy's) are the answer; the primary metric's p-value is also the variant's p_value.
    const purchase = welchCase('bool 120/1000 vs 150/1000');
    assert.deepEqual([control.metric_values.purchase, treatment.metric_values.purchase], [0.12, 0.15]);
    assertMatchesFixture(control, treatment, 'purchase', purchase);
    assertRelative(treatment.metric_stats.purchase.lift, 0.25, 'purchase lift by hand: (0.15 - 0.12) / 0.12');
    assert.deepEqual([control.p_value_present, control.p_value], [false, 0]);
    assert.equal(treatment.p_value_present, true);
    assert.equal(treatment.p_value, treatment.metric_stats.purchase.p_value);

    // revenue: means of per-participant sums, zeros included, by hand. Control: c-0..c-299 send
    // (i % 7) * 3.5, i.e. 42 whole cycles of 0..6 (42 * 21) plus c-294..c-299 (0..5: 15) = 897
    // times 3.5 = 3139.5, and every tenth of them 12.25 more (30 * 12.25 = 367.5): 3507 over
    // 1000 participants. Treatment: t-0..t-399 send (i % 5) * 4.25: 80 cycles of 0..4 (80 * 10)
    // times 4.25 = 3400 over 1000. (Its variance and p-value are checked by the next test.)
    assertRelative(control.metric_values.revenue, 3.507, 'control revenue mean', 1e-12);
    assertRelative(treatment.metric_values.revenue, 3.4, 'treatment revenue mean', 1e-12);

    // 5. One more event of a metric: the results are stale until recomputed.
    await post('events', { metric_key: 'revenue', context_type: 'user', context_key: controlKey(1), value: 1 });
    assert.equal(expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/results`, { token: a.member.token }), 200).is_stale, true);
  });

  test('a double metric whose per-participant sums are the sample of a SciPy case: means, variances, p and CI are SciPy\'s', async () => {
    // welch.json "n=3 vs n=3": control mean 1.0 and variance 0.25, treatment 1.8 and 0.49. The
    // samples {0.5, 1.0, 1.5} and {1.1, 1.8, 2.5} have exactly these (deviations ±0.5 and ±0.7
    // over n - 1 = 2: 0.5 / 2 and 0.98 / 2). Two of the values arrive as two events each.
    const fixture = welchCase('n=3 vs n=3');
    await createFlag(client, a.admin.token, a.environmentId, splitFlag('pricing'));
    const experiment = await createExperiment(client, a, { flag_key: 'pricing', metric_keys: ['revenue'] });
    await moveThrough(client, a, experiment.id, [ACTIVE]);
    const [iteration] = expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/iterations`, { token: a.admin.token }), 200);
    const t = iteration.started_at_ms as number;
    const samples = { control: [[0.5], [1.0], [1.0, 0.5]], treatment: [[1.1], [1.8], [2.0, 0.5]] };
    const exposures: Json[] = [];
    const events: Json[] = [];
    for (const [variant, values] of Object.entries(samples)) {
      values.forEach((parts, i) => {
        const contextKey = `pricing-${variant}-${i}`;
        exposures.push({ flag_key: 'pricing', variant_key: variant, context_type: 'user', context_key: contextKey, timestamp_ms: t + i });
        for (const value of parts) events.push({ metric_key: 'revenue', context_type: 'user', context_key: contextKey, value, timestamp_ms: t + 10 + i });
      });
    }
    events.push({ metric_key: 'revenue', context_type: 'user', context_key: 'pricing-stranger', value: 100, timestamp_ms: t + 10 });
    await post('exposures', { exposures });
    await post('events/batch', { events });

    await recomputeAndWait(experiment.id);

    const results = expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/results`, { token: a.member.token }), 200);
    const [control, treatment] = results.variant_results;
    assert.deepEqual([control.variant_key, control.participant_count, treatment.variant_key, treatment.participant_count], ['control', fixture.control.n, 'treatment', fixture.treatment.n]);
    assertMatchesFixture(control, treatment, 'revenue', fixture);
    assertRelative(treatment.metric_stats.revenue.lift, 0.8, 'revenue lift by hand: (1.8 - 1.0) / 1.0');
    assert.equal(treatment.p_value, treatment.metric_stats.revenue.p_value, 'revenue is this experiment\'s primary metric');

    // The analysis of metric definitions (docs/statistics.md), here the old-style metric's
    // defaults: absolute = the Welch test above; relative by the delta method, whose values come
    // from SciPy on the same samples: r = 0.8, se² = 0.49/3 + 1.8²·0.25/3 (se 0.6582805886043833),
    // df 3.619299405155321, p = 2·t.sf(r/se, df) = 0.2975370491577691, CI r ± t.ppf(0.975, df)·se.
    const stats = treatment.metric_stats.revenue;
    assertRelative(stats.absolute.estimate, fixture.expected.diff, 'absolute estimate');
    assertRelative(stats.absolute.p_value, fixture.expected.p_value, 'absolute p');
    assertRelative(stats.absolute.ci_low, fixture.expected.ci_low, 'absolute ci_low');
    assertRelative(stats.absolute.ci_high, fixture.expected.ci_high, 'absolute ci_high');
    assertRelative(stats.relative.estimate, 0.8, 'relative estimate');
    assertRelative(stats.relative.p_value, 0.2975370491577691, 'relative p', 1e-9);
    // SciPy's t.ppf is good to ~1e-8 relative.
    assertRelative(stats.relative.ci_low, -1.1060530810637172, 'relative ci_low', 1e-7);
    assertRelative(stats.relative.ci_high, 2.7060530810637173, 'relative ci_high', 1e-7);
    assert.equal(stats.adjusted_p_value, stats.relative.p_value, 'no correction by default');
    assert.deepEqual([stats.verdict, stats.cuped, stats.capped_mean, stats.uncapped_mean], ['inconclusive', null, 1.8, 1.8]);
    assert.equal(control.metric_stats.revenue.verdict, undefined, 'the control has no verdict');
    assert.equal(results.srm_warning, false);
    assert.deepEqual(results.analysis, { alpha: 0.05, sides: 'two', relative_interval: 'delta', correction: 'none', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5, engine: 'frequentist', sequential: null, hybrid: false, prior: null });
  });
});
