import type { EnvironmentScope, EventMetric, MetricAggregateQuery, MetricQuantile, QuantileOrderStatistics } from '@switchyard/core';
import type { TransactionSql } from './connect.ts';
import { firstExposures, type Fragment } from './participant-values.pg.ts';

/**
 * Quantile metrics' exact order statistics per arm, selected in SQL (docs/statistics.md §15): the
 * values are ranked per arm by a window (row_number over the arm's values in order), and only the
 * rows at three ranks leave the database — the estimate X_(⌈np⌉) and the outer interval's
 * X_(L), X_(U). No value reaches Node. The ranks (rankColumns) are @switchyard/stats quantile.ts's
 * `quantileRank` and `outerRanks` in SQL, the same float8 operations.
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
 * The ranks as float8 expressions of `n` (the arm's values) and `sigma2` (the per-value variance
 * of the indicator): kp = ⌈n·p⌉, kl = ⌊n·p − z·√(σ²·n)⌋, kh = ⌈n·p + z·√(σ²·n)⌉, each clamped to
 * [1, n]. The same IEEE operations in the same order as @switchyard/stats `quantileRank` and
 * `outerRanks`, so the two agree bit for bit; n·p within 1e-9 of an integer counts as that integer
 * (100 × 0.07 is 7, the decimal p as written, where float8 alone gives 7.000000000000001).
 */
function rankColumns(sql: TransactionSql, quantile: MetricQuantile, z: number, n: Fragment, sigma2: Fragment): Fragment {
  const size = sql`${n}::float8`;
  const np = sql`(${size} * ${quantile.p}::float8)`;
  const half = sql`(${z}::float8 * sqrt(greatest(${sigma2}, 0::float8) * ${size}))`;
  const clamp = (rank: Fragment) => sql`greatest(1::float8, least(${size}, ${rank}))`;
  const point = sql`CASE WHEN abs(${np} - round(${np})) <= 1e-9::float8 * greatest(1::float8, ${np}) THEN round(${np}) ELSE ceil(${np}) END`;
  return sql`${clamp(point)} AS kp, ${clamp(sql`floor(${np} - ${half})`)} AS kl, ${clamp(sql`ceil(${np} + ${half})`)} AS kh`;
}

/** σ² = p(1 − p) for independent values, as float8 (the same operations as @switchyard/stats). */
const binomialVariance = (sql: TransactionSql, p: number): Fragment => sql`(${p}::float8 * (1::float8 - ${p}::float8))`;

/**
 * A CTE (named `name`) of one row per arm with a participant-unit quantile's statistics over the
 * CTE `participants` (variant_key, vals): the value at `position` of every participant that has
 * one (a `mean` source without events has NULL and is left out), σ² = p(1 − p).
 */
export function participantQuantileCte(sql: TransactionSql, name: string, position: number, quantile: MetricQuantile, z: number): Fragment {
  const value = sql`s.vals[${position}::int4]`;
  return sql`${sql(name)} AS (
    SELECT r.variant_key, max(r.n) AS n, max(r.n) AS clusters,
      min(r.x) FILTER (WHERE r.k = r.kp) AS estimate, max(r.kl) AS lower_rank, max(r.kh) AS upper_rank,
      min(r.x) FILTER (WHERE r.k = r.kl) AS lower, min(r.x) FILTER (WHERE r.k = r.kh) AS upper
    FROM (
      SELECT t.variant_key, t.x, t.k, t.n, ${rankColumns(sql, quantile, z, sql`t.n`, binomialVariance(sql, quantile.p))}
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
 * An event-unit quantile's statistics per arm, one statement:
 * 1. per participant (its first exposure's arm) the values of its attributed events of the key
 *    (t0 ≤ time, within the window and the iteration; bool events as 0/1), gathered in an array as
 *    the merge join of the participants and events_by_metric streams by in context order (no sort);
 * 2. every value ranked per arm (row_number over the values), n the arm's events;
 * 3. the estimate Q̂ = X_(kp) per arm;
 * 4. per participant S_i (its values ≤ Q̂) and N_i (its values) from its array; per arm K, their
 *    means and co-moments (regr_sxy, as the moments of metric-aggregation.pg.ts);
 * 5. σ² = s²_S/N̄ − 2·S̄·s_SN/N̄² + S̄²·s²_N/N̄³ (K − 1 denominators; 0 when K < 2), the
 *    delta-method variance of the share of events ≤ Q̂ per event (stats clusteredIndicatorVariance),
 *    and the ranks from it, once per arm;
 * 6. the values at the ranks.
 * The caller plans it as the every-participant aggregation (planParticipantValues).
 */
export function eventQuantileStatement(sql: TransactionSql, scope: EnvironmentScope, query: MetricAggregateQuery, metric: EventMetric & { quantile: MetricQuantile }, z: number): Fragment {
  const bool = query.valueTypes[metric.eventKey] === 'bool';
  const value = bool ? sql`CASE WHEN e.value <> 0 THEN 1::float8 ELSE 0::float8 END` : sql`e.value`;
  const ranks = rankColumns(sql, metric.quantile, z, sql`t.n`, sql`t.sigma2`);
  return sql`
    WITH exposed AS NOT MATERIALIZED (${firstExposures(sql, scope, query)}),
    participant AS MATERIALIZED (
      SELECT min(x.variant_key) AS variant_key, array_agg(${value}) AS xs
      FROM exposed x JOIN events e ON e.context_type = x.context_type AND e.context_key = x.context_key
      WHERE e.org_id = ${scope.orgId} AND e.environment_id = ${scope.environmentId} AND e.metric_key = ${metric.eventKey}
        AND e.timestamp_ms >= x.t0 ${metric.windowMs === null ? sql`` : sql`AND e.timestamp_ms < x.t0 + ${metric.windowMs}::int8`}
        ${query.toMs === null ? sql`` : sql`AND e.timestamp_ms < ${query.toMs}::int8`}
      GROUP BY x.context_type, x.context_key
    ),
    ranked AS MATERIALIZED (
      SELECT pa.variant_key, v.x, row_number() OVER (PARTITION BY pa.variant_key ORDER BY v.x) AS k,
        count(*) OVER (PARTITION BY pa.variant_key) AS n
      FROM participant pa CROSS JOIN LATERAL unnest(pa.xs) AS v(x)
    ),
    point AS MATERIALIZED (
      SELECT t.variant_key, t.n, t.x AS q FROM (SELECT r.variant_key, r.n, r.x, r.k, ${rankColumns(sql, metric.quantile, z, sql`r.n`, sql`0::float8`)} FROM ranked r) t
      WHERE t.k = t.kp
    ),
    spread AS MATERIALIZED (
      SELECT pa.variant_key, count(*) AS clusters, avg(c.si) AS ms, avg(c.ni) AS mn,
        regr_sxy(c.si, c.si) AS css, regr_sxy(c.ni, c.ni) AS cnn, regr_sxy(c.si, c.ni) AS csn
      FROM participant pa JOIN point pt ON pt.variant_key = pa.variant_key
      CROSS JOIN LATERAL (SELECT (count(*) FILTER (WHERE v.x <= pt.q))::float8 AS si, count(*)::float8 AS ni FROM unnest(pa.xs) AS v(x)) c
      GROUP BY pa.variant_key
    ),
    ranks AS MATERIALIZED (
      SELECT t.variant_key, t.n, t.q, t.clusters, ${ranks}
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
