import type { EnvironmentScope, ExperimentMetric, MetricAggregateQuery, MetricSource } from '@switchyard/core';
import type postgres from 'postgres';
import type { TransactionSql } from './connect.ts';

export type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** A metric's sources in its variables' order: [value] or [numerator, denominator]. */
export const sourcesOf = (metric: ExperimentMetric): MetricSource[] =>
  metric.kind === 'event' ? [metric] : [metric.numerator, metric.denominator];

/** A metric's variables: its sources' outcomes, then with CUPED their pre-exposure values. */
export const variableCount = (metric: ExperimentMetric): number => sourcesOf(metric).length * (metric.cuped === null ? 1 : 2);

/**
 * Where each metric's variables sit in a participant's `vals` array (SQL positions, from 1):
 * metric i's variable a is at `positions[i][a]`; the first `sourcesOf(metric).length` are its
 * outcomes (NULL for a `mean` source without events), the rest its CUPED covariates.
 */
export function participantLayout(metrics: readonly ExperimentMetric[]): number[][] {
  let next = 1;
  return metrics.map((metric) => Array.from({ length: variableCount(metric) }, () => next++));
}

/**
 * What stored participant values depend on, as text: two queries with the same definition give
 * every participant the same `vals`. Capping, direction and the analysis settings apply when the
 * values are read, so they are not part of it.
 */
export function participantDefinition(query: MetricAggregateQuery): string {
  const metrics = query.metrics.map((metric) => ({
    sources: sourcesOf(metric).map((source) => ({
      eventKey: source.eventKey,
      aggregation: source.aggregation,
      windowMs: source.windowMs,
      valueType: query.valueTypes[source.eventKey] ?? 'double',
    })),
    lookbackMs: metric.cuped === null ? null : metric.cuped.lookbackMs,
  }));
  return JSON.stringify({ flagKey: query.flagKey, ruleId: query.ruleId, variantKeys: query.variantKeys, fromMs: query.fromMs, toMs: query.toMs, metrics });
}

/** `a, b, c` from fragments. */
export function list(sql: TransactionSql, fragments: Fragment[]): Fragment {
  return fragments.reduce((all, fragment, index) => (index === 0 ? fragment : sql`${all}, ${fragment}`), sql``);
}

/**
 * A SELECT of participants with their metric values: `context_type, context_key, variant_key,
 * vals` (docs/statistics.md "Attribution and aggregation"):
 * 1. the participants: per context, the variant and time t0 of its first exposure by the studied
 *    rule in the iteration window (earliest, ties by variant key);
 * 2. per metric and event key it reads, each participant's events of that key from t0 − lookback
 *    (CUPED) or t0 to the iteration's end, aggregated: each source's outcome (events from t0
 *    within its window) and pre-exposure value (before t0), with FILTER clauses;
 * 3. `vals` in participantLayout order: no events is 0, except a `mean` outcome, NULL.
 * Two shapes of the same computation, chosen by what is read:
 * - every participant (`only` null): the participants read in exposures_by_flag order, each
 *   key's events read in events_by_metric order (equality on environment and key, the rest
 *   checked on the index tuple) and merge-joined to them, grouped per participant as they stream
 *   by; the caller disables hash joins and nested loops (planParticipantValues). Measured at
 *   500,000 participants and 10,000,000 events: half the time of one index look-up per
 *   participant and key. The participants are NOT MATERIALIZED: each join reads them again from
 *   the index, already in context order, where a materialised copy is sorted again for each join
 *   (9 s instead of 12.6 s there).
 * - the contexts of relation `only` (context_type, context_key), a few: each looked up in
 *   exposures_by_flag, and its events of each key in events_by_metric (LATERAL), reading just
 *   those contexts' rows.
 */
export function participantValuesQuery(sql: TransactionSql, scope: EnvironmentScope, query: MetricAggregateQuery, only: Fragment | null): Fragment {
  const qualifying = qualifyingExposures(sql, scope, query);
  const { ctes, joins, select } = metricParts(sql, scope, query, only === null);
  const joined = joins.reduce((all, join) => sql`${all} ${join}`, sql``);
  if (only !== null) {
    return sql`${select} FROM (SELECT d.context_type, d.context_key, f.variant_key, f.t0 FROM ${only} d
      CROSS JOIN LATERAL (SELECT p.variant_key, p.timestamp_ms AS t0 FROM exposures p
        WHERE ${qualifying} AND p.context_type = d.context_type AND p.context_key = d.context_key
        ORDER BY p.timestamp_ms, p.variant_key LIMIT 1) f) x ${joined}`;
  }
  return sql`WITH exposed AS NOT MATERIALIZED (${firstExposures(sql, scope, query)}) ${ctes.reduce((all, cte) => sql`${all}, ${cte}`, sql``)}
    ${select} FROM exposed x ${joined}`;
}

/**
 * participantValuesQuery's every-participant shape over units given by `exposed` (a SELECT of
 * context_type, context_key, variant_key, t0; one row per context), materialised: the power
 * calculator's units of a past window (docs/statistics.md §14). The caller plans it as
 * participantValuesQuery's (planParticipantValues 'every participant').
 */
export function participantValuesOver(sql: TransactionSql, scope: EnvironmentScope, query: Pick<MetricAggregateQuery, 'metrics' | 'valueTypes' | 'toMs'>, exposed: Fragment): Fragment {
  const { ctes, joins, select } = metricParts(sql, scope, query, true);
  const joined = joins.reduce((all, join) => sql`${all} ${join}`, sql``);
  return sql`WITH exposed AS MATERIALIZED (${exposed}) ${ctes.reduce((all, cte) => sql`${all}, ${cte}`, sql``)}
    ${select} FROM exposed x ${joined}`;
}

/**
 * Step 2 and 3 of participantValuesQuery over a relation `x` (context_type, context_key,
 * variant_key, t0): per metric and event key a CTE `exposed` joins (`merged`) or a LATERAL look-up,
 * and the SELECT of the values in participantLayout order.
 */
function metricParts(
  sql: TransactionSql,
  scope: EnvironmentScope,
  query: Pick<MetricAggregateQuery, 'metrics' | 'valueTypes' | 'toMs'>,
  merged: boolean,
): { ctes: Fragment[]; joins: Fragment[]; select: Fragment } {
  const upTo = (column: Fragment) => (query.toMs === null ? sql`` : sql`AND ${column} < ${query.toMs}::int8`);
  const ctes: Fragment[] = [];
  const joins: Fragment[] = [];
  const values: Fragment[] = [];
  query.metrics.forEach((metric, i) => {
    const sources = sourcesOf(metric);
    const keys = [...new Set(sources.map((source) => source.eventKey))];
    const lookback = metric.cuped === null ? null : metric.cuped.lookbackMs;
    const alias = (eventKey: string) => sql(`m${i}k${keys.indexOf(eventKey)}`);
    keys.forEach((eventKey) => {
      const bool = query.valueTypes[eventKey] === 'bool';
      const columns = sources.flatMap((source, s) => {
        if (source.eventKey !== eventKey) return [];
        const after = sql`e.timestamp_ms >= x.t0 ${source.windowMs === null ? sql`` : sql`AND e.timestamp_ms < x.t0 + ${source.windowMs}::int8`}`;
        const outcome = sql`${aggregate(sql, source, bool, after)} AS ${sql(`o${s}`)}`;
        return lookback === null ? [outcome] : [outcome, sql`${aggregate(sql, source, bool, sql`e.timestamp_ms < x.t0`)} AS ${sql(`p${s}`)}`];
      });
      const events = sql`e.org_id = ${scope.orgId} AND e.environment_id = ${scope.environmentId} AND e.metric_key = ${eventKey}
        AND e.timestamp_ms >= x.t0 ${lookback === null ? sql`` : sql`- ${lookback}::int8`} ${upTo(sql`e.timestamp_ms`)}`;
      if (merged) {
        ctes.push(sql`${alias(eventKey)} AS (SELECT x.context_type, x.context_key, ${list(sql, columns)}
          FROM exposed x JOIN events e ON e.context_type = x.context_type AND e.context_key = x.context_key
          WHERE ${events} GROUP BY x.context_type, x.context_key)`);
        joins.push(sql`LEFT JOIN ${alias(eventKey)} ON ${alias(eventKey)}.context_type = x.context_type AND ${alias(eventKey)}.context_key = x.context_key`);
      } else {
        joins.push(sql`CROSS JOIN LATERAL (SELECT ${list(sql, columns)} FROM events e
          WHERE ${events} AND e.context_type = x.context_type AND e.context_key = x.context_key) ${alias(eventKey)}`);
      }
    });
    sources.forEach((source, s) => {
      const outcome = sql`${alias(source.eventKey)}.${sql(`o${s}`)}`;
      values.push(source.aggregation === 'mean' ? outcome : sql`coalesce(${outcome}, 0::float8)`);
    });
    if (lookback !== null) sources.forEach((source, s) => values.push(sql`coalesce(${alias(source.eventKey)}.${sql(`p${s}`)}, 0::float8)`));
  });
  const select = sql`SELECT x.context_type, x.context_key, x.variant_key, ARRAY[${values.length === 0 ? sql`` : list(sql, values)}]::float8[] AS vals`;
  return { ctes, joins, select };
}

/** The exposures that make participants (alias p): the flag's, by the studied rule, to the experiment's variants, in the window. */
function qualifyingExposures(sql: TransactionSql, scope: EnvironmentScope, query: MetricAggregateQuery): Fragment {
  return sql`p.org_id = ${scope.orgId} AND p.environment_id = ${scope.environmentId} AND p.flag_key = ${query.flagKey}
    AND p.variant_key IN ${sql(query.variantKeys as string[])}
    AND p.timestamp_ms >= ${query.fromMs}::int8 ${query.toMs === null ? sql`` : sql`AND p.timestamp_ms < ${query.toMs}::int8`}
    ${query.ruleId === null ? sql`` : sql`AND (p.rule_id IS NULL OR p.rule_id = ${query.ruleId})`}`;
}

/**
 * Step 1, every participant: per context its first qualifying exposure's variant and time t0
 * (`context_type, context_key, variant_key, t0`), read in exposures_by_flag order.
 */
export function firstExposures(sql: TransactionSql, scope: EnvironmentScope, query: MetricAggregateQuery): Fragment {
  return sql`SELECT DISTINCT ON (p.context_type, p.context_key) p.context_type, p.context_key, p.variant_key, p.timestamp_ms AS t0
      FROM exposures p WHERE ${qualifyingExposures(sql, scope, query)}
      ORDER BY p.context_type, p.context_key, p.timestamp_ms, p.variant_key`;
}

/**
 * Planner settings for the rest of the transaction, for the participantValuesQuery shape to run
 * next. For every participant, no hash joins and no nested loops: the participants are a CTE,
 * whose columns have no statistics, so the planner guesses the join of participants and events
 * hundreds of times too small; it hashed the events of a key to probe with the participants
 * (measured at 100,000 participants and 700,000 events per key), a hash table of every event that
 * outgrows work_mem at millions, and with nested loops (a table not yet analysed, as on every
 * test database and a fresh install) re-ran the per-participant aggregate once per participant,
 * quadratic: 287 s for 2,000 participants where the merge join takes milliseconds. Without them
 * it sorts the participants and merge-joins them to events_by_metric read in context order,
 * feeding a streaming GroupAggregate. For a few contexts (LATERAL look-ups) nested loops are
 * the plan itself.
 */
export async function planParticipantValues(tx: TransactionSql, shape: 'every participant' | 'a few contexts'): Promise<void> {
  const allowed = shape === 'a few contexts' ? 'on' : 'off';
  await tx`SELECT set_config('enable_hashjoin', ${allowed}, true), set_config('enable_nestloop', ${allowed}, true)`;
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
