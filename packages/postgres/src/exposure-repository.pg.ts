import type { EnvironmentScope, Exposure, ExposureRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { PgIngestWrites } from './ingest-writes.pg.ts';
import { isUuid } from './pg-errors.ts';

/** Exposures in the partitioned `exposures` table, written like events (see PgEventRepository). */
export class PgExposureRepository implements ExposureRepository {
  private readonly writes: PgIngestWrites;

  constructor(private readonly sql: Sql) {
    this.writes = new PgIngestWrites(sql);
  }

  insert(scope: EnvironmentScope, exposures: Array<Omit<Exposure, 'environmentId'>>): Promise<number> {
    return this.writes.insertExposures(scope, exposures);
  }

  async count(scope: EnvironmentScope, filter: { flagKey?: string } = {}): Promise<number> {
    if (!isUuid(scope.orgId) || !isUuid(scope.environmentId)) return 0;
    const [row] = await this.sql<{ n: number }[]>`
      SELECT count(*)::int8 AS n FROM exposures
      WHERE org_id = ${scope.orgId} AND environment_id = ${scope.environmentId}
        ${filter.flagKey === undefined ? this.sql`` : this.sql`AND flag_key = ${filter.flagKey}`}`;
    return row?.n ?? 0;
  }

  async lastReceivedAtMs(scope: EnvironmentScope): Promise<number> {
    if (!isUuid(scope.orgId) || !isUuid(scope.environmentId)) return 0;
    const [row] = await this.sql<{ ms: number }[]>`
      SELECT coalesce(max(received_at_ms), 0)::int8 AS ms FROM exposures
      WHERE org_id = ${scope.orgId} AND environment_id = ${scope.environmentId}`;
    return row?.ms ?? 0;
  }
}
