/**
 * One metric, one treatment against the control: the absolute and relative effects (with CUPED
 * when the metric asks for it), the CUPED diagnostics and the balance check's raw p-value.
 * docs/statistics.md §1–§5. Intervals depend on the level, so `comparisonEffects` computes them at
 * any α (the multiple-testing correction asks for α', §6).
 */
import type { AnalysisSettings, ArmMetricData, ExperimentMetric, MetricQuantile } from '@switchyard/core';
import { cupedEvent, cupedRatio, cupedRelativeEstimate } from './cuped.ts';
import type { CupedAdjustment } from './cuped.ts';
import { absoluteEstimate, fiellerInterval, relativeDeltaEstimate, tInference } from './effects.ts';
import type { ArmSummary, EffectDetail, TEstimate, TestSides } from './effects.ts';
import { jointMean, jointVariance } from './joint-moments.ts';
import { quantileEffects } from './quantile.ts';
import { ratioSummary } from './ratio-metric.ts';

export interface MetricComparison {
  test: TestSides;
  /** Absolute effect (CUPED-adjusted when CUPED applies), null when not computable. */
  absolute: TEstimate | null;
  /** Relative effect by the delta method (CUPED-adjusted when CUPED applies), null when not computable. */
  relative: TEstimate | null;
  /** Set when the relative interval is Fieller's (requested, and no CUPED): the arms it needs. */
  fieller: { control: ArmSummary; treatment: ArmSummary } | null;
  /**
   * CUPED's θ and variance reduction (null when the unadjusted se is 0), null without CUPED (or
   * when it is not computable).
   */
  cuped: { theta: number; variance_reduction: number | null } | null;
  /** The balance check's p-value BEFORE the Bonferroni correction over the experiment; null without CUPED. */
  balancePValue: number | null;
}

/** The metric's quantile when it is a quantile metric (core's metricQuantile; this package imports core's types only). */
export const quantileOf = (metric: ExperimentMetric): MetricQuantile | null => (metric.kind === 'event' ? (metric.quantile ?? null) : null);

/**
 * The arm's unadjusted summary of the metric's outcome: the first variable for an event metric,
 * the ratio of the first two (§4) for a ratio metric; null when the ratio's denominator mean is 0.
 * Missing data is an arm with nobody in it.
 */
export function outcomeSummary(metric: ExperimentMetric, data: ArmMetricData | undefined): ArmSummary | null {
  if (data === undefined || data.moments.n === 0) return metric.kind === 'ratio' ? null : { n: 0, mean: 0, variance: 0 };
  if (metric.kind === 'ratio') return ratioSummary(data.moments, 0, 1);
  return { n: data.moments.n, mean: jointMean(data.moments, 0), variance: jointVariance(data.moments, 0) };
}

/** The covariate's summary (pre-exposure value, or ratio of the pre-exposure numerator and denominator). */
function covariateSummary(metric: ExperimentMetric, data: ArmMetricData): ArmSummary | null {
  if (metric.kind === 'ratio') return ratioSummary(data.moments, 2, 3);
  return { n: data.moments.n, mean: jointMean(data.moments, 1), variance: jointVariance(data.moments, 1) };
}

/**
 * Compares the treatment arm with the control arm on one metric:
 * 1. The unadjusted arm summaries (§1, §4 for ratios).
 * 2. With CUPED on the metric and the covariates present in both arms (2 variables for an event
 *    metric, 4 for a ratio), the adjusted arms (§5): absolute from the adjusted summaries, relative
 *    from the CUPED delta variance; `fieller` falls back to the delta interval.
 * 3. Without CUPED: absolute (§1), relative by the delta method (§2) and, when the settings ask
 *    for it, Fieller's interval (§3), whose p-value is the absolute one.
 * 4. The balance check: §1 on the covariate, two-sided, unadjusted, at the settings' α.
 */
export function compareMetric(
  metric: ExperimentMetric,
  control: ArmMetricData | undefined,
  treatment: ArmMetricData | undefined,
  settings: Pick<AnalysisSettings, 'alpha' | 'sides' | 'relativeInterval'>,
): MetricComparison {
  const test: TestSides = { alpha: settings.alpha, sides: settings.sides, direction: metric.direction };
  const none: MetricComparison = { test, absolute: null, relative: null, fieller: null, cuped: null, balancePValue: null };
  // A quantile metric compares the arms' quantiles (§15): no CUPED, no Fieller.
  if (quantileOf(metric) !== null) return { ...none, ...quantileEffects(control?.quantile ?? null, treatment?.quantile ?? null) };
  const c = outcomeSummary(metric, control);
  const t = outcomeSummary(metric, treatment);
  if (c === null || t === null) return none;
  const unadjusted = absoluteEstimate(c, t);

  const variables = metric.kind === 'ratio' ? 4 : 2;
  const withCovariates = metric.cuped !== null && control !== undefined && treatment !== undefined
    && control.moments.means.length >= variables && treatment.moments.means.length >= variables;
  let adjustment: CupedAdjustment | null = null;
  // CUPED needs 2 participants per arm, not an unadjusted test: outcomes constant within each arm
  // (se = 0 unadjusted) can still vary once adjusted by a covariate that differs between them.
  if (withCovariates && c.n >= 2 && t.n >= 2) {
    adjustment = metric.kind === 'ratio' ? cupedRatio(control.moments, treatment.moments) : cupedEvent(control.moments, treatment.moments);
  }
  if (adjustment !== null && control !== undefined && treatment !== undefined) {
    const adjustedVariance = adjustment.control.variance / adjustment.control.n + adjustment.treatment.variance / adjustment.treatment.n;
    const unadjustedVariance = c.variance / c.n + t.variance / t.n;
    const xC = covariateSummary(metric, control);
    const xT = covariateSummary(metric, treatment);
    const balance = xC === null || xT === null ? null : absoluteEstimate(xC, xT);
    return {
      test,
      absolute: absoluteEstimate(adjustment.control, adjustment.treatment),
      relative: cupedRelativeEstimate(adjustment),
      fieller: null,
      // 1 − se'²/se², both squared standard errors summed the same way (θ = 0 gives exactly 0);
      // null when the unadjusted se is 0 (nothing to reduce).
      cuped: { theta: adjustment.theta, variance_reduction: unadjustedVariance > 0 ? 1 - adjustedVariance / unadjustedVariance : null },
      balancePValue: balance === null ? null : tInference(balance, { alpha: settings.alpha, sides: 'two', direction: 'increase' }).p_value,
    };
  }
  return {
    test,
    absolute: unadjusted,
    relative: unadjusted === null ? null : relativeDeltaEstimate(c, t, unadjusted.df),
    fieller: settings.relativeInterval === 'fieller' ? { control: c, treatment: t } : null,
    cuped: null,
    balancePValue: null,
  };
}

/**
 * The effects of a comparison with p-values and intervals at level `alpha` (default the settings').
 * With Fieller the relative p-value is the absolute effect's (§3).
 */
export function comparisonEffects(comparison: MetricComparison, alpha = comparison.test.alpha): { absolute: EffectDetail | null; relative: EffectDetail | null } {
  const test = { ...comparison.test, alpha };
  const absolute = comparison.absolute === null ? null : tInference(comparison.absolute, test);
  let relative: EffectDetail | null = null;
  if (comparison.relative !== null) {
    relative = tInference(comparison.relative, test);
    if (comparison.fieller !== null && absolute !== null) {
      const interval = fiellerInterval(comparison.fieller.control, comparison.fieller.treatment, comparison.relative.df, test);
      relative = { ...relative, ...interval, p_value: absolute.p_value };
    }
  }
  return { absolute, relative };
}

/** The p-value §6 corrects: the relative effect's, or the absolute's when relative is not computable. */
export function leadPValue(comparison: MetricComparison): number | null {
  const { absolute, relative } = comparisonEffects(comparison);
  return relative?.p_value ?? absolute?.p_value ?? null;
}

/** The lead effect's estimate (same choice as `leadPValue`), for the verdict's sign. */
export function leadEstimate(comparison: MetricComparison): number | null {
  return comparison.relative?.estimate ?? comparison.absolute?.estimate ?? null;
}
