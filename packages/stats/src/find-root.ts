/**
 * Bracketed root finding for the statistics code (the t quantile is found by inverting the t CDF).
 * Pure and allocation-free.
 */

/** Unit roundoff of an IEEE double, as Brent's algorithm defines its tolerance. */
const EPSILON = Number.EPSILON;

/** Far more than Brent's method ever needs for a double (worst case ~ (bits of precision)²/2). */
const MAX_ITERATIONS = 1000;

/**
 * A root of `f` in `[lo, hi]` by Brent's method (R. P. Brent, "Algorithms for Minimization without
 * Derivatives", 1973, ch. 4; the netlib `zeroin` routine). `f(lo)` and `f(hi)` must differ in sign.
 *
 * Why Brent: it keeps a bracket at every step, so it cannot diverge the way Newton or the secant
 * method can, and it falls back to bisection whenever interpolation is not making progress; yet on
 * a smooth function it converges superlinearly. It stops when the bracket is within
 * `4 * EPSILON * |x| + absoluteTolerance` of the root — i.e. to within about two ulps, full double
 * precision — or when `f` is exactly 0.
 *
 * @param f a continuous function
 * @param lo one end of the bracket
 * @param hi the other end; `f(lo) * f(hi) <= 0`
 * @param absoluteTolerance an absolute floor on the tolerance (only matters for roots near 0)
 * @returns the root
 * @throws RangeError when the ends do not bracket a root (a caller bug, not a data condition)
 */
export function findRootBracketed(
  f: (x: number) => number,
  lo: number,
  hi: number,
  absoluteTolerance = 1e-300,
): number {
  let a = lo;
  let b = hi;
  let fa = f(a);
  let fb = f(b);
  if (fa === 0) return a;
  if (fb === 0) return b;
  if (Number.isNaN(fa) || Number.isNaN(fb) || Math.sign(fa) === Math.sign(fb)) {
    throw new RangeError(`findRootBracketed: [${lo}, ${hi}] does not bracket a root`);
  }
  // Invariant: the root lies between b (the best estimate) and c; a is the previous b.
  let c = a;
  let fc = fa;
  let d = b - a;
  let e = d;
  for (let iteration = 0; iteration < MAX_ITERATIONS; iteration++) {
    // 1. Keep b the end with the smaller |f|.
    if (Math.abs(fc) < Math.abs(fb)) {
      a = b; b = c; c = a;
      fa = fb; fb = fc; fc = fa;
    }
    // 2. Converged when half the bracket is within the tolerance.
    const tol = 2 * EPSILON * Math.abs(b) + 0.5 * absoluteTolerance;
    const half = 0.5 * (c - b);
    if (Math.abs(half) <= tol || fb === 0) return b;
    // 3. Try interpolation (secant with two points, inverse quadratic with three) when the last
    //    steps were shrinking; accept it only if it lands well inside the bracket and shrinks
    //    faster than bisection would, otherwise bisect.
    if (Math.abs(e) >= tol && Math.abs(fa) > Math.abs(fb)) {
      const s = fb / fa;
      let p: number;
      let q: number;
      if (a === c) {
        p = 2 * half * s;
        q = 1 - s;
      } else {
        const qa = fa / fc;
        const r = fb / fc;
        p = s * (2 * half * qa * (qa - r) - (b - a) * (r - 1));
        q = (qa - 1) * (r - 1) * (s - 1);
      }
      if (p > 0) q = -q;
      else p = -p;
      if (2 * p < 3 * half * q - Math.abs(tol * q) && p < Math.abs(0.5 * e * q)) {
        e = d;
        d = p / q;
      } else {
        d = half;
        e = d;
      }
    } else {
      d = half;
      e = d;
    }
    // 4. Step (at least by the tolerance, so the bracket always shrinks) and re-establish the bracket.
    a = b;
    fa = fb;
    b += Math.abs(d) > tol ? d : half > 0 ? tol : -tol;
    fb = f(b);
    if (fb * Math.sign(fc) > 0) {
      c = a;
      fc = fa;
      d = b - a;
      e = d;
    }
  }
  return b;
}
