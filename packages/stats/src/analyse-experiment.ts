/**
 * The experiment statistics engine: from the store's per-arm moments (ArmTotals) to the
 * VariantResult rows of ExperimentResults, with metric definitions and analysis settings
 * (docs/statistics.md). Pure arithmetic, no I/O.
 */
import type {
  AnalysisSettings, ArmTotals, EffectEstimate, ExperimentMetric, MetricStats, MetricVerdict, VariantResult,
} from '@switchyard/core';
import { adjustedAlpha, adjustPValues } from './corrections.ts';
import { tInference } from './effects.ts';
import type { EffectDetail } from './effects.ts';
import { comparisonEffects, compareMetric, leadEstimate, leadPValue, outcomeSummary, quantileOf } from './metric-comparison.ts';
import { quantileStandardError } from './quantile.ts';
import type { MetricComparison } from './metric-comparison.ts';
import { bayesianCell, EMPTY_RUNNING_STATES, guardrailCell, sequentialCell } from './running-inference.ts';
import type { RunningStates, SequentialReading } from './running-inference.ts';
import { advanceSrmState, srmLogEValue } from './sequential-srm.ts';
import { srmPValue, srmWarning } from './srm.ts';
import { welchTTest } from './welch.ts';

/** One arm: the store's totals and its planned share of traffic (any unit, e.g. summed `weight_milli`). */
export type AnalysisArm = ArmTotals & { plannedWeight: number };

export interface AnalyseExperimentInput {
  /** In the experiment's `variant_keys` order. */
  arms: readonly AnalysisArm[];
  controlVariantKey: string;
  /** In the experiment's order; the first is the primary metric (`pValue`). */
  metrics: readonly ExperimentMetric[];
  settings: AnalysisSettings;
  /**
   * The states carried from the worker's earlier looks at this iteration, computed with the same
   * running settings (running-inference.ts `runningSettingsKey`); absent or null: this is the first.
   */
  previous?: RunningStates | null;
  /** The iteration has ended: the hybrid reads its fixed-horizon part (§10). */
  atEnd?: boolean;
}

export interface AnalyseExperimentOutput {
  variantResults: VariantResult[];
  srmPValue: number | null;
  srmWarning: boolean;
  /** The sequential SRM check's always-valid p-value over the looks so far (§11); null when not testable. */
  sequentialSrmPValue: number | null;
  /** The states to carry to the next look. */
  running: RunningStates;
}

interface Cell {
  treatment: number;
  metric: number;
  comparison: MetricComparison;
  leadP: number | null;
  adjustedP: number | null;
  /** The level of the reported intervals (α, or α' under a correction). */
  alpha: number;
  /** With `settings.sequential`: the running always-valid test of the relative effect, and its corrected p-value. */
  sequential: SequentialReading | null;
  sequentialAdjustedP: number | null;
}

/**
 * Results per variant and metric:
 * 1. Each (treatment, metric) pair is compared with the control (metric-comparison.ts: §1–§5).
 * 2. The lead p-values (relative, else absolute) are corrected within their families (§6); the
 *    effects' intervals are then recomputed at α' = α·p/p_adj.
 * 3. The balance checks' p-values are Bonferroni-corrected over every check of the experiment (§5).
 * 4. Verdicts from the corrected lead p-value and the sign of the effect (§8).
 * 5. The pre-existing MetricStats fields keep their meaning (docs/contract.md "Experiments and
 *    statistics"): mean and variance of the arm's outcome (R and σ²_R for a ratio), lift =
 *    (mean − control mean)/control mean, and the 95 % two-sided Welch interval and p-value of the
 *    unadjusted difference; `pValue` is that p-value for the first metric. A quantile metric
 *    (§15) reports each arm's `quantile` and its quantile as `mean`, and these fields from the
 *    difference of the quantiles (normal, 95 % two-sided).
 * 6. SRM p-value and warning (§7).
 *
 * No arms: no results. @throws RangeError when `controlVariantKey` is not among the arms (a caller bug)
 */
export function analyseExperiment(input: AnalyseExperimentInput): AnalyseExperimentOutput {
  const { arms, metrics, settings } = input;
  const previous = input.previous ?? EMPTY_RUNNING_STATES;
  if (arms.length === 0) return { variantResults: [], srmPValue: null, srmWarning: false, sequentialSrmPValue: previous.srm?.p_value ?? null, running: previous };
  const control = arms.find((arm) => arm.variantKey === input.controlVariantKey);
  if (control === undefined) {
    throw new RangeError(`analyseExperiment: control variant ${input.controlVariantKey} is not among the arms`);
  }
  const treatments = arms.filter((arm) => arm !== control);

  // 1. Compare; with sequential testing, fold each relative effect's look into its running state.
  const running: RunningStates = { sequential: {}, guardrails: {}, srm: previous.srm };
  const cells: Cell[] = [];
  treatments.forEach((arm, treatment) => {
    metrics.forEach((metric, m) => {
      const comparison = compareMetric(metric, control.metrics[metric.key], arm.metrics[metric.key], settings);
      const cell: Cell = { treatment, metric: m, comparison, leadP: leadPValue(comparison), adjustedP: null, alpha: settings.alpha, sequential: null, sequentialAdjustedP: null };
      if (settings.sequential !== null) {
        const sequentialSettings = { ...settings, sequential: settings.sequential };
        const fixedAtEnd = settings.hybrid && input.atEnd === true ? comparisonEffects(comparison, settings.alpha / 2).relative : null;
        const folded = sequentialCell(comparison.relative, pairSize(metric, control, arm), metric, sequentialSettings,
          previous.sequential[arm.variantKey]?.[metric.key] ?? null, fixedAtEnd);
        if (folded.state !== null) (running.sequential[arm.variantKey] ??= {})[metric.key] = folded.state;
        cell.sequential = folded.reading;
      }
      cells.push(cell);
    });
  });

  // 2. Correct within families; only computable p-values take part. The always-valid p-values are
  //    corrected the same way, in the same families (§9 "Multiple testing").
  const familyOf = (cell: Cell): string =>
    settings.correctionFamily === 'per_metric' ? `m${cell.metric}` : settings.correctionFamily === 'per_variant' ? `t${cell.treatment}` : 'all';
  const families = new Map<string, Cell[]>();
  const sequentialFamilies = new Map<string, Cell[]>();
  for (const cell of cells) {
    if (cell.leadP !== null) families.set(familyOf(cell), [...(families.get(familyOf(cell)) ?? []), cell]);
    if (cell.sequential !== null) sequentialFamilies.set(familyOf(cell), [...(sequentialFamilies.get(familyOf(cell)) ?? []), cell]);
  }
  for (const family of families.values()) {
    const adjusted = adjustPValues(family.map((cell) => cell.leadP as number), settings.correction);
    family.forEach((cell, i) => {
      cell.adjustedP = adjusted[i] as number;
      if (settings.correction !== 'none') cell.alpha = adjustedAlpha(settings.alpha, cell.leadP as number, cell.adjustedP, family.length);
    });
  }
  for (const family of sequentialFamilies.values()) {
    const adjusted = adjustPValues(family.map((cell) => (cell.sequential as SequentialReading).p_value), settings.correction);
    family.forEach((cell, i) => {
      cell.sequentialAdjustedP = adjusted[i] as number;
    });
  }

  // 3. Balance checks, Bonferroni over the experiment.
  const checks = cells.filter((cell) => cell.comparison.balancePValue !== null).length;

  const cellOf = (treatment: number, metric: number): Cell => cells[treatment * metrics.length + metric] as Cell;
  const variantResults = arms.map((arm): VariantResult => {
    const treatment = treatments.indexOf(arm);
    const metricValues: Record<string, number> = {};
    const metricStats: Record<string, MetricStats> = {};
    let pValue = 0;
    let pValuePresent = false;
    metrics.forEach((metric, m) => {
      const data = arm.metrics[metric.key];
      const own = outcomeSummary(metric, data);
      const stats: MetricStats = {
        mean: own?.mean ?? 0,
        variance: own?.variance ?? 0,
        lift: null,
        ci_low: null,
        ci_high: null,
        p_value: null,
        absolute: null,
        relative: null,
        adjusted_p_value: null,
        capped_mean: data !== undefined && data.moments.n > 0 ? (data.moments.means[0] ?? 0) : 0,
        uncapped_mean: data?.uncappedMean ?? 0,
        cuped: null,
      };
      const quantile = quantileOf(metric);
      if (quantile !== null) {
        // §15: the arm's quantile stands for its mean; variance is the per-value n·se².
        const order = data?.quantile ?? null;
        const se = order === null ? 0 : quantileStandardError(order);
        stats.quantile = order === null ? null : { p: quantile.p, unit: quantile.unit, n: order.n, estimate: order.estimate, ci_low: order.lower, ci_high: order.upper, se };
        stats.mean = order?.estimate ?? 0;
        stats.variance = order === null ? 0 : order.n * se * se;
      }
      if (treatment >= 0 && quantile !== null) {
        // 5. The pre-existing fields for a quantile metric: the difference of the quantiles, normal, 95 % two-sided.
        const baseOrder = control.metrics[metric.key]?.quantile ?? null;
        const base = baseOrder?.estimate ?? null;
        if (base !== null && data?.quantile) stats.lift = base === 0 ? null : (data.quantile.estimate - base) / base;
        const absolute = cellOf(treatment, m).comparison.absolute;
        const difference = absolute === null ? null : tInference(absolute, { alpha: 0.05, sides: 'two', direction: metric.direction });
        if (difference !== null) {
          stats.ci_low = difference.ci_low;
          stats.ci_high = difference.ci_high;
          stats.p_value = difference.p_value;
          if (m === 0) {
            pValue = difference.p_value;
            pValuePresent = true;
          }
        }
      }
      if (treatment >= 0) {
        // 5. The pre-existing fields.
        const base = outcomeSummary(metric, control.metrics[metric.key]);
        if (quantile === null && base !== null && own !== null) {
          stats.lift = base.mean === 0 ? null : (own.mean - base.mean) / base.mean;
          const test = welchTTest(base, own);
          if (test !== null) {
            stats.ci_low = test.ciLow;
            stats.ci_high = test.ciHigh;
            stats.p_value = test.pValue;
            if (m === 0) {
              pValue = test.pValue;
              pValuePresent = true;
            }
          }
        }
        const cell = cellOf(treatment, m);
        const effects = comparisonEffects(cell.comparison, cell.alpha);
        stats.absolute = effectEstimate(effects.absolute);
        stats.relative = effectEstimate(effects.relative);
        stats.adjusted_p_value = cell.adjustedP;
        const cuped = cell.comparison.cuped;
        // MetricStats.cuped.variance_reduction is a number: with no unadjusted variance to reduce
        // (outcomes constant within each arm) the adjusted effects are reported without it.
        if (metric.cuped !== null && cuped !== null && cuped.variance_reduction !== null) {
          const balance = cell.comparison.balancePValue;
          stats.cuped = { theta: cuped.theta, variance_reduction: cuped.variance_reduction, balance_p_value: balance === null ? null : Math.min(1, checks * balance) };
        }
        // Issue 39: the running sequential test, the posterior, the guardrail (§9–§13).
        if (settings.sequential !== null) {
          stats.sequential = cell.sequential === null ? null : { ...cell.sequential, adjusted_p_value: cell.sequentialAdjustedP };
        }
        const bayesian = settings.engine === 'bayesian' ? bayesianCell(cell.comparison.relative, metric, settings) : null;
        if (settings.engine === 'bayesian') {
          stats.bayesian = bayesian === null ? null : {
            chance_to_win: bayesian.chance_to_win, risk_control: bayesian.risk_control, risk_treatment: bayesian.risk_treatment, ci_low: bayesian.ci_low, ci_high: bayesian.ci_high,
          };
        }
        if (metric.guardrail !== null) {
          const guard = guardrailCell(cell.comparison, pairSize(metric, control, arm), metric, settings, previous.guardrails[arm.variantKey]?.[metric.key] ?? null);
          if (guard.state !== null) (running.guardrails[arm.variantKey] ??= {})[metric.key] = guard.state;
          const reading = guard.reading;
          stats.guardrail_status = reading?.status ?? null;
          stats.guardrail = reading === null ? null : { estimate: reading.estimate, harm_p_value: reading.harm_p_value, non_inferiority_p_value: reading.non_inferiority_p_value, bound: reading.bound };
        }
        stats.verdict = settings.engine === 'bayesian'
          ? bayesianVerdict(bayesian, settings)
          : settings.sequential !== null ? sequentialVerdict(metric, cell, settings.alpha) : verdict(metric, cell, settings.alpha);
      }
      metricValues[metric.key] = stats.mean;
      metricStats[metric.key] = stats;
    });
    return { variantKey: arm.variantKey, participantCount: arm.participants, metricValues, metricStats, pValue, pValuePresent };
  });

  // 6. SRM.
  const counts = arms.map((arm) => arm.participants);
  const weights = arms.map((arm) => arm.plannedWeight);
  const srm = arms.length === 0 ? null : srmPValue(counts, weights);
  // The sequential SRM e-value (§11), folded like the sequential tests: valid at every look.
  running.srm = advanceSrmState(previous.srm, srmLogEValue(counts, weights));
  return {
    variantResults,
    srmPValue: srm,
    srmWarning: srmWarning(counts, weights, srm, settings.srmThreshold, settings.srmMinExpected),
    sequentialSrmPValue: running.srm?.p_value ?? null,
    running,
  };
}

/** Both arms' participants in the metric (the sample the sequential tuning N* is on, §9). */
function pairSize(metric: ExperimentMetric, control: AnalysisArm, treatment: AnalysisArm): number {
  return (control.metrics[metric.key]?.moments.n ?? 0) + (treatment.metrics[metric.key]?.moments.n ?? 0);
}

/**
 * §8 with sequential testing: as `verdict`, from the running always-valid test's corrected p-value
 * and the latest estimate's sign, so a declared result stays declared at later looks.
 */
function sequentialVerdict(metric: ExperimentMetric, cell: Cell, alpha: number): MetricVerdict {
  if (cell.sequential === null || cell.sequentialAdjustedP === null) return 'not_enough_data';
  const estimate = cell.sequential.estimate;
  if (!(cell.sequentialAdjustedP < alpha) || estimate === 0) return 'inconclusive';
  return (estimate > 0) === (metric.direction === 'increase') ? 'better' : 'worse';
}

/**
 * §12 verdict: `better` when the chance to win exceeds 1 − α/2 (1 − α one-sided), `worse` when it
 * is below α/2 (α), i.e. exactly when the central credible interval excludes 0 (two-sided);
 * otherwise `inconclusive`. Not corrected for multiple testing (there is no p-value to correct).
 */
function bayesianVerdict(bayesian: { chance_to_win: number } | null, settings: AnalysisSettings): MetricVerdict {
  if (bayesian === null) return 'not_enough_data';
  const tail = settings.sides === 'two' ? settings.alpha / 2 : settings.alpha;
  if (bayesian.chance_to_win > 1 - tail) return 'better';
  if (bayesian.chance_to_win < tail) return 'worse';
  return 'inconclusive';
}

/**
 * §8: `not_enough_data` without a lead test; else significant (p_adj < α) → `better` when the
 * effect goes the metric's way, `worse` when against it; otherwise `inconclusive`.
 */
function verdict(metric: ExperimentMetric, cell: Cell, alpha: number): MetricVerdict {
  const estimate = leadEstimate(cell.comparison);
  if (cell.adjustedP === null || estimate === null) return 'not_enough_data';
  if (!(cell.adjustedP < alpha) || estimate === 0) return 'inconclusive';
  return (estimate > 0) === (metric.direction === 'increase') ? 'better' : 'worse';
}

function effectEstimate(detail: EffectDetail | null): EffectEstimate | null {
  if (detail === null) return null;
  return { estimate: detail.estimate, ci_low: detail.ci_low, ci_high: detail.ci_high, p_value: detail.p_value };
}
