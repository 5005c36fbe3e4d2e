/**
 * Sample ratio mismatch: do the participant counts fit the planned traffic split?
 */
import { chiSquaredSurvival } from './chi-squared.ts';

/**
 * The p-value of Pearson's chi-squared goodness-of-fit test (no continuity correction) of
 * `observed` counts against the split planned by `expectedWeights` — the same as
 * `scipy.stats.chisquare(observed, total * w / sum(w))`. A small p (say < 0.001) means the traffic
 * did not split as planned, so the experiment's results are suspect.
 *
 * Weights are in any unit (e.g. the flag's `weight_milli`) and need not sum to anything in
 * particular: an experiment on two variants of a three-way flag passes just those two weights.
 *
 * 1. Groups planned at weight 0 with nobody in them are dropped: they carry no information and
 *    would be 0/0 terms. A weight-0 group that has participants makes the mismatch certain: 0.
 * 2. With k remaining groups, N participants and W total weight, expected_i = N · w_i / W and
 *    X² = Σ (observed_i - expected_i)² / expected_i.
 * 3. p = P(χ²_{k-1} >= X²), from the directly computed upper tail (full precision down to ~1e-308).
 *
 * @returns the p-value, or null when there is nothing to test: fewer than 2 groups, no
 *   participants, no positive weight, or a negative/non-finite count or weight
 * @throws RangeError when the two arrays differ in length (a caller bug)
 */
export function srmPValue(observed: readonly number[], expectedWeights: readonly number[]): number | null {
  if (observed.length !== expectedWeights.length) {
    throw new RangeError(`srmPValue: ${observed.length} counts but ${expectedWeights.length} weights`);
  }
  const counts: number[] = [];
  const weights: number[] = [];
  for (let i = 0; i < observed.length; i++) {
    const count = observed[i] ?? Number.NaN;
    const weight = expectedWeights[i] ?? Number.NaN;
    if (!(count >= 0 && weight >= 0 && Number.isFinite(count) && Number.isFinite(weight))) return null;
    if (weight === 0) {
      if (count > 0) return 0;
      continue;
    }
    counts.push(count);
    weights.push(weight);
  }
  const total = sum(counts);
  const totalWeight = sum(weights);
  if (counts.length < 2 || total === 0 || totalWeight === 0) return null;
  let chiSquared = 0;
  for (let i = 0; i < counts.length; i++) {
    const expected = (total * (weights[i] ?? 0)) / totalWeight;
    const deviation = (counts[i] ?? 0) - expected;
    chiSquared += (deviation * deviation) / expected;
  }
  return chiSquaredSurvival(chiSquared, counts.length - 1);
}

function sum(values: readonly number[]): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}

/**
 * Whether to warn of a sample ratio mismatch (docs/statistics.md §7): the p-value of `srmPValue` is
 * below `threshold` AND every variant planned at a positive weight expects at least `minExpected`
 * participants (N·w_i/W) — below that the chi-squared approximation is poor (Cochran, "Some methods
 * for strengthening the common χ² tests", Biometrics 10, 1954: expected counts of at least 5).
 * Variants planned at weight 0 expect nobody and are not counted (srmPValue already returns 0 when
 * one of them has participants). False when the p-value is null.
 */
export function srmWarning(
  observed: readonly number[],
  expectedWeights: readonly number[],
  pValue: number | null,
  threshold: number,
  minExpected: number,
): boolean {
  if (pValue === null || !(pValue < threshold)) return false;
  const total = sum(observed);
  const totalWeight = sum(expectedWeights);
  if (!(totalWeight > 0)) return false;
  return expectedWeights.every((weight) => weight === 0 || (total * weight) / totalWeight >= minExpected);
}
