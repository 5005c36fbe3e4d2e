/**
 * Hand-derived cases for §1–§4 of docs/statistics.md. They use df = 2, where Student's t has closed
 * forms (e.g. Johnson, Kotz & Balakrishnan, "Continuous Univariate Distributions" vol. 2, ch. 28):
 *   P(T ≤ t) = 1/2 + t/(2·√(t² + 2)),   t_p = (2p − 1)/√(2p(1 − p)).
 * Welch's df is exactly 2 when one arm has zero variance and the other n = 3 (df → n − 1).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  absoluteEstimate, fiellerInterval, jointMomentsFromRows, ratioSummary, relativeDeltaEstimate, tInference,
} from '../src/index.ts';
import type { ArmSummary } from '../src/index.ts';

function close(actual: number | null | undefined, expected: number, what = '', tolerance = 1e-12): void {
  assert.ok(typeof actual === 'number', `${what}: got ${actual}`);
  assert.ok(Math.abs(actual - expected) <= tolerance * Math.max(1, Math.abs(expected)), `${what}: got ${actual}, expected ${expected}`);
}

const upperTail2 = (t: number): number => 0.5 - t / (2 * Math.sqrt(t * t + 2));
const quantile2 = (p: number): number => (2 * p - 1) / Math.sqrt(2 * p * (1 - p));

// Control 8, 10, 12: mean 10, s² = (4 + 0 + 4)/2 = 4. Treatment five 12s: mean 12, s² = 0.
const control: ArmSummary = { n: 3, mean: 10, variance: 4 };
const treatment: ArmSummary = { n: 5, mean: 12, variance: 0 };

describe('absolute effect (Welch)', () => {
  // Δ = 2, se = √(4/3), df = 2, t = 2/√(4/3) = √3.
  const estimate = absoluteEstimate(control, treatment);

  test('estimate, se and df', () => {
    assert.ok(estimate !== null);
    close(estimate.estimate, 2);
    close(estimate.se, Math.sqrt(4 / 3));
    close(estimate.df, 2);
  });

  test('two-sided: p = 2·P(T ≥ √3) = 1 − √(3/5); CI = 2 ± t_.975·se', () => {
    assert.ok(estimate !== null);
    const r = tInference(estimate, { alpha: 0.05, sides: 'two', direction: 'increase' });
    close(r.p_value, 1 - Math.sqrt(3 / 5), 'p');
    const q = quantile2(0.975); // 0.95/√0.04875 = 4.3027
    close(r.ci_low, 2 - q * Math.sqrt(4 / 3), 'low');
    close(r.ci_high, 2 + q * Math.sqrt(4 / 3), 'high');
  });

  test('one-sided increase: p = P(T ≥ √3), CI [2 − t_.95·se, +∞); decrease: p = P(T ≤ √3), CI (−∞, 2 + t_.95·se]', () => {
    assert.ok(estimate !== null);
    const q = quantile2(0.95);
    const up = tInference(estimate, { alpha: 0.05, sides: 'one', direction: 'increase' });
    close(up.p_value, upperTail2(Math.sqrt(3)), 'p up');
    close(up.p_value, (1 - Math.sqrt(3 / 5)) / 2, 'p up closed form');
    close(up.ci_low, 2 - q * Math.sqrt(4 / 3), 'low');
    assert.equal(up.ci_high, null);
    const down = tInference(estimate, { alpha: 0.05, sides: 'one', direction: 'decrease' });
    close(down.p_value, (1 + Math.sqrt(3 / 5)) / 2, 'p down');
    assert.equal(down.ci_low, null);
    close(down.ci_high, 2 + q * Math.sqrt(4 / 3), 'high');
  });

  test('the p-value keeps full precision far in the tail (no 1 − cdf)', () => {
    // df = 2: P(T ≥ t) = 1/2 − t/(2√(t²+2)) ≈ 1/(2t²) − 3/(4t⁴) for large t; t = 1e6 → 5e-13 − 7.5e-25.
    const r = tInference({ estimate: 1e6, se: 1, df: 2 }, { alpha: 0.05, sides: 'one', direction: 'increase' });
    close(r.p_value, 0.5e-12 - 0.75e-24, 'p', 1e-9);
    const far = tInference({ estimate: -1e150, se: 1, df: 2 }, { alpha: 0.05, sides: 'one', direction: 'decrease' });
    close(far.p_value / 0.5e-300, 1, 'p at 5e-301', 1e-9);
  });

  test('not computable: n < 2 on a side, or both variances 0', () => {
    assert.equal(absoluteEstimate({ n: 1, mean: 1, variance: 0 }, treatment), null);
    assert.equal(absoluteEstimate(control, { n: 1, mean: 1, variance: 0 }), null);
    assert.equal(absoluteEstimate({ n: 4, mean: 1, variance: 0 }, treatment), null);
  });
});

describe('relative effect, delta method', () => {
  test('r = 0.2, se_r² = ȳ_T²·s²_C/(n_C·ȳ_C⁴) = 144·4/(3·10⁴) = 0.0192, t² = 25/12, two-sided p = 1 − √(25/49) = 2/7', () => {
    const r = relativeDeltaEstimate(control, treatment, 2);
    assert.ok(r !== null);
    close(r.estimate, 0.2);
    close(r.se, Math.sqrt(0.0192));
    const detail = tInference(r, { alpha: 0.05, sides: 'two', direction: 'increase' });
    close(detail.p_value, 2 / 7, 'p');
  });

  test('divides by |ȳ_C|: a rise from −10 to −8 is +20 %', () => {
    const r = relativeDeltaEstimate({ n: 3, mean: -10, variance: 4 }, { n: 5, mean: -8, variance: 0 }, 2);
    close(r?.estimate, 0.2);
  });

  test('not computable when the control mean is 0', () => {
    assert.equal(relativeDeltaEstimate({ n: 3, mean: 0, variance: 4 }, treatment, 2), null);
  });
});

describe('Fieller interval', () => {
  // ρ solves a·ρ² − 2·ȳ_T·ȳ_C·ρ + (ȳ_T² − q²·v_T) = 0 with v_T = 0, v_C = 4/3:
  // a = 100 − q²·4/3, so ρ = (120 ± √(120² − 144·a))/a and the lift is ρ − 1.
  const q = quantile2(0.975);
  const a = 100 - (q * q * 4) / 3;
  const rho1 = (120 - Math.sqrt(120 * 120 - 144 * a)) / a;
  const rho2 = (120 + Math.sqrt(120 * 120 - 144 * a)) / a;
  const two = { alpha: 0.05, sides: 'two' as const, direction: 'increase' as const };

  test('positive control mean: [ρ₁ − 1, ρ₂ − 1]', () => {
    const interval = fiellerInterval(control, treatment, 2, two);
    close(interval.ci_low, rho1 - 1, 'low');
    close(interval.ci_high, rho2 - 1, 'high');
  });

  test('negative control mean: the lift is 1 − ρ, bounds swapped (same ρ roots for −10 vs −12)', () => {
    const interval = fiellerInterval({ n: 3, mean: -10, variance: 4 }, { n: 5, mean: -12, variance: 0 }, 2, two);
    close(interval.ci_low, 1 - rho2, 'low');
    close(interval.ci_high, 1 - rho1, 'high');
  });

  test('one-sided keeps the bound on the alternative side', () => {
    const qq = quantile2(0.95);
    const a1 = 100 - (qq * qq * 4) / 3;
    const low = (120 - Math.sqrt(120 * 120 - 144 * a1)) / a1 - 1;
    const high = (120 + Math.sqrt(120 * 120 - 144 * a1)) / a1 - 1;
    const up = fiellerInterval(control, treatment, 2, { ...two, sides: 'one' });
    close(up.ci_low, low, 'low');
    assert.equal(up.ci_high, null);
    const down = fiellerInterval(control, treatment, 2, { ...two, sides: 'one', direction: 'decrease' });
    assert.equal(down.ci_low, null);
    close(down.ci_high, high, 'high');
  });

  test('unbounded when the control mean is not distinguishable from 0 (a ≤ 0): both bounds null', () => {
    // Control −1, 0, 2: mean 1/3, s² = 7/3, v_C = 7/9; a = 1/9 − q²·7/9 < 0.
    assert.deepEqual(fiellerInterval({ n: 3, mean: 1 / 3, variance: 7 / 3 }, treatment, 2, two), { ci_low: null, ci_high: null });
  });
});

describe('ratio metric (delta method)', () => {
  test('rows (Y, D) = (1,1), (2,2), (6,3): R = 3/2, σ²_R = 7/4 − 2·3·2.5/8 + 9/16 = 0.4375', () => {
    // ȳ = 3, d̄ = 2, s²_Y = (4 + 1 + 9)/2 = 7, s²_D = 1, s_YD = (2 + 0 + 3)/2 = 2.5. Check: the
    // linearised values (Y − R·D)/d̄ = −0.25, −0.5, 0.75 have sample variance (0.0625 + 0.25 + 0.5625)/2 = 0.4375.
    const summary = ratioSummary(jointMomentsFromRows([[1, 1], [2, 2], [6, 3]]), 0, 1);
    assert.ok(summary !== null);
    assert.equal(summary.n, 3);
    close(summary.mean, 1.5);
    close(summary.variance, 0.4375);
  });

  test('exactly proportional numerator: variance 0, not rounding noise; d̄ = 0: not computable', () => {
    assert.equal(ratioSummary(jointMomentsFromRows([[0.3, 0.1], [0.6, 0.2], [2.1, 0.7]]), 0, 1)?.variance, 0);
    assert.equal(ratioSummary(jointMomentsFromRows([[1, 0], [2, 0]]), 0, 1), null);
  });
});
