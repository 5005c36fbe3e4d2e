import { TokenBucket, type RateLimit } from '@switchyard/core';

/** Buckets kept per table by default: the memory an outsider can make us hold is bounded. */
export const DEFAULT_MAX_BUCKETS = 100_000;

/**
 * Token buckets by id, at most `maxBuckets` of them: the least recently used is forgotten first.
 * A forgotten bucket comes back full, so eviction only ever errs towards admitting (never refuses
 * someone who would have been admitted). Used by the ingest and the client-key limiters.
 */
export class BucketTable {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(private readonly maxBuckets: number = DEFAULT_MAX_BUCKETS) {}

  /** The bucket of `id` (a new, full one with `limit` when unknown), now the most recently used. */
  get(id: string, limit: RateLimit, nowMs: number): TokenBucket {
    let bucket = this.buckets.get(id);
    if (bucket) {
      // Re-inserted: a Map iterates in insertion order, so its first key is the least recently used.
      this.buckets.delete(id);
    } else {
      bucket = new TokenBucket(limit, nowMs);
      if (this.buckets.size >= this.maxBuckets) {
        const oldest = this.buckets.keys().next().value;
        if (oldest !== undefined) this.buckets.delete(oldest);
      }
    }
    this.buckets.set(id, bucket);
    return bucket;
  }

  get size(): number {
    return this.buckets.size;
  }
}
