/**
 * Upper tail of the chi-squared distribution, for the sample-ratio-mismatch test.
 */
import chiSquaredCdf from '@stdlib/stats-base-dists-chisquare-cdf';

/** Below this |term| relative change the continued fraction has converged to double precision. */
const CF_EPSILON = Number.EPSILON;
/** Lentz's guard against a zero denominator. */
const CF_TINY = 1e-300;
const CF_MAX_TERMS = 10_000;

/**
 * P(X >= x) for X ~ chi-squared with `df` degrees of freedom (a positive integer, as in a
 * goodness-of-fit test with df = groups - 1).
 *
 * `1 - cdf(x)` alone would cancel to 0 for p below ~1e-16, exactly where a sample ratio mismatch
 * is most obvious, so the far tail is computed directly:
 * 1. With a = df/2 and y = x/2, P(X >= x) is the regularised upper incomplete gamma Q(a, y).
 * 2. If y <= a + 1, Q is not small (Q(a, a + 1) > 0.08 for every a >= 1/2), so `1 - cdf(x, df)` with
 *    stdlib's CDF (Boost's incomplete gamma) loses nothing that matters: at most a few ulps of 1.
 * 3. Otherwise evaluate Legendre's continued fraction for Γ(a, y) with the modified Lentz
 *    algorithm (Numerical Recipes §6.2 `gcf`), which converges fast for y > a + 1 and gives full
 *    relative precision however small Q is, down to the underflow at ~1e-308:
 *    Q = exp(-y + a ln y - ln Γ(a)) / (y + 1 - a - 1(1 - a)/(y + 3 - a - 2(2 - a)/(y + 5 - a - ...))).
 *    ln Γ(a) is exact-ish for the integer and half-integer a that integer df gives (see
 *    `logGammaHalfInteger`), so no further library is needed.
 *
 * @returns a probability in [0, 1]; NaN when df is not a positive integer or x is NaN
 */
export function chiSquaredSurvival(x: number, df: number): number {
  if (Number.isNaN(x) || !Number.isInteger(df) || df < 1) return Number.NaN;
  if (x <= 0) return 1;
  const a = df / 2;
  const y = x / 2;
  if (y <= a + 1) return Math.max(0, 1 - chiSquaredCdf(x, df));
  let b = y + 1 - a;
  let c = 1 / CF_TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i <= CF_MAX_TERMS; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < CF_TINY) d = CF_TINY;
    c = b + an / c;
    if (Math.abs(c) < CF_TINY) c = CF_TINY;
    d = 1 / d;
    const delta = d * c;
    h *= delta;
    if (Math.abs(delta - 1) <= CF_EPSILON) break;
  }
  return Math.exp(-y + a * Math.log(y) - logGammaHalfInteger(a)) * h;
}

/**
 * ln Γ(a) for a positive integer or half-integer `a`, by summing logarithms:
 * Γ(n) = (n - 1)! and Γ(n + 1/2) = √π · Π_{j=1..n} (j - 1/2). Each term is correctly rounded, so the
 * absolute error is a few ulps per group — negligible for the handful of variants an experiment has.
 */
function logGammaHalfInteger(a: number): number {
  let sum = 0;
  if (Number.isInteger(a)) {
    for (let j = 2; j < a; j++) sum += Math.log(j);
    return sum;
  }
  sum = 0.5 * Math.log(Math.PI);
  for (let j = 1; j < a; j++) sum += Math.log(j - 0.5);
  return sum;
}
