import { failedPrecondition, notFound, type ClientKeySettings, type EnvironmentScope, type SdkKey, type SdkKeyKind, type SdkKeyRepository, type SdkKeyUse, SERVER_KEY_SETTINGS } from '@switchyard/core';
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
  kind: SdkKeyKind;
  name: string;
  allowed_origins: string[];
  allow_missing_origin: boolean;
  context_signing: ClientKeySettings['contextSigning'];
  include_disabled: boolean;
  expires_at_ms: number | null;
  last_used_at_ms: number | null;
}

/** Every column of a key, in one place for every statement. */
const COLUMNS = `id, org_id, project_id, environment_id, key_prefix, key_hash,
  floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms,
  floor(extract(epoch FROM revoked_at) * 1000)::int8 AS revoked_at_ms,
  kind, name, allowed_origins, allow_missing_origin, context_signing, include_disabled,
  floor(extract(epoch FROM expires_at) * 1000)::int8 AS expires_at_ms,
  floor(extract(epoch FROM last_used_at) * 1000)::int8 AS last_used_at_ms`;


const toSdkKey = (row: SdkKeyRow): SdkKey => ({
  id: row.id,
  orgId: row.org_id,
  projectId: row.project_id,
  environmentId: row.environment_id,
  keyPrefix: row.key_prefix,
  keyHash: row.key_hash,
  createdAtMs: row.created_at_ms,
  revokedAtMs: row.revoked_at_ms,
  kind: row.kind,
  settings: {
    name: row.name,
    allowedOrigins: row.allowed_origins,
    allowMissingOrigin: row.allow_missing_origin,
    contextSigning: row.context_signing,
    includeDisabled: row.include_disabled,
    expiresAtMs: row.expires_at_ms,
  },
  lastUsedAtMs: row.last_used_at_ms,
});

const expiresAt = (settings: ClientKeySettings): Date | null => (settings.expiresAtMs === null ? null : new Date(settings.expiresAtMs));

const validScope = (scope: EnvironmentScope): boolean =>
  isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/**
 * SDK keys in `sdk_keys` (hashes only), every statement scoped by org, project and environment —
 * except findActiveByHash, which is how a presented key discovers its tenant in the first place.
 */
export class PgSdkKeyRepository implements SdkKeyRepository {
  constructor(private readonly sql: Sql) {}

  async create(
    scope: EnvironmentScope,
    input: { keyPrefix: string; keyHash: string; kind?: SdkKeyKind; settings?: ClientKeySettings },
  ): Promise<SdkKey> {
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    const kind = input.kind ?? 'server';
    const settings = kind === 'client' && input.settings ? input.settings : SERVER_KEY_SETTINGS;
    // The composite foreign key to environments (id, project_id, org_id) rejects any mismatched scope.
    const [row] = await translateErrors(
      () => this.sql<SdkKeyRow[]>`
        INSERT INTO sdk_keys (org_id, project_id, environment_id, key_prefix, key_hash,
                              kind, name, allowed_origins, allow_missing_origin, context_signing, include_disabled, expires_at)
        VALUES (${scope.orgId}, ${scope.projectId}, ${scope.environmentId}, ${input.keyPrefix}, ${input.keyHash},
                ${kind}, ${settings.name}, ${settings.allowedOrigins}, ${settings.allowMissingOrigin}, ${settings.contextSigning},
                ${settings.includeDisabled}, ${expiresAt(settings)})
        RETURNING ${this.sql.unsafe(COLUMNS)}`,
      { resource: 'sdk key', name: input.keyPrefix, parent: 'environment' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toSdkKey(row);
  }

  async findActiveByHash(keyHash: string): Promise<SdkKey | null> {
    const [row] = await this.sql<SdkKeyRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)}
      FROM sdk_keys WHERE key_hash = ${keyHash} AND revoked_at IS NULL`;
    return row ? toSdkKey(row) : null;
  }

  async list(scope: EnvironmentScope): Promise<SdkKey[]> {
    if (!validScope(scope)) return [];
    const rows = await this.sql<SdkKeyRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)}
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
      const active = await tx<{ id: string; kind: SdkKeyKind }[]>`
        SELECT id, kind FROM sdk_keys
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
          AND revoked_at IS NULL
        ORDER BY id
        FOR UPDATE`;
      const target = active.find((row) => row.id === wanted);
      if (!target) throw notFound('sdk key', sdkKeyId);
      // The environment's servers need a server key; client keys are never the last line.
      if (target.kind === 'server' && active.filter((row) => row.kind === 'server').length < 2) {
        throw failedPrecondition('cannot revoke the last active server sdk key of the environment');
      }
      const [row] = await tx<SdkKeyRow[]>`
        UPDATE sdk_keys SET revoked_at = clock_timestamp()
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
          AND id = ${sdkKeyId} AND revoked_at IS NULL
        RETURNING ${tx.unsafe(COLUMNS)}`;
      // The row is locked by this transaction, so the update cannot miss it.
      if (!row) throw new Error('locked sdk key vanished during revoke');
      return toSdkKey(row);
    });
  }

  async updateClientSettings(scope: EnvironmentScope, sdkKeyId: string, settings: ClientKeySettings): Promise<SdkKey> {
    if (!validScope(scope) || !isUuid(sdkKeyId)) throw notFound('sdk key', sdkKeyId);
    const [row] = await translateErrors(
      () => this.sql<SdkKeyRow[]>`
        UPDATE sdk_keys SET name = ${settings.name}, allowed_origins = ${settings.allowedOrigins},
          allow_missing_origin = ${settings.allowMissingOrigin}, context_signing = ${settings.contextSigning},
          include_disabled = ${settings.includeDisabled}, expires_at = ${expiresAt(settings)}
        WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId} AND environment_id = ${scope.environmentId}
          AND id = ${sdkKeyId} AND revoked_at IS NULL AND kind = 'client'
        RETURNING ${this.sql.unsafe(COLUMNS)}`,
      { resource: 'sdk key', name: sdkKeyId, parent: 'environment' },
    );
    if (!row) throw notFound('sdk key', sdkKeyId);
    return toSdkKey(row);
  }

  async recordUses(uses: readonly SdkKeyUse[], minIntervalMs: number): Promise<number> {
    // Malformed ids match nothing (uuid[] would refuse the whole batch).
    const valid = uses.filter((use) => isUuid(use.sdkKeyId) && validScope(use));
    if (valid.length === 0) return 0;
    // One statement for the batch; each use matches only its key in its own scope, and a key
    // written less than minIntervalMs ago is skipped (the guard behind every process's debounce).
    const result = await this.sql`
      UPDATE sdk_keys AS k SET last_used_at = clock_timestamp()
      FROM unnest(${this.sql.array(valid.map((use) => use.sdkKeyId))}::uuid[], ${this.sql.array(valid.map((use) => use.orgId))}::uuid[],
                  ${this.sql.array(valid.map((use) => use.projectId))}::uuid[], ${this.sql.array(valid.map((use) => use.environmentId))}::uuid[])
           AS u (id, org_id, project_id, environment_id)
      WHERE k.id = u.id AND k.org_id = u.org_id AND k.project_id = u.project_id AND k.environment_id = u.environment_id
        AND k.revoked_at IS NULL
        AND (k.last_used_at IS NULL OR k.last_used_at <= clock_timestamp() - make_interval(secs => ${minIntervalMs / 1000}::float8))`;
    return result.count;
  }

  async listActiveClientOrigins(): Promise<Array<{ sdkKeyId: string; allowedOrigins: string[] }>> {
    const rows = await this.sql<{ id: string; allowed_origins: string[] }[]>`
      SELECT id, allowed_origins FROM sdk_keys
      WHERE kind = 'client' AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > clock_timestamp())
        AND cardinality(allowed_origins) > 0`;
    return rows.map((row) => ({ sdkKeyId: row.id, allowedOrigins: row.allowed_origins }));
  }
}
