/**
 * The standard normal distribution: CDF, tails, density and quantile, for the always-valid,
 * Bayesian and power computations (docs/statistics.md §9–§13), which are asymptotically normal.
 */
import erfc from '@stdlib/math-base-special-erfc';
import { findRootBracketed } from './find-root.ts';

/** φ(x) = exp(−x²/2)/√(2π). */
export function normalPdf(x: number): number {
  return Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI);
}

/**
 * Φ(x) = P(Z ≤ x) = erfc(−x/√2)/2. stdlib's erfc (a port of FreeBSD's msun, i.e. Sun's fdlibm
 * rational approximations) keeps full relative precision in the far tail, so Φ(−30) ≈ 4.9e-198
 * is exact to a few ulps — never 1 − Φ(30), which cancels to 0.
 */
export function normalCdf(x: number): number {
  return 0.5 * erfc(-x / Math.SQRT2);
}

/** P(Z ≥ x), computed directly as Φ(−x). */
export function normalSurvival(x: number): number {
  return normalCdf(-x);
}

/** Below this x, ln Φ comes from the continued fraction (Φ(−30) ≈ 4.9e-198, near where it underflows). */
const LOG_CDF_TAIL = -30;
/** Terms of the continued fraction: at |x| ≥ 30 far more than double precision needs. */
const MILLS_TERMS = 60;

/**
 * ln Φ(x), finite for every finite x. Far in the lower tail Φ underflows (below x ≈ −38.5), so for
 * x < −30 it uses Laplace's continued fraction for Mills' ratio (Abramowitz & Stegun 26.2.14):
 * Φ(x) = φ(x) / (t + 1/(t + 2/(t + 3/(t + …)))), t = −x, evaluated backwards, so
 * ln Φ(x) = −x²/2 − ln √(2π) − ln(denominator).
 */
export function logNormalCdf(x: number): number {
  if (!(x < LOG_CDF_TAIL)) return Math.log(normalCdf(x));
  const t = -x;
  let fraction = t;
  for (let k = MILLS_TERMS; k >= 1; k--) fraction = t + k / fraction;
  return -0.5 * x * x - 0.5 * Math.log(2 * Math.PI) - Math.log(fraction);
}

/**
 * The upper-tail quantile z with P(Z > z) = `tailProbability`, e.g. 1.959963984540054 for 0.025.
 * Found by inverting Φ on its lower tail with Brent's method (as `studentTUpperQuantile` does for
 * t): g(z) = Φ(−z) − p is strictly decreasing, g(0) > 0 for p < 1/2 and g(40) < 0 for any p above
 * Φ(−40) ≈ 3.7e-350 (i.e. every double). For p > 1/2 the quantile is negative, by symmetry.
 *
 * @param tailProbability in (0, 1)
 * @returns the quantile, or NaN outside (0, 1)
 */
export function normalUpperQuantile(tailProbability: number): number {
  if (!(tailProbability > 0 && tailProbability < 1)) return Number.NaN;
  if (tailProbability === 0.5) return 0;
  if (tailProbability > 0.5) return -normalUpperQuantile(1 - tailProbability);
  return findRootBracketed((z) => normalCdf(-z) - tailProbability, 0, 40);
}
