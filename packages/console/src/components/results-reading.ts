/**
 * How the results page reads an experiment's results (docs/statistics.md): whether they carry the
 * analysis of metric definitions, which warnings they raise, and the words and numbers shown.
 * Pure, so the rules are unit-tested.
 */
import type { AnalysisWire, Effect, Experiment, GuardrailStatus, MetricStats, MetricVerdict, MetricWire, QuantileStats, Results } from '../records.ts';
import { quantileName } from './experiment-setup.ts';

/** Results without `srm_warning` warn on this p-value, as the page always has. */
export const LEGACY_SRM_THRESHOLD = 0.001;
const DEFAULT_ALPHA = 0.05;

/**
 * Results computed with metric definitions: they name their settings, or a treatment's stats carry
 * a relative effect or a verdict (older results have none of them, or nulls).
 */
export function isAnalysed(results: Results): boolean {
  if (results.analysis) return true;
  return results.variant_results.some((v) => Object.values(v.metric_stats).some((s) => (s.relative ?? s.verdict ?? null) !== null));
}

/** The settings the results were computed with, else the experiment's (else none: older results). */
export const analysisOf = (results: Results, experiment: Pick<Experiment, 'analysis'>): AnalysisWire | undefined => results.analysis ?? experiment.analysis ?? undefined;

/** The results' SRM verdict; older results without `srm_warning`: a p-value below 0.001. */
export function srmWarns(results: Pick<Results, 'srm_warning' | 'srm_p_value'>): boolean {
  if (typeof results.srm_warning === 'boolean') return results.srm_warning;
  return typeof results.srm_p_value === 'number' && results.srm_p_value < LEGACY_SRM_THRESHOLD;
}

export interface Imbalance {
  metric: string;
  variant: string;
  pValue: number;
}

/**
 * CUPED's balance checks that fail: a treatment whose pre-exposure values differ from the
 * control's (p below alpha) had different participants before the experiment touched them.
 */
export function imbalances(results: Results, alpha = DEFAULT_ALPHA): Imbalance[] {
  const found: Imbalance[] = [];
  for (const v of results.variant_results) {
    for (const [metric, stats] of Object.entries(v.metric_stats)) {
      const p = stats.cuped?.balance_p_value;
      if (typeof p === 'number' && p < alpha) found.push({ metric, variant: v.variant_key, pValue: p });
    }
  }
  return found;
}

export const alphaOf = (analysis: AnalysisWire | undefined): number => analysis?.alpha ?? DEFAULT_ALPHA;

/** Whether adjusted p-values are worth a column: a correction is on. */
export const correctionIsOn = (analysis: AnalysisWire | undefined): boolean => analysis !== undefined && analysis.correction !== 'none';

export const VERDICT_WORDS: Record<MetricVerdict, string> = {
  better: 'Better',
  worse: 'Worse',
  inconclusive: 'Inconclusive',
  not_enough_data: 'Not enough data',
};

export const CORRECTION_WORDS: Record<AnalysisWire['correction'], string> = {
  none: 'none',
  bonferroni: 'Bonferroni',
  holm: 'Holm',
  benjamini_hochberg: 'Benjamini–Hochberg',
};

/** A fraction as a signed percentage with one decimal: 0.123 → "+12.3 %", -0.05 → "−5.0 %". */
export function formatPercent(fraction: number): string {
  const text = `${Math.abs(fraction * 100).toFixed(1)} %`;
  if (text === '0.0 %') return text;
  return fraction < 0 ? `−${text}` : `+${text}`;
}

/** A number of results shown to 4 significant digits, or a dash when absent. */
export const formatNumber = (value: number | null | undefined, digits = 4): string => (typeof value === 'number' && Number.isFinite(value) ? value.toPrecision(digits) : '—');

/** A p-value to 3 significant digits, or a dash. */
export const formatP = (value: number | null | undefined): string => formatNumber(value, 3);

/** A relative interval in words; an unbounded side is said: "+2.0 % to no upper bound". */
export function intervalWords(effect: Pick<Effect, 'ci_low' | 'ci_high'>, format: (value: number) => string = formatPercent): string {
  const low = effect.ci_low === null ? 'no lower bound' : format(effect.ci_low);
  const high = effect.ci_high === null ? 'no upper bound' : format(effect.ci_high);
  return `${low} to ${high}`;
}

/** The confidence of the intervals: 1 − alpha, as a percentage ("95 %"). */
export const confidenceWords = (analysis: AnalysisWire | undefined): string => `${Number(((1 - alphaOf(analysis)) * 100).toFixed(2))} %`;

/** The capped and uncapped mean of a variant when capping changed the mean; else undefined. */
export function cappingChange(stats: MetricStats | undefined): { capped: number; uncapped: number } | undefined {
  if (!stats || typeof stats.capped_mean !== 'number' || typeof stats.uncapped_mean !== 'number') return undefined;
  if (stats.capped_mean === stats.uncapped_mean) return undefined;
  return { capped: stats.capped_mean, uncapped: stats.uncapped_mean };
}

// Issue 39 (docs/statistics.md "Issue 39 in the results"): which engine the verdicts read, the
// always-valid and Bayesian readings, guardrails against their margins, the sequential SRM check.

export type Engine = NonNullable<AnalysisWire['engine']>;

/** The engine the verdicts read; settings stored before the choice are frequentist. */
export const engineOf = (analysis: AnalysisWire | undefined): Engine => analysis?.engine ?? 'frequentist';

/** Whether the results carry the always-valid (sequential) test. */
export const isSequential = (analysis: AnalysisWire | undefined): boolean => !!analysis?.sequential;

/**
 * The interval the verdicts read, which the figure draws: the Bayesian engine's credible interval,
 * else with sequential testing the always-valid one, else the fixed-horizon confidence interval.
 */
export type IntervalKind = 'confidence' | 'always-valid' | 'credible';

export function intervalKindOf(analysis: AnalysisWire | undefined): IntervalKind {
  if (engineOf(analysis) === 'bayesian') return 'credible';
  return isSequential(analysis) ? 'always-valid' : 'confidence';
}

/**
 * A treatment's relative effect as the verdict reads it (`intervalKindOf`), or null when that
 * reading has no value yet. A credible interval is central around the posterior mean (the normal
 * posterior of docs/statistics.md §12 is symmetric), so its middle is the estimate drawn: with a
 * prior, that is the shrunk estimate, not the observed lift.
 */
export function leadEffect(stats: MetricStats | undefined, analysis: AnalysisWire | undefined): Effect | null {
  if (!stats) return null;
  switch (intervalKindOf(analysis)) {
    case 'credible': {
      const b = stats.bayesian;
      return b ? { estimate: (b.ci_low + b.ci_high) / 2, ci_low: b.ci_low, ci_high: b.ci_high, p_value: null } : null;
    }
    case 'always-valid': {
      const q = stats.sequential;
      return q ? { estimate: q.estimate, ci_low: q.ci_low, ci_high: q.ci_high, p_value: q.p_value } : null;
    }
    default:
      return stats.relative ?? null;
  }
}

/** A probability as a percentage with one decimal, never rounded to a certainty: "> 99.9 %", "< 0.1 %". */
export function formatChance(probability: number | null | undefined): string {
  if (typeof probability !== 'number' || !Number.isFinite(probability)) return '—';
  if (probability > 0.999) return '> 99.9 %';
  if (probability < 0.001) return '< 0.1 %';
  return `${(probability * 100).toFixed(1)} %`;
}

/**
 * An expected loss on the relative scale as an unsigned percentage of the control's mean, to two
 * significant digits (one decimal from 10 % up); below 0.001 % it is said so.
 */
export function formatRisk(fraction: number | null | undefined): string {
  if (typeof fraction !== 'number' || !Number.isFinite(fraction)) return '—';
  const percent = Math.abs(fraction * 100);
  if (percent === 0) return '0 %';
  if (percent < 0.001) return '< 0.001 %';
  return `${percent >= 10 ? percent.toFixed(1) : String(Number(percent.toPrecision(2)))} %`;
}

/** A fraction as an unsigned percentage, up to two decimals: 0.02 → "2 %", 0.025 → "2.5 %". */
export const formatShare = (fraction: number): string => `${Number((fraction * 100).toFixed(2))} %`;

/**
 * The words after a treatment's verdict badge, from the reading the verdict takes: the lift and
 * its interval; with sequential testing the always-valid interval and p-value (and the corrected
 * one the verdict reads, when a correction is on); with the Bayesian engine the chance to win and
 * the credible interval.
 */
export function verdictReading(stats: MetricStats | undefined, analysis: AnalysisWire | undefined, quantile?: MetricQuantile): string {
  const kind = intervalKindOf(analysis);
  // A quantile metric's effect is the relative difference of its quantile: "p90 +20.0 %".
  const of = quantile ? `${quantileName(quantile.p)} ` : '';
  if (kind === 'credible') {
    const b = stats?.bayesian;
    return b ? `chance to win ${formatChance(b.chance_to_win)}${quantile ? ` on the ${quantileName(quantile.p)}` : ''}, credible interval ${intervalWords(b)}` : 'no posterior yet';
  }
  if (kind === 'always-valid') {
    const q = stats?.sequential;
    if (!q) return 'no always-valid estimate yet';
    const adjusted = correctionIsOn(analysis) && typeof q.adjusted_p_value === 'number' ? ` (adjusted ${formatP(q.adjusted_p_value)})` : '';
    return `${of}${formatPercent(q.estimate)}, always-valid interval ${intervalWords(q)}, always-valid p = ${formatP(q.p_value)}${adjusted}`;
  }
  const relative = stats?.relative;
  return relative ? `${of}${formatPercent(relative.estimate)}, interval ${intervalWords(relative)}` : 'no estimate yet';
}

/** The tails the Bayesian verdicts use: better above 1 − tail, worse below tail (α/2 two-sided, α one-sided; §12). */
const bayesianTail = (analysis: AnalysisWire | undefined): number => (analysis?.sides === 'one' ? alphaOf(analysis) : alphaOf(analysis) / 2);

/** An integer with thousands separators, independent of the browser's locale: 5000 → "5,000". */
const formatCount = (n: number): string => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** What the verdicts read, in words, as the API decides them (docs/statistics.md "Issue 39 in the results"). */
export function verdictBasisWords(analysis: AnalysisWire | undefined): string {
  const alpha = alphaOf(analysis);
  const corrected = correctionIsOn(analysis) ? ' after the correction' : '';
  if (engineOf(analysis) === 'bayesian') {
    const tail = bayesianTail(analysis);
    const prior = analysis?.prior ? `prior N(${analysis.prior.mean ?? 0}, ${analysis.prior.sd ?? '?'}²) on the relative lift` : 'flat prior';
    return (
      `Verdicts read the Bayesian engine (${prior}): Better when the chance to win is above ${formatShare(1 - tail)}, Worse when it is below ${formatShare(tail)}; ` +
      `intervals are ${confidenceWords(analysis)} credible intervals, risks the expected loss of each choice.` +
      (isSequential(analysis) ? ' The always-valid test is shown beside it.' : '')
    );
  }
  if (isSequential(analysis)) {
    const tuning = analysis?.sequential?.tuning_n;
    const planned = typeof tuning === 'number' ? `planned sample N* = ${formatCount(tuning)}` : 'default planned sample';
    const hybrid = analysis?.hybrid ? '; hybrid: half of alpha sequential while running, half fixed-horizon once the iteration ends' : '';
    return (
      `Verdicts read the always-valid (sequential) test: Better or Worse once its running p-value${corrected} is below ${alpha} (${planned}${hybrid}). ` +
      'It may be read at every look: a result once declared stays declared.'
    );
  }
  return `Verdicts read the fixed-horizon p-values${corrected} (below ${alpha}): valid when read once, at the planned end, not at every look.`;
}

export const GUARDRAIL_WORDS: Record<GuardrailStatus, string> = {
  ok: 'OK',
  warning: 'Warning',
  failing: 'Failing',
};

/** A guardrail metric's margin from its definition; `true` (margin 0, relative) as the API reads it. */
export function marginOf(definition: Pick<MetricWire, 'guardrail'> | undefined): { margin: number; kind: 'relative' | 'absolute' } | undefined {
  const g = definition?.guardrail;
  if (!g) return undefined;
  if (g === true) return { margin: 0, kind: 'relative' };
  return { margin: g.margin ?? 0, kind: g.margin_kind ?? 'relative' };
}

/** A margin in words: "a 2 % margin", "a margin of 5 (absolute)", "no tolerated harm". */
export function marginWords(margin: { margin: number; kind: 'relative' | 'absolute' }): string {
  if (margin.margin === 0) return 'no tolerated harm';
  return margin.kind === 'relative' ? `a ${formatShare(margin.margin)} margin` : `a margin of ${formatNumber(margin.margin)} (absolute)`;
}

/** What a guardrail's status means, with its margin (docs/statistics.md §13). */
export function guardrailMeaning(status: GuardrailStatus, margin: { margin: number; kind: 'relative' | 'absolute' } | undefined): string {
  const tolerated = margin !== undefined && margin.margin > 0;
  switch (status) {
    case 'failing':
      return tolerated ? `harm beyond ${marginWords(margin)}` : 'significantly harmful';
    case 'warning':
      return tolerated ? 'harmful estimate, neither shown within the margin nor beyond it yet' : 'harmful estimate, not significant yet';
    default:
      return tolerated ? `within ${marginWords(margin)}, or not harmful` : 'not harmful';
  }
}

/**
 * The sequential SRM check warns when its always-valid p-value is below the SRM threshold (results
 * without settings: 0.001). It needs no minimum of expected participants: the e-value is exact,
 * not a chi-squared approximation (docs/statistics.md §11).
 */
export function sequentialSrmWarns(results: Pick<Results, 'sequential_srm_p_value'>, analysis: AnalysisWire | undefined): boolean {
  const p = results.sequential_srm_p_value;
  return typeof p === 'number' && p < (analysis?.srm_threshold ?? LEGACY_SRM_THRESHOLD);
}

// Quantile metrics (docs/statistics.md §15): each arm's value is a quantile with its outer
// (order-statistic) interval, and the effects compare quantiles, not means.

/** What a quantile metric reports: its p (0.9 for p90) and unit. */
export interface MetricQuantile {
  p: number;
  unit: QuantileStats['unit'];
}

/**
 * The quantile a metric reports, from its definition, else from an arm of the results (a metric
 * the experiment no longer defines); undefined for a mean metric.
 */
export function quantileOf(definition: Pick<MetricWire, 'quantile'> | undefined, results: Pick<Results, 'variant_results'>, metric: string): MetricQuantile | undefined {
  const defined = definition?.quantile;
  if (defined && typeof defined.p === 'number') return { p: defined.p, unit: defined.unit ?? 'participant' };
  for (const v of results.variant_results) {
    const q = v.metric_stats[metric]?.quantile;
    if (q) return { p: q.p, unit: q.unit };
  }
  return undefined;
}

/**
 * A quantile metric in words: "p90 of revenue per participant" (each participant's value, its
 * aggregation said unless the default sum), "p90 of latency per event" (every event's own value).
 * `subject` names the event: the definition's, else the metric key.
 */
export function quantileWords(quantile: MetricQuantile, subject: string, aggregation?: MetricWire['aggregation']): string {
  const name = quantileName(quantile.p);
  if (quantile.unit === 'event') return `${name} of ${subject} per event`;
  const value = aggregation === 'count' ? `the count of ${subject}` : aggregation === 'mean' ? `the mean ${subject}` : aggregation === 'conversion' ? `${subject} conversion (0 or 1)` : subject;
  return `${name} of ${value} per participant`;
}

/**
 * The words of a metric's table and caption: what an arm's value is, its effects and the lift the
 * plot draws: the mean's, or the quantile's ("p90", "Difference of p90").
 */
export function statisticWords(quantile: MetricQuantile | undefined): { value: string; absolute: string; relative: string; lift: string } {
  if (!quantile) return { value: 'Mean', absolute: 'Absolute difference', relative: 'Relative lift', lift: 'relative lift' };
  const name = quantileName(quantile.p);
  return { value: name, absolute: `Difference of ${name}`, relative: `Relative difference of ${name}`, lift: `relative difference of the ${name}` };
}

/** How many values a quantile arm ranks, in words: "1,200 participants", "1 event". */
export function quantileCountWords(q: Pick<QuantileStats, 'n' | 'unit'>): string {
  return `${formatCount(q.n)} ${q.unit}${q.n === 1 ? '' : 's'}`;
}
