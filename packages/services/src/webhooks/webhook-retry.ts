/**
 * When a failed delivery is tried again (docs/workflow.md "Webhooks"): exponential backoff with
 * jitter. After attempt n (n ≥ 1) failed, the next one waits min(cap, first × 2^(n−1)) × a factor
 * drawn uniformly from [1 − jitter, 1 + jitter]. With the defaults (first 30 s, cap 12 h, jitter
 * 20 %, 17 attempts) the waits are 30 s, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 min, then 12 h five
 * times: 61,410 s + 60 h ≈ 77 h ≈ 3.2 days from the first attempt to the last, ±20 %.
 * A `Retry-After` answer replaces the computed wait (capped at `capMs`, never below 1 s).
 */
export interface RetrySchedule {
  firstRetryMs: number;
  capMs: number;
  /** 0..1: the spread of the random factor. */
  jitter: number;
  /** Attempts in all, the first one included; after the last a delivery is failed. */
  maxAttempts: number;
}

export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = {
  firstRetryMs: 30_000,
  capMs: 12 * 3_600_000,
  jitter: 0.2,
  maxAttempts: 17,
};

/** The wait after failed attempt `attempt` (1-based); `random` in [0, 1). */
export function retryDelayMs(schedule: RetrySchedule, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(schedule.capMs, schedule.firstRetryMs * 2 ** Math.max(0, Math.min(attempt - 1, 40)));
  const factor = 1 - schedule.jitter + 2 * schedule.jitter * random();
  return Math.max(1, Math.round(base * factor));
}

/**
 * The wait a `Retry-After` header asks for (delta seconds or an HTTP date), bounded to
 * [1 s, capMs]; null when absent or unreadable.
 */
export function retryAfterMs(header: string | null, nowMs: number, capMs: number): number | null {
  if (header === null) return null;
  const text = header.trim();
  let waitMs: number;
  if (/^\d{1,10}$/.test(text)) waitMs = Number(text) * 1000;
  else {
    const at = Date.parse(text);
    if (!Number.isFinite(at)) return null;
    waitMs = at - nowMs;
  }
  return Math.min(capMs, Math.max(1000, waitMs));
}
