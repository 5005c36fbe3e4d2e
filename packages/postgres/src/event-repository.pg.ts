import type { EnvironmentScope, EventRepository, MetricEvent } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { PgIngestWrites } from './ingest-writes.pg.ts';
import { isUuid } from './pg-errors.ts';

/**
 * Metric events in the partitioned `events` table. Inserts are the ingest path's single statement
 * (PgIngestWrites): scoped by tenant in SQL, atomic, and resolved only once committed.
 */
export class PgEventRepository implements EventRepository {
  private readonly writes: PgIngestWrites;

  constructor(private readonly sql: Sql) {
    this.writes = new PgIngestWrites(sql);
  }

  insert(scope: EnvironmentScope, events: Array<Omit<MetricEvent, 'environmentId'>>): Promise<number> {
    return this.writes.insertEvents(scope, events);
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
