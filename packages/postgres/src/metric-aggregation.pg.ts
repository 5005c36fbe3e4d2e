import type { EnvironmentScope, ExperimentMetric, MetricAggregateQuery, MetricSource } from '@switchyard/core';
import type postgres from 'postgres';
import type { TransactionSql } from './connect.ts';

type Fragment = postgres.PendingQuery<postgres.Row[]>;

/**
 * One row of the aggregateMetrics statement: an arm's participant count (`metric` null), or one
 * metric's moments over the arm's participants in it. `m<i>` is variable i's mean, `c<i><j>` the
 * co-moment Σ(v_i − m_i)(v_j − m_j) (i ≤ j); the columns past the metric's variables are null.
 */
export interface MetricMomentsRow {
  variant_key: string;
  /** Index into the query's metrics; null on the participant-count rows. */
  metric: number | null;
  n: number;
  uncapped: number | null;
  [column: `m${number}` | `c${number}`]: number | null;
}

/** At most 4 variables per metric (a ratio with CUPED): the row's fixed columns. */
const MAX_VARIABLES = 4;

/** A metric's sources in its variables' order: [value] or [numerator, denominator]. */
const sourcesOf = (metric: ExperimentMetric): MetricSource[] =>
  metric.kind === 'event' ? [metric] : [metric.numerator, metric.denominator];

/**
 * The one statement of `PgExperimentDataRepository.aggregateMetrics` (docs/statistics.md
 * "Attribution and aggregation"). Its common table expressions:
 * 1. `exposed`: one row per participant, the variant and time t0 of its first exposure in the
 *    iteration window (DISTINCT ON in exposures_by_flag order: earliest, ties by variant key);
 * 2. per metric i and event key j it reads, `m<i>k<j>`: the participants' events of that key
 *    (events_by_metric, equality on environment and key, the rest checked on the index tuple)
 *    from t0 − lookback (CUPED) or t0 to the iteration's end, grouped per participant, each
 *    source's outcome (`o<s>`, events from t0 within its window) and pre-exposure value
 *    (`p<s>`, events before t0) computed with FILTER clauses;
 * 3. `m<i>`: every participant of the metric with its variables v0..v3 (no events: 0; a `mean`
 *    source without events leaves the participant out);
 * 4. `m<i>b`: with percentile capping, the bounds over the values of every arm (percentile_cont);
 * then per metric and arm the moments: avg, and regr_sxy(a, b), which is the co-moment
 * Σ(a − ā)(b − b̄) itself (PostgreSQL accumulates it with Youngs–Cramer updates, no cancelling
 * Σab − n·ā·b̄), so no var_samp·(n − 1) conversion is needed and one participant gives 0.
 * Only these few rows per arm and metric leave the database.
 */
export function metricAggregationStatement(sql: TransactionSql, scope: EnvironmentScope, query: MetricAggregateQuery): Fragment {
  const upTo = (column: Fragment) => (query.toMs === null ? sql`` : sql`AND ${column} < ${query.toMs}::int8`);
  const ctes: Fragment[] = [];
  const blocks: Fragment[] = [];

  query.metrics.forEach((metric, i) => {
    const sources = sourcesOf(metric);
    const keys = [...new Set(sources.map((source) => source.eventKey))];
    const scan = (j: number) => sql(`m${i}k${j}`);
    const lookback = metric.cuped === null ? null : metric.cuped.lookbackMs;

    // 2. One pass over each event key's events for this metric's sources.
    keys.forEach((eventKey, j) => {
      const columns = sources.flatMap((source, s) => {
        if (source.eventKey !== eventKey) return [];
        const after = sql`e.timestamp_ms >= x.t0 ${source.windowMs === null ? sql`` : sql`AND e.timestamp_ms < x.t0 + ${source.windowMs}::int8`}`;
        const bool = query.valueTypes[eventKey] === 'bool';
        const outcome = sql`${aggregate(sql, source, bool, after)} AS ${sql(`o${s}`)}`;
        return lookback === null ? [outcome] : [outcome, sql`${aggregate(sql, source, bool, sql`e.timestamp_ms < x.t0`)} AS ${sql(`p${s}`)}`];
      });
      ctes.push(sql`${scan(j)} AS (
        SELECT x.context_type, x.context_key, ${list(sql, columns)}
        FROM exposed x
        JOIN events e ON e.context_type = x.context_type AND e.context_key = x.context_key
        WHERE e.org_id = ${scope.orgId} AND e.environment_id = ${scope.environmentId} AND e.metric_key = ${eventKey}
          AND e.timestamp_ms >= x.t0 ${lookback === null ? sql`` : sql`- ${lookback}::int8`} ${upTo(sql`e.timestamp_ms`)}
        GROUP BY x.context_type, x.context_key)`);
    });

    // 3. The participants' variables: outcomes, then (CUPED) the pre-exposure values.
    const from = (s: number) => sql(`k${keys.indexOf(sources[s]?.eventKey ?? '')}`);
    const outcomes = sources.map((source, s) =>
      source.aggregation === 'mean' ? sql`${from(s)}.${sql(`o${s}`)}` : sql`coalesce(${from(s)}.${sql(`o${s}`)}, 0::float8)`,
    );
    const covariates = lookback === null ? [] : sources.map((_, s) => sql`coalesce(${from(s)}.${sql(`p${s}`)}, 0::float8)`);
    const variables = [...outcomes, ...covariates];
    const joins = keys.map((_, j) => sql`LEFT JOIN ${scan(j)} ${sql(`k${j}`)}
      ON ${sql(`k${j}`)}.context_type = x.context_type AND ${sql(`k${j}`)}.context_key = x.context_key`);
    const defined = sources.flatMap((source, s) => (source.aggregation === 'mean' ? [sql`AND ${from(s)}.${sql(`o${s}`)} IS NOT NULL`] : []));
    const values = sql(`m${i}`);
    ctes.push(sql`${values} AS (
      SELECT x.variant_key, ${list(sql, variables.map((v, index) => sql`${v} AS ${sql(`v${index}`)}`))}
      FROM exposed x ${joins.reduce((all, join) => sql`${all} ${join}`, sql``)}
      WHERE true ${defined.reduce((all, condition) => sql`${all} ${condition}`, sql``)})`);

    // 4. Capping of an event metric's value (the first variable).
    const capping = metric.kind === 'event' ? metric.capping : null;
    const bound = (value: number | null) => (value === null ? sql`NULL::float8` : sql`${value}::float8`);
    let capped = sql`m.v0`;
    let bounds = sql``;
    if (capping?.kind === 'absolute') capped = sql`LEAST(GREATEST(m.v0, ${bound(capping.lower)}), ${bound(capping.upper)})`;
    if (capping?.kind === 'percentile') {
      const quantile = (q: number | null) =>
        q === null
          ? sql`NULL::float8`
          : sql`percentile_cont(${q}::float8) WITHIN GROUP (ORDER BY v.v0) ${capping.ignoreZeros ? sql`FILTER (WHERE v.v0 <> 0)` : sql``}`;
      ctes.push(sql`${sql(`m${i}b`)} AS (SELECT ${quantile(capping.lower)} AS lower, ${quantile(capping.upper)} AS upper FROM ${values} v)`);
      // GREATEST and LEAST skip NULL: a bound not asked for, or over an empty pool, does not cap.
      capped = capping.ignoreZeros
        ? // Zeros left out of the quantiles are left as they are: no lower bound lifts them.
          sql`CASE WHEN m.v0 = 0 THEN 0::float8 ELSE LEAST(GREATEST(m.v0, b.lower), b.upper) END`
        : sql`LEAST(GREATEST(m.v0, b.lower), b.upper)`;
      bounds = sql`CROSS JOIN ${sql(`m${i}b`)} b`;
    }

    const k = variables.length;
    const moments: Fragment[] = [];
    for (let a = 0; a < MAX_VARIABLES; a += 1) {
      moments.push(a < k ? sql`avg(${sql(`v${a}`)}) AS ${sql(`m${a}`)}` : sql`NULL::float8 AS ${sql(`m${a}`)}`);
    }
    for (let a = 0; a < MAX_VARIABLES; a += 1) {
      for (let b = a; b < MAX_VARIABLES; b += 1) {
        moments.push(a < k && b < k ? sql`regr_sxy(${sql(`v${a}`)}, ${sql(`v${b}`)}) AS ${sql(`c${a}${b}`)}` : sql`NULL::float8 AS ${sql(`c${a}${b}`)}`);
      }
    }
    const rest = variables.slice(1).map((_, index) => sql`m.${sql(`v${index + 1}`)}`);
    blocks.push(sql`
      UNION ALL
      SELECT p.variant_key, ${i}::int4 AS metric, count(*)::int8 AS n, avg(p.u) AS uncapped, ${list(sql, moments)}
      FROM (SELECT m.variant_key, m.v0 AS u, ${capped} AS v0 ${rest.length === 0 ? sql`` : sql`, ${list(sql, rest)}`}
        FROM ${values} m ${bounds}) p
      GROUP BY p.variant_key`);
  });

  const nothing: Fragment[] = [];
  for (let a = 0; a < MAX_VARIABLES; a += 1) nothing.push(sql`NULL::float8 AS ${sql(`m${a}`)}`);
  for (let a = 0; a < MAX_VARIABLES; a += 1) for (let b = a; b < MAX_VARIABLES; b += 1) nothing.push(sql`NULL::float8 AS ${sql(`c${a}${b}`)}`);
  // 1. The participants, materialised once: every metric joins them.
  return sql`
    WITH exposed AS MATERIALIZED (
      SELECT DISTINCT ON (p.context_type, p.context_key) p.context_type, p.context_key, p.variant_key, p.timestamp_ms AS t0
      FROM exposures p
      WHERE p.org_id = ${scope.orgId} AND p.environment_id = ${scope.environmentId} AND p.flag_key = ${query.flagKey}
        AND p.variant_key IN ${sql(query.variantKeys as string[])}
        AND p.timestamp_ms >= ${query.fromMs}::int8 ${upTo(sql`p.timestamp_ms`)}
        ${query.ruleId === null ? sql`` : sql`AND (p.rule_id IS NULL OR p.rule_id = ${query.ruleId})`}
      ORDER BY p.context_type, p.context_key, p.timestamp_ms, p.variant_key
    ) ${ctes.reduce((all, cte) => sql`${all}, ${cte}`, sql``)}
    SELECT x.variant_key, NULL::int4 AS metric, count(*)::int8 AS n, NULL::float8 AS uncapped, ${list(sql, nothing)}
    FROM exposed x
    GROUP BY x.variant_key
    ${blocks.reduce((all, block) => sql`${all} ${block}`, sql``)}`;
}

/** `a, b, c` from fragments. */
function list(sql: TransactionSql, fragments: Fragment[]): Fragment {
  return fragments.reduce((all, fragment, index) => (index === 0 ? fragment : sql`${all}, ${fragment}`), sql``);
}

/**
 * A source's per-participant aggregate over the events that pass `filter` (bool events: a value
 * other than 0 is true). NULL for `sum` and `mean` without such events; the caller makes a `sum` 0.
 */
function aggregate(sql: TransactionSql, source: MetricSource, bool: boolean, filter: Fragment): Fragment {
  switch (source.aggregation) {
    case 'conversion':
      return bool
        ? sql`(CASE WHEN bool_or(e.value <> 0) FILTER (WHERE ${filter}) THEN 1 ELSE 0 END)::float8`
        : sql`(CASE WHEN count(*) FILTER (WHERE ${filter}) > 0 THEN 1 ELSE 0 END)::float8`;
    case 'sum':
      return bool ? sql`(count(*) FILTER (WHERE ${filter} AND e.value <> 0))::float8` : sql`sum(e.value) FILTER (WHERE ${filter})`;
    case 'count':
      return sql`(count(*) FILTER (WHERE ${filter}))::float8`;
    case 'mean':
      return bool
        ? sql`avg(CASE WHEN e.value <> 0 THEN 1::float8 ELSE 0::float8 END) FILTER (WHERE ${filter})`
        : sql`avg(e.value) FILTER (WHERE ${filter})`;
  }
}
