/**
 * How the results page reads an experiment's results (docs/statistics.md): whether they carry the
 * analysis of metric definitions, which warnings they raise, and the words and numbers shown.
 * Pure, so the rules are unit-tested.
 */
import type { AnalysisWire, Effect, Experiment, MetricStats, MetricVerdict, Results } from '../records.ts';

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
