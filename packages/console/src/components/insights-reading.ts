import type { FlagStatus, InsightsGranularity, InsightsPoint } from '../records.ts';
import { niceTicks } from './forest-scale.ts';

/**
 * Pure readings of a flag's evaluation counts (docs/insights.md) for the console: the period the
 * Insights tab asks for, the answer's series laid on every hour or day of it, where each count is
 * drawn, and "last evaluated" in words. No DOM, so node:test checks them.
 */

export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

/** What the Insights tab asks `…/insights` for: `from` on a slot's start (inclusive), `to` now (exclusive). */
export interface InsightsRange {
  granularity: InsightsGranularity;
  from: number;
  to: number;
  stepMs: number;
  /** How many slots (hours or UTC days) the chart shows, the current, partial one included. */
  slots: number;
}

/** The last 7 days by the hour (168 hours), or the last 90 by the UTC day: each ending with the current one. */
export const RANGE_SLOTS: Record<InsightsGranularity, number> = { hour: 7 * 24, day: 90 };

/**
 * The period of a granularity ending at `now`: the current hour (or UTC day) and the ones before
 * it, `from` at the first one's start, as the route moves it anyway (its limits: 31 days of hours,
 * 400 of days).
 */
export function insightsRange(granularity: InsightsGranularity, now: number): InsightsRange {
  const stepMs = granularity === 'hour' ? HOUR_MS : DAY_MS;
  const slots = RANGE_SLOTS[granularity];
  const current = Math.floor(now / stepMs) * stepMs;
  return { granularity, from: current - (slots - 1) * stepMs, to: now, stepMs, slots };
}

/** One variant's counts, one per slot, and its total over the period. */
export interface VariantLine {
  variant: string;
  counts: number[];
  total: number;
}

export interface ChartData {
  /** Each slot's start (epoch ms), in order. */
  slots: number[];
  /** Variants in the flag's order, then any other the counts name (sorted), each with a count. */
  lines: VariantLine[];
  /** The largest count of any variant in any slot (0: nothing counted). */
  max: number;
  total: number;
}

/**
 * The series on every slot of the range: a slot without a point counted nothing (0). Variants:
 * those of `variantOrder` that were counted, in that order, then the others counted (a variant
 * removed since, or `""` for an error that served none), by name. A point outside the range or off
 * a slot's start is left out (the route answers none).
 */
export function chartData(series: InsightsPoint[], range: InsightsRange, variantOrder: string[]): ChartData {
  const slots = Array.from({ length: range.slots }, (_, i) => range.from + i * range.stepMs);
  const byVariant = new Map<string, number[]>();
  for (const point of series) {
    const offset = point.at_ms - range.from;
    const index = offset / range.stepMs;
    if (!Number.isInteger(index) || index < 0 || index >= range.slots) continue;
    for (const [variant, count] of Object.entries(point.variants)) {
      if (!byVariant.has(variant)) byVariant.set(variant, new Array<number>(range.slots).fill(0));
      byVariant.get(variant)![index]! += count;
    }
  }
  const known = variantOrder.filter((v) => byVariant.has(v));
  const others = [...byVariant.keys()].filter((v) => !variantOrder.includes(v)).sort();
  const lines = [...known, ...others].map((variant) => {
    const counts = byVariant.get(variant)!;
    return { variant, counts, total: counts.reduce((sum, n) => sum + n, 0) };
  });
  const max = Math.max(0, ...lines.flatMap((line) => line.counts));
  return { slots, lines, max, total: lines.reduce((sum, line) => sum + line.total, 0) };
}

/** The plot area of the chart, in SVG units. */
export interface PlotBox {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/**
 * The y axis: from 0 to a round top at or above the largest count, with its ticks, all whole
 * numbers (counts are): up to 4, every number from 0 to the count (at least 1); above, about four
 * ticks at a round step (niceTicks), the top one step above the last tick when that is below the count.
 */
export function countScale(max: number): { top: number; ticks: number[] } {
  if (max <= 4) {
    const top = Math.max(1, Math.ceil(max));
    return { top, ticks: Array.from({ length: top + 1 }, (_, i) => i) };
  }
  const ticks = niceTicks(0, max, 4);
  const step = ticks[1]! - ticks[0]!;
  const last = ticks[ticks.length - 1]!;
  return last >= max ? { top: last, ticks } : { top: last + step, ticks: [...ticks, last + step] };
}

/**
 * Where each count of a line is drawn: slot i of n at x = left + i/(n−1) of the width (a single
 * slot at the left), count c at y = bottom − c/top of the height.
 */
export function linePoints(counts: number[], top: number, box: PlotBox): Array<{ x: number; y: number }> {
  const n = counts.length;
  return counts.map((count, i) => ({
    x: n <= 1 ? box.left : box.left + (i / (n - 1)) * (box.right - box.left),
    y: box.bottom - (count / top) * (box.bottom - box.top),
  }));
}

/** An SVG `points` attribute, coordinates rounded to 0.1. */
export function pointsAttribute(points: Array<{ x: number; y: number }>): string {
  return points.map((p) => `${round1(p.x)},${round1(p.y)}`).join(' ');
}

const round1 = (value: number): number => Math.round(value * 10) / 10;

/**
 * "Last evaluated" in words, against `now`: "never" (null), "just now" (under a minute, or a
 * clock a little ahead), then whole minutes, hours or days ago, rounded down.
 */
export function relativeTime(ms: number | null | undefined, now: number): string {
  if (ms === null || ms === undefined) return 'never';
  const elapsed = now - ms;
  if (elapsed < 60_000) return 'just now';
  const [amount, unit] = elapsed < HOUR_MS ? [Math.floor(elapsed / 60_000), 'minute'] : elapsed < DAY_MS ? [Math.floor(elapsed / HOUR_MS), 'hour'] : [Math.floor(elapsed / DAY_MS), 'day'];
  return `${amount} ${unit}${amount === 1 ? '' : 's'} ago`;
}

/** Each status's word on its badge and what it means (docs/insights.md "Statuses"). */
export const STATUS_WORDS: Record<FlagStatus, { word: string; meaning: string }> = {
  new: { word: 'New', meaning: 'Made within the status window and never evaluated here yet' },
  active: { word: 'Active', meaning: 'Evaluated within the status window' },
  launched: { word: 'Launched', meaning: 'Evaluated within the status window, serving one variant to everyone, unchanged in the window' },
  inactive: { word: 'Inactive', meaning: 'Not evaluated within the status window' },
};

/** How a variant is named in the chart and tables (`""`: an error that served no variant). */
export const variantLabel = (variant: string): string => (variant === '' ? '(no variant)' : variant);
