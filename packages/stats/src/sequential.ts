/**
 * Always-valid inference by Robbins' normal-mixture martingale on an asymptotically normal
 * estimate (docs/statistics.md §9): confidence sequences and always-valid p-values that stay valid
 * however often the results are looked at and whenever the experiment is stopped.
 *
 * References: Robbins, "Statistical methods related to the law of the iterated logarithm", Ann.
 * Math. Statist. 41, 1970; Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform, nonparametric,
 * nonasymptotic confidence sequences", Ann. Statist. 49, 2021 (the normal mixture); Waudby-Smith,
 * Arbour, Sinha, Kennedy & Ramdas, "Time-uniform central limit theory and asymptotic confidence
 * sequences", arXiv:2103.06476 (the asymptotic version used here, and ρ tuned to a sample size).
 *
 * The engine only needs an estimate, its variance and the sample behind it, so the same function
 * serves absolute, relative (delta method), ratio and CUPED-adjusted effects.
 */
import type { MetricDirection } from '@switchyard/core';
import { findRootBracketed } from './find-root.ts';
import { logNormalCdf } from './normal.ts';

/** GrowthBook's default planned sample N* (gbstats `sequential_tuning_parameter`); 10,000 is Eppo's (docs/statistics.md §9). */
export const DEFAULT_SEQUENTIAL_TUNING_N = 5000;

/** An asymptotically normal estimate: θ̂ ≈ N(θ, variance). */
export interface NormalEstimate {
  estimate: number;
  /** Var(θ̂), the squared standard error (e.g. a TEstimate's se²). */
  variance: number;
}

/** An estimate at one look, with the participants behind it. */
export interface SequentialLook extends NormalEstimate {
  /**
   * The participants behind the estimate: both arms' n (as gbstats). The tuning N* is on this scale.
   */
  n: number;
}

export interface SequentialSettings {
  alpha: number;
  /** The planned sample N* at which the confidence sequence is tightest (both arms). */
  tuningN: number;
  sides: 'two' | 'one';
  /** The alternative of a one-sided test (the metric's good direction, or the harm for a guardrail). */
  direction: MetricDirection;
  /** The value of the effect under the null hypothesis (default 0), e.g. a guardrail's margin. */
  nullValue?: number;
}

/** Always-valid inference at one look; null bounds are unbounded (the one-sided test's far side). */
export interface AlwaysValidResult {
  estimate: number;
  ci_low: number | null;
  ci_high: number | null;
  /** min(1, 1/e): valid at any stopping time. */
  p_value: number;
  /** ln e of the mixture martingale at the null value. */
  log_e_value: number;
}

/**
 * The mixing parameter ρ² of Waudby-Smith et al. (arXiv:2103.06476, the ρ that makes the
 * confidence sequence tightest at time N*; gbstats `sequential_rho`):
 *   ρ² = (−2 ln a + ln(−2 ln a + 1)) / N*,  a = α two-sided, 2α one-sided (as gbstats).
 * The mixture is N(0, ρ²·σ²) on the effect for a per-unit variance σ² = n·Var(θ̂), so the ratio of
 * the mixing variance to the estimate's variance is r = n·ρ² — the only way ρ enters below.
 *
 * @throws RangeError when α is outside (0, 1) two-sided, (0, 1/2) one-sided, or N* ≤ 0 (caller bugs)
 */
export function mixingRho2(alpha: number, tuningN: number, sides: 'two' | 'one'): number {
  const a = sides === 'two' ? alpha : 2 * alpha;
  if (!(a > 0 && a < 1)) throw new RangeError(`mixingRho2: alpha ${alpha} out of range for a ${sides}-sided test`);
  if (!(tuningN > 0)) throw new RangeError(`mixingRho2: tuning N ${tuningN} must be positive`);
  const l = -2 * Math.log(a);
  return (l + Math.log(l + 1)) / tuningN;
}

/**
 * ln e of the two-sided normal mixture at the standardised distance z = (θ̂ − θ₀)/√Var(θ̂)
 * (Robbins 1970; Howard et al. 2021), mixing over λ ~ N(0, g):
 *   e = exp(r·z²/(2(1 + r))) / √(1 + r).
 */
export function twoSidedLogEValue(z: number, r: number): number {
  return (r * z * z) / (2 * (1 + r)) - 0.5 * Math.log1p(r);
}

/**
 * ln e of the one-sided normal mixture (λ ≥ 0 mixed with a half-normal; Howard et al. 2021, and
 * their confseq library's `OneSidedNormalMixture`)
 * for the alternative θ > θ₀, at z as above:
 *   e = 2·Φ(c·z)·exp(c²z²/2) / √(1 + r),  c = √(r/(1 + r)),
 * the closed form of ∫₀^∞ exp(λS − λ²I/2)·2φ(λ; 0, g) dλ with I = 1/Var(θ̂), S = I·(θ̂ − θ₀), r = g·I.
 * For θ < θ₀ each exp(λS − λ²I/2) with λ ≥ 0 is a supermartingale, so the test is valid for the
 * composite null θ ≤ θ₀. This is the exact mixture; gbstats uses a closed-form bound (its
 * `sequential_interval_halfwidth_one_sided`, arXiv:2103.06476 eq. 134), slightly wider.
 */
export function oneSidedLogEValue(z: number, r: number): number {
  const c2 = r / (1 + r);
  return Math.LN2 + logNormalCdf(Math.sqrt(c2) * z) + (c2 * z * z) / 2 - 0.5 * Math.log1p(r);
}

/**
 * The confidence sequence's half-width in standard errors, b with e(b) = 1/α:
 * - two-sided, in closed form: b² = ((1 + r)/r)·(ln(1 + r) − 2 ln α) (gbstats
 *   `sequential_interval_halfwidth`, divided by the standard error);
 * - one-sided, by Brent's method: e is increasing in z, e(0) = 1/√(1 + r) < 1/α, and since
 *   2Φ(c·b) ≥ 1 for b ≥ 0, b_hi = √(2(−ln α + ln(1 + r)/2))/c already has e ≥ 1/α.
 */
export function boundaryInStandardErrors(alpha: number, r: number, sides: 'two' | 'one'): number {
  if (sides === 'two') return Math.sqrt(((1 + r) / r) * (Math.log1p(r) - 2 * Math.log(alpha)));
  const target = -Math.log(alpha);
  const hi = Math.sqrt((2 * (target + 0.5 * Math.log1p(r)) * (1 + r)) / r);
  return findRootBracketed((b) => oneSidedLogEValue(b, r) - target, 0, hi);
}

/**
 * Always-valid inference at one look (docs/statistics.md §9):
 * 1. ρ² from α, N* and the sides (`mixingRho2`); r = n·ρ².
 * 2. z = (θ̂ − θ₀)/√V with θ₀ = `nullValue`; for a one-sided `decrease` alternative, z is negated.
 * 3. e from the two- or one-sided mixture; p = min(1, 1/e) (Ville's inequality).
 * 4. The confidence sequence θ̂ ± b·√V, b the boundary at α: two-sided both bounds; one-sided
 *    `increase` only the lower bound, `decrease` only the upper. The bounds do not depend on θ₀,
 *    and exclude θ₀ exactly when p < α.
 * Null when V ≤ 0, n ≤ 0 or an input is not finite (nothing to test).
 */
export function alwaysValidInference(look: SequentialLook, settings: SequentialSettings): AlwaysValidResult | null {
  const { estimate, variance, n } = look;
  if (!(variance > 0) || !(n > 0) || !Number.isFinite(estimate) || !Number.isFinite(variance) || !Number.isFinite(n)) return null;
  const r = n * mixingRho2(settings.alpha, settings.tuningN, settings.sides);
  const se = Math.sqrt(variance);
  const z = (estimate - (settings.nullValue ?? 0)) / se;
  const halfWidth = boundaryInStandardErrors(settings.alpha, r, settings.sides) * se;
  if (settings.sides === 'two') {
    const logE = twoSidedLogEValue(z, r);
    return { estimate, ci_low: estimate - halfWidth, ci_high: estimate + halfWidth, p_value: pFromLogE(logE), log_e_value: logE };
  }
  const logE = oneSidedLogEValue(settings.direction === 'increase' ? z : -z, r);
  return settings.direction === 'increase'
    ? { estimate, ci_low: estimate - halfWidth, ci_high: null, p_value: pFromLogE(logE), log_e_value: logE }
    : { estimate, ci_low: null, ci_high: estimate + halfWidth, p_value: pFromLogE(logE), log_e_value: logE };
}

/** p = min(1, 1/e) from ln e (no overflow for huge e: exp(−700) is still representable as 1e-304). */
export function pFromLogE(logE: number): number {
  return logE <= 0 ? 1 : Math.exp(-logE);
}
