/**
 * Student's t tail probabilities and quantiles, built on stdlib-js's t CDF (a port of Boost's
 * incomplete beta, accurate to a few ulps in both tails).
 */
import tCdf from '@stdlib/stats-base-dists-t-cdf';
import { findRootBracketed } from './find-root.ts';
import { normalCdf, normalUpperQuantile } from './normal.ts';

/**
 * Two-sided p-value of a t statistic: P(|T| >= |t|) with `df` degrees of freedom.
 *
 * Uses the symmetric form `2 * cdf(-|t|, df)` rather than `2 * (1 - cdf(|t|, df))`: the lower tail
 * is computed directly, so a p-value of 1e-250 keeps full relative precision instead of
 * cancelling to 0 once it drops below ~1e-16.
 *
 * @returns a probability in [0, 1]; NaN when `t` or `df` is NaN or `df <= 0`
 */
export function studentTTwoSidedPValue(t: number, df: number): number {
  // df = ∞ is the standard normal (quantile metrics' normal approximations, docs/statistics.md §15).
  if (df === Number.POSITIVE_INFINITY) return Math.min(1, 2 * normalCdf(-Math.abs(t)));
  return Math.min(1, 2 * tCdf(-Math.abs(t), df));
}

/**
 * The upper-tail quantile of Student's t: the x > 0 with P(T > x) = `tailProbability`
 * (e.g. 0.025 for the half-width factor of a two-sided 95% interval). Non-integer `df` is fine.
 *
 * stdlib's t quantile package is not a dependency of this package (which installs nothing extra for
 * it), so the quantile is found by inverting the installed CDF:
 * 1. Solve g(x) = cdf(-x, df) - tailProbability = 0. Working on the lower tail at -x keeps g
 *    accurate in relative terms (no 1 - p cancellation), and g is strictly decreasing for x > 0.
 * 2. Bracket: g(0) = 0.5 - tailProbability > 0; double an upper end from 16 until g < 0
 *    (16 already brackets 0.025 for every df >= 1; heavier tails just take a few doublings).
 * 3. Brent's method on the bracket to ~2 ulps of x. Since cdf has a relative error of a few ulps
 *    and g'(x) = -pdf(x) is not small near the 95% point, x is accurate to ~1e-15 relative.
 *
 * @param tailProbability in (0, 0.5)
 * @param df degrees of freedom, > 0
 * @returns the quantile, or NaN for arguments outside those ranges
 */
export function studentTUpperQuantile(tailProbability: number, df: number): number {
  if (!(tailProbability > 0 && tailProbability < 0.5) || !(df > 0)) return Number.NaN;
  if (df === Number.POSITIVE_INFINITY) return normalUpperQuantile(tailProbability);
  const g = (x: number): number => tCdf(-x, df) - tailProbability;
  let hi = 16;
  while (g(hi) > 0) {
    hi *= 2;
    if (!Number.isFinite(hi)) return Number.POSITIVE_INFINITY;
  }
  return findRootBracketed(g, 0, hi);
}

/**
 * P(T <= t) with `df` degrees of freedom, straight from stdlib's CDF. The lower tail is computed
 * directly, so `studentTCdf(t, df)` keeps full relative precision for very negative t, and the upper
 * tail P(T >= t) is `studentTCdf(-t, df)` by symmetry — never `1 - cdf` (which cancels below 1e-16).
 *
 * @returns a probability in [0, 1]; NaN when `t` or `df` is NaN or `df <= 0`
 */
export function studentTCdf(t: number, df: number): number {
  return df === Number.POSITIVE_INFINITY ? normalCdf(t) : tCdf(t, df);
}

/**
 * One-sided p-value of a t statistic: P(T >= t) for the alternative `increase` (effect > 0) and
 * P(T <= t) for `decrease` (effect < 0), both lower tails by the symmetry of t (see `studentTCdf`).
 */
export function studentTOneSidedPValue(t: number, df: number, direction: 'increase' | 'decrease'): number {
  return direction === 'increase' ? studentTCdf(-t, df) : studentTCdf(t, df);
}
