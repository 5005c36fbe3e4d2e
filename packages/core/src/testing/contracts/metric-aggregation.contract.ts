import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_ANALYSIS, type EventMetric, type ExperimentMetric, type MetricSource, type RatioMetric } from '../../experiments/analysis-model.ts';
import type { Exposure, MetricEvent } from '../../model/entities.ts';
import type { ArmTotals, MetricAggregateQuery } from '../../ports/experiment-data-ports.ts';
import type { EnvironmentScope } from '../../ports/scopes.ts';
import type { ExperimentDataRepositories, ExperimentDataWorld, MakeExperimentDataRepos } from './experiment-data-repositories.contract.ts';
import { foreignOrgScope } from './event-experiment-fixture.ts';

async function inWorld(make: MakeExperimentDataRepos, body: (world: ExperimentDataWorld) => Promise<void>): Promise<void> {
  const world = await make();
  try {
    await body(world);
  } finally {
    await world.close();
  }
}

type ExposureRow = Omit<Exposure, 'environmentId'>;
type EventRow = Omit<MetricEvent, 'environmentId'>;
const exposure = (contextKey: string, variantKey: string, timestampMs: number, extra: Partial<ExposureRow> = {}): ExposureRow => ({
  flagKey: 'checkout', variantKey, contextType: 'user', contextKey, timestampMs, ...extra,
});
const event = (contextKey: string, metricKey: string, value: number, timestampMs: number): EventRow => ({
  metricKey, contextType: 'user', contextKey, value, timestampMs,
});
const events = (contextKey: string, metricKey: string, rows: Array<[value: number, timestampMs: number]>): EventRow[] =>
  rows.map(([value, timestampMs]) => event(contextKey, metricKey, value, timestampMs));

/**
 * A hand-computed dataset; iteration window [1000, 10000). Participants and their first exposure t0:
 *   control:   A (2000), B (3000), F (1500, no events after it)
 *   treatment: C (2000), D (4000; exposed to control at 5000 too: the first exposure wins), G (6000)
 *   b:         K (2000)
 *   not participants: E (exposed at 500, before the window), N (never exposed), H (another flag).
 * Events (value@timestamp); `purchase` is bool, `revenue` double, `pageview` int:
 *   A: purchase 1@1500 0@2500; revenue 10@1500 2@1800 4@2000 6@2600 100@10000; pageview @1900 @2100 @2200 @3500
 *   B: purchase 1@3100 1@3200; revenue 20@2999 30@3300; pageview @3100
 *   F: revenue 3@800
 *   C: purchase 0@2100 0@2200; revenue 5@2500 7@2600 48@4000; pageview @2050 @2500 @2900
 *   D: purchase 1@4500; revenue 9@2999 8@3000 12@4500; pageview @3900 @4100
 *   G: purchase 1@6000; revenue 40@5000 0@7000; pageview @6500
 *   K: purchase 1@2100; revenue 7@2500; pageview @2200
 *   E: revenue 5@2000; N: purchase 1@3000, revenue 99@3000; H: revenue 77@2500
 * Attributed (t0 ≤ timestamp < 10000), per participant [A, B, F | C, D, G | K]:
 *   revenue sum [10 (4+6), 30, 0 | 60, 12, 0 | 7]: A's 10 and 2 and B's 20 came before t0, A's 100
 *   at the window's end; before this aggregation A would have had 122.
 * The same context key `A` also has exposures and revenue in another environment and another org.
 */
async function seedDataset(repos: ExperimentDataRepositories, scopes: ExperimentDataWorld['scopes']): Promise<void> {
  await repos.exposures.insert(scopes.env, [
    exposure('A', 'control', 2000), exposure('B', 'control', 3000), exposure('F', 'control', 1500),
    exposure('C', 'treatment', 2000), exposure('D', 'treatment', 4000), exposure('D', 'control', 5000),
    exposure('G', 'treatment', 6000), exposure('K', 'b', 2000), exposure('E', 'control', 500),
    exposure('H', 'control', 2000, { flagKey: 'another-flag' }),
  ]);
  await repos.events.insert(scopes.env, [
    ...events('A', 'purchase', [[1, 1500], [0, 2500]]),
    ...events('A', 'revenue', [[10, 1500], [2, 1800], [4, 2000], [6, 2600], [100, 10000]]),
    ...events('A', 'pageview', [[1, 1900], [1, 2100], [1, 2200], [1, 3500]]),
    ...events('B', 'purchase', [[1, 3100], [1, 3200]]),
    ...events('B', 'revenue', [[20, 2999], [30, 3300]]),
    ...events('B', 'pageview', [[1, 3100]]),
    ...events('F', 'revenue', [[3, 800]]),
    ...events('C', 'purchase', [[0, 2100], [0, 2200]]),
    ...events('C', 'revenue', [[5, 2500], [7, 2600], [48, 4000]]),
    ...events('C', 'pageview', [[1, 2050], [1, 2500], [1, 2900]]),
    ...events('D', 'purchase', [[1, 4500]]),
    ...events('D', 'revenue', [[9, 2999], [8, 3000], [12, 4500]]),
    ...events('D', 'pageview', [[1, 3900], [1, 4100]]),
    ...events('G', 'purchase', [[1, 6000]]),
    ...events('G', 'revenue', [[40, 5000], [0, 7000]]),
    ...events('G', 'pageview', [[1, 6500]]),
    ...events('K', 'purchase', [[1, 2100]]),
    ...events('K', 'revenue', [[7, 2500]]),
    ...events('K', 'pageview', [[1, 2200]]),
    event('E', 'revenue', 5, 2000), event('N', 'purchase', 1, 3000), event('N', 'revenue', 99, 3000), event('H', 'revenue', 77, 2500),
  ]);
  await repos.exposures.insert(scopes.otherEnvSameProject, [exposure('A', 'control', 2000)]);
  await repos.events.insert(scopes.otherEnvSameProject, [event('A', 'revenue', 1000, 2500)]);
  await repos.exposures.insert(scopes.otherOrgEnv, [exposure('A', 'treatment', 2000)]);
  await repos.events.insert(scopes.otherOrgEnv, [event('A', 'revenue', 500, 2500)]);
}

const eventMetric = (key: string, eventKey: string, aggregation: MetricSource['aggregation'], extra: Partial<EventMetric> = {}): EventMetric => ({
  kind: 'event', key, eventKey, aggregation, windowMs: null, direction: 'increase', capping: null, cuped: null, guardrail: null, ...extra,
});
const ratioMetric = (key: string, numerator: MetricSource, denominator: MetricSource, extra: Partial<RatioMetric> = {}): RatioMetric => ({
  kind: 'ratio', key, numerator, denominator, direction: 'increase', cuped: null, guardrail: null, ...extra,
});

const query = (metrics: ExperimentMetric[], extra: Partial<MetricAggregateQuery> = {}): MetricAggregateQuery => ({
  flagKey: 'checkout',
  ruleId: null,
  variantKeys: ['control', 'treatment', 'b', 'empty'],
  metrics,
  valueTypes: { purchase: 'bool', revenue: 'double', pageview: 'int' },
  fromMs: 1000,
  toMs: 10000,
  ...extra,
});

interface Expected {
  n: number;
  means: number[];
  comoments: number[][];
  /** Defaults to means[0] (no capping). */
  uncapped?: number;
}

const close = (actual: number, expected: number): boolean => Math.abs(actual - expected) <= 1e-12 * Math.max(1, Math.abs(expected));

/** Checks one arm's data for one metric against hand-computed moments (relative tolerance 1e-12). */
function assertMetric(totals: ArmTotals[], variantKey: string, metricKey: string, expected: Expected): void {
  const data = totals.find((arm) => arm.variantKey === variantKey)?.metrics[metricKey];
  const what = `${metricKey} in ${variantKey}`;
  assert.ok(data, `${what}: present`);
  const actual = data.moments;
  const shown = `${what}: expected ${JSON.stringify({ ...expected })}, got ${JSON.stringify({ ...actual, uncapped: data.uncappedMean })}`;
  assert.equal(actual.n, expected.n, shown);
  assert.equal(actual.means.length, expected.means.length, shown);
  assert.ok(actual.means.every((mean, i) => close(mean, expected.means[i] ?? NaN)), shown);
  assert.equal(actual.comoments.length, expected.comoments.length, shown);
  actual.comoments.forEach((row, i) => {
    const want = expected.comoments[i] ?? [];
    assert.ok(row.length === want.length && row.every((c, j) => close(c, want[j] ?? NaN)), shown);
  });
  assert.ok(close(data.uncappedMean, expected.uncapped ?? expected.means[0] ?? 0), shown);
}

/** One participant: its values are the means, co-moments 0. */
const single = (...values: number[]): Expected => ({ n: 1, means: values, comoments: values.map(() => values.map(() => 0)) });
/** One variable over participants whose mean and M2 = Σ(v − mean)² are given. */
const one = (n: number, mean: number, m2: number, uncapped?: number): Expected => ({ n, means: [mean], comoments: [[m2]], ...(uncapped === undefined ? {} : { uncapped }) });
const nothing = (k: number): Expected => ({ n: 0, means: new Array<number>(k).fill(0), comoments: Array.from({ length: k }, () => new Array<number>(k).fill(0)) });

/** The same answer as `expected` (a computation from scratch), each number within 1e-12 relative. */
function assertSameTotals(actual: ArmTotals[], expected: ArmTotals[], what: string): void {
  assert.deepEqual(actual.map((arm) => [arm.variantKey, arm.participants]), expected.map((arm) => [arm.variantKey, arm.participants]), what);
  for (const arm of expected) {
    for (const [metricKey, data] of Object.entries(arm.metrics)) {
      assertMetric(actual, arm.variantKey, metricKey, { n: data.moments.n, means: data.moments.means, comoments: data.moments.comoments, uncapped: data.uncappedMean });
    }
  }
}

/** The behaviour of ExperimentDataRepository.aggregateMetrics; run against the fake and PostgreSQL. */
export function metricAggregationContract(name: string, makeRepos: MakeExperimentDataRepos): void {
  describe(`ExperimentDataRepository.aggregateMetrics contract: ${name}`, () => {
    test('participants per arm in variantKeys order, first exposure wins; every metric in every arm, an empty arm all zeros', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await seedDataset(repos, scopes);
        const revenue = eventMetric('revenue_sum', 'revenue', 'sum');
        const totals = await repos.experimentData.aggregateMetrics(scopes.env, query([revenue]));
        assert.deepEqual(totals.map((arm) => [arm.variantKey, arm.participants, Object.keys(arm.metrics)]), [
          ['control', 3, ['revenue_sum']], ['treatment', 3, ['revenue_sum']], ['b', 1, ['revenue_sum']], ['empty', 0, ['revenue_sum']],
        ]);
        assertMetric(totals, 'empty', 'revenue_sum', nothing(1));
        const reordered = await repos.experimentData.aggregateMetrics(scopes.env, query([], { variantKeys: ['b', 'control'] }));
        // D's exposures: treatment is not an experiment variant here, so its control exposure at 5000 counts.
        assert.deepEqual(reordered.map((arm) => [arm.variantKey, arm.participants, arm.metrics]), [['b', 1, {}], ['control', 4, {}]]);
        assert.deepEqual(await repos.experimentData.aggregateMetrics(scopes.env, query([revenue], { variantKeys: [] })), []);
      }));

    test('the studied rule: exposures naming another rule (or \'\': no allocation) are no participants; unreported ones are; t0 is the first qualifying exposure', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await repos.exposures.insert(scopes.env, [
          exposure('R1', 'control', 2000, { ruleId: 'split' }),
          exposure('R2', 'treatment', 2000, { ruleId: '' }),
          exposure('R3', 'treatment', 2000, { ruleId: 'other-rule' }),
          exposure('R4', 'treatment', 2000, { ruleId: null }),
          exposure('R5', 'control', 2000, { ruleId: '' }),
          exposure('R5', 'treatment', 3000, { ruleId: 'split' }),
        ]);
        // R5's revenue at 2500 came before the allocation served it (t0 = 3000): it does not count.
        await repos.events.insert(scopes.env, [event('R5', 'revenue', 5, 2500), event('R5', 'revenue', 7, 3500)]);
        const revenue = eventMetric('revenue', 'revenue', 'sum');
        const studied = await repos.experimentData.aggregateMetrics(scopes.env, query([revenue], { ruleId: 'split', variantKeys: ['control', 'treatment'] }));
        // control [R1: 0]; treatment [R4: 0, R5: 7].
        assert.deepEqual(studied.map((arm) => [arm.variantKey, arm.participants]), [['control', 1], ['treatment', 2]]);
        assertMetric(studied, 'treatment', 'revenue', one(2, 3.5, 24.5));
        // Without a rule every exposure counts, each context in the arm of its first: control [R1, R5: 12], treatment [R2, R3, R4].
        const any = await repos.experimentData.aggregateMetrics(scopes.env, query([revenue], { ruleId: null, variantKeys: ['control', 'treatment'] }));
        assert.deepEqual(any.map((arm) => [arm.variantKey, arm.participants]), [['control', 2], ['treatment', 3]]);
        assertMetric(any, 'control', 'revenue', one(2, 6, 72));
      }));

    test('attribution: events from the first exposure t0 (inclusive) to the window end, within window_ms after t0', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await seedDataset(repos, scopes);
        const metrics = [eventMetric('revenue_sum', 'revenue', 'sum'), eventMetric('revenue_1s', 'revenue', 'sum', { windowMs: 1000 })];
        const totals = await repos.experimentData.aggregateMetrics(scopes.env, query(metrics));
        // [10, 30, 0]: A's 4 at t0 counts, its 10 and 2 before t0 and 100 at 10000 do not; B's 20 at
        // t0 − 1 does not; E, N, H and the other scopes' A do not count.
        assertMetric(totals, 'control', 'revenue_sum', one(3, 40 / 3, 1400 / 3));
        // [60, 12, 0]: D's events before its t0 4000 (9, 8) do not count; G's 0 at 7000 is a 0.
        assertMetric(totals, 'treatment', 'revenue_sum', one(3, 24, 2016));
        assertMetric(totals, 'b', 'revenue_sum', single(7));
        // window 1000: [10, 30, 0] and [12 (C's 48 at t0 + 2000 is out), 12, 0]; G's 0 at t0 + 1000 is out.
        assertMetric(totals, 'control', 'revenue_1s', one(3, 40 / 3, 1400 / 3));
        assertMetric(totals, 'treatment', 'revenue_1s', one(3, 8, 96));
        // A running iteration: A's 100 at 10000 counts, [110, 30, 0].
        const open = await repos.experimentData.aggregateMetrics(scopes.env, query(metrics, { toMs: null }));
        assertMetric(open, 'control', 'revenue_sum', one(3, 140 / 3, 110 * 110 + 30 * 30 - 140 * 140 / 3));
      }));

    test('aggregations: conversion (bool: any true, numeric: any event), sum (bool: trues), count, mean leaves out participants without events', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await seedDataset(repos, scopes);
        const totals = await repos.experimentData.aggregateMetrics(scopes.env, query([
          eventMetric('purchase_conversion', 'purchase', 'conversion'),
          eventMetric('revenue_conversion', 'revenue', 'conversion'),
          eventMetric('purchase_sum', 'purchase', 'sum'),
          eventMetric('purchase_count', 'purchase', 'count'),
          eventMetric('pageview_count', 'pageview', 'count'),
          eventMetric('revenue_mean', 'revenue', 'mean'),
          eventMetric('purchase_mean', 'purchase', 'mean'),
        ]));
        // purchase conversion [0 (A's true came before t0), 1, 0 | 0 (C: false events only), 1, 1 | 1]
        assertMetric(totals, 'control', 'purchase_conversion', one(3, 1 / 3, 2 / 3));
        assertMetric(totals, 'treatment', 'purchase_conversion', one(3, 2 / 3, 2 / 3));
        assertMetric(totals, 'b', 'purchase_conversion', single(1));
        // revenue conversion [1, 1, 0 | 1, 1, 1 (G's revenue 0 is an event) | 1]
        assertMetric(totals, 'control', 'revenue_conversion', one(3, 2 / 3, 2 / 3));
        assertMetric(totals, 'treatment', 'revenue_conversion', one(3, 1, 0));
        // purchase sum (trues) [0, 2, 0 | 0, 1, 1] and count (all events) [1, 2, 0 | 2, 1, 1]
        assertMetric(totals, 'control', 'purchase_sum', one(3, 2 / 3, 8 / 3));
        assertMetric(totals, 'treatment', 'purchase_sum', one(3, 2 / 3, 2 / 3));
        assertMetric(totals, 'control', 'purchase_count', one(3, 1, 2));
        assertMetric(totals, 'treatment', 'purchase_count', one(3, 4 / 3, 2 / 3));
        // pageview count [3 (A's @1900 before t0 is out), 1, 0 | 3, 1 (D's @3900 is out), 1 | 1]
        assertMetric(totals, 'control', 'pageview_count', one(3, 4 / 3, 14 / 3));
        assertMetric(totals, 'treatment', 'pageview_count', one(3, 5 / 3, 8 / 3));
        // revenue mean [5, 30, F left out | 20, 12, 0 | 7]
        assertMetric(totals, 'control', 'revenue_mean', one(2, 17.5, 312.5));
        assertMetric(totals, 'treatment', 'revenue_mean', one(3, 32 / 3, 608 / 3));
        assertMetric(totals, 'b', 'revenue_mean', single(7));
        // purchase mean (bool as 0/1) [0, 1, F out | 0, 1, 1]
        assertMetric(totals, 'control', 'purchase_mean', one(2, 0.5, 0.5));
        assertMetric(totals, 'treatment', 'purchase_mean', one(3, 2 / 3, 2 / 3));
      }));

    test('capping: absolute bounds; percentile_cont bounds over the values of every arm, zeros left out with ignoreZeros', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await seedDataset(repos, scopes);
        const capped = (key: string, capping: EventMetric['capping']) => eventMetric(key, 'revenue', 'sum', { capping });
        const totals = await repos.experimentData.aggregateMetrics(scopes.env, query([
          capped('absolute', { kind: 'absolute', lower: 2, upper: 25, ignoreZeros: false }),
          capped('upper_only', { kind: 'absolute', lower: null, upper: 25, ignoreZeros: false }),
          capped('percentile', { kind: 'percentile', lower: 0.3, upper: 0.9, ignoreZeros: false }),
          capped('percentile_nonzero', { kind: 'percentile', lower: 0.3, upper: 0.9, ignoreZeros: true }),
          eventMetric('mean_median', 'revenue', 'mean', { capping: { kind: 'percentile', lower: null, upper: 0.5, ignoreZeros: false } }),
        ]));
        // Uncapped [10, 30, 0 | 60, 12, 0 | 7]. Absolute [2, 25]: [10, 25, 2 | 25, 12, 2 | 7].
        assertMetric(totals, 'control', 'absolute', one(3, 37 / 3, 818 / 3, 40 / 3));
        assertMetric(totals, 'treatment', 'absolute', one(3, 13, 266, 24));
        assertMetric(totals, 'b', 'absolute', single(7));
        // Upper only: [10, 25, 0 | 25, 12, 0].
        assertMetric(totals, 'control', 'upper_only', one(3, 35 / 3, 100 + 625 - (35 * 35) / 3, 40 / 3));
        assertMetric(totals, 'treatment', 'upper_only', one(3, 37 / 3, 625 + 144 - (37 * 37) / 3, 24));
        // Pool sorted [0, 0, 7, 10, 12, 30, 60]: q 0.3 at position 1.8 → 0 + 0.8·7 = 5.6; q 0.9 at
        // 5.4 → 30 + 0.4·30 = 42. Capped [10, 30, 5.6 | 42, 12, 5.6 | 7].
        assertMetric(totals, 'control', 'percentile', one(3, 15.2, 5.2 ** 2 + 14.8 ** 2 + 9.6 ** 2, 40 / 3));
        assertMetric(totals, 'treatment', 'percentile', one(3, 59.6 / 3, (66.4 ** 2 + 23.6 ** 2 + 42.8 ** 2) / 9, 24));
        assertMetric(totals, 'b', 'percentile', single(7));
        // Without zeros [7, 10, 12, 30, 60]: q 0.3 at 1.2 → 10 + 0.2·2 = 10.4; q 0.9 at 3.6 → 30 +
        // 0.6·30 = 48. Zeros are left as they are (a participant without revenue is not lifted to
        // the lower bound): [10.4, 30, 0 | 48, 12, 0 | 10.4].
        assertMetric(totals, 'control', 'percentile_nonzero', one(3, 40.4 / 3, 10.4 ** 2 + 30 ** 2 - 40.4 ** 2 / 3, 40 / 3));
        assertMetric(totals, 'treatment', 'percentile_nonzero', one(3, 20, 48 ** 2 + 12 ** 2 - 60 ** 2 / 3, 24));
        assertMetric(totals, 'b', 'percentile_nonzero', { ...single(10.4), uncapped: 7 });
        // A mean's pool holds only the participants it keeps: [5, 30 | 20, 12, 0 | 7] (F is out),
        // median at 2.5 of [0, 5, 7, 12, 20, 30] → 9.5 (with F's 0 it would be 7). [5, 9.5 | 9.5, 9.5, 0 | 7].
        assertMetric(totals, 'control', 'mean_median', one(2, 7.25, 2 * 2.25 ** 2, 17.5));
        assertMetric(totals, 'treatment', 'mean_median', one(3, 19 / 3, 2 * 9.5 ** 2 - 361 / 3, 32 / 3));
        assertMetric(totals, 'b', 'mean_median', single(7));
      }));

    test('CUPED: the covariate is the same source over [t0 − lookback, t0), before the iteration window too', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await seedDataset(repos, scopes);
        const cuped = { lookbackMs: 1000 };
        const totals = await repos.experimentData.aggregateMetrics(scopes.env, query([
          eventMetric('revenue', 'revenue', 'sum', { cuped }),
          eventMetric('revenue_mean', 'revenue', 'mean', { cuped }),
          eventMetric('revenue_capped', 'revenue', 'sum', { cuped, capping: { kind: 'absolute', lower: null, upper: 25, ignoreZeros: false } }),
        ]));
        // Outcome [10, 30, 0 | 60, 12, 0 | 7]; covariate [12 (10 + 2), 20 (t0 − 1), 3 (at 800, before
        // the iteration) | 0, 8 (D's 8 at t0 − 1000 in, 9 at t0 − 1001 out), 40 | 0].
        assertMetric(totals, 'control', 'revenue', { n: 3, means: [40 / 3, 35 / 3], comoments: [[1400 / 3, 760 / 3], [760 / 3, 434 / 3]] });
        assertMetric(totals, 'treatment', 'revenue', { n: 3, means: [24, 16], comoments: [[2016, -1056], [-1056, 896]] });
        assertMetric(totals, 'b', 'revenue', single(7, 0));
        // Mean: outcome [5, 30, F out | 20, 12, 0]; covariate means [6, 20 | 0 (C has none before t0), 8, 40].
        assertMetric(totals, 'control', 'revenue_mean', { n: 2, means: [17.5, 13], comoments: [[312.5, 175], [175, 98]] });
        assertMetric(totals, 'treatment', 'revenue_mean', { n: 3, means: [32 / 3, 16], comoments: [[608 / 3, -416], [-416, 896]] });
        // Capping applies to the outcome only: [10, 25, 0 | 25, 12, 0], covariates as above (40 stays).
        assertMetric(totals, 'control', 'revenue_capped', {
          n: 3, means: [35 / 3, 35 / 3], comoments: [[725 - 1225 / 3, 620 - 1225 / 3], [620 - 1225 / 3, 434 / 3]], uncapped: 40 / 3,
        });
        assertMetric(totals, 'treatment', 'revenue_capped', {
          n: 3, means: [37 / 3, 16], comoments: [[769 - 1369 / 3, 96 - 592], [96 - 592, 896]], uncapped: 24,
        });
      }));

    test('ratio metrics: joint moments of numerator, denominator and their pre-exposure versions; a mean source leaves participants out', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await seedDataset(repos, scopes);
        const revenueSum: MetricSource = { eventKey: 'revenue', aggregation: 'sum', windowMs: null };
        const totals = await repos.experimentData.aggregateMetrics(scopes.env, query([
          ratioMetric('per_pageview', revenueSum, { eventKey: 'pageview', aggregation: 'count', windowMs: 1000 }, { cuped: { lookbackMs: 1000 } }),
          ratioMetric('mean_per_count', { eventKey: 'revenue', aggregation: 'mean', windowMs: null }, { eventKey: 'pageview', aggregation: 'count', windowMs: null }),
          ratioMetric('same_key', revenueSum, { eventKey: 'revenue', aggregation: 'count', windowMs: null }),
        ]));
        // per_pageview: numerator [10, 30, 0 | 60, 12, 0 | 7]; denominator, pageviews within 1000 of
        // t0 [2, 1, 0 | 3, 1, 1 | 1]; pre-exposure numerator [12, 20, 3 | 0, 8, 40 | 0] and
        // denominator (no window) [1, 0, 0 | 0, 1, 0 | 0].
        assertMetric(totals, 'control', 'per_pageview', {
          n: 3,
          means: [40 / 3, 1, 35 / 3, 1 / 3],
          comoments: [
            [1400 / 3, 10, 760 / 3, -10 / 3],
            [10, 2, 9, 1],
            [760 / 3, 9, 434 / 3, 1 / 3],
            [-10 / 3, 1, 1 / 3, 2 / 3],
          ],
        });
        assertMetric(totals, 'treatment', 'per_pageview', {
          n: 3,
          means: [24, 5 / 3, 16, 1 / 3],
          comoments: [
            [2016, 72, -1056, -12],
            [72, 8 / 3, -32, -2 / 3],
            [-1056, -32, 896, -8],
            [-12, -2 / 3, -8, 2 / 3],
          ],
        });
        assertMetric(totals, 'b', 'per_pageview', single(7, 1, 0, 0));
        assertMetric(totals, 'empty', 'per_pageview', nothing(4));
        // mean_per_count: F (no revenue) left out; [5, 30 | 20, 12, 0] over pageviews [3, 1 | 3, 1, 1].
        assertMetric(totals, 'control', 'mean_per_count', { n: 2, means: [17.5, 2], comoments: [[312.5, -25], [-25, 2]] });
        assertMetric(totals, 'treatment', 'mean_per_count', { n: 3, means: [32 / 3, 5 / 3], comoments: [[608 / 3, 56 / 3], [56 / 3, 8 / 3]] });
        // same_key (one event key for both): [10, 30, 0 | 60, 12, 0] over revenue counts [2, 1, 0 | 3, 1, 1].
        assertMetric(totals, 'control', 'same_key', { n: 3, means: [40 / 3, 1], comoments: [[1400 / 3, 10], [10, 2]] });
        assertMetric(totals, 'treatment', 'same_key', { n: 3, means: [24, 5 / 3], comoments: [[2016, 72], [72, 8 / 3]] });
      }));

    test('an iteration\'s results brought up to date call after call equal a computation from scratch: late exposures, late events, new participants, changed definitions, the end', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.experiments.create(scopes.env, {
          name: 'incremental', description: '', flagKey: 'checkout', variantKeys: ['control', 'treatment'], metrics: [], trafficAllocation: 1,
          ruleId: null, controlVariantKey: 'control', analysis: { ...DEFAULT_ANALYSIS },
        });
        await repos.experiments.transition(scopes.env, created.id, { from: 'EXPERIMENT_STATUS_DRAFT', to: 'EXPERIMENT_STATUS_ACTIVE', atMs: 1000 });
        const [iteration] = await repos.experiments.listIterations(scopes.env, created.id);
        assert.ok(iteration);
        await seedDataset(repos, scopes);
        let metrics: ExperimentMetric[] = [
          eventMetric('revenue', 'revenue', 'sum', { capping: { kind: 'percentile', lower: null, upper: 0.9, ignoreZeros: false } }),
          eventMetric('purchase', 'purchase', 'conversion', { windowMs: 2000 }),
          eventMetric('revenue_mean', 'revenue', 'mean', { cuped: { lookbackMs: 1000 } }),
          ratioMetric('revenue_per_view', { eventKey: 'revenue', aggregation: 'sum', windowMs: null }, { eventKey: 'pageview', aggregation: 'count', windowMs: null }),
        ];
        const same = async (what: string, extra: Partial<MetricAggregateQuery> = {}) => {
          const kept = await repos.experimentData.aggregateMetrics(scopes.env, query(metrics, { toMs: null, iterationId: iteration.id, ...extra }));
          const fresh = await repos.experimentData.aggregateMetrics(scopes.env, query(metrics, { toMs: null, ...extra }));
          assertSameTotals(kept, fresh, what);
          return kept;
        };
        await same('first call');
        await same('nothing new');
        // B is exposed earlier (to treatment, at 2500: its t0 and arm change); Z, new, has events
        // from before its exposure and after; A buys again; N, never exposed, too.
        await repos.events.insert(scopes.env, [event('Z', 'revenue', 3, 1500), event('Z', 'revenue', 4, 2600), event('Z', 'pageview', 1, 2700)]);
        await repos.exposures.insert(scopes.env, [exposure('B', 'treatment', 2500), exposure('Z', 'control', 2600)]);
        await repos.events.insert(scopes.env, [event('A', 'revenue', 50, 3000), event('A', 'purchase', 1, 3000), event('N', 'revenue', 1, 3000)]);
        const later = await same('late exposures and events');
        assert.deepEqual(later.map((arm) => arm.participants), [3, 4, 1, 0]);
        // A definition changes: another window, another lookback.
        metrics = [eventMetric('revenue', 'revenue', 'sum', { windowMs: 700, cuped: { lookbackMs: 2000 } })];
        await same('changed definition');
        await repos.events.insert(scopes.env, [event('C', 'revenue', 1, 2100)]);
        await same('after the change');
        // The iteration ends: its window closes at 3000.
        await same('ended', { toMs: 3000 });
      }));

    test('scope: another environment\'s or org\'s rows never count; other scopes see only their own', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await seedDataset(repos, scopes);
        const metrics = [eventMetric('revenue_sum', 'revenue', 'sum', { cuped: { lookbackMs: 1000 } })];
        const mine = await repos.experimentData.aggregateMetrics(scopes.env, query(metrics));
        assertMetric(mine, 'control', 'revenue_sum', { n: 3, means: [40 / 3, 35 / 3], comoments: [[1400 / 3, 760 / 3], [760 / 3, 434 / 3]] });
        const otherEnv = await repos.experimentData.aggregateMetrics(scopes.otherEnvSameProject, query(metrics));
        assert.deepEqual(otherEnv.map((arm) => arm.participants), [1, 0, 0, 0]);
        assertMetric(otherEnv, 'control', 'revenue_sum', single(1000, 0));
        const otherOrg = await repos.experimentData.aggregateMetrics(scopes.otherOrgEnv, query(metrics));
        assertMetric(otherOrg, 'treatment', 'revenue_sum', single(500, 0));
        const nobody = (totals: ArmTotals[]) => {
          assert.deepEqual(totals.map((arm) => arm.participants), [0, 0, 0, 0]);
          for (const arm of totals) assertMetric(totals, arm.variantKey, 'revenue_sum', nothing(2));
        };
        nobody(await repos.experimentData.aggregateMetrics(foreignOrgScope(scopes.env, scopes.otherOrgEnv), query(metrics)));
        nobody(await repos.experimentData.aggregateMetrics(foreignOrgScope(scopes.otherOrgEnv, scopes.env), query(metrics)));
        nobody(await repos.experimentData.aggregateMetrics(scopes.env, query(metrics, { flagKey: 'missing' })));
        const malformed: EnvironmentScope = { ...scopes.env, environmentId: 'not-a-uuid' };
        nobody(await repos.experimentData.aggregateMetrics(malformed, query(metrics)));
      }));
  });
}
