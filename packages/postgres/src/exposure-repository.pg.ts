import { notFound, type EnvironmentScope, type Exposure, type ExposureRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { INSERT_CHUNK_ROWS } from './event-repository.pg.ts';
import { isUuid } from './pg-errors.ts';

/**
 * Exposures in the partitioned `exposures` table, written like events: one scope check, then
 * multi-row INSERTs of at most INSERT_CHUNK_ROWS rows (8 columns each) in one transaction.
 */
export class PgExposureRepository implements ExposureRepository {
  constructor(private readonly sql: Sql) {}

  async insert(scope: EnvironmentScope, exposures: Array<Omit<Exposure, 'environmentId'>>): Promise<number> {
    if (exposures.length === 0) return 0;
    if (!isUuid(scope.orgId) || !isUuid(scope.projectId) || !isUuid(scope.environmentId)) {
      throw notFound('environment', scope.environmentId);
    }
    const receivedAtMs = Date.now();
    const rows = exposures.map((exposure) => ({
      org_id: scope.orgId,
      environment_id: scope.environmentId,
      flag_key: exposure.flagKey,
      variant_key: exposure.variantKey,
      context_type: exposure.contextType,
      context_key: exposure.contextKey,
      timestamp_ms: exposure.timestampMs,
      received_at_ms: receivedAtMs,
    }));
    await this.sql.begin(async (tx) => {
      const [environment] = await tx`
        SELECT 1 AS found FROM environments
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND id = ${scope.environmentId}`;
      if (!environment) throw notFound('environment', scope.environmentId);
      for (let start = 0; start < rows.length; start += INSERT_CHUNK_ROWS) {
        await tx`
          INSERT INTO exposures ${tx(rows.slice(start, start + INSERT_CHUNK_ROWS), 'org_id', 'environment_id', 'flag_key',
            'variant_key', 'context_type', 'context_key', 'timestamp_ms', 'received_at_ms')}`;
      }
    });
    return rows.length;
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
