/** A sustained rate and the burst above it: `perSecond` tokens flow in, at most `burst` are held. */
export interface RateLimit {
  perSecond: number;
  burst: number;
}

/**
 * A token bucket (O(1) per call, no timer): it starts full, refills continuously at
 * `perSecond` up to `burst`, and a request of cost n needs n tokens. A request costing more than
 * the whole burst needs a full bucket and empties it, so it is not refused for ever (the
 * configuration keeps the burst at least as large as the largest request anyway).
 */
export class TokenBucket {
  private tokens: number;
  private updatedAtMs: number;

  constructor(
    private readonly limit: RateLimit,
    nowMs: number,
  ) {
    this.tokens = limit.burst;
    this.updatedAtMs = nowMs;
  }

  /** Milliseconds until `cost` tokens are there (0: they are there now). Takes nothing. */
  waitMs(cost: number, nowMs: number): number {
    this.refill(nowMs);
    const missing = Math.min(cost, this.limit.burst) - this.tokens;
    return missing <= 0 ? 0 : (missing / this.limit.perSecond) * 1000;
  }

  /** Takes `cost` tokens (capped at the burst); call only after waitMs answered 0. */
  take(cost: number, nowMs: number): void {
    this.refill(nowMs);
    this.tokens -= Math.min(cost, this.limit.burst);
  }

  /** True when the bucket is full again, i.e. indistinguishable from a new one (it may be forgotten). */
  isFull(nowMs: number): boolean {
    this.refill(nowMs);
    return this.tokens >= this.limit.burst;
  }

  private refill(nowMs: number): void {
    // A clock that steps back refills nothing (and never takes tokens away).
    const elapsedMs = Math.max(0, nowMs - this.updatedAtMs);
    this.tokens = Math.min(this.limit.burst, this.tokens + (elapsedMs / 1000) * this.limit.perSecond);
    this.updatedAtMs = Math.max(this.updatedAtMs, nowMs);
  }
}
