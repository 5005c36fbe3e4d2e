/**
 * Effects of a treatment against the control from per-arm (mean, per-unit variance, n): the
 * absolute difference (Welch), the relative difference by the delta method, and Fieller's interval
 * for the relative difference. docs/statistics.md §1–§3 states every formula and choice.
 */
import type { MetricDirection } from '@switchyard/core';
import { studentTOneSidedPValue, studentTTwoSidedPValue, studentTUpperQuantile } from './student-t.ts';
import { welchSatterthwaiteDf } from './welch.ts';

/** One arm reduced to what the effects need; `variance` is per unit, so Var(mean) = variance / n. */
export interface ArmSummary {
  n: number;
  mean: number;
  variance: number;
}

/** How a test is read: its level and, when one-sided, the alternative. */
export interface TestSides {
  alpha: number;
  sides: 'two' | 'one';
  /** The alternative of a one-sided test (the metric's good direction); ignored when two-sided. */
  direction: MetricDirection;
}

/** A t-distributed estimate: the estimate, its standard error and the degrees of freedom. */
export interface TEstimate {
  estimate: number;
  se: number;
  df: number;
}

/** A t-distributed estimate with its p-value and interval at a level; null bounds are unbounded. */
export interface EffectDetail extends TEstimate {
  ci_low: number | null;
  ci_high: number | null;
  p_value: number;
}

/**
 * The quantile q of a test's interval: t_{1−α/2, df} two-sided, t_{1−α, df} one-sided
 * (Welch 1947; any statistics textbook, e.g. Casella & Berger, "Statistical Inference", §9.2).
 */
export function criticalValue(alpha: number, df: number, sides: 'two' | 'one'): number {
  return studentTUpperQuantile(sides === 'two' ? alpha / 2 : alpha, df);
}

/**
 * p-value and interval of a t-distributed estimate (docs/statistics.md §1): t = estimate / se;
 * two-sided p = 2·sf(|t|), interval estimate ± q·se; one-sided `increase`: p = sf(t) and
 * [estimate − q·se, +∞); `decrease`: p = cdf(t) and (−∞, estimate + q·se]. Tails are computed
 * directly (student-t.ts), never as 1 − cdf. The p-value does not depend on `alpha`.
 */
export function tInference(value: TEstimate, test: TestSides): EffectDetail {
  const { estimate, se, df } = value;
  const t = estimate / se;
  const q = criticalValue(test.alpha, df, test.sides);
  const halfWidth = q * se;
  if (test.sides === 'two') {
    return { ...value, p_value: studentTTwoSidedPValue(t, df), ci_low: finiteOrNull(estimate - halfWidth), ci_high: finiteOrNull(estimate + halfWidth) };
  }
  const p = studentTOneSidedPValue(t, df, test.direction);
  return test.direction === 'increase'
    ? { ...value, p_value: p, ci_low: finiteOrNull(estimate - halfWidth), ci_high: null }
    : { ...value, p_value: p, ci_low: null, ci_high: finiteOrNull(estimate + halfWidth) };
}

/**
 * Welch–Satterthwaite df (Welch 1947; Satterthwaite 1946) of two arms, or null when not computable
 * (either n < 2, both variances 0, or a non-finite input).
 */
export function welchDf(control: ArmSummary, treatment: ArmSummary): number | null {
  if (!usable(control) || !usable(treatment)) return null;
  const vC = control.variance / control.n;
  const vT = treatment.variance / treatment.n;
  if (vC === 0 && vT === 0) return null;
  return welchSatterthwaiteDf(vC, control.n, vT, treatment.n);
}

/**
 * Absolute effect Δ = ȳ_T − ȳ_C with se = sqrt(s²_T/n_T + s²_C/n_C) and the Welch df (Welch,
 * "The generalization of Student's problem when several different population variances are
 * involved", Biometrika 34, 1947). Null when n < 2 on a side or se = 0.
 */
export function absoluteEstimate(control: ArmSummary, treatment: ArmSummary): TEstimate | null {
  const df = welchDf(control, treatment);
  if (df === null) return null;
  const se = Math.sqrt(control.variance / control.n + treatment.variance / treatment.n);
  return { estimate: treatment.mean - control.mean, se, df };
}

/**
 * Relative effect r = (ȳ_T − ȳ_C)/|ȳ_C| by the delta method (first-order Taylor expansion of
 * ȳ_T/ȳ_C; Casella & Berger §5.5.4; as in Deng, Knoblich & Lu, KDD 2018, §3):
 *   se_r² = s²_T/(n_T·ȳ_C²) + ȳ_T²·s²_C/(n_C·ȳ_C⁴),
 * with the Welch df of the absolute effect (`df`, as gbstats does). Null when ȳ_C = 0 or se_r = 0.
 */
export function relativeDeltaEstimate(control: ArmSummary, treatment: ArmSummary, df: number): TEstimate | null {
  const c = control.mean;
  if (c === 0 || !Number.isFinite(c)) return null;
  const c2 = c * c;
  const variance = treatment.variance / (treatment.n * c2) + (treatment.mean * treatment.mean * control.variance) / (control.n * c2 * c2);
  const se = Math.sqrt(variance);
  if (!(se > 0) || !Number.isFinite(se)) return null;
  return { estimate: (treatment.mean - control.mean) / Math.abs(c), se, df };
}

/**
 * Fieller's interval for the relative effect (Fieller, "Some problems in interval estimation",
 * JRSS B 16, 1954; Franz, "Ratios: a short guide to confidence limits and proper use", 2007):
 * the set of ρ with (ȳ_T − ρ·ȳ_C)² ≤ q²·(v_T + ρ²·v_C), v = variance/n, q = criticalValue(α, df).
 * Solved for λ = ρ − 1 directly, which avoids the cancellation of ρ − 1 for small lifts: with
 * Δ = ȳ_T − ȳ_C, substituting ρ = 1 + λ gives a·λ² − 2·B·λ + C ≤ 0 where
 *   a = ȳ_C² − q²·v_C,  B = Δ·ȳ_C + q²·v_C,  C = Δ² − q²·(v_T + v_C).
 * a > 0 and B² − a·C ≥ 0: λ ∈ [λ₁, λ₂] (roots by the cancellation-free form: for B ≥ 0,
 * λ₂ = (B + √D)/a and λ₁ = C/(B + √D); mirrored for B < 0). The lift is λ when ȳ_C > 0 and −λ
 * (bounds swapped) when ȳ_C < 0. Otherwise the set is unbounded: both bounds null. One-sided: only
 * the bound on the alternative's side is kept.
 */
export function fiellerInterval(control: ArmSummary, treatment: ArmSummary, df: number, test: TestSides): { ci_low: number | null; ci_high: number | null } {
  const unbounded = { ci_low: null, ci_high: null };
  const q = criticalValue(test.alpha, df, test.sides);
  const q2 = q * q;
  const vC = control.variance / control.n;
  const vT = treatment.variance / treatment.n;
  const c = control.mean;
  const delta = treatment.mean - c;
  const a = c * c - q2 * vC;
  const b = delta * c + q2 * vC;
  const cc = delta * delta - q2 * (vT + vC);
  const discriminant = b * b - a * cc;
  if (!(a > 0) || !(discriminant >= 0) || c === 0) return unbounded;
  const root = Math.sqrt(discriminant);
  let lo: number;
  let hi: number;
  if (b >= 0) {
    const s = b + root;
    hi = s / a;
    lo = s === 0 ? 0 : cc / s;
  } else {
    const s = b - root;
    lo = s / a;
    hi = cc / s;
  }
  if (c < 0) [lo, hi] = [-hi, -lo];
  const ci_low = finiteOrNull(lo);
  const ci_high = finiteOrNull(hi);
  if (test.sides === 'two') return { ci_low, ci_high };
  return test.direction === 'increase' ? { ci_low, ci_high: null } : { ci_low: null, ci_high };
}

function usable(arm: ArmSummary): boolean {
  return arm.n >= 2 && Number.isFinite(arm.mean) && Number.isFinite(arm.variance) && arm.variance >= 0;
}

function finiteOrNull(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}
