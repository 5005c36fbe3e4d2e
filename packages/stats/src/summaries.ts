/**
 * Building SampleSummary values from what SQL aggregation delivers. The per-participant values are
 * aggregated in the database; only these few numbers per variant and metric reach Node.
 *
 * Precision, and which builder to prefer:
 * - `summaryFromConversions` (bool metrics) is exact up to three roundings (< 2 ulps).
 * - `summaryFromMoments` / `summaryFromWelford`: best for numeric metrics. PostgreSQL's `avg()` and
 *   `var_samp()` are exact on `numeric` and use the Youngs–Cramer update on `float8`, so the
 *   variance is good to ~1e-15 relative whatever the mean; `mergeSummaries` then combines partial
 *   aggregates (e.g. per partition) with Chan et al.'s update, which is just as stable.
 * - `summaryFromSums` (n, Σx, Σx²) is the textbook formula and loses precision by cancellation:
 *   its relative error is about ε·(1 + 2·mean²/variance) (ε = 2.2e-16), i.e. ~1e-15 for a revenue
 *   metric whose sd is of the order of its mean, but 1e-4 for mean 1e6 with sd 1. Pass `shift` (any
 *   value near the mean, e.g. the last computed control mean, with the sums taken over x - shift)
 *   to replace `mean` by `mean - shift` in that bound. The result is clamped at 0 so rounding
 *   can never produce a negative variance.
 */
import type { SampleSummary } from './welch.ts';

/**
 * A summary from the mean and sample variance (n - 1 denominator), e.g. SQL `avg(v)` and
 * `var_samp(v)`. Below 2 observations the variance is undefined: it is reported as 0 (and the
 * t-test treats n < 2 as not computable). SQL's NULL average over 0 rows becomes mean 0.
 */
export function summaryFromMoments(n: number, mean: number | null, variance: number | null): SampleSummary {
  if (n < 1) return { n: 0, mean: 0, variance: 0 };
  return { n, mean: mean ?? 0, variance: n < 2 ? 0 : Math.max(0, variance ?? 0) };
}

/**
 * A summary from Welford-style moments: the mean and M2 = Σ (x - mean)² (the variance is
 * M2 / (n - 1)). Stable for any mean.
 */
export function summaryFromWelford(n: number, mean: number, m2: number): SampleSummary {
  return summaryFromMoments(n, mean, n < 2 ? 0 : m2 / (n - 1));
}

/**
 * A summary from plain power sums Σ(x - shift) and Σ(x - shift)², as `count(*)`, `sum(v - $shift)`,
 * `sum((v - $shift)^2)` deliver them; `shift` defaults to 0. See the module comment for the
 * precision: prefer `summaryFromMoments` unless the sums are all you have.
 *
 * variance = (Σd² - Σd · (Σd / n)) / (n - 1), clamped at 0; mean = shift + Σd / n.
 */
export function summaryFromSums(n: number, sum: number, sumOfSquares: number, shift = 0): SampleSummary {
  if (n < 1) return { n: 0, mean: 0, variance: 0 };
  const shiftedMean = sum / n;
  const variance = n < 2 ? 0 : Math.max(0, (sumOfSquares - sum * shiftedMean) / (n - 1));
  return { n, mean: shift + shiftedMean, variance };
}

/**
 * A bool metric as conversions: `conversions` of `n` participants had a true event (value 1),
 * the rest count as 0. mean = k/n and the sample variance of those 0/1 values is
 * k(n - k) / (n(n - 1)), evaluated as (k/n)·((n - k)/(n - 1)) so that k(n - k) cannot exceed 2^53
 * and lose exactness for large n.
 */
export function summaryFromConversions(conversions: number, n: number): SampleSummary {
  if (n < 1) return { n: 0, mean: 0, variance: 0 };
  const mean = conversions / n;
  const variance = n < 2 ? 0 : mean * ((n - conversions) / (n - 1));
  return { n, mean, variance };
}

/**
 * The summary of the union of two samples (Chan, Golub & LeVeque's pairwise update), for
 * combining partial aggregates without going back to the raw values:
 * mean = ma + δ·nb/n, M2 = M2a + M2b + δ²·na·nb/n with δ = mb - ma and M2 = variance·(count - 1).
 */
export function mergeSummaries(a: SampleSummary, b: SampleSummary): SampleSummary {
  if (a.n === 0) return b;
  if (b.n === 0) return a;
  const n = a.n + b.n;
  const delta = b.mean - a.mean;
  const mean = a.mean + (delta * b.n) / n;
  const m2 = a.variance * (a.n - 1) + b.variance * (b.n - 1) + (delta * delta * a.n * b.n) / n;
  return summaryFromWelford(n, mean, m2);
}
