/**
 * CUPED: variance reduction with the pre-exposure value of the metric as covariate (Deng, Xu,
 * Kohavi & Walker, "Improving the Sensitivity of Online Controlled Experiments by Utilizing
 * Pre-Experiment Data", WSDM 2013, §3.2), for event and ratio metrics. docs/statistics.md §5.
 */
import type { JointMoments } from '@switchyard/core';
import { jointCovariance, jointMean, jointVariance, mergeJointMoments } from './joint-moments.ts';
import { belowRoundingToZero, deltaCovariance, deltaVariance, ratioGradient } from './ratio-metric.ts';
import type { ArmSummary, TEstimate } from './effects.ts';
import { welchDf } from './effects.ts';

/** |θ| below this drops a ratio metric's adjustment, as gbstats does. */
const RATIO_THETA_FLOOR = 1e-8;

/** Both arms adjusted, with what the relative effect's variance needs. */
export interface CupedAdjustment {
  theta: number;
  /** Adjusted means and per-unit variances, for the absolute effect (and its Welch df). */
  control: ArmSummary;
  treatment: ArmSummary;
  /** The UNADJUSTED control mean: the relative effect's denominator (as gbstats). */
  controlUnadjustedMean: number;
  /** se² of the relative effect (θ held fixed), or null when the control mean is 0. */
  relativeVariance: number | null;
}

/**
 * Event metric, variables [Y, X] in each arm's moments.
 * 1. θ = Cov(Y, X)/Var(X) over the UNION of both arms (merged moments, n − 1; Deng et al. 2013,
 *    §3.2, the control-variate coefficient); θ = 0 when Var(X) = 0.
 * 2. Per arm: ȳ' = ȳ − θ·x̄, s'² = s²_Y + θ²·s²_X − 2θ·s_YX (the arm's own moments; Var(Y − θX)).
 * 3. Relative: r = (ȳ'_T − ȳ'_C)/|ȳ_C| with delta-method variance, θ fixed (gbstats
 *    `frequentist_variance_relative_cuped`):
 *    se_r² = s'²_T/(n_T·ȳ_C²) + [s²_Y,C·ȳ_T²/ȳ_C² − 2θ·s_YX,C·ȳ_T/ȳ_C + θ²·s²_X,C]/(n_C·ȳ_C²).
 */
export function cupedEvent(control: JointMoments, treatment: JointMoments): CupedAdjustment {
  const pooled = mergeJointMoments(control, treatment);
  const varX = jointVariance(pooled, 1);
  const theta = varX === 0 ? 0 : jointCovariance(pooled, 0, 1) / varX;
  const adjust = (m: JointMoments): ArmSummary => {
    const terms = [jointVariance(m, 0), theta * theta * jointVariance(m, 1), -2 * theta * jointCovariance(m, 0, 1)];
    return {
      n: m.n,
      mean: jointMean(m, 0) - theta * jointMean(m, 1),
      variance: belowRoundingToZero(terms[0]! + terms[1]! + terms[2]!, Math.abs(terms[0]!) + Math.abs(terms[1]!) + Math.abs(terms[2]!)),
    };
  };
  const yC = jointMean(control, 0);
  const yT = jointMean(treatment, 0);
  let relativeVariance: number | null = null;
  if (yC !== 0 && Number.isFinite(yC)) {
    const yC2 = yC * yC;
    const adjustedT = adjust(treatment);
    const controlPart = (jointVariance(control, 0) * yT * yT) / yC2 - (2 * theta * jointCovariance(control, 0, 1) * yT) / yC + theta * theta * jointVariance(control, 1);
    relativeVariance = adjustedT.variance / (treatment.n * yC2) + controlPart / (control.n * yC2);
  }
  return { theta, control: adjust(control), treatment: adjust(treatment), controlUnadjustedMean: yC, relativeVariance };
}

/**
 * Ratio metric, variables [Y, D, X_Y, X_D] in each arm's moments (gbstats
 * `RegressionAdjustedRatioStatistic` and `compute_theta_regression_adjusted_ratio`, built on
 * Deng et al. 2018 §3 for the linearised ratios):
 * 1. Per arm R = ȳ/d̄, R_X = x̄_Y/x̄_D, ∇R = (1/d̄, −ȳ/d̄²), ∇R_X = (1/x̄_D, −x̄_Y/x̄_D²), Λ the
 *    4 × 4 sample covariance matrix.
 * 2. θ = Σ_arms ∇Rᵀ·Λ_{(Y,D),(X_Y,X_D)}·∇R_X / Σ_arms ∇R_Xᵀ·Λ_{(X_Y,X_D)}·∇R_X — the per-unit
 *    delta-method covariances summed over the two arms; 0 when the denominator is 0 or |θ| < 1e-8
 *    (gbstats' rule: below that the adjustment is dropped).
 * 3. Adjusted arm: mean R − θ·R_X, per-unit variance ∇ᵀΛ∇ with ∇ = (∇R, −θ·∇R_X).
 * 4. Relative r = (M_T − M_C)/|R_C| (R_C unadjusted), variance ∇_Cᵀ Λ_C ∇_C/n_C + ∇_Tᵀ Λ_T ∇_T/n_T,
 *    ∇_T = ∇(treatment)/|R_C| and, with g = M_T − M_C and s = sign(R_C),
 *    ∇_C = (−1/(d̄·|R_C|) − s·g/(d̄·R_C²), (ȳ/d̄²)/|R_C| + s·g·ȳ/(d̄²·R_C²), θ/(x̄_D·|R_C|), −θ·x̄_Y/(x̄_D²·|R_C|))
 *    (gbstats `frequentist_variance_relative_cuped_ratio`, which takes s = +1).
 * Null when a mean denominator (d̄ or x̄_D) is 0 in an arm.
 */
export function cupedRatio(control: JointMoments, treatment: JointMoments): CupedAdjustment | null {
  const arms = [control, treatment].map((m) => {
    const [y, d, xy, xd] = [0, 1, 2, 3].map((i) => jointMean(m, i)) as [number, number, number, number];
    if (d === 0 || xd === 0 || !Number.isFinite(d) || !Number.isFinite(xd)) return null;
    const gradR = ratioGradient(y, d);
    const gradX = ratioGradient(xy, xd);
    return {
      m, y, d, xy, xd, gradR, gradX, r: y / d, rX: xy / xd,
      covRX: deltaCovariance(m, [0, 1], gradR, [2, 3], gradX),
      varX: deltaVariance(m, [2, 3], gradX),
    };
  });
  const [c, t] = arms;
  if (c == null || t == null) return null;
  const varX = c.varX + t.varX;
  // gbstats (EffectMoments.initialize_theta) drops the adjustment when |θ| < 1e-8; so does the engine.
  const raw = varX === 0 ? 0 : (c.covRX + t.covRX) / varX;
  const theta = Math.abs(raw) < RATIO_THETA_FLOOR ? 0 : raw;
  const gradient = (arm: NonNullable<typeof c>): number[] => [...arm.gradR, -theta * arm.gradX[0], -theta * arm.gradX[1]];
  const adjust = (arm: NonNullable<typeof c>): ArmSummary => ({
    n: arm.m.n,
    mean: arm.r - theta * arm.rX,
    variance: deltaVariance(arm.m, [0, 1, 2, 3], gradient(arm)),
  });
  const adjustedC = adjust(c);
  const adjustedT = adjust(t);
  let relativeVariance: number | null = null;
  if (c.r !== 0) {
    const den = Math.abs(c.r);
    const s = Math.sign(c.r);
    const g = adjustedT.mean - adjustedC.mean;
    const gradC = [
      -1 / (c.d * den) - (s * g) / (c.d * c.r * c.r),
      c.y / (c.d * c.d * den) + (s * g * c.y) / (c.d * c.d * c.r * c.r),
      theta / (c.xd * den),
      (-theta * c.xy) / (c.xd * c.xd * den),
    ];
    const gradT = gradient(t).map((value) => value / den);
    const all = [0, 1, 2, 3];
    relativeVariance = deltaVariance(c.m, all, gradC) / c.m.n + deltaVariance(t.m, all, gradT) / t.m.n;
  }
  return { theta, control: adjustedC, treatment: adjustedT, controlUnadjustedMean: c.r, relativeVariance };
}

/**
 * The relative effect of a CUPED adjustment as a t estimate: r = (ȳ'_T − ȳ'_C)/|ȳ_C| with se from
 * `relativeVariance`, df the Welch df of the adjusted arms. Null when not computable.
 */
export function cupedRelativeEstimate(adjustment: CupedAdjustment): TEstimate | null {
  const df = welchDf(adjustment.control, adjustment.treatment);
  const variance = adjustment.relativeVariance;
  if (df === null || variance === null || !(variance > 0) || !Number.isFinite(variance)) return null;
  const estimate = (adjustment.treatment.mean - adjustment.control.mean) / Math.abs(adjustment.controlUnadjustedMean);
  return { estimate, se: Math.sqrt(variance), df };
}
