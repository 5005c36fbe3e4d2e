import { notFound, type ApiToken, type ApiTokenRepository, type ApiTokenScope, type BindingRole, type OrgScope } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid } from './pg-errors.ts';

interface ApiTokenRow {
  id: string;
  org_id: string;
  name: string;
  role: BindingRole;
  scope: { project_ids?: string[]; environment_ids?: string[] };
  token_prefix: string;
  created_by: string | null;
  created_at_ms: number;
  expires_at_ms: number | null;
  revoked_at_ms: number | null;
  last_used_at_ms: number | null;
}

/** Every column of a token but its hash, in one place for every statement. */
const COLUMNS = `id, org_id, name, role, scope, token_prefix, created_by,
  floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms,
  floor(extract(epoch FROM expires_at) * 1000)::int8 AS expires_at_ms,
  floor(extract(epoch FROM revoked_at) * 1000)::int8 AS revoked_at_ms,
  floor(extract(epoch FROM last_used_at) * 1000)::int8 AS last_used_at_ms`;

const scopeFromStored = (stored: ApiTokenRow['scope']): ApiTokenScope => ({
  ...(stored.project_ids !== undefined ? { projectIds: stored.project_ids } : {}),
  ...(stored.environment_ids !== undefined ? { environmentIds: stored.environment_ids } : {}),
});

const scopeToStored = (scope: ApiTokenScope): ApiTokenRow['scope'] => ({
  ...(scope.projectIds !== undefined ? { project_ids: scope.projectIds } : {}),
  ...(scope.environmentIds !== undefined ? { environment_ids: scope.environmentIds } : {}),
});

const toApiToken = (row: ApiTokenRow): ApiToken => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  role: row.role,
  scope: scopeFromStored(row.scope),
  tokenPrefix: row.token_prefix,
  createdByUserId: row.created_by,
  createdAtMs: Number(row.created_at_ms),
  expiresAtMs: row.expires_at_ms === null ? null : Number(row.expires_at_ms),
  revokedAtMs: row.revoked_at_ms === null ? null : Number(row.revoked_at_ms),
  lastUsedAtMs: row.last_used_at_ms === null ? null : Number(row.last_used_at_ms),
});

/** API tokens in `api_tokens`, every statement but the hash lookup scoped by org_id. */
export class PgApiTokenRepository implements ApiTokenRepository {
  constructor(private readonly sql: Sql) {}

  async create(scope: OrgScope, input: Parameters<ApiTokenRepository['create']>[1]): Promise<ApiToken> {
    if (!isUuid(scope.orgId)) throw notFound('organisation', scope.orgId);
    const [row] = await this.sql<ApiTokenRow[]>`
      INSERT INTO api_tokens (org_id, name, role, scope, token_prefix, token_hash, created_by, expires_at)
      VALUES (${scope.orgId}, ${input.name}, ${input.role}, ${this.sql.json(scopeToStored(input.scope) as never)}, ${input.tokenPrefix},
              ${input.tokenHash}, ${input.createdByUserId}, ${input.expiresAtMs === null ? null : new Date(input.expiresAtMs)})
      RETURNING ${this.sql.unsafe(COLUMNS)}`;
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toApiToken(row);
  }

  async findActiveByHash(tokenHash: string): Promise<ApiToken | null> {
    const [row] = await this.sql<ApiTokenRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM api_tokens WHERE token_hash = ${tokenHash} AND revoked_at IS NULL`;
    return row ? toApiToken(row) : null;
  }

  async list(scope: OrgScope): Promise<ApiToken[]> {
    if (!isUuid(scope.orgId)) return [];
    const rows = await this.sql<ApiTokenRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM api_tokens WHERE org_id = ${scope.orgId} AND revoked_at IS NULL ORDER BY created_at, id`;
    return rows.map(toApiToken);
  }

  async get(scope: OrgScope, tokenId: string): Promise<ApiToken | null> {
    if (!isUuid(scope.orgId) || !isUuid(tokenId)) return null;
    const [row] = await this.sql<ApiTokenRow[]>`
      SELECT ${this.sql.unsafe(COLUMNS)} FROM api_tokens WHERE org_id = ${scope.orgId} AND id = ${tokenId}`;
    return row ? toApiToken(row) : null;
  }

  async revoke(scope: OrgScope, tokenId: string, nowMs: number): Promise<ApiToken> {
    if (!isUuid(scope.orgId) || !isUuid(tokenId)) throw notFound('API token', tokenId);
    const [row] = await this.sql<ApiTokenRow[]>`
      UPDATE api_tokens SET revoked_at = ${new Date(nowMs)}
      WHERE org_id = ${scope.orgId} AND id = ${tokenId} AND revoked_at IS NULL
      RETURNING ${this.sql.unsafe(COLUMNS)}`;
    if (!row) throw notFound('API token', tokenId);
    return toApiToken(row);
  }

  async pruneEnded(beforeMs: number, limit: number): Promise<number> {
    if (limit < 1) return 0;
    const before = new Date(beforeMs);
    const result = await this.sql`
      DELETE FROM api_tokens WHERE id IN (
        SELECT id FROM api_tokens WHERE revoked_at < ${before} OR expires_at < ${before} LIMIT ${limit})`;
    return result.count;
  }

  async recordUses(tokenIds: readonly string[], minIntervalMs: number): Promise<number> {
    const valid = tokenIds.filter(isUuid);
    if (valid.length === 0) return 0;
    const result = await this.sql`
      UPDATE api_tokens SET last_used_at = clock_timestamp()
      WHERE id = ANY(${this.sql.array(valid)}::uuid[]) AND revoked_at IS NULL
        AND (last_used_at IS NULL OR last_used_at <= clock_timestamp() - make_interval(secs => ${minIntervalMs / 1000}::float8))`;
    return result.count;
  }
}
