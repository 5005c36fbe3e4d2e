import { type PendingSsoLogin, type SsoCodeGrant, type SsoLoginRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface PendingRow {
  state_hash: string;
  provider_id: string;
  org_id: string;
  redirect_uri: string;
  return_uri: string | null;
  app_state: string | null;
  nonce: string | null;
  code_verifier: string | null;
  saml_request_id: string | null;
  created_at_ms: number;
  expires_at_ms: number;
}

const toPending = (row: PendingRow): PendingSsoLogin => ({
  stateHash: row.state_hash,
  providerId: row.provider_id,
  orgId: row.org_id,
  redirectUri: row.redirect_uri,
  returnUri: row.return_uri,
  appState: row.app_state,
  nonce: row.nonce,
  codeVerifier: row.code_verifier,
  samlRequestId: row.saml_request_id,
  createdAtMs: row.created_at_ms,
  expiresAtMs: row.expires_at_ms,
});

/**
 * Logins in flight (`sso_pending_logins`), spent browser states (`sso_spent_states`) and one-time
 * codes (`sso_codes`): found by hash and spent by the one statement that reads (or inserts) them,
 * so of two concurrent presentations one wins.
 */
export class PgSsoLoginRepository implements SsoLoginRepository {
  constructor(private readonly sql: Sql) {}

  async createPending(input: Omit<PendingSsoLogin, 'createdAtMs'>, nowMs: number, maxLivePerProvider: number): Promise<boolean> {
    if (!isUuid(input.providerId) || !isUuid(input.orgId) || maxLivePerProvider < 1) return false;
    return translateErrors(
      () =>
        transaction(this.sql, async (tx) => {
          // The provider of that org, held against deletion until the insert is done.
          const [provider] = await tx`
            SELECT 1 FROM auth_providers WHERE id = ${input.providerId} AND org_id = ${input.orgId} FOR KEY SHARE`;
          if (!provider) return false;
          // Full: the oldest logins in flight make room. Concurrent starts may overshoot the cap
          // by a few, which is all it needs (it bounds the table, it is not a quota).
          const [live] = await tx<Array<{ count: number }>>`
            SELECT count(*)::int AS count FROM (SELECT 1 FROM sso_pending_logins
              WHERE provider_id = ${input.providerId} AND expires_at_ms > ${nowMs}::int8 LIMIT ${maxLivePerProvider}) AS live`;
          // SKIP LOCKED: rows another start (or the pruner) is deleting are left to it. Waiting on
          // them instead made concurrent starts lock overlapping rows in different orders, which
          // PostgreSQL answered with `deadlock detected` (a 500).
          if ((live?.count ?? 0) >= maxLivePerProvider) {
            await tx`
              DELETE FROM sso_pending_logins WHERE state_hash IN (
                SELECT state_hash FROM sso_pending_logins
                WHERE provider_id = ${input.providerId} AND expires_at_ms > ${nowMs}::int8
                ORDER BY created_at_ms DESC, state_hash OFFSET ${maxLivePerProvider - 1}
                FOR UPDATE SKIP LOCKED)`;
          }
          await tx`
            INSERT INTO sso_pending_logins (state_hash, provider_id, org_id, redirect_uri, return_uri, app_state, nonce,
                                            code_verifier, saml_request_id, created_at_ms, expires_at_ms)
            VALUES (${input.stateHash}, ${input.providerId}, ${input.orgId}, ${input.redirectUri}, ${input.returnUri},
                    ${input.appState}, ${input.nonce}, ${input.codeVerifier}, ${input.samlRequestId}, ${nowMs}::int8, ${input.expiresAtMs}::int8)`;
          return true;
        }),
      { resource: 'pending login', name: 'state', parent: 'auth provider' },
    );
  }

  async consumePending(stateHash: string, nowMs: number): Promise<PendingSsoLogin | null> {
    const [row] = await this.sql<PendingRow[]>`
      DELETE FROM sso_pending_logins WHERE state_hash = ${stateHash}
      RETURNING state_hash, provider_id, org_id, redirect_uri, return_uri, app_state, nonce, code_verifier, saml_request_id,
                created_at_ms, expires_at_ms`;
    // An expired one is spent all the same: it could never be used again.
    return row && row.expires_at_ms > nowMs ? toPending(row) : null;
  }

  async createCode(input: SsoCodeGrant & { codeHash: string; expiresAtMs: number }): Promise<void> {
    await translateErrors(
      () => this.sql`
        INSERT INTO sso_codes (code_hash, provider_id, user_id, org_id, expires_at_ms)
        VALUES (${input.codeHash}, ${input.providerId}, ${input.userId}, ${input.orgId}, ${input.expiresAtMs}::int8)`,
      { resource: 'sign-in code', name: 'code', parent: 'auth provider, user or organisation' },
    );
  }

  async consumeCode(codeHash: string, nowMs: number): Promise<SsoCodeGrant | null> {
    const [row] = await this.sql<Array<{ provider_id: string; user_id: string; org_id: string; expires_at_ms: number }>>`
      DELETE FROM sso_codes WHERE code_hash = ${codeHash} RETURNING provider_id, user_id, org_id, expires_at_ms`;
    return row && row.expires_at_ms > nowMs ? { providerId: row.provider_id, userId: row.user_id, orgId: row.org_id } : null;
  }

  async spendState(stateHash: string, expiresAtMs: number): Promise<boolean> {
    const inserted = await this.sql`
      INSERT INTO sso_spent_states (state_hash, expires_at_ms) VALUES (${stateHash}, ${expiresAtMs}::int8)
      ON CONFLICT (state_hash) DO NOTHING`;
    return inserted.count === 1;
  }

  async isStateSpent(stateHash: string): Promise<boolean> {
    const [row] = await this.sql`SELECT 1 FROM sso_spent_states WHERE state_hash = ${stateHash}`;
    return row !== undefined;
  }

  /** Each batch skips rows a concurrent statement holds (SKIP LOCKED): pruning never waits or deadlocks. */
  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    if (limit < 1) return 0;
    const pending = await this.sql`
      DELETE FROM sso_pending_logins WHERE state_hash IN (
        SELECT state_hash FROM sso_pending_logins WHERE expires_at_ms <= ${nowMs}::int8 LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
    let pruned = pending.count;
    if (pruned < limit) {
      const spent = await this.sql`
        DELETE FROM sso_spent_states WHERE state_hash IN (
          SELECT state_hash FROM sso_spent_states WHERE expires_at_ms <= ${nowMs}::int8 LIMIT ${limit - pruned} FOR UPDATE SKIP LOCKED)`;
      pruned += spent.count;
    }
    if (pruned < limit) {
      const codes = await this.sql`
        DELETE FROM sso_codes WHERE code_hash IN (
          SELECT code_hash FROM sso_codes WHERE expires_at_ms <= ${nowMs}::int8 LIMIT ${limit - pruned} FOR UPDATE SKIP LOCKED)`;
      pruned += codes.count;
    }
    return pruned;
  }
}
