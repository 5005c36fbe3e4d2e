import { failedPrecondition, notFound, type EnvironmentScope, type SdkKey, type SdkKeyRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface SdkKeyRow {
  id: string;
  org_id: string;
  project_id: string;
  environment_id: string;
  key_prefix: string;
  key_hash: string;
  created_at_ms: number;
  revoked_at_ms: number | null;
}

const toSdkKey = (row: SdkKeyRow): SdkKey => ({
  id: row.id,
  orgId: row.org_id,
  projectId: row.project_id,
  environmentId: row.environment_id,
  keyPrefix: row.key_prefix,
  keyHash: row.key_hash,
  createdAtMs: row.created_at_ms,
  revokedAtMs: row.revoked_at_ms,
});

const validScope = (scope: EnvironmentScope): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/**
 * SDK keys in `sdk_keys` (hashes only), every statement scoped by org, project and environment —
 * except findActiveByHash, which is how a presented key discovers its tenant in the first place.
 */
export class PgSdkKeyRepository implements SdkKeyRepository {
  constructor(private readonly sql: Sql) {}

  async create(scope: EnvironmentScope, input: { keyPrefix: string; keyHash: string }): Promise<SdkKey> {
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    // The composite foreign key to environments (id, project_id, org_id) rejects any mismatched scope.
    const [row] = await translateErrors(
      () => this.sql<SdkKeyRow[]>`
        INSERT INTO sdk_keys (org_id, project_id, environment_id, key_prefix, key_hash)
        VALUES (${scope.orgId}, ${scope.projectId}, ${scope.environmentId}, ${input.keyPrefix}, ${input.keyHash})
        RETURNING id, org_id, project_id, environment_id, key_prefix, key_hash,
                  floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms,
                  floor(extract(epoch FROM revoked_at) * 1000)::int8 AS revoked_at_ms`,
      { resource: 'sdk key', name: input.keyPrefix, parent: 'environment' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toSdkKey(row);
  }

  async findActiveByHash(keyHash: string): Promise<SdkKey | null> {
    const [row] = await this.sql<SdkKeyRow[]>`
      SELECT id, org_id, project_id, environment_id, key_prefix, key_hash,
             floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms,
             floor(extract(epoch FROM revoked_at) * 1000)::int8 AS revoked_at_ms
      FROM sdk_keys WHERE key_hash = ${keyHash} AND revoked_at IS NULL`;
    return row ? toSdkKey(row) : null;
  }

  async list(scope: EnvironmentScope): Promise<SdkKey[]> {
    if (!validScope(scope)) return [];
    const rows = await this.sql<SdkKeyRow[]>`
      SELECT id, org_id, project_id, environment_id, key_prefix, key_hash,
             floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms,
             floor(extract(epoch FROM revoked_at) * 1000)::int8 AS revoked_at_ms
      FROM sdk_keys
      WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
        AND revoked_at IS NULL
      ORDER BY created_at, id`;
    return rows.map(toSdkKey);
  }

  async revoke(scope: EnvironmentScope, sdkKeyId: string): Promise<SdkKey> {
    if (!validScope(scope) || !isUuid(sdkKeyId)) throw notFound('sdk key', sdkKeyId);
    const wanted = sdkKeyId.toLowerCase();
    return transaction(this.sql, async (tx) => {
      // Lock every active key of the environment, in id order so concurrent revokes queue up
      // instead of deadlocking. A revoke that waited re-checks revoked_at on the rows it then
      // gets (READ COMMITTED re-evaluates the WHERE on the new row version), so of two concurrent
      // revokes of the last two keys the second sees one key left and fails.
      const active = await tx<{ id: string }[]>`
        SELECT id FROM sdk_keys
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
          AND revoked_at IS NULL
        ORDER BY id
        FOR UPDATE`;
      if (!active.some((row) => row.id === wanted)) throw notFound('sdk key', sdkKeyId);
      if (active.length < 2) throw failedPrecondition('cannot revoke the last active sdk key of the environment');
      const [row] = await tx<SdkKeyRow[]>`
        UPDATE sdk_keys SET revoked_at = clock_timestamp()
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
          AND id = ${sdkKeyId} AND revoked_at IS NULL
        RETURNING id, org_id, project_id, environment_id, key_prefix, key_hash,
                  floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms,
                  floor(extract(epoch FROM revoked_at) * 1000)::int8 AS revoked_at_ms`;
      // The row is locked by this transaction, so the update cannot miss it.
      if (!row) throw new Error('locked sdk key vanished during revoke');
      return toSdkKey(row);
    });
  }
}
