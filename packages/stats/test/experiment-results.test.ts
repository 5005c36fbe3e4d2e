import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import {
  computeVariantResults,
  plannedWeights,
  summaryFromConversions,
  welchTTest,
} from '../src/index.ts';
import type { AllocationBucket, VariantResult } from '@switchyard/core';
import type { VariantAggregate } from '../src/index.ts';

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

/** A bool checkout metric and a numeric revenue metric on a 50/50 split. */
function checkoutExperiment(): VariantAggregate[] {
  return [
    {
      variantKey: 'control', participants: 1000, plannedWeight: 500,
      metrics: { checkout: { kind: 'conversions', conversions: 120 }, revenue: { kind: 'moments', mean: 20, variance: 400 } },
    },
    {
      variantKey: 'treatment', participants: 1000, plannedWeight: 500,
      metrics: { checkout: { kind: 'conversions', conversions: 150 }, revenue: { kind: 'moments', mean: 21, variance: 420 } },
    },
  ];
}

describe('computeVariantResults', () => {
  test('the control has stats but no lift, CI or p-value', () => {
    const { variantResults } = computeVariantResults({ variants: checkoutExperiment(), metricKeys: ['checkout', 'revenue'] });
    const control = byKey(variantResults, 'control');
    assert.equal(control.participantCount, 1000);
    assert.equal(control.pValuePresent, false);
    assert.equal(control.pValue, 0);
    assert.deepEqual(stats(control, 'checkout'), {
      mean: 0.12, variance: summaryFromConversions(120, 1000).variance, lift: null, ci_low: null, ci_high: null, p_value: null,
    });
    assert.equal(control.metricValues.revenue, 20);
  });

  test('a bool metric is a conversion rate tested as 0/1 values, matching SciPy', () => {
    const { variantResults } = computeVariantResults({ variants: checkoutExperiment(), metricKeys: ['checkout', 'revenue'] });
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

  test('pValue is the primary metric: the first metric key unless one is named', () => {
    const variants = checkoutExperiment();
    const checkoutP = welchTTest(summaryFromConversions(120, 1000), summaryFromConversions(150, 1000))?.pValue;
    const revenueP = welchTTest({ n: 1000, mean: 20, variance: 400 }, { n: 1000, mean: 21, variance: 420 })?.pValue;
    assert.ok(checkoutP !== undefined && revenueP !== undefined && checkoutP !== revenueP);

    const byDefault = byKey(computeVariantResults({ variants, metricKeys: ['revenue', 'checkout'] }).variantResults, 'treatment');
    assert.equal(byDefault.pValue, revenueP);
    // Every metric still gets its own p-value in metric_stats.
    assert.equal(stats(byDefault, 'checkout').p_value, checkoutP);

    const named = computeVariantResults({ variants, metricKeys: ['revenue', 'checkout'], primaryMetricKey: 'checkout' });
    assert.equal(byKey(named.variantResults, 'treatment').pValue, checkoutP);

    const noMetrics = byKey(computeVariantResults({ variants, metricKeys: [] }).variantResults, 'treatment');
    assert.deepEqual([noMetrics.pValuePresent, noMetrics.pValue, noMetrics.metricStats], [false, 0, {}]);
  });

  test('p_value_present is false when either side has fewer than 2 participants', () => {
    const variants: VariantAggregate[] = [
      { variantKey: 'a', participants: 1, plannedWeight: 1, metrics: { m: { kind: 'moments', mean: 3, variance: null } } },
      { variantKey: 'b', participants: 10, plannedWeight: 1, metrics: { m: { kind: 'moments', mean: 4, variance: 1 } } },
      { variantKey: 'c', participants: 0, plannedWeight: 1, metrics: {} },
    ];
    const { variantResults } = computeVariantResults({ variants, metricKeys: ['m'] });
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
    const variants: VariantAggregate[] = [
      { variantKey: 'control', participants: 50, plannedWeight: 1, metrics: { signup: { kind: 'conversions', conversions: 0 } } },
      { variantKey: 'same', participants: 60, plannedWeight: 1, metrics: {} },
      { variantKey: 'better', participants: 50, plannedWeight: 1, metrics: { signup: { kind: 'conversions', conversions: 5 } } },
    ];
    const { variantResults } = computeVariantResults({ variants, metricKeys: ['signup'] });
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
    const variants: VariantAggregate[] = [
      { variantKey: 'control', participants: 80, plannedWeight: 1, metrics: { m: { kind: 'sums', sum: 4000, sumOfSquares: 207_900 } } },
      { variantKey: 'worse', participants: 70, plannedWeight: 1, metrics: { m: { kind: 'moments', mean: 46, variance: 120 } } },
    ];
    const { variantResults } = computeVariantResults({ variants, metricKeys: ['m'] });
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

  test('the control can be named; an unknown control is a caller bug', () => {
    const variants = checkoutExperiment();
    const { variantResults } = computeVariantResults({ variants, metricKeys: ['checkout'], controlVariantKey: 'treatment' });
    assert.equal(byKey(variantResults, 'treatment').pValuePresent, false);
    const control = byKey(variantResults, 'control');
    assert.equal(control.pValuePresent, true);
    assertRelative(stats(control, 'checkout').lift, -0.2, 1e-14);
    assert.throws(() => computeVariantResults({ variants, metricKeys: ['checkout'], controlVariantKey: 'nope' }), RangeError);
  });

  test('no variants: no results and no SRM', () => {
    assert.deepEqual(computeVariantResults({ variants: [], metricKeys: ['m'] }), { variantResults: [], srmPValue: null });
  });
});

describe('sample ratio mismatch in results', () => {
  const buckets: AllocationBucket[] = [
    { variant_key: 'control', weight_milli: 150 },
    { variant_key: 'treatment', weight_milli: 800 },
    { variant_key: 'control', weight_milli: 50 },
  ];

  function withCounts(counts: number[], weights: number[]): VariantAggregate[] {
    return counts.map((participants, i) => ({
      variantKey: ['control', 'treatment', 'other'][i] ?? `v${i}`, participants, plannedWeight: weights[i] ?? 0, metrics: {},
    }));
  }

  test('planned weights come from the weight_milli of the allocation buckets', () => {
    assert.deepEqual(plannedWeights(buckets, ['control', 'treatment', 'missing']), [200, 800, 0]);
    const weights = plannedWeights(buckets, ['control', 'treatment']);
    const { srmPValue } = computeVariantResults({ variants: withCounts([2150, 7850], weights), metricKeys: [] });
    const expected = fixture<SrmExpected>('srm.json', '2 groups uneven plan 20/80, off plan');
    assert.ok(expected !== null);
    assertRelative(srmPValue, expected.p_value);
  });

  test('a split that matches the plan is not a mismatch', () => {
    const weights = plannedWeights(buckets, ['control', 'treatment']);
    assert.equal(computeVariantResults({ variants: withCounts([2000, 8000], weights), metricKeys: [] }).srmPValue, 1);
  });

  test('an experiment on some variants of a flag uses just their weights', () => {
    const { srmPValue } = computeVariantResults({ variants: withCounts([3400, 3300], [333, 333]), metricKeys: [] });
    const expected = fixture<SrmExpected>('srm.json', 'subset of a 3-way flag (weights do not sum to 1000)');
    assert.ok(expected !== null);
    assertRelative(srmPValue, expected.p_value);
  });

  test('participants in a variant planned at weight 0 are a certain mismatch; an empty one is ignored', () => {
    assert.equal(computeVariantResults({ variants: withCounts([500, 500, 3], [500, 500, 0]), metricKeys: [] }).srmPValue, 0);
    const ignored = computeVariantResults({ variants: withCounts([5050, 4950, 0], [500, 500, 0]), metricKeys: [] }).srmPValue;
    const expected = fixture<SrmExpected>('srm.json', '2 groups nearly balanced');
    assert.ok(expected !== null);
    assertRelative(ignored, expected.p_value);
  });

  test('no participants or a single variant: no SRM p-value', () => {
    assert.equal(computeVariantResults({ variants: withCounts([0, 0], [500, 500]), metricKeys: [] }).srmPValue, null);
    assert.equal(computeVariantResults({ variants: withCounts([10], [1000]), metricKeys: [] }).srmPValue, null);
  });
});
