/**
 * Quantile metrics (docs/statistics.md §15) against test-vectors/quantile.json, written by
 * generate_quantile_fixtures.py from NumPy's order statistics and SciPy's normal quantiles (never
 * from this package): the estimate X_(⌈np⌉), the outer interval's ranks and values (participants,
 * and events clustered in participants with the delta-method variance), and the comparison of two
 * arms by the normal approximation. Then the engine: a quantile metric through analyseExperiment.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import type { EventMetric, QuantileOrderStatistics } from '@switchyard/core';
import { DEFAULT_ANALYSIS } from '@switchyard/core';
import {
  analyseExperiment, clusteredOrderStatistics, orderStatistics, outerRanks, quantileEffects, quantileRank, runningSettingsKey, tInference,
} from '../src/index.ts';

interface Expected {
  n: number; clusters: number; estimate: number; lowerRank: number; upperRank: number; lower: number; upper: number;
  binomialRanks?: [number, number];
}
interface OrderCase { name: string; unit: 'participant' | 'event'; p: number; alpha: number; z: number; values?: number[]; clusters?: number[][]; expected: Expected }
interface Effect { estimate: number; se: number; p_value: number; ci_low: number; ci_high: number }
interface ComparisonCase { name: string; alpha: number; control: Expected & { z: number }; treatment: Expected & { z: number }; absolute: Effect | null; relative: Effect | null }

const fixtures = JSON.parse(readFileSync(new URL('../test-vectors/quantile.json', import.meta.url), 'utf8')) as { orderStatistics: OrderCase[]; comparisons: ComparisonCase[] };

function close(actual: number | null | undefined, expected: number, where: string, tolerance = 1e-12): void {
  assert.ok(actual !== null && actual !== undefined, `${where}: got ${actual}, expected ${expected}`);
  assert.ok(Math.abs(actual - expected) <= tolerance * Math.max(1, Math.abs(expected)), `${where}: got ${actual}, expected ${expected}`);
}

describe('quantile order statistics (NumPy/SciPy fixtures)', () => {
  test('every case: estimate, ranks and the values at them', () => {
    assert.ok(fixtures.orderStatistics.length >= 50);
    for (const c of fixtures.orderStatistics) {
      const got = c.unit === 'participant' ? orderStatistics(c.values ?? [], c.p, c.z) : clusteredOrderStatistics(c.clusters ?? [], c.p, c.z);
      assert.ok(got !== null, c.name);
      const { binomialRanks: _ignored, ...expected } = c.expected as Expected & { sigma2?: number };
      delete (expected as { sigma2?: number }).sigma2;
      assert.deepEqual({ ...got, z: undefined }, { ...expected, z: undefined }, c.name);
    }
  });

  test('ranks: ⌈np⌉ of the decimal p (100 × 0.07 is rank 7), clamped to [1, n]', () => {
    assert.equal(quantileRank(100, 0.07), 7);
    assert.equal(quantileRank(1000, 0.29), 290);
    assert.equal(quantileRank(10, 0.05), 1);
    assert.equal(quantileRank(3, 0.999), 3);
    assert.deepEqual(outerRanks(1, 0.5, 1.96), { lower: 1, upper: 1 });
    // n = 100, p = 0.5, z = 1.96: 50 ∓ 1.96·5 = 40.2, 59.8 → [40, 60] (by hand).
    assert.deepEqual(outerRanks(100, 0.5, 1.96), { lower: 40, upper: 60 });
  });

  test('the normal ranks stay within 2 of the exact binomial ranks (n ≥ 100)', () => {
    for (const c of fixtures.orderStatistics.filter((x) => x.unit === 'participant' && x.expected.n >= 100)) {
      const [lo, hi] = c.expected.binomialRanks as [number, number];
      assert.ok(Math.abs(lo - c.expected.lowerRank) <= 2 && Math.abs(hi - c.expected.upperRank) <= 2, c.name);
    }
  });

  test('no values: null', () => {
    assert.equal(orderStatistics([], 0.5, 1.96), null);
    assert.equal(clusteredOrderStatistics([[], []], 0.5, 1.96), null);
  });
});

describe('comparing two arms\' quantiles (SciPy fixtures)', () => {
  test('absolute and relative: estimate, se, p-value, interval', () => {
    for (const c of fixtures.comparisons) {
      const arm = (e: Expected & { z: number }): QuantileOrderStatistics => ({
        n: e.n, clusters: e.clusters, estimate: e.estimate, lower: e.lower, upper: e.upper, lowerRank: e.lowerRank, upperRank: e.upperRank, z: e.z,
      });
      const effects = quantileEffects(arm(c.control), arm(c.treatment));
      for (const kind of ['absolute', 'relative'] as const) {
        const expected = c[kind];
        const got = effects[kind];
        if (expected === null) {
          assert.equal(got, null, `${c.name} ${kind}`);
          continue;
        }
        assert.ok(got !== null, `${c.name} ${kind}`);
        const detail = tInference(got, { alpha: c.alpha, sides: 'two', direction: 'increase' });
        close(detail.estimate, expected.estimate, `${c.name} ${kind} estimate`);
        close(detail.se, expected.se, `${c.name} ${kind} se`);
        close(detail.p_value, expected.p_value, `${c.name} ${kind} p`, 1e-9);
        close(detail.ci_low, expected.ci_low, `${c.name} ${kind} ci_low`, 1e-10);
        close(detail.ci_high, expected.ci_high, `${c.name} ${kind} ci_high`, 1e-10);
      }
    }
  });
});

describe('a quantile metric through analyseExperiment', () => {
  const metric: EventMetric = {
    kind: 'event', key: 'latency_p90', eventKey: 'latency', aggregation: 'sum', windowMs: null, direction: 'decrease', capping: null, cuped: null, guardrail: null,
    quantile: { p: 0.9, unit: 'participant' },
  };
  const comparison = fixtures.comparisons[0] as ComparisonCase;
  const order = (e: Expected & { z: number }): QuantileOrderStatistics => ({
    n: e.n, clusters: e.clusters, estimate: e.estimate, lower: e.lower, upper: e.upper, lowerRank: e.lowerRank, upperRank: e.upperRank, z: e.z,
  });
  const arm = (variantKey: string, e: Expected & { z: number }) => ({
    variantKey, participants: e.n, plannedWeight: 1,
    metrics: { [metric.key]: { moments: { n: e.n, means: [123], comoments: [[456]] }, uncappedMean: 123, quantile: order(e) } },
  });

  test('each arm reports its quantile and interval; the effects, p-value and verdict come from the quantiles', () => {
    const out = analyseExperiment({
      arms: [arm('control', comparison.control), arm('treatment', comparison.treatment)],
      controlVariantKey: 'control',
      metrics: [metric],
      settings: { ...DEFAULT_ANALYSIS },
    });
    const control = out.variantResults[0]?.metricStats[metric.key];
    const treatment = out.variantResults[1]?.metricStats[metric.key];
    assert.ok(control && treatment);
    assert.equal(control.mean, comparison.control.estimate);
    assert.deepEqual(control.quantile && { ...control.quantile, se: 0 }, {
      p: 0.9, unit: 'participant', n: comparison.control.n, estimate: comparison.control.estimate, ci_low: comparison.control.lower, ci_high: comparison.control.upper, se: 0,
    });
    const absolute = comparison.absolute as Effect;
    const relative = comparison.relative as Effect;
    close(treatment.absolute?.estimate, absolute.estimate, 'absolute');
    close(treatment.relative?.p_value, relative.p_value, 'relative p', 1e-9);
    close(treatment.adjusted_p_value, relative.p_value, 'adjusted p (no correction)', 1e-9);
    close(treatment.p_value, absolute.p_value, 'the pre-existing p_value: the difference at 95 %', 1e-9);
    // The fixture's treatment median is higher and the metric's direction is `decrease`.
    assert.ok(relative.p_value < 0.05 && relative.estimate > 0);
    assert.equal(treatment.verdict, 'worse');
    assert.equal(out.variantResults[1]?.pValuePresent, true);
  });

  test('an arm without values: its quantile is null and the comparison not computable', () => {
    const empty = { variantKey: 'treatment', participants: 0, plannedWeight: 1, metrics: { [metric.key]: { moments: { n: 0, means: [0], comoments: [[0]] }, uncappedMean: 0 } } };
    const out = analyseExperiment({ arms: [arm('control', comparison.control), empty], controlVariantKey: 'control', metrics: [metric], settings: { ...DEFAULT_ANALYSIS } });
    const treatment = out.variantResults[1]?.metricStats[metric.key];
    assert.equal(treatment?.quantile, null);
    assert.equal(treatment?.absolute, null);
    assert.equal(treatment?.verdict, 'not_enough_data');
  });

  test('with the sequential and Bayesian engines the quantile effect is read like any relative effect', () => {
    const out = analyseExperiment({
      arms: [arm('control', comparison.control), arm('treatment', comparison.treatment)],
      controlVariantKey: 'control',
      metrics: [metric],
      settings: { ...DEFAULT_ANALYSIS, sequential: { tuningN: 5000 }, engine: 'bayesian' },
    });
    const treatment = out.variantResults[1]?.metricStats[metric.key];
    assert.ok(treatment?.sequential && treatment.bayesian);
    close(treatment.sequential.estimate, (comparison.relative as Effect).estimate, 'sequential estimate');
    // Flat prior: the posterior mean is the estimate, its sd the se, so the chance to win (lower is better) is Φ(−r/se).
    assert.ok(treatment.bayesian.chance_to_win < 0.05);
  });
});

test('the running settings key: another p restarts the sequential state; other metrics keep their key', () => {
  const base: EventMetric = { kind: 'event', key: 'm', eventKey: 'm', aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: null, guardrail: null };
  const settings = { ...DEFAULT_ANALYSIS };
  // A metric without a quantile has the key it had before quantile metrics (states saved then still match).
  assert.equal(runningSettingsKey([base], settings), JSON.stringify({ alpha: 0.05, sides: 'two', sequential: null, hybrid: false, metrics: [['m', 'increase', null]] }));
  assert.notEqual(
    runningSettingsKey([{ ...base, quantile: { p: 0.5, unit: 'participant' } }], settings),
    runningSettingsKey([{ ...base, quantile: { p: 0.9, unit: 'participant' } }], settings),
  );
});
