/**
 * From per-variant aggregates (computed in SQL) to the VariantResult rows of experiment results
 * (docs/contract.md "Experiments and statistics"). Pure: the caller queries, this only does arithmetic.
 */
import type { AllocationBucket, MetricStats, VariantResult } from '@switchyard/core';
import { srmPValue } from './srm.ts';
import { summaryFromConversions, summaryFromMoments, summaryFromSums } from './summaries.ts';
import { welchTTest } from './welch.ts';
import type { SampleSummary } from './welch.ts';

/**
 * One metric of one variant as SQL aggregates it over the variant's participants, where each
 * participant's value is the sum of its events (0 with no event). The count n is always the
 * variant's `participants`.
 * - `conversions`: a bool metric — participants with any true event.
 * - `moments`: `avg(v)` and `var_samp(v)` (preferred for numeric metrics: stable, see summaries.ts).
 * - `sums`: Σ(v - shift) and Σ(v - shift)² (shift defaults to 0).
 */
export type MetricAggregate =
  | { kind: 'conversions'; conversions: number }
  | { kind: 'moments'; mean: number | null; variance: number | null }
  | { kind: 'sums'; sum: number; sumOfSquares: number; shift?: number };

/** Everything known about one variant of the experiment. */
export interface VariantAggregate {
  variantKey: string;
  /** Distinct contexts exposed to the variant in the iteration. */
  participants: number;
  /** Planned share of traffic in any unit, e.g. the summed `weight_milli` (see `plannedWeights`). */
  plannedWeight: number;
  /** By metric key. A metric missing here had no events: every participant counts as 0. */
  metrics: Readonly<Record<string, MetricAggregate | undefined>>;
}

/** Input of `computeVariantResults`. */
export interface VariantResultsInput {
  /** In the experiment's `variant_keys` order. */
  variants: readonly VariantAggregate[];
  /** The experiment's `metric_keys`; every variant gets metric values and stats for each. */
  metricKeys: readonly string[];
  /** The metric whose p-value fills `pValue`; default (docs/contract.md "Experiments and statistics") the first metric key. */
  primaryMetricKey?: string | null;
  /** The variant the others are compared with; default (docs/contract.md "Experiments and statistics") the first variant. */
  controlVariantKey?: string;
}

/** The computed part of ExperimentResults. */
export interface VariantResultsOutput {
  variantResults: VariantResult[];
  /** Sample-ratio-mismatch p-value of the participant counts against the planned weights. */
  srmPValue: number | null;
}

/**
 * Results per variant:
 * 1. Each metric's SampleSummary over the variant's participants (bool as conversion rate).
 * 2. `metricValues[key]` = mean; `metricStats[key]` = {mean, variance, lift, ci_low, ci_high, p_value}
 *    where, for a non-control variant, lift = (mean - controlMean) / controlMean (null when the
 *    control mean is 0; note that with a negative control mean a rise shows as a negative lift)
 *    and the CI (of mean - controlMean, 95%) and p come from Welch's test against the control —
 *    null when that test is not computable (either side n < 2, or both variances 0).
 *    The control's own stats have lift, CI and p null.
 * 3. `pValue` / `pValuePresent`: the primary metric's p; present only for a non-control variant
 *    whose test is computable. When absent, `pValue` is 0 (the wire field is a plain double).
 * 4. `srmPValue`: Pearson chi-squared of participant counts against `plannedWeight`s.
 *
 * @throws RangeError when `controlVariantKey` is not among the variants (a caller bug)
 */
export function computeVariantResults(input: VariantResultsInput): VariantResultsOutput {
  const { variants, metricKeys } = input;
  const primary = input.primaryMetricKey === undefined ? (metricKeys[0] ?? null) : input.primaryMetricKey;
  const controlKey = input.controlVariantKey ?? variants[0]?.variantKey;
  const control = variants.find((variant) => variant.variantKey === controlKey);
  if (variants.length > 0 && control === undefined) {
    throw new RangeError(`computeVariantResults: control variant ${String(controlKey)} is not among the variants`);
  }
  const controlSummaries = new Map<string, SampleSummary>();
  if (control !== undefined) {
    for (const key of metricKeys) controlSummaries.set(key, summarise(control, key));
  }

  const variantResults = variants.map((variant): VariantResult => {
    const isControl = variant === control;
    const metricValues: Record<string, number> = {};
    const metricStats: Record<string, MetricStats> = {};
    let pValue = 0;
    let pValuePresent = false;
    for (const key of metricKeys) {
      const summary = isControl ? controlSummaries.get(key) ?? summarise(variant, key) : summarise(variant, key);
      const stats: MetricStats = {
        mean: summary.mean, variance: summary.variance, lift: null, ci_low: null, ci_high: null, p_value: null,
      };
      const controlSummary = controlSummaries.get(key);
      if (!isControl && controlSummary !== undefined) {
        stats.lift = controlSummary.mean === 0 ? null : (summary.mean - controlSummary.mean) / controlSummary.mean;
        const test = welchTTest(controlSummary, summary);
        if (test !== null) {
          stats.ci_low = test.ciLow;
          stats.ci_high = test.ciHigh;
          stats.p_value = test.pValue;
          if (key === primary) {
            pValue = test.pValue;
            pValuePresent = true;
          }
        }
      }
      metricValues[key] = summary.mean;
      metricStats[key] = stats;
    }
    return { variantKey: variant.variantKey, participantCount: variant.participants, metricValues, metricStats, pValue, pValuePresent };
  });

  const srm = variants.length === 0 ? null : srmPValue(
    variants.map((variant) => variant.participants),
    variants.map((variant) => variant.plannedWeight),
  );
  return { variantResults, srmPValue: srm };
}

/**
 * Planned weight of each variant key under a percentage allocation: the sum of its buckets'
 * `weight_milli` (a key may appear in several buckets), 0 for a key with no bucket.
 */
export function plannedWeights(buckets: readonly AllocationBucket[], variantKeys: readonly string[]): number[] {
  return variantKeys.map((key) =>
    buckets.reduce((total, bucket) => (bucket.variant_key === key ? total + bucket.weight_milli : total), 0));
}

function summarise(variant: VariantAggregate, metricKey: string): SampleSummary {
  const n = variant.participants;
  const aggregate = variant.metrics[metricKey];
  if (aggregate === undefined) return summaryFromMoments(n, 0, 0);
  switch (aggregate.kind) {
    case 'conversions':
      return summaryFromConversions(aggregate.conversions, n);
    case 'moments':
      return summaryFromMoments(n, aggregate.mean, aggregate.variance);
    case 'sums':
      return summaryFromSums(n, aggregate.sum, aggregate.sumOfSquares, aggregate.shift);
  }
}
