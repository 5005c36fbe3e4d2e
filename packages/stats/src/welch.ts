/**
 * Welch's unequal-variance t-test of a treatment against a control, from summary statistics.
 */
import { studentTTwoSidedPValue, studentTUpperQuantile } from './student-t.ts';

/** Summary statistics of one sample (e.g. an arm's outcome, metric-comparison.ts `outcomeSummary`). */
export interface SampleSummary {
  /** Number of observations (participants). */
  n: number;
  mean: number;
  /** Sample variance, with the n - 1 denominator. */
  variance: number;
}

/** The outcome of a Welch test; `diff` and the interval are treatment minus control. */
export interface WelchTTestResult {
  /** diff / stdErr. */
  t: number;
  /** Welch–Satterthwaite degrees of freedom (not an integer in general). */
  df: number;
  /** Two-sided p-value. */
  pValue: number;
  /** b.mean - a.mean. */
  diff: number;
  /** sqrt(a.variance / a.n + b.variance / b.n). */
  stdErr: number;
  /** Lower end of the 95% confidence interval of `diff`. */
  ciLow: number;
  /** Upper end of the 95% confidence interval of `diff`. */
  ciHigh: number;
}

/** The intervals are two-sided 95%: each tail holds 2.5%. */
export const WELCH_CONFIDENCE_LEVEL = 0.95;
const TAIL_PROBABILITY = (1 - WELCH_CONFIDENCE_LEVEL) / 2;

/**
 * Welch's two-sided t-test of `b` (treatment) against `a` (control), with the 95% confidence
 * interval of the difference of means. Matches `scipy.stats.ttest_ind(b, a, equal_var=False)` to
 * ~1e-13 relative (see packages/stats/test-vectors/).
 *
 * Returns null when the test is not defined:
 * - either side has n < 2 (no sample variance), or
 * - both variances are 0 (the standard error is 0: t is ±∞ or 0/0).
 * Exactly one zero variance is fine and deliberate: the standard error comes from the other side
 * alone and the Welch–Satterthwaite df reduces to that side's n - 1, which is the right test of a
 * constant (e.g. a control where nobody converted) against a varying sample.
 *
 * Steps:
 * 1. Per-side squared standard errors sa = va / na, sb = vb / nb; stdErr = sqrt(sa + sb).
 * 2. t = (mb - ma) / stdErr.
 * 3. df = (sa + sb)² / (sa² / (na - 1) + sb² / (nb - 1)), evaluated on sa, sb scaled by their
 *    maximum so that tiny (1e-200) or huge variances cannot underflow or overflow the squares.
 * 4. p = 2 · P(T_df <= -|t|) (symmetric form: full precision for tiny p).
 * 5. CI = diff ∓ q · stdErr with q the upper 2.5% point of t_df.
 */
export function welchTTest(a: SampleSummary, b: SampleSummary): WelchTTestResult | null {
  if (!isUsable(a) || !isUsable(b)) return null;
  const sa = a.variance / a.n;
  const sb = b.variance / b.n;
  if (sa === 0 && sb === 0) return null;
  const stdErr = Math.sqrt(sa + sb);
  const diff = b.mean - a.mean;
  const t = diff / stdErr;
  const df = welchSatterthwaiteDf(sa, a.n, sb, b.n);
  const pValue = studentTTwoSidedPValue(t, df);
  const q = studentTUpperQuantile(TAIL_PROBABILITY, df);
  return { t, df, pValue, diff, stdErr, ciLow: diff - q * stdErr, ciHigh: diff + q * stdErr };
}

/**
 * Welch–Satterthwaite degrees of freedom from the per-side squared standard errors
 * `sa = va / na`, `sb = vb / nb` (not both 0). Lies between min(na, nb) - 1 and na + nb - 2.
 */
export function welchSatterthwaiteDf(sa: number, na: number, sb: number, nb: number): number {
  const scale = Math.max(sa, sb);
  const ra = sa / scale;
  const rb = sb / scale;
  return (ra + rb) ** 2 / ((ra * ra) / (na - 1) + (rb * rb) / (nb - 1));
}

function isUsable(s: SampleSummary): boolean {
  return s.n >= 2 && Number.isFinite(s.mean) && Number.isFinite(s.variance) && s.variance >= 0;
}
