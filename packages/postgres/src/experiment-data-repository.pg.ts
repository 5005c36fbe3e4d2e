import type {
  ArmMetricData,
  ArmTotals,
  EnvironmentScope,
  ExperimentDataRepository,
  ExperimentMetric,
  MetricAggregateQuery,
} from '@switchyard/core';
import type { Sql } from './connect.ts';
import { metricAggregationStatement, type MetricMomentsRow } from './metric-aggregation.pg.ts';
import { isUuid } from './pg-errors.ts';

/**
 * Memory for the aggregation's participants (the materialised first exposures, and per metric a
 * hash table of the contexts' sums: ~40 MB at 600,000 contexts), for that one transaction only.
 * The default 4 MB would spill them to disk. One stats job runs at a time per worker, so this is
 * paid at most once per process.
 */
const AGGREGATE_WORK_MEM = '128MB';

/** A metric's variables: [value] or [numerator, denominator], and their pre-exposure versions with CUPED. */
const variableCount = (metric: ExperimentMetric): number => (metric.kind === 'event' ? 1 : 2) * (metric.cuped === null ? 1 : 2);

/** An arm without participants in the metric: n 0, everything else 0 (the port's convention). */
function emptyMetricData(metric: ExperimentMetric): ArmMetricData {
  const k = variableCount(metric);
  return { moments: { n: 0, means: new Array<number>(k).fill(0), comoments: Array.from({ length: k }, () => new Array<number>(k).fill(0)) }, uncappedMean: 0 };
}

const validScope = (scope: EnvironmentScope): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/**
 * Experiment aggregation in ONE statement: PostgreSQL reads the exposures and events and returns a
 * few rows per variant and metric (see `aggregateMetrics`). Scoped by org and environment like every
 * statement; the list parameters are sent as `IN ($1, $2, ...)` (scalars only, no array types).
 */
export class PgExperimentDataRepository implements ExperimentDataRepository {
  constructor(private readonly sql: Sql) {}

  /**
   * One statement too (metricAggregationStatement): participants, each participant's attributed
   * events per metric, capping bounds and the moments per arm all in PostgreSQL; a few rows per arm
   * and metric come back.
   */
  async aggregateMetrics(scope: EnvironmentScope, query: MetricAggregateQuery): Promise<ArmTotals[]> {
    const arms = new Map<string, ArmTotals>(query.variantKeys.map((key) => [key, { variantKey: key, participants: 0, metrics: {} }]));
    for (const arm of arms.values()) {
      for (const metric of query.metrics) arm.metrics[metric.key] = emptyMetricData(metric);
    }
    if (!validScope(scope) || query.variantKeys.length === 0) return [...arms.values()];
    const rows = await this.sql.begin(async (tx) => {
      // Memory for the participants' sorts, no JIT (compiling costs seconds and buys nothing for
      // one pass), index reads priced as on SSDs, and no hash joins: the participants are a CTE, whose columns have no
      // statistics, so the planner guesses the join of participants and events hundreds of times
      // too small and (measured at 100,000 participants and 700,000 events per key) hashes the
      // events to probe with the participants, then sorts the joined rows: a hash table of every
      // event of the key, which outgrows work_mem at millions of events (~60 bytes each; that size
      // was not measured). Without hash joins it sorts the
      // participants and merge-joins them to events_by_metric read in (context_type, context_key)
      // order, feeding a streaming GroupAggregate: only the participants are ever sorted or held.
      // No nested loops either: with the same too-small guesses (a table not yet analysed, as
      // every test database and a fresh install are) the planner re-ran the per-participant
      // aggregate once per participant, quadratic: 287 s for 2,000 participants where the merge
      // join takes milliseconds. The bounds of percentile capping (one row, no join condition)
      // are still cross-joined: a join with nothing else to choose keeps its nested loop.
      await tx`SELECT set_config('work_mem', ${AGGREGATE_WORK_MEM}, true), set_config('jit', 'off', true),
        set_config('random_page_cost', '1.1', true), set_config('enable_hashjoin', 'off', true),
        set_config('enable_nestloop', 'off', true)`;
      return tx<MetricMomentsRow[]>`${metricAggregationStatement(tx, scope, query)}`;
    });
    for (const row of rows) {
      const arm = arms.get(row.variant_key);
      if (!arm) continue;
      const metric = row.metric === null ? undefined : query.metrics[row.metric];
      if (!metric) {
        arm.participants = row.n;
        continue;
      }
      const k = variableCount(metric);
      const at = (column: `m${number}` | `c${number}`): number => row[column] ?? 0;
      const means = Array.from({ length: k }, (_, i) => at(`m${i}`));
      const comoments = means.map((_, i) => means.map((__, j) => at(`c${Math.min(i, j)}${Math.max(i, j)}` as `c${number}`)));
      arm.metrics[metric.key] = { moments: { n: row.n, means, comoments }, uncappedMean: row.uncapped ?? 0 };
    }
    return [...arms.values()];
  }

  async dataArrivedSince(scope: EnvironmentScope, query: { flagKey: string; metricKeys: readonly string[]; sinceMs: number }): Promise<boolean> {
    if (!validScope(scope)) return false;
    const sql = this.sql;
    // received_at_ms has a BRIN index (rows arrive in that order): only the newest block ranges
    // are read, however many older rows the environment has.
    const events = query.metricKeys.length === 0 ? sql`false` : sql`EXISTS (
      SELECT 1 FROM events e
      WHERE e.received_at_ms > ${query.sinceMs}::int8 AND e.org_id = ${scope.orgId}
        AND e.environment_id = ${scope.environmentId} AND e.metric_key IN ${sql(query.metricKeys as string[])})`;
    const [row] = await sql<{ stale: boolean }[]>`
      SELECT EXISTS (
        SELECT 1 FROM exposures p
        WHERE p.received_at_ms > ${query.sinceMs}::int8 AND p.org_id = ${scope.orgId}
          AND p.environment_id = ${scope.environmentId} AND p.flag_key = ${query.flagKey}
      ) OR ${events} AS stale`;
    return row?.stale ?? false;
  }
}
