/**
 * Quantile metrics (docs/statistics.md §15): an arm's p-th quantile of its participants' values
 * (or of its events' values) with the outer confidence interval of Deng, Knoblich & Lu, "Applying
 * the Delta Method in Metric Analytics: A Practical Guide with Novel Ideas", KDD 2018 (its section
 * on quantile metrics), and the comparison of two arms' quantiles by the normal approximation.
 *
 * The store (PostgreSQL, packages/postgres/src/quantile-statistics.pg.ts) selects the order
 * statistics in SQL; `orderStatistics` and `clusteredOrderStatistics` here are the same
 * computation on values in memory: the readable reference, and what the unit tests check
 * against NumPy/SciPy (packages/stats/test-vectors/quantile.json).
 */
import type { QuantileOrderStatistics } from '@switchyard/core';
import type { TEstimate } from './effects.ts';

/**
 * ⌈n·p⌉ (at least 1): the rank of the sample quantile X_(⌈np⌉), the smallest value whose empirical
 * CDF reaches p (PostgreSQL `percentile_disc`, NumPy `quantile(method="inverted_cdf")`). n·p within
 * 1e-9 of an integer counts as that integer, so 100 × 0.07 is rank 7, not 8 (the decimal p the
 * user wrote, not its binary approximation; PostgreSQL computes it in numeric).
 */
export function quantileRank(n: number, p: number): number {
  const np = n * p;
  const nearest = Math.round(np);
  const rank = Math.abs(np - nearest) <= 1e-9 * Math.max(1, np) ? nearest : Math.ceil(np);
  return Math.min(n, Math.max(1, rank));
}

/**
 * The outer interval's ranks (Deng et al. 2018, quantile metrics): L = ⌊n·p − z·σ·√n⌋, U = ⌈n·p + z·σ·√n⌉,
 * clamped to [1, n], where σ² is the variance of the indicator 1{X ≤ Q_p} per value: p(1 − p) for
 * independent values (the binomial's normal approximation), the delta-method variance for
 * clustered ones (`clusteredIndicatorVariance`). [X_(L), X_(U)] covers Q_p with probability ≈ 1 − α
 * for z = z_{1−α/2}. n ≥ 1.
 */
export function outerRanks(n: number, p: number, z: number, sigma2 = p * (1 - p)): { lower: number; upper: number } {
  const half = z * Math.sqrt(Math.max(0, sigma2) * n);
  const lower = Math.floor(n * p - half);
  const upper = Math.ceil(n * p + half);
  return { lower: Math.min(n, Math.max(1, lower)), upper: Math.min(n, Math.max(1, upper)) };
}

/**
 * The per-value variance of the share of events at or below the estimate Q̂ when events are
 * clustered in participants (Deng et al. 2018, quantile metrics, by their ratio metric): with S_i the events of
 * participant i at or below Q̂ and N_i its events, K participants, the share Ī = ΣS/ΣN is a ratio
 * whose delta-method variance is
 *   Var(Ī) = (1/K)·(s²_S/N̄² − 2·S̄·s_SN/N̄³ + S̄²·s²_N/N̄⁴)   (sample (co)variances, K − 1),
 * and σ² = N·Var(Ī) with N = ΣN_i, the total number of events, so that `outerRanks(N, p, z, σ²)`
 * gives N·p ± z·N·√Var(Ī). One event per participant: σ² = p̂(1 − p̂)·K/(K − 1). Needs K ≥ 2.
 */
export function clusteredIndicatorVariance(moments: { k: number; meanS: number; meanN: number; varS: number; varN: number; covSN: number }): number {
  const { k, meanS, meanN, varS, varN, covSN } = moments;
  if (!(k >= 2) || !(meanN > 0)) return Number.NaN;
  const varianceOfShare = (varS / meanN ** 2 - (2 * meanS * covSN) / meanN ** 3 + (meanS ** 2 * varN) / meanN ** 4) / k;
  return k * meanN * varianceOfShare;
}

/**
 * An arm's order statistics from its values in memory (any order), as the store computes them:
 * X_(⌈np⌉) and [X_(L), X_(U)] at `outerRanks(n, p, z)`. Null without values.
 */
export function orderStatistics(values: readonly number[], p: number, z: number): QuantileOrderStatistics | null {
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return null;
  const ranks = outerRanks(n, p, z);
  return pick(sorted, n, p, z, ranks, n);
}

/**
 * The same for events clustered in participants (`clusters[i]`: participant i's event values;
 * participants without events are left out): the ranks of `outerRanks` with the clustered variance
 * at the point estimate. Null without events; with one participant the interval is the point.
 */
export function clusteredOrderStatistics(clusters: readonly (readonly number[])[], p: number, z: number): QuantileOrderStatistics | null {
  const withEvents = clusters.filter((events) => events.length > 0);
  const sorted = withEvents.flat().sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) return null;
  const estimate = sorted[quantileRank(n, p) - 1] as number;
  const s = withEvents.map((events) => events.filter((v) => v <= estimate).length);
  const m = withEvents.map((events) => events.length);
  const k = withEvents.length;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const meanS = mean(s);
  const meanN = mean(m);
  const co = (a: number[], b: number[], ma: number, mb: number) => a.reduce((sum, x, i) => sum + (x - ma) * ((b[i] as number) - mb), 0) / (k - 1);
  const sigma2 = k < 2 ? 0 : clusteredIndicatorVariance({ k, meanS, meanN, varS: co(s, s, meanS, meanS), varN: co(m, m, meanN, meanN), covSN: co(s, m, meanS, meanN) });
  return pick(sorted, n, p, z, outerRanks(n, p, z, sigma2), k);
}

function pick(sorted: number[], n: number, p: number, z: number, ranks: { lower: number; upper: number }, clusters: number): QuantileOrderStatistics {
  return {
    n,
    clusters,
    estimate: sorted[quantileRank(n, p) - 1] as number,
    lower: sorted[ranks.lower - 1] as number,
    upper: sorted[ranks.upper - 1] as number,
    lowerRank: ranks.lower,
    upperRank: ranks.upper,
    z,
  };
}

/**
 * The quantile's standard error read off its outer interval (Deng et al. 2018, quantile metrics):
 * se = (X_(U) − X_(L)) / (2·z). 0 when the interval is a single value (ties, or n too small).
 */
export function quantileStandardError(stats: QuantileOrderStatistics): number {
  return (stats.upper - stats.lower) / (2 * stats.z);
}

/**
 * Treatment against control on a quantile metric, each quantile Q̂ normal with the se of its outer
 * interval, the arms independent:
 * - absolute Δ = Q̂_T − Q̂_C, se = √(se_T² + se_C²);
 * - relative r = Δ/|Q̂_C| by the delta method (as §2): se_r² = se_T²/Q̂_C² + Q̂_T²·se_C²/Q̂_C⁴.
 * df = ∞ (the normal; tInference reads it so), so p-values, intervals at any α, corrections,
 * sequential tests, the Bayesian engine and guardrails apply unchanged. Null when an arm has no
 * values or se = 0 (both intervals single values); relative also when Q̂_C = 0.
 */
export function quantileEffects(control: QuantileOrderStatistics | null, treatment: QuantileOrderStatistics | null): { absolute: TEstimate | null; relative: TEstimate | null } {
  if (control === null || treatment === null) return { absolute: null, relative: null };
  const seC = quantileStandardError(control);
  const seT = quantileStandardError(treatment);
  const se = Math.sqrt(seC * seC + seT * seT);
  if (!(se > 0) || !Number.isFinite(se)) return { absolute: null, relative: null };
  const delta = treatment.estimate - control.estimate;
  const absolute: TEstimate = { estimate: delta, se, df: Number.POSITIVE_INFINITY };
  const c = control.estimate;
  if (c === 0 || !Number.isFinite(c)) return { absolute, relative: null };
  const seR = Math.sqrt((seT * seT) / (c * c) + (treatment.estimate ** 2 * seC * seC) / c ** 4);
  const relative: TEstimate | null = seR > 0 && Number.isFinite(seR) ? { estimate: delta / Math.abs(c), se: seR, df: Number.POSITIVE_INFINITY } : null;
  return { absolute, relative };
}
