import { notFound, type EnvironmentScope, type Exposure, type MetricEvent } from '@switchyard/core';
import type postgres from 'postgres';
import type { Sql } from './connect.ts';
import { isUuid } from './pg-errors.ts';

type EventRow = Omit<MetricEvent, 'environmentId'>;
type ExposureRow = Omit<Exposure, 'environmentId'>;

const validScope = (scope: EnvironmentScope): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/**
 * One INSERT statement for any number of events of one environment: the columns travel as five
 * array parameters that unnest() turns back into rows (no bind-parameter limit, no chunking), and
 * the join with `environments` scopes the write by org, project and environment — a scope that
 * does not match inserts nothing. `condition` (`AND ...`) is added to the WHERE clause (the
 * idempotency claim uses it inside a larger statement). Returns the query; the caller awaits it.
 */
export function insertEventsStatement(
  sql: Sql,
  scope: EnvironmentScope,
  rows: readonly EventRow[],
  receivedAtMs: number,
  condition: postgres.Fragment = sql``,
) {
  return sql`
    INSERT INTO events (org_id, environment_id, metric_key, context_type, context_key, value, timestamp_ms, received_at_ms)
    SELECT e.org_id, e.id, r.metric_key, r.context_type, r.context_key, r.value, r.timestamp_ms, ${receivedAtMs}::int8
    FROM environments e,
      unnest(${rows.map((row) => row.metricKey)}::text[], ${rows.map((row) => row.contextType)}::text[],
             ${rows.map((row) => row.contextKey)}::text[], ${rows.map((row) => row.value)}::float8[],
             ${rows.map((row) => row.timestampMs)}::int8[]) AS r(metric_key, context_type, context_key, value, timestamp_ms)
    WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId} ${condition}`;
}

/** The exposures counterpart of insertEventsStatement. */
export function insertExposuresStatement(
  sql: Sql,
  scope: EnvironmentScope,
  rows: readonly ExposureRow[],
  receivedAtMs: number,
  condition: postgres.Fragment = sql``,
) {
  return sql`
    INSERT INTO exposures (org_id, environment_id, flag_key, variant_key, context_type, context_key, timestamp_ms, received_at_ms, rule_id)
    SELECT e.org_id, e.id, r.flag_key, r.variant_key, r.context_type, r.context_key, r.timestamp_ms, ${receivedAtMs}::int8, r.rule_id
    FROM environments e,
      unnest(${rows.map((row) => row.flagKey)}::text[], ${rows.map((row) => row.variantKey)}::text[],
             ${rows.map((row) => row.contextType)}::text[], ${rows.map((row) => row.contextKey)}::text[],
             ${rows.map((row) => row.timestampMs)}::int8[], ${rows.map((row) => row.ruleId ?? null)}::text[])
        AS r(flag_key, variant_key, context_type, context_key, timestamp_ms, rule_id)
    WHERE e.org_id = ${scope.orgId} AND e.project_id = ${scope.projectId} AND e.id = ${scope.environmentId} ${condition}`;
}

/**
 * The rows in the order of the table's btree index (events_by_metric / exposures_by_flag: metric or
 * flag, then context), on a copy. A group commit's rows come from many requests in no order;
 * inserted sorted, consecutive index inserts land on the same or neighbouring leaf pages while
 * they are hot in the CPU caches, instead of each one on a random page (bench/README.md
 * "## ingest": 20-35% less PostgreSQL CPU per row for ~1 µs of Node's per row). Any consistent order
 * gives the locality, so JavaScript's string order stands in for the database collation.
 */
function inIndexOrder<Row extends { contextType: string; contextKey: string }>(rows: readonly Row[], first: (row: Row) => string): Row[] {
  return [...rows].sort((a, b) => {
    const x = first(a);
    const y = first(b);
    if (x !== y) return x < y ? -1 : 1;
    if (a.contextType !== b.contextType) return a.contextType < b.contextType ? -1 : 1;
    if (a.contextKey !== b.contextKey) return a.contextKey < b.contextKey ? -1 : 1;
    return 0;
  });
}

const byMetric = (row: EventRow): string => row.metricKey;
const byFlag = (row: ExposureRow): string => row.flagKey;

/** Session-termination codes: admin shutdown, crash shutdown, cannot connect now. */
const STALE_SESSION_CODES: ReadonlySet<string> = new Set(['57P01', '57P02', '57P03']);

/**
 * Runs a statement, once more if postgres.js refused it with a stale session-termination error.
 * After the server ended a session in the middle of a statement, postgres.js keeps that FATAL
 * error and, once the connection is re-established, rejects the next statement with it before
 * sending it (porsager/postgres#1215): that statement never ran, so running it again is safe.
 * A genuine failure of a running statement surfaces as CONNECTION_CLOSED/ECONNRESET, never retried.
 */
export async function retryingStaleSession<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code === 'string' && STALE_SESSION_CODES.has(code)) return run();
    throw error;
  }
}

/**
 * The storage half of the ingest group commit: each call is ONE statement (atomic on its own, so
 * no explicit transaction). Besides being the cheapest write (one round trip, five parameters),
 * that keeps postgres.js out of its transaction error path: when the connection dies mid-write,
 * `sql.begin` sends its ROLLBACK on the dead socket, which throws from a setImmediate callback
 * and takes the whole process down (porsager/postgres#1208, unfixed in 3.4.9). A single
 * statement just fails with CONNECTION_CLOSED and the pool reconnects.
 */
export class PgIngestWrites {
  constructor(private readonly sql: Sql) {}

  /** Resolves once the rows are committed. NOT_FOUND (nothing written) when the environment is not in the scope. */
  async insertEvents(scope: EnvironmentScope, rows: readonly EventRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    // The server clock stamps receipt: clients' clocks decide nothing about staleness.
    const sorted = inIndexOrder(rows, byMetric);
    const result = await retryingStaleSession(() => insertEventsStatement(this.sql, scope, sorted, Date.now()));
    if (result.count === 0) throw notFound('environment', scope.environmentId);
    return result.count;
  }

  /** Resolves once the rows are committed. NOT_FOUND (nothing written) when the environment is not in the scope. */
  async insertExposures(scope: EnvironmentScope, rows: readonly ExposureRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    const sorted = inIndexOrder(rows, byFlag);
    const result = await retryingStaleSession(() => insertExposuresStatement(this.sql, scope, sorted, Date.now()));
    if (result.count === 0) throw notFound('environment', scope.environmentId);
    return result.count;
  }
}
