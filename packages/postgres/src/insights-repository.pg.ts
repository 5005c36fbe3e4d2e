import type { DrainedCounts, EnvironmentScope, InsightsGranularity, InsightsPoint, InsightsRepository, InsightsRetentionReport, SummaryCounts } from '@switchyard/core';
import type postgres from 'postgres';
import type { Sql } from './connect.ts';
import { isUuid } from './pg-errors.ts';

const validScope = (scope: { orgId: string; projectId: string; environmentId: string }): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/** JavaScript's string order (code units): rows are written in one order, so concurrent flushers lock them alike. */
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Evaluation counts in flag_evaluation_hours, flag_evaluation_days and flag_evaluation_last
 * (migration 0028; docs/insights.md). Writes add; each count row names the environment and a flag
 * of its project, resolved in the statement, so a count naming another tenant's environment or an
 * unknown flag key writes nothing.
 */
export class PgInsightsRepository implements InsightsRepository {
  constructor(private readonly sql: Sql) {}

  async addCounts(drained: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>): Promise<number> {
    const statements = reportCountsStatements(this.sql, drained);
    if (statements === null) return 0;
    // One statement: the last evaluation times (a data-modifying CTE) and the hourly rows.
    const written = await this.sql`WITH ${statements.inputs}, last_written AS (${statements.last}) ${statements.hours}`;
    return written.count;
  }

  async addSummary(scope: EnvironmentScope, summary: SummaryCounts): Promise<number> {
    if (!validScope(scope) || summary.counts.length === 0) return 0;
    const { last, hours } = summaryCountsStatements(this.sql, scope, summary);
    // One statement: the last evaluation times (a data-modifying CTE) and the hourly rows.
    const written = await this.sql`WITH summary_last AS (${last}) ${hours}`;
    return written.count;
  }

  async series(scope: EnvironmentScope, flagKey: string, granularity: InsightsGranularity, fromMs: number, toMs: number): Promise<InsightsPoint[]> {
    if (!validScope(scope)) return [];
    const from = fromMs / 1000;
    const to = toMs / 1000;
    type Row = { at_ms: number; variant_key: string; count: number };
    const rows =
      granularity === 'hour'
        ? await this.sql<Row[]>`
            SELECT floor(extract(epoch FROM h.hour) * 1000)::int8 AS at_ms, h.variant_key, sum(h.count)::int8 AS count
            FROM flag_evaluation_hours h
            JOIN flags f ON f.id = h.flag_id AND f.project_id = h.project_id AND f.key = ${flagKey}
            WHERE h.org_id = ${scope.orgId} AND h.project_id = ${scope.projectId} AND h.environment_id = ${scope.environmentId}
              AND h.hour >= to_timestamp(${from}::float8) AND h.hour < to_timestamp(${to}::float8)
            GROUP BY 1, 2 ORDER BY 1`
        : // A day: its rolled-up row plus what of its hours is not rolled up yet (count - rolled).
          await this.sql<Row[]>`
            SELECT floor(extract(epoch FROM p.at) * 1000)::int8 AS at_ms, p.variant_key, sum(p.count)::int8 AS count
            FROM (
              SELECT d.day AS at, d.variant_key, d.count
              FROM flag_evaluation_days d
              JOIN flags f ON f.id = d.flag_id AND f.project_id = d.project_id AND f.key = ${flagKey}
              WHERE d.org_id = ${scope.orgId} AND d.project_id = ${scope.projectId} AND d.environment_id = ${scope.environmentId}
                AND d.day >= to_timestamp(${from}::float8) AND d.day < to_timestamp(${to}::float8)
              UNION ALL
              SELECT date_trunc('day', h.hour, 'UTC'), h.variant_key, h.count - h.rolled
              FROM flag_evaluation_hours h
              JOIN flags f ON f.id = h.flag_id AND f.project_id = h.project_id AND f.key = ${flagKey}
              WHERE h.org_id = ${scope.orgId} AND h.project_id = ${scope.projectId} AND h.environment_id = ${scope.environmentId}
                AND h.hour >= to_timestamp(${from}::float8) AND h.hour < to_timestamp(${to}::float8) + interval '1 day' AND h.count > h.rolled
            ) p
            WHERE p.at >= to_timestamp(${from}::float8) AND p.at < to_timestamp(${to}::float8)
            GROUP BY 1, 2 ORDER BY 1`;
    const points: InsightsPoint[] = [];
    for (const row of rows) {
      let point = points[points.length - 1];
      if (point === undefined || point.atMs !== row.at_ms) {
        point = { atMs: row.at_ms, variants: {} };
        points.push(point);
      }
      point.variants[row.variant_key] = row.count;
    }
    return points;
  }

  async lastEvaluated(scope: EnvironmentScope, flagKeys: readonly string[]): Promise<Map<string, number>> {
    if (!validScope(scope) || flagKeys.length === 0) return new Map();
    const rows = await this.sql<{ key: string; at_ms: number }[]>`
      SELECT f.key, floor(extract(epoch FROM l.last_evaluated_at) * 1000)::int8 AS at_ms
      FROM flag_evaluation_last l
      JOIN flags f ON f.id = l.flag_id AND f.project_id = l.project_id
      WHERE l.org_id = ${scope.orgId} AND l.project_id = ${scope.projectId} AND l.environment_id = ${scope.environmentId}
        AND f.key = ANY(${this.sql.array([...flagKeys])}::text[])`;
    return new Map(rows.map((row) => [row.key, row.at_ms]));
  }

  async prune(cutoffs: { rollBeforeMs: number; hoursBeforeMs: number; daysBeforeMs: number }, batchSize: number, isStopping: () => boolean): Promise<InsightsRetentionReport> {
    const report: InsightsRetentionReport = { hoursRolled: 0, hoursDeleted: 0, daysDeleted: 0 };
    // 1. Roll up: the rows locked, their unrolled part added to their days, marked rolled, in
    //    one statement (a flush waiting on a locked row adds after it, and the next run rolls that).
    for (;;) {
      if (isStopping()) return report;
      const [row] = await this.sql<{ rolled: number }[]>`
        WITH due AS (
          SELECT environment_id, flag_id, hour, variant_key, reason, org_id, project_id, count, count - rolled AS delta
          FROM flag_evaluation_hours
          WHERE hour < to_timestamp(${cutoffs.rollBeforeMs / 1000}::float8) AND count > rolled
          ORDER BY environment_id, flag_id, hour, variant_key COLLATE "C", reason COLLATE "C"
          LIMIT ${batchSize}
          FOR UPDATE
        ), marked AS (
          UPDATE flag_evaluation_hours h SET rolled = d.count
          FROM due d
          WHERE h.environment_id = d.environment_id AND h.flag_id = d.flag_id AND h.hour = d.hour AND h.variant_key = d.variant_key AND h.reason = d.reason
          RETURNING 1
        ), added AS (
          INSERT INTO flag_evaluation_days (environment_id, flag_id, day, variant_key, reason, org_id, project_id, count)
          SELECT environment_id, flag_id, date_trunc('day', hour, 'UTC'), variant_key, reason, org_id, project_id, sum(delta)
          FROM due
          GROUP BY environment_id, flag_id, date_trunc('day', hour, 'UTC'), variant_key, reason, org_id, project_id
          ORDER BY environment_id, flag_id, 3, variant_key COLLATE "C", reason COLLATE "C"
          ON CONFLICT (environment_id, flag_id, day, variant_key, reason) DO UPDATE SET count = flag_evaluation_days.count + excluded.count
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM due)::int AS rolled, (SELECT count(*) FROM marked)::int AS marked, (SELECT count(*) FROM added)::int AS added`;
      report.hoursRolled += row?.rolled ?? 0;
      if ((row?.rolled ?? 0) < batchSize) break;
    }
    // 2. Hourly rows past their retention, once fully rolled up (a late addition is rolled first).
    for (;;) {
      if (isStopping()) return report;
      const deleted = await this.sql`
        DELETE FROM flag_evaluation_hours WHERE ctid IN (
          SELECT ctid FROM flag_evaluation_hours
          WHERE hour < to_timestamp(${cutoffs.hoursBeforeMs / 1000}::float8) AND rolled = count
          LIMIT ${batchSize} FOR UPDATE SKIP LOCKED)`;
      report.hoursDeleted += deleted.count;
      if (deleted.count < batchSize) break;
    }
    // 3. Daily rows past theirs.
    for (;;) {
      if (isStopping()) return report;
      const deleted = await this.sql`
        DELETE FROM flag_evaluation_days WHERE ctid IN (
          SELECT ctid FROM flag_evaluation_days WHERE day < to_timestamp(${cutoffs.daysBeforeMs / 1000}::float8)
          LIMIT ${batchSize} FOR UPDATE SKIP LOCKED)`;
      report.daysDeleted += deleted.count;
      if (deleted.count < batchSize) break;
    }
    return report;
  }
}

/**
 * The two INSERT statements of an SDK summary (docs/insights.md "SDK summaries"), for the CTEs of
 * a larger statement (PgIdempotencyRepository.storeOnce: the summary commits with its
 * Idempotency-Key or not at all): each flag's last evaluation moved forward, and the counts added
 * to their hourly rows. Both join the scope's environment (a foreign scope writes nothing) and the
 * flags of its project by key (an unknown flag's counts are dropped). `condition` (`AND ...`) is
 * added to both WHERE clauses. Plain INSERTs (no WITH of their own), so they can be CTEs.
 */
export function summaryCountsStatements(sql: Sql, scope: EnvironmentScope, summary: SummaryCounts, condition: postgres.Fragment = sql``) {
  const counts = summary.counts;
  const flagKeys = [...new Set(counts.map((c) => c.flagKey))];
  // A client key's summary counts only the flags its OFREP answers can name (client-visible, not
  // archived): a public key cannot make a hidden flag look evaluated and so keep it off the cleanup list.
  const visible = summary.clientVisibleOnly === true ? sql`AND f.client_visible AND NOT f.archived` : sql``;
  const last = sql`
    INSERT INTO flag_evaluation_last (environment_id, flag_id, org_id, project_id, last_evaluated_at)
    SELECT e.id, f.id, e.org_id, e.project_id, to_timestamp(${summary.atMs}::int8 / 1000.0)
    FROM environments e
    JOIN flags f ON f.project_id = e.project_id AND f.org_id = e.org_id
    WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId}
      AND f.key = ANY(${sql.array(flagKeys)}::text[]) ${visible} ${condition}
    ORDER BY e.id, f.id
    ON CONFLICT (environment_id, flag_id) DO UPDATE SET last_evaluated_at = greatest(flag_evaluation_last.last_evaluated_at, excluded.last_evaluated_at)`;
  const hours = sql`
    INSERT INTO flag_evaluation_hours (environment_id, flag_id, hour, variant_key, reason, org_id, project_id, count)
    SELECT e.id, f.id, to_timestamp(${summary.hourMs}::int8 / 1000.0), u.variant_key, u.reason, e.org_id, e.project_id, sum(u.count)
    FROM environments e
    CROSS JOIN unnest(${sql.array(counts.map((c) => c.flagKey))}::text[], ${sql.array(counts.map((c) => c.variantKey))}::text[],
                      ${sql.array(counts.map((c) => c.reason))}::text[], ${sql.array(counts.map((c) => c.count))}::int8[]) AS u (flag_key, variant_key, reason, count)
    JOIN flags f ON f.project_id = e.project_id AND f.org_id = e.org_id AND f.key = u.flag_key
    WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId} ${visible} ${condition}
      -- Only the flag's own variants ("" for an answer without one): a key anyone can read from a
      -- page cannot fill a flag's insights with made-up variants.
      AND (u.variant_key = '' OR f.variants @> jsonb_build_array(jsonb_build_object('key', u.variant_key)))
    GROUP BY e.id, f.id, u.variant_key, u.reason, e.org_id, e.project_id
    ORDER BY e.id, f.id, u.variant_key COLLATE "C", u.reason COLLATE "C"
    ON CONFLICT (environment_id, flag_id, hour, variant_key, reason) DO UPDATE SET count = flag_evaluation_hours.count + excluded.count`;
  return { last, hours };
}

/**
 * The parts of one statement that adds drained counts (this process's flush, a gateway's report;
 * docs/insights.md "Counting"): `inputs` (CTEs `last_input, count_input`: the rows as sent, for a
 * WITH), `last` (each flag's last evaluation moved forward) and `hours` (the counts added to their
 * hourly rows), plain INSERTs so they can be CTEs (PgIdempotencyRepository.storeCountsOnce: a
 * report commits with its id or not at all). Each row's environment is resolved against the org
 * and project it names, and its flag by key in that project, so a count naming another tenant or
 * an unknown flag writes nothing. `condition` (`AND ...` on `e`, the environment) is added to both
 * WHERE clauses. Null when nothing is left to write.
 */
export function reportCountsStatements(sql: Sql, drained: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>, condition: postgres.Fragment = sql``) {
  const counts = drained.counts
    .filter((c) => validScope(c) && c.count > 0)
    .map((c) => ({ c, id: `${c.environmentId}\u0000${c.flagKey}\u0000${c.hourMs}\u0000${c.variantKey}\u0000${c.reason}` }))
    .sort((a, b) => byCodeUnits(a.id, b.id))
    .map(({ c }) => c);
  const last = drained.lastEvaluated.filter(validScope);
  if (counts.length === 0 && last.length === 0) return null;
  const array = <T>(rows: readonly T[], pick: (row: T) => string | number) => sql.array(rows.map(pick) as string[]);
  const inputs = sql`
    last_input AS (
      SELECT * FROM unnest(${array(last, (l) => l.orgId)}::uuid[], ${array(last, (l) => l.projectId)}::uuid[], ${array(last, (l) => l.environmentId)}::uuid[],
                           ${array(last, (l) => l.flagKey)}::text[], ${array(last, (l) => l.atMs)}::int8[])
        AS u (org_id, project_id, environment_id, flag_key, at_ms)
    ), count_input AS (
      SELECT * FROM unnest(${array(counts, (c) => c.orgId)}::uuid[], ${array(counts, (c) => c.projectId)}::uuid[], ${array(counts, (c) => c.environmentId)}::uuid[],
                           ${array(counts, (c) => c.flagKey)}::text[], ${array(counts, (c) => c.variantKey)}::text[], ${array(counts, (c) => c.reason)}::text[],
                           ${array(counts, (c) => c.hourMs)}::int8[], ${array(counts, (c) => c.count)}::int8[])
        AS u (org_id, project_id, environment_id, flag_key, variant_key, reason, hour_ms, count)
    )`;
  // Each upsert touches a row once (grouped) and in key order; `count = count + excluded.count`
  // makes any number of concurrent flushers of the same hour add up.
  const lastWritten = sql`
    INSERT INTO flag_evaluation_last (environment_id, flag_id, org_id, project_id, last_evaluated_at)
    SELECT e.id, f.id, e.org_id, e.project_id, to_timestamp(max(u.at_ms) / 1000.0)
    FROM last_input u
    JOIN environments e ON e.id = u.environment_id AND e.project_id = u.project_id AND e.org_id = u.org_id
    JOIN flags f ON f.project_id = e.project_id AND f.org_id = e.org_id AND f.key = u.flag_key
    WHERE true ${condition}
    GROUP BY e.id, f.id, e.org_id, e.project_id
    ORDER BY e.id, f.id
    ON CONFLICT (environment_id, flag_id) DO UPDATE SET last_evaluated_at = greatest(flag_evaluation_last.last_evaluated_at, excluded.last_evaluated_at)`;
  const hours = sql`
    INSERT INTO flag_evaluation_hours (environment_id, flag_id, hour, variant_key, reason, org_id, project_id, count)
    SELECT e.id, f.id, to_timestamp(u.hour_ms / 1000.0), u.variant_key, u.reason, e.org_id, e.project_id, sum(u.count)
    FROM count_input u
    JOIN environments e ON e.id = u.environment_id AND e.project_id = u.project_id AND e.org_id = u.org_id
    JOIN flags f ON f.project_id = e.project_id AND f.org_id = e.org_id AND f.key = u.flag_key
    WHERE true ${condition}
    GROUP BY e.id, f.id, u.hour_ms, u.variant_key, u.reason, e.org_id, e.project_id
    ORDER BY e.id, f.id, u.hour_ms, u.variant_key COLLATE "C", u.reason COLLATE "C"
    ON CONFLICT (environment_id, flag_id, hour, variant_key, reason) DO UPDATE SET count = flag_evaluation_hours.count + excluded.count`;
  return { inputs, last: lastWritten, hours };
}
