/**
 * From the store's per-variant totals (ExperimentDataRepository.aggregate) to the VariantAggregate
 * input of computeVariantResults. Pure arithmetic.
 */
import type { AllocationBucket, Flag, MetricSpec, VariantTotals } from '@switchyard/core';
import type { MetricAggregate, VariantAggregate } from './experiment-results.ts';
import { mergeSummaries, summaryFromMoments } from './summaries.ts';

/**
 * The buckets that plan the experiment's split: those of the flag's first rule (in evaluation
 * order) whose allocation names at least one of the experiment's variants. Null when no rule
 * allocates them (the split is then unknown and no sample-ratio test is possible).
 */
export function experimentAllocation(flag: Pick<Flag, 'rules'> | null, variantKeys: readonly string[]): AllocationBucket[] | null {
  if (flag === null) return null;
  for (const rule of flag.rules) {
    const buckets = rule.allocation?.buckets;
    if (buckets && buckets.some((bucket) => variantKeys.includes(bucket.variant_key))) return buckets;
  }
  return null;
}

/**
 * One metric of one variant over ALL its participants:
 * - bool: the participants with a true event are the conversions;
 * - numeric: the contributors' (n, mean, variance) merged with (participants - n) zeros by
 *   Chan's update (mergeSummaries) — exactly the moments of the full 0-padded sample, without
 *   ever materialising the zeros.
 */
export function metricAggregate(participants: number, spec: MetricSpec, totals: VariantTotals['metrics'][string] | undefined): MetricAggregate {
  if (spec.valueType === 'bool') return { kind: 'conversions', conversions: totals?.nonZero ?? 0 };
  if (totals === undefined || totals.contributors === 0) return { kind: 'moments', mean: 0, variance: 0 };
  const contributors = summaryFromMoments(totals.contributors, totals.mean, totals.variance);
  const zeros = { n: Math.max(0, participants - totals.contributors), mean: 0, variance: 0 };
  const all = mergeSummaries(contributors, zeros);
  return { kind: 'moments', mean: all.mean, variance: all.variance };
}

/**
 * The VariantAggregate of each variant (same order as `totals`), every metric of `metrics`
 * included. `weights[i]` is the planned weight of `totals[i]` (0 when unknown).
 */
export function variantAggregates(totals: readonly VariantTotals[], metrics: readonly MetricSpec[], weights: readonly number[]): VariantAggregate[] {
  return totals.map((variant, i) => {
    const byMetric: Record<string, MetricAggregate> = {};
    for (const spec of metrics) byMetric[spec.key] = metricAggregate(variant.participants, spec, variant.metrics[spec.key]);
    return { variantKey: variant.variantKey, participants: variant.participants, plannedWeight: weights[i] ?? 0, metrics: byMetric };
  });
}
