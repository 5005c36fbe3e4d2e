import { notFound, type EnvironmentScope, type EventRepository, type MetricEvent } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid } from './pg-errors.ts';

/**
 * Rows per INSERT statement: 8 columns × 5,000 = 40,000 bind parameters, safely under PostgreSQL's
 * limit of 65,535 per statement. Larger batches are split, inside one transaction.
 */
export const INSERT_CHUNK_ROWS = 5_000;

/**
 * Metric events in the partitioned `events` table. An insert checks once that the environment
 * belongs to the scope (the table has no foreign keys, for ingest speed) and then writes every row
 * with multi-row INSERTs in one transaction, so it resolves only after all rows are committed.
 */
export class PgEventRepository implements EventRepository {
  constructor(private readonly sql: Sql) {}

  async insert(scope: EnvironmentScope, events: Array<Omit<MetricEvent, 'environmentId'>>): Promise<number> {
    if (events.length === 0) return 0;
    if (!isUuid(scope.orgId) || !isUuid(scope.projectId) || !isUuid(scope.environmentId)) {
      throw notFound('environment', scope.environmentId);
    }
    // The server clock stamps receipt: clients' clocks decide nothing about staleness.
    const receivedAtMs = Date.now();
    const rows = events.map((event) => ({
      org_id: scope.orgId,
      environment_id: scope.environmentId,
      metric_key: event.metricKey,
      context_type: event.contextType,
      context_key: event.contextKey,
      value: event.value,
      timestamp_ms: event.timestampMs,
      received_at_ms: receivedAtMs,
    }));
    await this.sql.begin(async (tx) => {
      const [environment] = await tx`
        SELECT 1 AS found FROM environments
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND id = ${scope.environmentId}`;
      if (!environment) throw notFound('environment', scope.environmentId);
      for (let start = 0; start < rows.length; start += INSERT_CHUNK_ROWS) {
        await tx`
          INSERT INTO events ${tx(rows.slice(start, start + INSERT_CHUNK_ROWS), 'org_id', 'environment_id', 'metric_key',
            'context_type', 'context_key', 'value', 'timestamp_ms', 'received_at_ms')}`;
      }
    });
    return rows.length;
  }

  async count(scope: EnvironmentScope, filter: { metricKey?: string } = {}): Promise<number> {
    if (!isUuid(scope.orgId) || !isUuid(scope.environmentId)) return 0;
    const [row] = await this.sql<{ n: number }[]>`
      SELECT count(*)::int8 AS n FROM events
      WHERE org_id = ${scope.orgId} AND environment_id = ${scope.environmentId}
        ${filter.metricKey === undefined ? this.sql`` : this.sql`AND metric_key = ${filter.metricKey}`}`;
    return row?.n ?? 0;
  }

  async lastReceivedAtMs(scope: EnvironmentScope): Promise<number> {
    if (!isUuid(scope.orgId) || !isUuid(scope.environmentId)) return 0;
    const [row] = await this.sql<{ ms: number }[]>`
      SELECT coalesce(max(received_at_ms), 0)::int8 AS ms FROM events
      WHERE org_id = ${scope.orgId} AND environment_id = ${scope.environmentId}`;
    return row?.ms ?? 0;
  }
}
