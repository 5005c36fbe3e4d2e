/**
 * Guardrail metrics with a non-inferiority margin (docs/statistics.md §13): two one-sided tests
 * against the margin, fixed-horizon (Student t, as §1) or always-valid (§9), and a status.
 * Non-inferiority testing: Wellek, "Testing Statistical Hypotheses of Equivalence and
 * Noninferiority", 2nd ed., 2010, ch. 2; FDA, "Non-Inferiority Clinical Trials to Establish
 * Effectiveness", guidance, 2016.
 */
import type { MetricDirection } from '@switchyard/core';
import { tInference } from './effects.ts';
import type { TEstimate } from './effects.ts';
import { alwaysValidInference } from './sequential.ts';
import type { SequentialLook } from './sequential.ts';

export type GuardrailStatus = 'ok' | 'warning' | 'failing';

export interface GuardrailSettings {
  alpha: number;
  /** The metric's good direction; harm is the other one. */
  direction: MetricDirection;
  /**
   * The harm tolerated, ≥ 0, on the scale of the effect passed (a relative margin with the relative
   * effect, e.g. 0.02 for 2 %; an absolute one with the absolute effect). 0: any harm counts.
   */
  margin: number;
}

export interface GuardrailResult {
  estimate: number;
  /** One-sided p of H₀: harm ≤ margin against H₁: harm > margin. */
  harm_p_value: number;
  /** One-sided p of H₀: harm ≥ margin against H₁: harm < margin (non-inferiority). */
  non_inferiority_p_value: number;
  /**
   * The one-sided 1 − α confidence bound on the effect on the harmful side (the lower bound for an
   * `increase` metric): non-inferiority is shown when it is better than −margin; null if unbounded.
   */
  bound: number | null;
  status: GuardrailStatus;
}

/**
 * The status, from the two p-values and the estimate:
 * - `failing`: the harm exceeds the margin significantly (harm p < α). With margin 0: the metric is
 *   significantly worse.
 * - `ok`: non-inferiority is shown (non-inferiority p < α), or the estimate is not harmful at all
 *   (on the good side of 0 or exactly 0).
 * - `warning`: otherwise — the estimate is harmful and the data cannot yet rule out harm beyond the
 *   margin, but do not show it either.
 * `failing` wins over `ok` if both hold (only possible with running p-values from different looks).
 */
export function guardrailStatus(estimate: number, harmP: number, nonInferiorityP: number, direction: MetricDirection, alpha: number): GuardrailStatus {
  if (harmP < alpha) return 'failing';
  const gain = direction === 'increase' ? estimate : -estimate;
  if (nonInferiorityP < alpha || gain >= 0) return 'ok';
  return 'warning';
}

/** The null value of both tests: the effect at the margin, on the harmful side (−m for `increase`, +m for `decrease`). */
function marginValue(settings: GuardrailSettings): number {
  if (!(settings.margin >= 0)) throw new RangeError(`guardrail: margin ${settings.margin} must be ≥ 0`);
  return settings.direction === 'increase' ? -settings.margin : settings.margin;
}

const opposite = (direction: MetricDirection): MetricDirection => (direction === 'increase' ? 'decrease' : 'increase');

/**
 * Fixed horizon: with δ₀ the effect at the margin, t = (Δ̂ − δ₀)/se and the Welch df of §1:
 * the harm p is the one-sided p toward harm (P(T ≤ t) for an `increase` metric), the
 * non-inferiority p toward the good direction (P(T ≥ t)); `bound` is Δ̂ ∓ t_{1−α, df}·se.
 * Null when the effect is not computable (null) or se is not positive.
 */
export function guardrailFixed(effect: TEstimate | null, settings: GuardrailSettings): GuardrailResult | null {
  if (effect === null || !(effect.se > 0) || !Number.isFinite(effect.estimate)) return null;
  const at = marginValue(settings);
  const shifted: TEstimate = { estimate: effect.estimate - at, se: effect.se, df: effect.df };
  const harm = tInference(shifted, { alpha: settings.alpha, sides: 'one', direction: opposite(settings.direction) });
  const ni = tInference(shifted, { alpha: settings.alpha, sides: 'one', direction: settings.direction });
  const shiftedBound = settings.direction === 'increase' ? ni.ci_low : ni.ci_high;
  return finish(effect.estimate, harm.p_value, ni.p_value, shiftedBound === null ? null : shiftedBound + at, settings);
}

/**
 * Always valid (§9, one-sided mixtures): the same two tests at null value δ₀ with the one-sided
 * normal mixture tuned by N* (for α, as §9); `bound` is the one-sided confidence sequence's. Fold
 * the looks with `advanceGuardrailState` so a guardrail that failed stays failed.
 */
export function guardrailSequential(look: SequentialLook, settings: GuardrailSettings & { tuningN: number }): GuardrailResult | null {
  const at = marginValue(settings);
  const common = { alpha: settings.alpha, tuningN: settings.tuningN, sides: 'one' as const, nullValue: at };
  const harm = alwaysValidInference(look, { ...common, direction: opposite(settings.direction) });
  const ni = alwaysValidInference(look, { ...common, direction: settings.direction });
  if (harm === null || ni === null) return null;
  return finish(look.estimate, harm.p_value, ni.p_value, settings.direction === 'increase' ? ni.ci_low : ni.ci_high, settings);
}

function finish(estimate: number, harmP: number, niP: number, bound: number | null, settings: GuardrailSettings): GuardrailResult {
  return { estimate, harm_p_value: harmP, non_inferiority_p_value: niP, bound, status: guardrailStatus(estimate, harmP, niP, settings.direction, settings.alpha) };
}

/**
 * Folds a sequential look into the persisted guardrail state: both p-values are running minima
 * (each valid at any stopping time, §10), the bound the running best on the harmful side (a
 * running intersection of one-sided sequences), the estimate the latest; the status is recomputed
 * from those, so `failing` (and a shown non-inferiority) cannot be undone by a later look.
 */
export function advanceGuardrailState(state: GuardrailResult | null, look: GuardrailResult | null, settings: GuardrailSettings): GuardrailResult | null {
  if (look === null) return state;
  if (state === null) return look;
  const harmP = Math.min(state.harm_p_value, look.harm_p_value);
  const niP = Math.min(state.non_inferiority_p_value, look.non_inferiority_p_value);
  let bound = look.bound;
  if (state.bound !== null && bound !== null) bound = settings.direction === 'increase' ? Math.max(state.bound, bound) : Math.min(state.bound, bound);
  else bound = state.bound ?? bound;
  return finish(look.estimate, harmP, niP, bound, settings);
}
