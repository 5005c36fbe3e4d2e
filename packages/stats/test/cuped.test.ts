/** Hand-derived CUPED cases (docs/statistics.md §5). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ArmMetricData, ExperimentMetric } from '@switchyard/core';
import { compareMetric, comparisonEffects, cupedEvent, cupedRatio, cupedRelativeEstimate, jointMomentsFromRows } from '../src/index.ts';

function close(actual: number | null | undefined, expected: number, what = ''): void {
  assert.ok(typeof actual === 'number', `${what}: got ${actual}`);
  assert.ok(Math.abs(actual - expected) <= 1e-12 * Math.max(1, Math.abs(expected)), `${what}: got ${actual}, expected ${expected}`);
}

const data = (rows: number[][]): ArmMetricData => {
  const moments = jointMomentsFromRows(rows);
  return { moments, uncappedMean: moments.means[0] ?? 0 };
};

// (Y, X) rows. Control (1,0), (3,2): ȳ = 2, x̄ = 1, s²_Y = s²_X = s_YX = 2.
// Treatment (4,1), (6,3): ȳ = 5, x̄ = 2, s²_Y = s²_X = s_YX = 2.
const controlRows = [[1, 0], [3, 2]];
const treatmentRows = [[4, 1], [6, 3]];

describe('CUPED, event metric', () => {
  // Pooled: means (3.5, 1.5); dY = −2.5, −.5, .5, 2.5; dX = −1.5, .5, −.5, 1.5;
  // Cov = (3.75 − .25 − .25 + 3.75)/3 = 7/3, Var X = 5/3 → θ = 7/5 (the between-arm difference counts).
  // Adjusted: control 2 − 1.4·1 = 0.6, treatment 5 − 1.4·2 = 2.2; s'² = 2 + 1.96·2 − 2.8·2 = 0.32 in both.
  const adjustment = cupedEvent(jointMomentsFromRows(controlRows), jointMomentsFromRows(treatmentRows));

  test('θ from the pooled arms, adjusted means and variances', () => {
    close(adjustment.theta, 1.4, 'theta');
    close(adjustment.control.mean, 0.6);
    close(adjustment.treatment.mean, 2.2);
    close(adjustment.control.variance, 0.32);
    close(adjustment.treatment.variance, 0.32);
    assert.equal(adjustment.controlUnadjustedMean, 2);
  });

  test('relative: r = 1.6/|2| = 0.8, se_r² = 0.32/(2·4) + [2·25/4 − 2·1.4·2·5/2 + 1.96·2]/(2·4) = 0.04 + 2.42/8 = 0.3425', () => {
    const r = cupedRelativeEstimate(adjustment);
    close(r?.estimate, 0.8);
    close(r?.se, Math.sqrt(0.3425));
    // Welch df of the adjusted arms: (0.16 + 0.16)²/(0.16²/1 + 0.16²/1) = 2.
    close(r?.df, 2);
  });

  const metric: ExperimentMetric = {
    kind: 'event', key: 'm', eventKey: 'e', aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: { lookbackMs: 1 }, guardrail: null,
  };

  test('through compareMetric: absolute 1.6 with se √0.32, variance_reduction 1 − 0.32/2 = 0.84, balance p = 1 − √0.2', () => {
    const comparison = compareMetric(metric, data(controlRows), data(treatmentRows), { alpha: 0.05, sides: 'two', relativeInterval: 'fieller' });
    close(comparison.absolute?.estimate, 1.6);
    close(comparison.absolute?.se, Math.sqrt(0.32));
    close(comparison.cuped?.theta, 1.4);
    close(comparison.cuped?.variance_reduction, 0.84);
    // Balance: X 0, 2 against 1, 3: Δ = 1, se = √2, df = 2, t = 1/√2; p = 1 − t/√(t² + 2) = 1 − √(0.5/2.5).
    close(comparison.balancePValue, 1 - Math.sqrt(0.2), 'balance');
    // Fieller is not defined with CUPED: the delta interval (and its own p-value) is reported.
    assert.equal(comparison.fieller, null);
    const effects = comparisonEffects(comparison);
    close(effects.relative?.estimate, 0.8);
    // two-sided p at df 2 for t² = 0.64/0.3425.
    const t2 = 0.64 / 0.3425;
    close(effects.relative?.p_value, 1 - Math.sqrt(t2 / (t2 + 2)), 'relative p');
  });

  test('a constant covariate gives θ = 0: the unadjusted analysis, variance reduction exactly 0', () => {
    const comparison = compareMetric(metric, data([[1, 5], [3, 5]]), data([[4, 5], [7, 5]]), { alpha: 0.05, sides: 'two', relativeInterval: 'delta' });
    assert.equal(comparison.cuped?.theta, 0);
    assert.equal(comparison.cuped?.variance_reduction, 0);
    close(comparison.absolute?.estimate, 3.5);
    assert.equal(comparison.balancePValue, null, 'the covariate test is not computable');
  });

  test('outcomes constant within each arm: no unadjusted test, but the adjusted one exists', () => {
    // Control Y = 1 with X = 0, 2; treatment Y = 3 with X = 1, 3. Pooled: means (2, 1.5);
    // dY = −1, −1, 1, 1; dX = −1.5, .5, −.5, 1.5; Cov = (1.5 − .5 − .5 + 1.5)/3 = 2/3, Var X = 5/3 → θ = 0.4.
    // Adjusted: control 1 − 0.4·1 = 0.6, treatment 3 − 0.4·2 = 2.2; s'² = 0.16·2 = 0.32 per arm.
    const comparison = compareMetric(metric, data([[1, 0], [1, 2]]), data([[3, 1], [3, 3]]), { alpha: 0.05, sides: 'two', relativeInterval: 'delta' });
    close(comparison.cuped?.theta, 0.4, 'theta');
    assert.equal(comparison.cuped?.variance_reduction, null, 'nothing to reduce');
    close(comparison.absolute?.estimate, 1.6);
    close(comparison.absolute?.se, Math.sqrt(0.32));
  });

  test('without the covariate in the moments the metric is analysed unadjusted', () => {
    const comparison = compareMetric(metric, data([[1], [3]]), data([[4], [6]]), { alpha: 0.05, sides: 'two', relativeInterval: 'delta' });
    assert.equal(comparison.cuped, null);
    close(comparison.absolute?.estimate, 3);
  });
});

describe('CUPED, ratio metric', () => {
  // (Y, D, X_Y, X_D) with D ≡ X_D ≡ 1, so R = ȳ, R_X = x̄, ∇R = ∇R_X = (1, ·) on a constant D:
  // the per-arm delta covariances reduce to s_YX and s²_X.
  // Control (Y, X): (1,0), (3,2), (5,1): ȳ = 3, x̄ = 1, s²_Y = 4, s²_X = 1, s_YX = (2 + 0 + 0)/2 = 1.
  // Treatment (4,1), (6,3): ȳ = 5, x̄ = 2, s²_Y = s²_X = s_YX = 2.
  // θ = (1 + 2)/(1 + 2) = 1. Adjusted: control 3 − 1 = 2 with s'² = 4 + 1 − 2 = 3; treatment 5 − 2 = 3, s'² = 0.
  const withOnes = (rows: number[][]): number[][] => rows.map(([y, x]) => [y as number, 1, x as number, 1]);
  const adjustment = cupedRatio(jointMomentsFromRows(withOnes([[1, 0], [3, 2], [5, 1]])), jointMomentsFromRows(withOnes([[4, 1], [6, 3]])));

  test('θ = Σ Cov(R, R_X)/Σ Var(R_X) over the arms; adjusted means and variances', () => {
    assert.ok(adjustment !== null);
    close(adjustment.theta, 1, 'theta');
    close(adjustment.control.mean, 2);
    close(adjustment.control.variance, 3);
    close(adjustment.treatment.mean, 3);
    close(adjustment.treatment.variance, 0);
  });

  test('relative: r = 1/3, se_r² = [(4/9)²·4 − 2·(4/9)·(1/3)·1 + (1/9)·1]/3 + 0 = 49/243', () => {
    // ∇_C on (Y, X_Y) = (−1/|R_C| − g/R_C², θ/|R_C|) = (−4/9, 1/3) with R_C = 3, g = 1.
    assert.ok(adjustment !== null);
    const r = cupedRelativeEstimate(adjustment);
    close(r?.estimate, 1 / 3);
    close(r?.se, Math.sqrt(49 / 243));
  });

  test('a zero denominator mean in an arm: not computable', () => {
    assert.equal(cupedRatio(jointMomentsFromRows([[1, 0, 1, 1], [2, 0, 1, 2]]), jointMomentsFromRows(withOnes([[4, 1], [6, 3]]))), null);
  });
});
