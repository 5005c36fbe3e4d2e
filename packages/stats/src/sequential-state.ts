/**
 * What carries over between the stats worker's looks at a running experiment (docs/statistics.md
 * §10): the running minimum of the always-valid p-value and the running intersection of the
 * confidence sequences. Both are valid because the sequence is valid simultaneously at every look
 * (Howard et al. 2021: the intersection of a confidence sequence's past sets is again a
 * confidence sequence; and P(∃t: p_t ≤ α) ≤ α makes inf_t p_t a valid p-value), so a later look
 * can never un-declare what an earlier one found.
 */
import type { AlwaysValidResult } from './sequential.ts';
import type { SequentialRunning } from '@switchyard/core';

/**
 * The persisted state, per (iteration, treatment, metric, effect): core's SequentialRunning (the
 * results store keeps it), with its fields' meaning documented there.
 */
export type SequentialRunningState = SequentialRunning;

/**
 * Folds one look into the state:
 * 1. No look (null, not computable): the state is unchanged (null stays null).
 * 2. First look: the look itself.
 * 3. Otherwise p = min(p, p_look); the interval is [max(lows), min(highs)]; when that is empty the
 *    look's own interval is kept and `disjoint` set (see above). The estimate is the look's.
 *
 * The look must come from the same settings (α, N*, sides) as the state; changing them mid-way
 * breaks the guarantee (start a new state).
 */
export function advanceSequentialState(state: SequentialRunningState | null, look: AlwaysValidResult | null): SequentialRunningState | null {
  if (look === null) return state;
  if (state === null) {
    return { looks: 1, estimate: look.estimate, p_value: look.p_value, ci_low: look.ci_low, ci_high: look.ci_high, disjoint: false };
  }
  const low = maxBound(state.ci_low, look.ci_low);
  const high = minBound(state.ci_high, look.ci_high);
  const empty = low !== null && high !== null && low > high;
  return {
    looks: state.looks + 1,
    estimate: look.estimate,
    p_value: Math.min(state.p_value, look.p_value),
    ci_low: empty ? look.ci_low : low,
    ci_high: empty ? look.ci_high : high,
    disjoint: state.disjoint || empty,
  };
}

function maxBound(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.max(a, b);
}

function minBound(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}

/** p-value and interval of a test (fixed-horizon or sequential); null bounds are unbounded. */
export interface IntervalTest {
  p_value: number;
  ci_low: number | null;
  ci_high: number | null;
}

/** The levels of the hybrid's two parts: α/2 each (a union bound, so the whole test has level α). */
export function hybridAlphas(alpha: number): { sequential: number; fixed: number } {
  return { sequential: alpha / 2, fixed: alpha / 2 };
}

/**
 * The hybrid test (docs/statistics.md §10): an always-valid test at α/2 while the experiment runs,
 * plus a fixed-horizon test at α/2 read once, at the planned end. It rejects when either part
 * does, so by the union bound its type-I error is ≤ α/2 + α/2 = α; it keeps most of the
 * fixed-horizon test's power at the planned end while early looks stay safe.
 * - `sequential`: the running state's values, computed at α/2 (`hybridAlphas`).
 * - `fixedAtEnd`: the fixed-horizon test at α/2 on the planned end's data; null before the end.
 * p = min(1, 2·min(p_seq, p_fixed)), which is < α exactly when a part's p is below α/2; the
 * interval is the intersection of both parts' intervals (each covers with 1 − α/2, so both do
 * with ≥ 1 − α). Before the end: p = min(1, 2·p_seq) and the sequence's interval.
 */
export function hybridInference(sequential: IntervalTest, fixedAtEnd: IntervalTest | null): IntervalTest {
  if (fixedAtEnd === null) return { p_value: Math.min(1, 2 * sequential.p_value), ci_low: sequential.ci_low, ci_high: sequential.ci_high };
  let low = maxBound(sequential.ci_low, fixedAtEnd.ci_low);
  let high = minBound(sequential.ci_high, fixedAtEnd.ci_high);
  // Disjoint parts (probability ≤ α under the model): report the fixed-horizon interval, the one
  // computed on all the data at the planned end.
  if (low !== null && high !== null && low > high) [low, high] = [fixedAtEnd.ci_low, fixedAtEnd.ci_high];
  return { p_value: Math.min(1, 2 * Math.min(sequential.p_value, fixedAtEnd.p_value)), ci_low: low, ci_high: high };
}
