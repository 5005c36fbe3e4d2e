/**
 * Remembers which exposures were recorded recently so a flag evaluated on every request sends
 * one exposure per (flag, context, variant) instead of one per evaluation. Bounded: the least
 * recently recorded entry goes first when full, and an entry expires after `ttlMs` so a
 * long-running process still reports a context it keeps seeing (experiment windows and new
 * iterations need a fresh exposure now and then, docs/sdk.md "Event delivery").
 */
export class ExposureDedup {
  /** Key → expiry time; Map keeps insertion order, which is the eviction order. */
  private readonly entries = new Map<string, number>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /**
   * The key of one exposure; NUL cannot occur in any of the five (it is not valid in keys). The
   * rule is part of it: a context first served a variant by a targeting rule, then the same
   * variant by an experiment's allocation, is a new exposure that experiment counts.
   */
  static keyOf(flagKey: string, contextType: string, contextKey: string, variantKey: string, ruleId = ''): string {
    return `${flagKey}\u0000${contextType}\u0000${contextKey}\u0000${variantKey}\u0000${ruleId}`;
  }

  /** True when `key` was seen within the TTL (then nothing is recorded); otherwise remembers it. */
  seen(key: string): boolean {
    const now = this.now();
    const expiresAt = this.entries.get(key);
    if (expiresAt !== undefined) {
      if (expiresAt > now) {
        // Refresh its place in the eviction order, not its expiry.
        this.entries.delete(key);
        this.entries.set(key, expiresAt);
        return true;
      }
      this.entries.delete(key);
    }
    this.entries.set(key, now + this.ttlMs);
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    return false;
  }

  /** Forgets `key`, so the next exposure with it is recorded again (after a delivery gave up). */
  forget(key: string): void {
    this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }

  clear(): void {
    this.entries.clear();
  }
}
