import { notFound, type RefreshTokenConsumption, type RefreshTokenRecord, type RefreshTokenRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface RefreshTokenRow {
  id: string;
  user_id: string;
  org_id: string;
  session_id: string;
  token_hash: string;
  created_at_ms: number;
  expires_at_ms: number;
}

const toRecord = (row: RefreshTokenRow): RefreshTokenRecord => ({
  id: row.id,
  userId: row.user_id,
  orgId: row.org_id,
  sessionId: row.session_id,
  tokenHash: row.token_hash,
  createdAtMs: row.created_at_ms,
  expiresAtMs: row.expires_at_ms,
});

/**
 * Refresh tokens in `refresh_tokens` (hashes only). Statements are scoped by the token's hash or
 * its user: a presented token is how a session discovers its user and org in the first place.
 */
export class PgRefreshTokenRepository implements RefreshTokenRepository {
  constructor(private readonly sql: Sql) {}

  async create(input: { userId: string; orgId: string; sessionId: string; tokenHash: string; expiresAtMs: number }): Promise<RefreshTokenRecord> {
    if (!isUuid(input.userId)) throw notFound('user', input.userId);
    if (!isUuid(input.orgId)) throw notFound('organisation', input.orgId);
    if (!isUuid(input.sessionId)) throw notFound('session', input.sessionId);
    // The foreign keys to users and orgs reject unknown parents; the unique hash rejects a replay.
    const [row] = await translateErrors(
      () => this.sql<RefreshTokenRow[]>`
        INSERT INTO refresh_tokens (user_id, org_id, session_id, token_hash, created_at_ms, expires_at_ms)
        VALUES (${input.userId}, ${input.orgId}, ${input.sessionId}, ${input.tokenHash},
                floor(extract(epoch FROM clock_timestamp()) * 1000)::int8, ${input.expiresAtMs}::int8)
        RETURNING id, user_id, org_id, session_id, token_hash, created_at_ms, expires_at_ms`,
      { resource: 'refresh token', name: 'hash', parent: 'user, organisation or session' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toRecord(row);
  }

  async consume(tokenHash: string, nowMs: number): Promise<RefreshTokenConsumption | null> {
    // Check and revoke in one statement: of concurrent consumes, the row lock lets one update
    // it and the others re-check `revoked_at_ms IS NULL` on the new row version and match nothing.
    const [spent] = await this.sql<RefreshTokenRow[]>`
      UPDATE refresh_tokens SET revoked_at_ms = ${nowMs}::int8
      WHERE token_hash = ${tokenHash} AND revoked_at_ms IS NULL AND expires_at_ms > ${nowMs}::int8
      RETURNING id, user_id, org_id, session_id, token_hash, created_at_ms, expires_at_ms`;
    if (spent) return { outcome: 'consumed', token: toRecord(spent) };
    // Not spendable: an unexpired token that exists was spent before, by someone (a replay).
    const [earlier] = await this.sql<RefreshTokenRow[]>`
      SELECT id, user_id, org_id, session_id, token_hash, created_at_ms, expires_at_ms FROM refresh_tokens
      WHERE token_hash = ${tokenHash} AND revoked_at_ms IS NOT NULL AND expires_at_ms > ${nowMs}::int8`;
    return earlier ? { outcome: 'reused', token: toRecord(earlier) } : null;
  }

  /**
   * Maintenance across every user. No index on `expires_at_ms` (the table is being reworked
   * elsewhere and is small next to idempotency answers): with no ORDER BY the scan stops at the
   * first `limit` expired rows, so a batch costs little while many have expired.
   */
  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    if (limit < 1) return 0;
    const result = await this.sql`
      DELETE FROM refresh_tokens
      WHERE id IN (
        SELECT id FROM refresh_tokens WHERE expires_at_ms <= ${nowMs}::int8 LIMIT ${limit})`;
    return result.count;
  }

  async revokeAllForUser(userId: string): Promise<number> {
    if (!isUuid(userId)) return 0;
    const result = await this.sql`
      UPDATE refresh_tokens SET revoked_at_ms = floor(extract(epoch FROM clock_timestamp()) * 1000)::int8
      WHERE user_id = ${userId} AND revoked_at_ms IS NULL`;
    return result.count;
  }
}
