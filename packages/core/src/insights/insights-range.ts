import { invalidArgument } from '../errors/domain-error.ts';
import { HOUR_MS } from './evaluation-counter.ts';
import type { InsightsGranularity } from './insights-ports.ts';

export const DAY_MS = 24 * HOUR_MS;
/** The longest range one hourly series may span (31 days: at most 744 points). */
export const MAX_HOURLY_SPAN_MS = 31 * DAY_MS;
/** The longest range one daily series may span (400 days). */
export const MAX_DAILY_SPAN_MS = 400 * DAY_MS;

export interface InsightsRange {
  fromMs: number;
  toMs: number;
  granularity: InsightsGranularity;
}

/**
 * Checks an insights query (docs/insights.md "Reading the counts"): granularity `hour` (default)
 * or `day`; `from` < `to`, both epoch milliseconds; at most 31 days of hours or 400 days of days.
 * `to` defaults to now and `from` to 24 hours (hour) or 30 days (day) before it. `from` is moved
 * back to the start of its hour or UTC day, so every point covers a whole bucket.
 * @throws INVALID_ARGUMENT otherwise.
 */
export function insightsRange(query: { from?: unknown; to?: unknown; granularity?: unknown }, nowMs: number): InsightsRange {
  const granularity = query.granularity ?? 'hour';
  if (granularity !== 'hour' && granularity !== 'day') throw invalidArgument("granularity must be 'hour' or 'day'", 'granularity');
  const bucket = granularity === 'hour' ? HOUR_MS : DAY_MS;
  const toMs = query.to === undefined ? nowMs : epochMs(query.to, 'to');
  const fromMs = query.from === undefined ? toMs - (granularity === 'hour' ? DAY_MS : 30 * DAY_MS) : epochMs(query.from, 'from');
  if (!(fromMs < toMs)) throw invalidArgument('from must be before to', 'from');
  const maxSpan = granularity === 'hour' ? MAX_HOURLY_SPAN_MS : MAX_DAILY_SPAN_MS;
  if (toMs - fromMs > maxSpan) throw invalidArgument(`a ${granularity}ly series spans at most ${maxSpan / DAY_MS} days`, 'to');
  return { fromMs: fromMs - (((fromMs % bucket) + bucket) % bucket), toMs, granularity };
}

function epochMs(value: unknown, field: string): number {
  const number = typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < 0) throw invalidArgument(`${field} must be epoch milliseconds`, field);
  return number;
}
