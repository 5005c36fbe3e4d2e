import type {
  ArmMetricData,
  ArmTotals,
  EnvironmentScope,
  ExperimentDataRepository,
  ExperimentMetric,
  MetricAggregateQuery,
} from '@switchyard/core';
import type { Sql } from './connect.ts';
import { armMomentsStatement, QUANTILE_COLUMNS, type ArmMomentsRow } from './metric-aggregation.pg.ts';
import { dropParticipants, LATE_ARRIVAL_MARGIN_MS, refreshParticipants } from './participant-sets.pg.ts';
import { participantValuesQuery, planParticipantValues, variableCount } from './participant-values.pg.ts';
import { DEFAULT_QUANTILE_Z, eventQuantileStatement, quantileStatistics, type QuantileRow } from './quantile-statistics.pg.ts';
import { isUuid } from './pg-errors.ts';

/**
 * Memory for the aggregation (the participants' values when computed in the statement, the sorts
 * of percentile capping), for that one transaction only. The default 4 MB would spill them to
 * disk. One stats job runs at a time per worker, so this is paid at most once per process.
 */
const AGGREGATE_WORK_MEM = '128MB';

/** An arm without participants in the metric: n 0, everything else 0 (the port's convention). */
function emptyMetricData(metric: ExperimentMetric): ArmMetricData {
  const k = variableCount(metric);
  return { moments: { n: 0, means: new Array<number>(k).fill(0), comoments: Array.from({ length: k }, () => new Array<number>(k).fill(0)) }, uncappedMean: 0 };
}

const validScope = (scope: EnvironmentScope): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/**
 * Experiment aggregation in PostgreSQL: it reads the exposures and events and returns a few rows
 * per variant and metric (see `aggregateMetrics`). Scoped by org and environment like every
 * statement; the list parameters are sent as `IN ($1, $2, ...)` (scalars only, no array types).
 */
export class PgExperimentDataRepository implements ExperimentDataRepository {
  private readonly lateArrivalMarginMs: number;

  /** `lateArrivalMarginMs`: see LATE_ARRIVAL_MARGIN_MS (tests set 0 to see what a pass reuses). */
  constructor(private readonly sql: Sql, options: { lateArrivalMarginMs?: number } = {}) {
    this.lateArrivalMarginMs = options.lateArrivalMarginMs ?? LATE_ARRIVAL_MARGIN_MS;
  }

  /**
   * Participants and their values per metric (participantValuesQuery), then the moments per arm
   * and metric over them (armMomentsStatement), in one transaction; a few rows per arm and metric
   * come back. A running iteration's participants are kept in experiment_participants and brought
   * up to date (refreshParticipants), so a recompute reads again only the participants with
   * something new; without an iteration, or once it has ended, they are computed in the statement.
   */
  async aggregateMetrics(scope: EnvironmentScope, query: MetricAggregateQuery): Promise<ArmTotals[]> {
    const arms = new Map<string, ArmTotals>(query.variantKeys.map((key) => [key, { variantKey: key, participants: 0, metrics: {} }]));
    for (const arm of arms.values()) {
      for (const metric of query.metrics) arm.metrics[metric.key] = emptyMetricData(metric);
    }
    if (!validScope(scope) || query.variantKeys.length === 0) return [...arms.values()];
    const iterationId = query.iterationId !== undefined && query.iterationId !== null && isUuid(query.iterationId) ? query.iterationId : null;
    const z = query.quantileZ !== undefined && Number.isFinite(query.quantileZ) && query.quantileZ > 0 ? query.quantileZ : DEFAULT_QUANTILE_Z;
    const perEvent = query.metrics.flatMap((metric) => (metric.kind === 'event' && metric.quantile?.unit === 'event' ? [{ ...metric, quantile: metric.quantile }] : []));
    const { rows, eventQuantiles } = await this.sql.begin(async (tx) => {
      // Memory for the participants and the percentile sorts, no JIT (compiling costs seconds and
      // buys nothing for one pass), index reads priced as on SSDs.
      await tx`SELECT set_config('work_mem', ${AGGREGATE_WORK_MEM}, true), set_config('jit', 'off', true),
        set_config('random_page_cost', '1.1', true)`;
      let rows: ArmMomentsRow[];
      if (iterationId !== null && query.toMs === null) {
        await refreshParticipants(tx, scope, query, iterationId, this.lateArrivalMarginMs);
        rows = await tx<ArmMomentsRow[]>`${armMomentsStatement(tx, query.metrics, tx`participants AS NOT MATERIALIZED (
          SELECT variant_key, vals FROM experiment_participants WHERE iteration_id = ${iterationId})`, z)}`;
      } else {
        if (iterationId !== null) await dropParticipants(tx, scope, iterationId);
        await planParticipantValues(tx, 'every participant');
        rows = await tx<ArmMomentsRow[]>`${armMomentsStatement(tx, query.metrics, tx`participants AS MATERIALIZED (
          ${participantValuesQuery(tx, scope, query, null)})`, z)}`;
      }
      // Per-event quantiles read every attributed event of the key again, each recompute (the kept
      // participants hold one value each, not their events): one statement per such metric,
      // ranked in SQL, three rows per arm back (docs/statistics.md §15).
      const eventQuantiles = new Map<string, QuantileRow[]>();
      if (perEvent.length > 0) await planParticipantValues(tx, 'every participant');
      for (const metric of perEvent) eventQuantiles.set(metric.key, await tx<QuantileRow[]>`${eventQuantileStatement(tx, scope, query, metric, z)}`);
      return { rows, eventQuantiles };
    });
    for (const row of rows) {
      const arm = arms.get(row.variant_key);
      if (!arm) continue;
      arm.participants = Number(row.n);
      query.metrics.forEach((metric, i) => {
        const n = Number(row[`n${i}`] ?? 0);
        if (n === 0) return;
        const k = variableCount(metric);
        const at = (column: string): number => Number(row[column] ?? 0);
        const means = Array.from({ length: k }, (_, a) => at(`m${i}_${a}`));
        const comoments = means.map((_, a) => means.map((__, b) => at(`c${i}_${Math.min(a, b)}${Math.max(a, b)}`)));
        arm.metrics[metric.key] = { moments: { n, means, comoments }, uncappedMean: at(`u${i}`) };
        if (metric.kind === 'event' && metric.quantile?.unit === 'participant' && row[`q${i}_n`] !== null && row[`q${i}_n`] !== undefined) {
          const quantileRow = Object.fromEntries(QUANTILE_COLUMNS.map((column) => [column, row[`q${i}_${column}`]])) as unknown as QuantileRow;
          arm.metrics[metric.key] = { moments: { n, means, comoments }, uncappedMean: at(`u${i}`), quantile: quantileStatistics(quantileRow, z) };
        }
      });
    }
    for (const [metricKey, quantileRows] of eventQuantiles) {
      for (const row of quantileRows) {
        const data = arms.get(row.variant_key)?.metrics[metricKey];
        if (data !== undefined) data.quantile = quantileStatistics(row, z);
      }
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
