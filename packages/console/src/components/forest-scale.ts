/**
 * The horizontal scale of a forest plot (components/forest-plot.tsx): each treatment's relative
 * lift with its interval against a zero line. Pure, so the placement is unit-tested.
 */

/** One row: the estimate and its interval; a null bound is an unbounded side. */
export interface ForestInterval {
  estimate: number;
  low: number | null;
  high: number | null;
}

export interface ForestScale {
  /** The values at the left and right edges of the plotting area. */
  min: number;
  max: number;
  /** The x coordinate of a value (linear from `left` at min to `right` at max). */
  x(value: number): number;
  /** Round values inside [min, max] to label the axis with (0 among them). */
  ticks: number[];
}

/** The share of the span left free on each side, so that the outermost interval ends inside. */
const PADDING = 0.1;
/** The half-width of the domain when every value is the same (a fraction: ±5 %). */
const FLAT_HALF_WIDTH = 0.05;

/**
 * The domain covers 0 (the zero line is always drawn), every estimate and every finite bound,
 * widened by PADDING of its span on both sides; an unbounded side runs to the edge.
 */
export function forestScale(rows: ForestInterval[], left: number, right: number): ForestScale {
  const values = [0];
  for (const row of rows) {
    for (const value of [row.estimate, row.low, row.high]) if (value !== null && Number.isFinite(value)) values.push(value);
  }
  let min = Math.min(...values);
  let max = Math.max(...values);
  if (max - min === 0) {
    min -= FLAT_HALF_WIDTH;
    max += FLAT_HALF_WIDTH;
  } else {
    const pad = (max - min) * PADDING;
    min -= pad;
    max += pad;
  }
  const x = (value: number) => left + ((value - min) / (max - min)) * (right - left);
  return { min, max, x, ticks: niceTicks(min, max) };
}

/**
 * About `count` ticks at multiples of a round step (1, 2 or 5 times a power of ten) inside
 * [min, max]; 0 is always one of them when it lies inside.
 */
export function niceTicks(min: number, max: number, count = 5): number[] {
  const rough = (max - min) / count;
  if (!(rough > 0) || !Number.isFinite(rough)) return [];
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((candidate) => candidate >= rough) ?? 10 * power;
  const ticks: number[] = [];
  for (let i = Math.ceil(min / step); i * step <= max; i++) {
    // i * step, rounded off the float noise of the multiplication (0.1 * 3 = 0.30000000000000004).
    ticks.push(Number((i * step).toPrecision(12)) + 0);
  }
  return ticks;
}

/** Where a row is drawn: its interval's ends (an unbounded side at the edge) and its estimate. */
export function placeInterval(scale: ForestScale, row: ForestInterval): { from: number; to: number; at: number; openLow: boolean; openHigh: boolean } {
  const openLow = row.low === null;
  const openHigh = row.high === null;
  return {
    from: scale.x(row.low ?? scale.min),
    to: scale.x(row.high ?? scale.max),
    at: scale.x(row.estimate),
    openLow,
    openHigh,
  };
}
