/**
 * When a failed delivery is tried again, and for how long (docs/sdk.md "Event delivery").
 * Exponential backoff with jitter, capped, a bounded number of attempts; a server's Retry-After
 * (on 429 or 503) replaces the computed delay, capped the same way.
 */
export interface RetryPolicy {
  /** Attempts per batch, the first one included (default 5). */
  maxAttempts: number;
  /** Delay before the first retry; doubles on each further retry (default 1,000 ms). */
  baseDelayMs: number;
  /** Upper bound of any delay, Retry-After included (default 30,000 ms). */
  maxDelayMs: number;
  /** Time one request may take before it counts as a network error (default 10,000 ms). */
  requestTimeoutMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxAttempts: 5,
  baseDelayMs: 1_000,
  maxDelayMs: 30_000,
  requestTimeoutMs: 10_000,
});

/** What one answer means for the batch that got it. */
export type AttemptOutcome = 'delivered' | 'retry' | 'give_up';

/**
 * 2xx delivered; 408, 429, 5xx retried (the server stored nothing, docs/decisions.md "What 202
 * guarantees"); any other status (400, 401, 403, 404, 413, ...) would fail the same way again.
 */
export function outcomeOfStatus(status: number): AttemptOutcome {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  return 'give_up';
}

/**
 * The delay before retry number `retry` (1 for the first retry): `base * 2^(retry-1)` capped at
 * `maxDelayMs`, of which a random half is taken away ("equal jitter") so clients that failed
 * together do not come back together.
 */
export function backoffDelayMs(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.round(exponential / 2 + (random() * exponential) / 2);
}

/**
 * A Retry-After header in ms (delta-seconds or an HTTP date), or undefined when absent or
 * unreadable. Capped at `maxDelayMs` so one answer cannot park a batch for hours.
 */
export function retryAfterMs(header: string | null, policy: RetryPolicy, now: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const text = header.trim();
  let ms: number;
  if (/^\d+(\.\d+)?$/.test(text)) ms = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - now;
  }
  return Math.min(policy.maxDelayMs, Math.max(0, Math.round(ms)));
}
