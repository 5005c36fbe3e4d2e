/**
 * List-check answers: (segment key, context key) → member, bounded (least recently used goes
 * first) and each answer good for `ttlMs` (docs/sdk.md "List segments").
 */
export class MembershipCache {
  /** Map order is the recency order: a hit moves its entry to the end. */
  private readonly entries = new Map<string, { member: boolean; expiresAt: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  static keyOf(segmentKey: string, contextKey: string): string {
    return `${segmentKey}\u0000${contextKey}`;
  }

  /** The cached answer, or undefined when there is none or it expired. */
  get(segmentKey: string, contextKey: string): boolean | undefined {
    const key = MembershipCache.keyOf(segmentKey, contextKey);
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.member;
  }

  set(segmentKey: string, contextKey: string, member: boolean): void {
    const key = MembershipCache.keyOf(segmentKey, contextKey);
    this.entries.delete(key);
    this.entries.set(key, { member, expiresAt: this.now() + this.ttlMs });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  /** Forgets every answer about these segments (they were resent: members changed). */
  dropSegments(segmentKeys: Iterable<string>): void {
    const prefixes = [...segmentKeys].map((key) => `${key}\u0000`);
    if (prefixes.length === 0) return;
    for (const key of this.entries.keys()) if (prefixes.some((prefix) => key.startsWith(prefix))) this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
