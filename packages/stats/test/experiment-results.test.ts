/**
 * The results fields that predate the analysis settings (docs/statistics.md "The pre-existing
 * fields"), checked through analyseExperiment with per-arm moments built by hand: a conversion
 * count c of n gives mean c/n and M2 = c(1 − c/n); a mean/sample-variance pair gives M2 = variance·(n − 1).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { DEFAULT_ANALYSIS } from '@switchyard/core';
import type { AllocationBucket, ArmMetricData, EventMetric, VariantResult } from '@switchyard/core';
import { analyseExperiment, plannedWeights } from '../src/index.ts';
import type { AnalyseExperimentOutput, AnalysisArm } from '../src/index.ts';

interface Fixture<E> { name: string; expected: E }
type WelchExpected = { p_value: number; ci_low: number; ci_high: number } | null;
type SrmExpected = { p_value: number } | null;

function fixture<E>(file: string, name: string): E {
  const text = readFileSync(new URL(`../test-vectors/${file}`, import.meta.url), 'utf8');
  const found = (JSON.parse(text) as { cases: Fixture<E>[] }).cases.find((c) => c.name === name);
  assert.ok(found !== undefined, `fixture ${name}`);
  return found.expected;
}

function assertRelative(actual: number | null | undefined, expected: number, tolerance = 1e-9): void {
  assert.ok(typeof actual === 'number', `expected a number near ${expected}, got ${actual}`);
  assert.ok(Math.abs(actual - expected) <= tolerance * Math.abs(expected), `got ${actual}, expected ${expected}`);
}

function byKey(results: VariantResult[], key: string): VariantResult {
  const found = results.find((result) => result.variantKey === key);
  assert.ok(found !== undefined, `variant ${key}`);
  return found;
}

function stats(result: VariantResult, metric: string) {
  const found = result.metricStats[metric];
  assert.ok(found !== undefined, `metric ${metric}`);
  return found;
}

const metric = (key: string): EventMetric => ({
  kind: 'event', key, eventKey: key, aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: null, guardrail: null,
});

/** A bool metric: `c` of `n` participants converted (0/1 values). */
function conversions(c: number, n: number): ArmMetricData {
  const mean = c / n;
  return { moments: { n, means: [mean], comoments: [[c * (1 - mean)]] }, uncappedMean: mean };
}

/** A numeric metric from its mean and sample variance over n participants. */
function summary(n: number, mean: number, variance: number): ArmMetricData {
  return { moments: { n, means: [mean], comoments: [[variance * (n - 1)]] }, uncappedMean: mean };
}

function analyse(arms: AnalysisArm[], metricKeys: string[], controlVariantKey = arms[0]?.variantKey ?? 'control'): AnalyseExperimentOutput {
  return analyseExperiment({ arms, controlVariantKey, metrics: metricKeys.map(metric), settings: DEFAULT_ANALYSIS });
}

/** A bool checkout metric and a numeric revenue metric on a 50/50 split. */
function checkoutExperiment(): AnalysisArm[] {
  return [
    { variantKey: 'control', participants: 1000, plannedWeight: 500, metrics: { checkout: conversions(120, 1000), revenue: summary(1000, 20, 400) } },
    { variantKey: 'treatment', participants: 1000, plannedWeight: 500, metrics: { checkout: conversions(150, 1000), revenue: summary(1000, 21, 420) } },
  ];
}

describe('variant results (pre-existing fields)', () => {
  test('the control has stats but no lift, CI or p-value', () => {
    const { variantResults } = analyse(checkoutExperiment(), ['checkout', 'revenue']);
    const control = byKey(variantResults, 'control');
    assert.equal(control.participantCount, 1000);
    assert.equal(control.pValuePresent, false);
    assert.equal(control.pValue, 0);
    const checkout = stats(control, 'checkout');
    assert.equal(checkout.mean, 0.12);
    // Sample variance of 120 ones and 880 zeros: 120·880 / (1000·999).
    assertRelative(checkout.variance, (120 * 880) / (1000 * 999), 1e-14);
    assert.deepEqual([checkout.lift, checkout.ci_low, checkout.ci_high, checkout.p_value], [null, null, null, null]);
    assert.equal(control.metricValues.revenue, 20);
    assertRelative(stats(control, 'revenue').variance, 400, 1e-14);
  });

  test('a bool metric is a conversion rate tested as 0/1 values, matching SciPy', () => {
    const { variantResults } = analyse(checkoutExperiment(), ['checkout', 'revenue']);
    const treatment = byKey(variantResults, 'treatment');
    const expected = fixture<WelchExpected>('welch.json', 'bool 120/1000 vs 150/1000');
    assert.ok(expected !== null);
    assert.equal(treatment.metricValues.checkout, 0.15);
    assert.equal(treatment.pValuePresent, true);
    assertRelative(treatment.pValue, expected.p_value);
    const checkout = stats(treatment, 'checkout');
    assertRelative(checkout.p_value, expected.p_value);
    assertRelative(checkout.ci_low, expected.ci_low);
    assertRelative(checkout.ci_high, expected.ci_high);
    assertRelative(checkout.lift, 0.25, 1e-14);
    assert.ok((checkout.ci_low ?? 0) < 0.03 && 0.03 < (checkout.ci_high ?? 0), 'the CI is of the difference');
  });

  test('a numeric metric: mean, variance and Welch p-value, matching SciPy', () => {
    const treatment = byKey(analyse(checkoutExperiment(), ['revenue']).variantResults, 'treatment');
    const revenue = stats(treatment, 'revenue');
    assert.equal(revenue.mean, 21);
    assertRelative(revenue.variance, 420, 1e-14);
    assertRelative(revenue.lift, 0.05, 1e-14);
    // scipy.stats.ttest_ind_from_stats(21, √420, 1000, 20, √400, 1000, equal_var=False) (SciPy 1.17).
    assertRelative(revenue.p_value, 0.26958945744032725);
    assert.ok((revenue.ci_low ?? 0) < 1 && 1 < (revenue.ci_high ?? 0), 'the CI is of the difference');
  });

  test('pValue is the first metric\'s', () => {
    const arms = checkoutExperiment();
    const checkoutP = fixture<WelchExpected>('welch.json', 'bool 120/1000 vs 150/1000')?.p_value;
    assert.ok(checkoutP !== undefined);
    const revenueP = 0.26958945744032725; // SciPy, as above

    const revenueFirst = byKey(analyse(arms, ['revenue', 'checkout']).variantResults, 'treatment');
    assert.equal(revenueFirst.pValuePresent, true);
    assertRelative(revenueFirst.pValue, revenueP);
    // Every metric still gets its own p-value in metric_stats.
    assertRelative(stats(revenueFirst, 'checkout').p_value, checkoutP);

    const checkoutFirst = byKey(analyse(arms, ['checkout', 'revenue']).variantResults, 'treatment');
    assertRelative(checkoutFirst.pValue, checkoutP);

    const noMetrics = byKey(analyse(arms, []).variantResults, 'treatment');
    assert.deepEqual([noMetrics.pValuePresent, noMetrics.pValue, noMetrics.metricStats], [false, 0, {}]);
  });

  test('p_value_present is false when either side has fewer than 2 participants', () => {
    const arms: AnalysisArm[] = [
      { variantKey: 'a', participants: 1, plannedWeight: 1, metrics: { m: summary(1, 3, 0) } },
      { variantKey: 'b', participants: 10, plannedWeight: 1, metrics: { m: summary(10, 4, 1) } },
      { variantKey: 'c', participants: 0, plannedWeight: 1, metrics: { m: { moments: { n: 0, means: [0], comoments: [[0]] }, uncappedMean: 0 } } },
    ];
    const { variantResults } = analyse(arms, ['m']);
    for (const key of ['b', 'c']) {
      const result = byKey(variantResults, key);
      assert.equal(result.pValuePresent, false, key);
      assert.equal(result.pValue, 0);
      assert.equal(stats(result, 'm').p_value, null);
      assert.equal(stats(result, 'm').ci_low, null);
    }
    // The lift needs only the means, so it is there even without a test.
    assertRelative(stats(byKey(variantResults, 'b'), 'm').lift, 1 / 3, 1e-15);
    // Nobody in c: mean 0 rather than NaN.
    assert.deepEqual(byKey(variantResults, 'c').metricValues, { m: 0 });
  });

  test('p_value_present is false when both variances are 0, true when only one is', () => {
    const arms: AnalysisArm[] = [
      { variantKey: 'control', participants: 50, plannedWeight: 1, metrics: { signup: conversions(0, 50) } },
      { variantKey: 'same', participants: 60, plannedWeight: 1, metrics: { signup: conversions(0, 60) } },
      { variantKey: 'better', participants: 50, plannedWeight: 1, metrics: { signup: conversions(5, 50) } },
    ];
    const { variantResults } = analyse(arms, ['signup']);
    assert.equal(byKey(variantResults, 'same').pValuePresent, false);
    const better = byKey(variantResults, 'better');
    assert.equal(better.pValuePresent, true);
    const expected = fixture<WelchExpected>('welch.json', 'bool 0/50 vs 5/50 (control variance zero)');
    assert.ok(expected !== null);
    assertRelative(better.pValue, expected.p_value);
    // The control mean is 0: a relative lift is undefined.
    assert.equal(stats(better, 'signup').lift, null);
  });

  test('lift is relative to the control mean and negative for a drop', () => {
    // Control: n = 80, Σx = 4000, Σx² = 207 900, so mean 50 and M2 = 207 900 − 80·50² = 7900 (variance 100).
    const arms: AnalysisArm[] = [
      { variantKey: 'control', participants: 80, plannedWeight: 1, metrics: { m: { moments: { n: 80, means: [50], comoments: [[7900]] }, uncappedMean: 50 } } },
      { variantKey: 'worse', participants: 70, plannedWeight: 1, metrics: { m: summary(70, 46, 120) } },
    ];
    const { variantResults } = analyse(arms, ['m']);
    const control = stats(byKey(variantResults, 'control'), 'm');
    assert.equal(control.mean, 50);
    assertRelative(control.variance, 100, 1e-12);
    const worse = stats(byKey(variantResults, 'worse'), 'm');
    assertRelative(worse.lift, -0.08, 1e-14);
    const expected = fixture<WelchExpected>('welch.json', 'negative difference');
    assert.ok(expected !== null);
    assertRelative(worse.p_value, expected.p_value, 1e-9);
    assert.ok((worse.ci_high ?? 0) < 0);
  });

  test('the control is named; an unknown control is a caller bug', () => {
    const arms = checkoutExperiment();
    const { variantResults } = analyse(arms, ['checkout'], 'treatment');
    assert.equal(byKey(variantResults, 'treatment').pValuePresent, false);
    const control = byKey(variantResults, 'control');
    assert.equal(control.pValuePresent, true);
    assertRelative(stats(control, 'checkout').lift, -0.2, 1e-14);
    assert.throws(() => analyse(arms, ['checkout'], 'nope'), RangeError);
  });

  test('no variants: no results and no SRM', () => {
    assert.deepEqual(analyse([], ['m']), { variantResults: [], srmPValue: null, srmWarning: false, sequentialSrmPValue: null, running: { sequential: {}, guardrails: {}, srm: null } });
  });
});

describe('sample ratio mismatch in results', () => {
  const buckets: AllocationBucket[] = [
    { variant_key: 'control', weight_milli: 150 },
    { variant_key: 'treatment', weight_milli: 800 },
    { variant_key: 'control', weight_milli: 50 },
  ];

  function srmOf(counts: number[], weights: number[]): number | null {
    const arms: AnalysisArm[] = counts.map((participants, i) => ({
      variantKey: ['control', 'treatment', 'other'][i] ?? `v${i}`, participants, plannedWeight: weights[i] ?? 0, metrics: {},
    }));
    return analyse(arms, []).srmPValue;
  }

  test('planned weights come from the weight_milli of the allocation buckets', () => {
    assert.deepEqual(plannedWeights(buckets, ['control', 'treatment', 'missing']), [200, 800, 0]);
    const weights = plannedWeights(buckets, ['control', 'treatment']);
    const expected = fixture<SrmExpected>('srm.json', '2 groups uneven plan 20/80, off plan');
    assert.ok(expected !== null);
    assertRelative(srmOf([2150, 7850], weights), expected.p_value);
  });

  test('a split that matches the plan is not a mismatch', () => {
    assert.equal(srmOf([2000, 8000], plannedWeights(buckets, ['control', 'treatment'])), 1);
  });

  test('an experiment on some variants of a flag uses just their weights', () => {
    const expected = fixture<SrmExpected>('srm.json', 'subset of a 3-way flag (weights do not sum to 1000)');
    assert.ok(expected !== null);
    assertRelative(srmOf([3400, 3300], [333, 333]), expected.p_value);
  });

  test('participants in a variant planned at weight 0 are a certain mismatch; an empty one is ignored', () => {
    assert.equal(srmOf([500, 500, 3], [500, 500, 0]), 0);
    const expected = fixture<SrmExpected>('srm.json', '2 groups nearly balanced');
    assert.ok(expected !== null);
    assertRelative(srmOf([5050, 4950, 0], [500, 500, 0]), expected.p_value);
  });

  test('no participants or a single variant: no SRM p-value', () => {
    assert.equal(srmOf([0, 0], [500, 500]), null);
    assert.equal(srmOf([10], [1000]), null);
  });
});
