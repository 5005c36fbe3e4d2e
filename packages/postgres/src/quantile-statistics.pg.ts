import type { EnvironmentScope, EventMetric, MetricAggregateQuery, MetricQuantile, QuantileOrderStatistics } from '@switchyard/core';
import type { TransactionSql } from './connect.ts';
import { firstExposures, type Fragment } from './participant-values.pg.ts';

/**
 * Quantile metrics' exact order statistics per arm, selected in SQL (docs/statistics.md §15): the
 * values are ranked per arm by a window (row_number over the arm's values in order), and only the
 * rows at three ranks leave the database — the estimate X_(⌈np⌉) and the outer interval's
 * X_(L), X_(U). No value reaches Node. The ranks are computed in `numeric`, so n·p is exact for the
 * decimal p the user wrote (100 × 0.07 is rank 7); @switchyard/stats quantile.ts `outerRanks` is
 * the same formula in TypeScript, and its reference for tests.
 */

/** One row per arm: n values, their clusters (participants), the estimate, the ranks L and U and the values there. */
export interface QuantileRow {
  variant_key: string;
  n: string | number;
  clusters: string | number;
  estimate: number;
  lower_rank: string | number;
  upper_rank: string | number;
  lower: number;
  upper: number;
}

/** The normal quantile of the outer intervals when the query names none: z_{0.975}, a 95 % interval. */
export const DEFAULT_QUANTILE_Z = 1.959963984540054;

export const quantileStatistics = (row: QuantileRow, z: number): QuantileOrderStatistics => ({
  n: Number(row.n),
  clusters: Number(row.clusters),
  estimate: Number(row.estimate),
  lower: Number(row.lower),
  upper: Number(row.upper),
  lowerRank: Number(row.lower_rank),
  upperRank: Number(row.upper_rank),
  z,
});

/**
 * The ranks, as SQL over a relation with `n` (int8) and `sigma2` (the per-value variance of the
 * indicator, float8): kp = ⌈n·p⌉, kl = ⌊n·p − z·√(σ²·n)⌋, kh = ⌈n·p + z·√(σ²·n)⌉, each clamped to [1, n].
 */
function rankColumns(sql: TransactionSql, quantile: MetricQuantile, z: number, n: Fragment, sigma2: Fragment): Fragment {
  const np = sql`(${n}::numeric * ${String(quantile.p)}::numeric)`;
  const half = sql`(${z}::float8 * sqrt(greatest(${sigma2}, 0::float8) * ${n}::float8))::numeric`;
  const clamp = (rank: Fragment) => sql`greatest(1::numeric, least(${n}::numeric, ${rank}))`;
  return sql`${clamp(sql`ceil(${np})`)} AS kp, ${clamp(sql`floor(${np} - ${half})`)} AS kl, ${clamp(sql`ceil(${np} + ${half})`)} AS kh`;
}

/**
 * A CTE (named `name`) of one row per arm with a participant-unit quantile's statistics over the
 * CTE `participants` (variant_key, vals): the value at `position` of every participant that has
 * one (a `mean` source without events has NULL and is left out), σ² = p(1 − p).
 */
export function participantQuantileCte(sql: TransactionSql, name: string, position: number, quantile: MetricQuantile, z: number): Fragment {
  const value = sql`s.vals[${position}::int4]`;
  const p = String(quantile.p);
  return sql`${sql(name)} AS (
    SELECT r.variant_key, max(r.n) AS n, max(r.n) AS clusters,
      min(r.x) FILTER (WHERE r.k = r.kp) AS estimate, max(r.kl) AS lower_rank, max(r.kh) AS upper_rank,
      min(r.x) FILTER (WHERE r.k = r.kl) AS lower, min(r.x) FILTER (WHERE r.k = r.kh) AS upper
    FROM (
      SELECT t.variant_key, t.x, t.k, t.n, ${rankColumns(sql, quantile, z, sql`t.n`, sql`(${p}::float8 * (1 - ${p}::float8))`)}
      FROM (
        SELECT s.variant_key, ${value} AS x, row_number() OVER (PARTITION BY s.variant_key ORDER BY ${value}) AS k,
          count(*) OVER (PARTITION BY s.variant_key) AS n
        FROM participants s WHERE ${value} IS NOT NULL
      ) t
    ) r
    WHERE r.k IN (r.kp, r.kl, r.kh)
    GROUP BY r.variant_key)`;
}

/**
 * An event-unit quantile's statistics per arm, one statement: every attributed event of the
 * metric's key (t0 ≤ time, within the window and the iteration; bool events as 0/1) with its
 * participant's arm, then:
 * 1. ranked per arm (row_number over the values), n the arm's events;
 * 2. the estimate Q̂ = X_(⌈np⌉);
 * 3. per participant S_i (its events ≤ Q̂) and N_i (its events); per arm K, their means and
 *    co-moments (regr_sxy, as the moments of metric-aggregation.pg.ts);
 * 4. σ² = N̄·Var(Ī)·K = s²_S/N̄ − 2·S̄·s_SN/N̄² + S̄²·s²_N/N̄³ (K − 1 denominators; 0 when K < 2),
 *    the delta-method variance of the share of events ≤ Q̂ (stats clusteredIndicatorVariance);
 * 5. the ranks and the values there.
 * The caller plans it as the every-participant aggregation (planParticipantValues): a merge join
 * of the participants and events_by_metric.
 */
export function eventQuantileStatement(sql: TransactionSql, scope: EnvironmentScope, query: MetricAggregateQuery, metric: EventMetric & { quantile: MetricQuantile }, z: number): Fragment {
  const bool = query.valueTypes[metric.eventKey] === 'bool';
  const value = bool ? sql`CASE WHEN e.value <> 0 THEN 1::float8 ELSE 0::float8 END` : sql`e.value`;
  const p = String(metric.quantile.p);
  return sql`
    WITH exposed AS NOT MATERIALIZED (${firstExposures(sql, scope, query)}),
    ranked AS MATERIALIZED (
      SELECT v.variant_key, v.context_type, v.context_key, v.x,
        row_number() OVER (PARTITION BY v.variant_key ORDER BY v.x) AS k, count(*) OVER (PARTITION BY v.variant_key) AS n
      FROM (
        SELECT x.variant_key, x.context_type, x.context_key, ${value} AS x
        FROM exposed x JOIN events e ON e.context_type = x.context_type AND e.context_key = x.context_key
        WHERE e.org_id = ${scope.orgId} AND e.environment_id = ${scope.environmentId} AND e.metric_key = ${metric.eventKey}
          AND e.timestamp_ms >= x.t0 ${metric.windowMs === null ? sql`` : sql`AND e.timestamp_ms < x.t0 + ${metric.windowMs}::int8`}
          ${query.toMs === null ? sql`` : sql`AND e.timestamp_ms < ${query.toMs}::int8`}
      ) v
    ),
    point AS (
      SELECT r.variant_key, r.n, r.x AS q FROM ranked r WHERE r.k = greatest(1::numeric, least(r.n::numeric, ceil(r.n::numeric * ${p}::numeric)))
    ),
    per AS (
      SELECT r.variant_key, count(*)::float8 AS ni, (count(*) FILTER (WHERE r.x <= pt.q))::float8 AS si
      FROM ranked r JOIN point pt ON pt.variant_key = r.variant_key
      GROUP BY r.variant_key, r.context_type, r.context_key
    ),
    spread AS (
      SELECT variant_key, count(*) AS clusters, avg(si) AS ms, avg(ni) AS mn,
        regr_sxy(si, si) AS css, regr_sxy(ni, ni) AS cnn, regr_sxy(si, ni) AS csn
      FROM per GROUP BY variant_key
    ),
    ranks AS (
      SELECT t.*, ${rankColumns(sql, metric.quantile, z, sql`t.n`, sql`t.sigma2`)}
      FROM (
        SELECT pt.variant_key, pt.n, pt.q, sp.clusters,
          CASE WHEN sp.clusters < 2 THEN 0::float8 ELSE
            (sp.css / (sp.clusters - 1)) / sp.mn - 2 * sp.ms * (sp.csn / (sp.clusters - 1)) / (sp.mn * sp.mn)
              + sp.ms * sp.ms * (sp.cnn / (sp.clusters - 1)) / (sp.mn * sp.mn * sp.mn) END AS sigma2
        FROM point pt JOIN spread sp ON sp.variant_key = pt.variant_key
      ) t
    )
    SELECT rk.variant_key, max(rk.n) AS n, max(rk.clusters) AS clusters, max(rk.q) AS estimate,
      max(rk.kl) AS lower_rank, max(rk.kh) AS upper_rank,
      min(r.x) FILTER (WHERE r.k = rk.kl) AS lower, min(r.x) FILTER (WHERE r.k = rk.kh) AS upper
    FROM ranks rk JOIN ranked r ON r.variant_key = rk.variant_key AND r.k IN (rk.kl, rk.kh)
    GROUP BY rk.variant_key`;
}
