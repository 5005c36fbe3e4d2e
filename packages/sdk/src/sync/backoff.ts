/**
 * Reconnect delays: exponential backoff with full jitter. The n-th retry in a row (from 0) waits
 * a uniformly random time in [0, min(maxDelayMs, baseDelayMs · 2^n)). A stream that stayed
 * healthy for `resetAfterMs` starts over at n = 0 when it fails (docs/sdk.md "Reconnecting").
 */
export interface BackoffOptions {
  baseDelayMs: number;
  maxDelayMs: number;
  resetAfterMs: number;
  random: () => number;
  now: () => number;
}

export class Backoff {
  private attempt = 0;
  private healthySince: number | undefined;

  constructor(private readonly options: BackoffOptions) {}

  /** The ceiling of the next delay (before jitter). */
  ceilingMs(): number {
    const { baseDelayMs, maxDelayMs } = this.options;
    // 2^attempt overflows to Infinity long after it passed the cap, and min() handles that.
    return Math.min(maxDelayMs, baseDelayMs * 2 ** this.attempt);
  }

  /** The stream is up and delivering: the healthy time starts. */
  connected(): void {
    this.healthySince = this.options.now();
  }

  /** The delay before the next attempt; counts the attempt. */
  nextDelayMs(): number {
    if (this.healthySince !== undefined && this.options.now() - this.healthySince >= this.options.resetAfterMs) this.attempt = 0;
    this.healthySince = undefined;
    const r = Math.min(Math.max(this.options.random(), 0), 1);
    const delay = Math.floor(r * this.ceilingMs());
    this.attempt++;
    return delay;
  }

  /** Retries in a row so far. */
  get attempts(): number {
    return this.attempt;
  }
}
