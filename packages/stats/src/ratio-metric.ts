/**
 * Ratio metrics (numerator and denominator per participant, e.g. revenue per session) by the delta
 * method: Deng, Knoblich & Lu, "Applying the Delta Method in Metric Analytics: A Practical Guide
 * with Novel Ideas", KDD 2018, §3. docs/statistics.md §4.
 */
import type { JointMoments } from '@switchyard/core';
import { jointCovariance, jointMean } from './joint-moments.ts';
import type { ArmSummary } from './effects.ts';

/**
 * gᵀ·Σ·g for the sample covariance matrix Σ of the variables `indices` of `moments` (n − 1
 * denominators): the per-unit variance of the linear combination with coefficients `gradient`,
 * i.e. the first-order delta method (Casella & Berger, "Statistical Inference", 2nd ed., §5.5.4,
 * multivariate form). Var(f(means)) ≈ gᵀΣg / n.
 */
export function deltaVariance(moments: JointMoments, indices: readonly number[], gradient: readonly number[]): number {
  let total = 0;
  let magnitude = 0;
  for (let i = 0; i < indices.length; i++) {
    for (let j = 0; j < indices.length; j++) {
      const term = (gradient[i] as number) * (gradient[j] as number) * jointCovariance(moments, indices[i] as number, indices[j] as number);
      total += term;
      magnitude += Math.abs(term);
    }
  }
  return belowRoundingToZero(total, magnitude);
}

/**
 * A variance computed as a sum of terms that cancel (gᵀΣg, s²_Y + θ²s²_X − 2θs_YX) carries a
 * rounding error of a few ε times the sum of the terms' magnitudes (Higham, "Accuracy and Stability
 * of Numerical Algorithms", 2nd ed., §4.2). A result within that bound is indistinguishable from 0
 * and is reported as 0 — e.g. a ratio whose numerator is exactly proportional to its denominator
 * has no variance, not 1e-33 of rounding noise (which would make its test "computable"). Negative
 * results are clamped to 0 as well.
 */
export function belowRoundingToZero(value: number, magnitude: number): number {
  return value <= 64 * Number.EPSILON * magnitude ? 0 : value;
}

/** gᵀ·Σ_{AB}·h: the per-unit covariance of two linear combinations (same delta method). */
export function deltaCovariance(
  moments: JointMoments,
  indicesA: readonly number[], gradientA: readonly number[],
  indicesB: readonly number[], gradientB: readonly number[],
): number {
  let total = 0;
  for (let i = 0; i < indicesA.length; i++) {
    for (let j = 0; j < indicesB.length; j++) {
      total += (gradientA[i] as number) * (gradientB[j] as number) * jointCovariance(moments, indicesA[i] as number, indicesB[j] as number);
    }
  }
  return total;
}

/** ∇(ȳ/d̄) = (1/d̄, −ȳ/d̄²): the gradient of a ratio of means with respect to (ȳ, d̄). */
export function ratioGradient(numeratorMean: number, denominatorMean: number): [number, number] {
  return [1 / denominatorMean, -numeratorMean / (denominatorMean * denominatorMean)];
}

/**
 * One arm of a ratio metric as an ArmSummary: mean R = ȳ/d̄ and per-unit variance
 * σ²_R = s²_Y/d̄² − 2·ȳ·s_YD/d̄³ + ȳ²·s²_D/d̄⁴ (Deng et al. 2018, §3), so Var(R̂) = σ²_R/n.
 * Null when d̄ = 0 (the ratio is undefined). The variance is clamped at 0 against rounding.
 *
 * @param numerator index of Y in `moments`
 * @param denominator index of D in `moments`
 */
export function ratioSummary(moments: JointMoments, numerator: number, denominator: number): ArmSummary | null {
  const y = jointMean(moments, numerator);
  const d = jointMean(moments, denominator);
  if (d === 0 || !Number.isFinite(d) || !Number.isFinite(y)) return null;
  const variance = moments.n < 2 ? 0 : (deltaVariance(moments, [numerator, denominator], ratioGradient(y, d)));
  return { n: moments.n, mean: y / d, variance };
}
