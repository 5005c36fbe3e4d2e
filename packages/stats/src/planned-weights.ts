import type { AllocationBucket } from '@switchyard/core';

/**
 * Planned weight of each variant key under a percentage allocation: the sum of its buckets'
 * `weight_milli` (a key may appear in several buckets), 0 for a key with no bucket.
 */
export function plannedWeights(buckets: readonly AllocationBucket[], variantKeys: readonly string[]): number[] {
  return variantKeys.map((key) =>
    buckets.reduce((total, bucket) => (bucket.variant_key === key ? total + bucket.weight_milli : total), 0));
}
