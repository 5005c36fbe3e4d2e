import { failedPrecondition, notFound, type SessionEndFilter, type SessionRecord, type SessionRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';
import { transaction } from './transaction.pg.ts';

interface SessionRow {
  id: string;
  user_id: string;
  org_id: string;
  created_at_ms: number;
  expires_at_ms: number;
  ended_at_ms: number | null;
  provider_id: string | null;
}

const toRecord = (row: SessionRow): SessionRecord => ({
  id: row.id,
  userId: row.user_id,
  orgId: row.org_id,
  createdAtMs: row.created_at_ms,
  expiresAtMs: row.expires_at_ms,
  endedAtMs: row.ended_at_ms,
  providerId: row.provider_id,
});

/** Login sessions in `sessions`. Statements are scoped by the session's user (or its own id). */
export class PgSessionRepository implements SessionRepository {
  constructor(private readonly sql: Sql) {}

  async create(input: { userId: string; orgId: string; expiresAtMs: number; providerId?: string | null }): Promise<SessionRecord> {
    if (!isUuid(input.userId)) throw notFound('user', input.userId);
    if (!isUuid(input.orgId)) throw notFound('organisation', input.orgId);
    const providerId = input.providerId ?? null;
    if (providerId !== null && !isUuid(providerId)) throw failedPrecondition('this identity provider is disabled');
    return transaction(this.sql, async (tx) => {
      // The insert first: its foreign key takes the org row's key-share lock, so this takes the org
      // before the provider's row, in the order a disable takes them (removals and provider writes
      // lock the org first). Then a concurrent disable either came first and the stamp below finds
      // the provider disabled (undoing the insert), or waits for this session and then ends it.
      const [row] = await translateErrors(
        () => tx<SessionRow[]>`
          INSERT INTO sessions (user_id, org_id, created_at_ms, expires_at_ms, provider_id)
          VALUES (${input.userId}, ${input.orgId}, floor(extract(epoch FROM clock_timestamp()) * 1000)::int8, ${input.expiresAtMs}::int8,
                  ${providerId})
          RETURNING id, user_id, org_id, created_at_ms, expires_at_ms, ended_at_ms, provider_id`,
        { resource: 'session', parent: 'user or organisation' },
      );
      if (!row) throw new Error('INSERT ... RETURNING gave no row');
      if (providerId !== null) {
        const [provider] = await tx`
          UPDATE auth_providers SET last_used_at_ms = ${row.created_at_ms}::int8
          WHERE id = ${providerId} AND org_id = ${input.orgId} AND enabled
          RETURNING id`;
        if (!provider) throw failedPrecondition('this identity provider is disabled');
      }
      return toRecord(row);
    });
  }

  async get(sessionId: string): Promise<SessionRecord | null> {
    if (!isUuid(sessionId)) return null;
    const [row] = await this.sql<SessionRow[]>`
      SELECT id, user_id, org_id, created_at_ms, expires_at_ms, ended_at_ms, provider_id FROM sessions WHERE id = ${sessionId}`;
    return row ? toRecord(row) : null;
  }

  async listLive(userId: string, nowMs: number): Promise<SessionRecord[]> {
    if (!isUuid(userId)) return [];
    const rows = await this.sql<SessionRow[]>`
      SELECT id, user_id, org_id, created_at_ms, expires_at_ms, ended_at_ms, provider_id FROM sessions
      WHERE user_id = ${userId} AND ended_at_ms IS NULL AND expires_at_ms > ${nowMs}::int8
      ORDER BY created_at_ms, id`;
    return rows.map(toRecord);
  }

  async end(filter: SessionEndFilter, nowMs: number): Promise<number> {
    // An id no row can have selects nothing, except in exceptSessionId, where it spares nothing
    // (as an unknown well-formed id does): "all but this one" must never fail open.
    const ids = [filter.userId, filter.sessionId, filter.orgId];
    if (ids.some((id) => id !== undefined && !isUuid(id))) return 0;
    const exceptSessionId = filter.exceptSessionId !== undefined && isUuid(filter.exceptSessionId) ? filter.exceptSessionId : undefined;
    const result = await this.sql`
      UPDATE sessions SET ended_at_ms = ${nowMs}::int8
      WHERE user_id = ${filter.userId} AND ended_at_ms IS NULL AND expires_at_ms > ${nowMs}::int8
        ${filter.sessionId !== undefined ? this.sql`AND id = ${filter.sessionId}` : this.sql``}
        ${exceptSessionId !== undefined ? this.sql`AND id <> ${exceptSessionId}` : this.sql``}
        ${filter.orgId !== undefined ? this.sql`AND org_id = ${filter.orgId}` : this.sql``}`;
    return result.count;
  }

  async endOpenedBy(providerIds: string[], nowMs: number): Promise<string[]> {
    const ids = providerIds.filter(isUuid);
    if (ids.length === 0) return [];
    const rows = await this.sql<Array<{ user_id: string }>>`
      UPDATE sessions SET ended_at_ms = ${nowMs}::int8
      WHERE provider_id = ANY (${ids}::uuid[]) AND ended_at_ms IS NULL AND expires_at_ms > ${nowMs}::int8
      RETURNING user_id`;
    return [...new Set(rows.map((row) => row.user_id))];
  }

  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    if (limit < 1) return 0;
    // Refresh tokens of the session go with it (ON DELETE CASCADE).
    const result = await this.sql`
      DELETE FROM sessions
      WHERE id IN (
        SELECT id FROM sessions WHERE ended_at_ms IS NOT NULL OR expires_at_ms <= ${nowMs}::int8 LIMIT ${limit})`;
    return result.count;
  }
}
