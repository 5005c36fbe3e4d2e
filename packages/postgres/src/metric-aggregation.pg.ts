import type { ExperimentMetric } from '@switchyard/core';
import type { TransactionSql } from './connect.ts';
import { list, participantLayout, sourcesOf, type Fragment } from './participant-values.pg.ts';
import { DEFAULT_QUANTILE_Z, participantQuantileCte } from './quantile-statistics.pg.ts';

/**
 * One row of armMomentsStatement per arm: `n` its participants; per metric i, `n<i>` its
 * participants in the metric, `u<i>` the uncapped mean of its value, `m<i>_<a>` variable a's mean
 * and `c<i>_<a><b>` the co-moment Σ(v_a − m_a)(v_b − m_b) (a ≤ b); null over no participant.
 */
/** The columns of a quantile's row (QuantileRow), prefixed q<i>_ in an ArmMomentsRow. */
export const QUANTILE_COLUMNS = ['n', 'clusters', 'estimate', 'lower_rank', 'upper_rank', 'lower', 'upper'] as const;

export interface ArmMomentsRow {
  variant_key: string;
  n: number;
  [column: string]: number | string | null;
}

/**
 * The moments per arm and metric over a CTE `participants` (variant_key, vals in
 * participantLayout order), which `participantsCte` defines (docs/statistics.md "Attribution and
 * aggregation"):
 * - a participant belongs to a metric when its outcomes are not NULL (a `mean` source without
 *   events leaves it out): the metric's aggregates FILTER on that;
 * - capping applies to an event metric's value (its first variable): absolute bounds, or the
 *   percentiles of the values of every arm (percentile_cont, in CTE `bounds`);
 * - one pass over the participants, grouped by arm, one column per metric and quantity: avg, and
 *   regr_sxy(a, b), which is the co-moment Σ(a − ā)(b − b̄) itself (PostgreSQL accumulates it with
 *   Youngs–Cramer updates, no cancelling Σab − n·ā·b̄), so one participant gives 0. (One row per
 *   participant and metric instead, grouped by arm and metric, took 4× as long at 500,000
 *   participants and 3 metrics.)
 * Only one row per arm leaves the database.
 */
export function armMomentsStatement(sql: TransactionSql, metrics: readonly ExperimentMetric[], participantsCte: Fragment, quantileZ = DEFAULT_QUANTILE_Z): Fragment {
  const layout = participantLayout(metrics);
  const at = (position: number) => sql`s.vals[${position}::int4]`;
  const quantiles: Fragment[] = [];
  const columns: Fragment[] = [sql`count(*)::int8 AS n`];

  metrics.forEach((metric, i) => {
    const positions = layout[i] ?? [];
    const outcomes = positions.slice(0, sourcesOf(metric).length);
    const mayBeNull = sourcesOf(metric).some((source) => source.aggregation === 'mean');
    const inMetric = outcomes.reduce((all, position) => sql`${all} AND ${at(position)} IS NOT NULL`, sql`true`);
    const value = at(positions[0] ?? 1);
    const capping = metric.kind === 'event' ? metric.capping : null;
    const bound = (v: number | null) => (v === null ? sql`NULL::float8` : sql`${v}::float8`);
    let capped = value;
    if (capping?.kind === 'absolute') capped = sql`LEAST(GREATEST(${value}, ${bound(capping.lower)}), ${bound(capping.upper)})`;
    if (capping?.kind === 'percentile') {
      const quantile = (q: number | null, name: string) => {
        const pool = capping.ignoreZeros ? sql`${inMetric} AND ${value} <> 0` : inMetric;
        quantiles.push(q === null ? sql`NULL::float8 AS ${sql(name)}` : sql`percentile_cont(${q}::float8) WITHIN GROUP (ORDER BY ${value}) FILTER (WHERE ${pool}) AS ${sql(name)}`);
        return sql`b.${sql(name)}`;
      };
      const lower = quantile(capping.lower, `l${i}`);
      const upper = quantile(capping.upper, `u${i}`);
      // GREATEST and LEAST skip NULL: a bound not asked for, or over an empty pool, does not cap.
      capped = capping.ignoreZeros
        ? // Zeros left out of the quantiles are left as they are: no lower bound lifts them.
          sql`CASE WHEN ${value} = 0 THEN 0::float8 ELSE LEAST(GREATEST(${value}, ${lower}), ${upper}) END`
        : sql`LEAST(GREATEST(${value}, ${lower}), ${upper})`;
    }
    const variables = [capped, ...positions.slice(1).map(at)];
    const only = mayBeNull ? sql` FILTER (WHERE ${inMetric})` : sql``;
    columns.push(sql`count(*)${only}::int8 AS ${sql(`n${i}`)}`, sql`avg(${value})${only} AS ${sql(`u${i}`)}`);
    variables.forEach((variable, a) => columns.push(sql`avg(${variable})${only} AS ${sql(`m${i}_${a}`)}`));
    variables.forEach((left, a) => {
      variables.forEach((right, b) => {
        if (b >= a) columns.push(sql`regr_sxy(${left}, ${right})${only} AS ${sql(`c${i}_${a}${b}`)}`);
      });
    });
  });

  const bounds = quantiles.length === 0 ? null : sql`bounds AS (SELECT ${list(sql, quantiles)} FROM participants s)`;
  const moments = sql`SELECT s.variant_key, ${list(sql, columns)}
    FROM participants s ${bounds === null ? sql`` : sql`CROSS JOIN bounds b`}
    GROUP BY s.variant_key`;
  // Participant-unit quantile metrics (docs/statistics.md §15): their order statistics per arm
  // over the same participants, one CTE each, joined to the arm's row as q<i>_<column>.
  const ranked = metrics.flatMap((metric, i) =>
    metric.kind === 'event' && metric.quantile && metric.quantile.unit === 'participant' ? [{ i, cte: participantQuantileCte(sql, `q${i}`, layout[i]?.[0] ?? 1, metric.quantile, quantileZ) }] : []);
  if (ranked.length === 0) {
    return sql`
    WITH ${participantsCte} ${bounds === null ? sql`` : sql`, ${bounds}`}
    ${moments}`;
  }
  const picked = ranked.flatMap(({ i }) =>
    QUANTILE_COLUMNS.map((column) => sql`${sql(`q${i}`)}.${sql(column)} AS ${sql(`q${i}_${column}`)}`));
  const joins = ranked.reduce((all, { i }) => sql`${all} LEFT JOIN ${sql(`q${i}`)} ON ${sql(`q${i}`)}.variant_key = m.variant_key`, sql``);
  return sql`
    WITH ${participantsCte} ${bounds === null ? sql`` : sql`, ${bounds}`}, moments AS (${moments}), ${list(sql, ranked.map(({ cte }) => cte))}
    SELECT m.*, ${list(sql, picked)} FROM moments m ${joins}`;
}
