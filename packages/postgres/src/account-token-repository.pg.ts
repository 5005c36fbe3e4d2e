import type { AccountToken, AccountTokenPurpose, AccountTokenRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface TokenRow {
  purpose: AccountTokenPurpose;
  user_id: string;
  email: string;
  created_at_ms: number;
  expires_at_ms: number;
}

const toToken = (row: TokenRow): AccountToken => ({
  purpose: row.purpose,
  userId: row.user_id,
  email: row.email,
  createdAtMs: Number(row.created_at_ms),
  expiresAtMs: Number(row.expires_at_ms),
});

/** Emailed single-use secrets in `account_tokens`, by hash; each statement is scoped by the hash or the user. */
export class PgAccountTokenRepository implements AccountTokenRepository {
  constructor(private readonly sql: Sql) {}

  async create(input: { tokenHash: string; purpose: AccountTokenPurpose; userId: string; email: string; expiresAtMs: number }, nowMs: number): Promise<AccountToken> {
    const [row] = await translateErrors(
      () => this.sql<TokenRow[]>`
        INSERT INTO account_tokens (token_hash, purpose, user_id, email, created_at_ms, expires_at_ms)
        VALUES (${input.tokenHash}, ${input.purpose}, ${input.userId}, ${input.email}, ${nowMs}, ${input.expiresAtMs})
        RETURNING purpose, user_id, email, created_at_ms, expires_at_ms`,
      { resource: 'account token', parent: 'user' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toToken(row);
  }

  async consume(tokenHash: string, purpose: AccountTokenPurpose, nowMs: number): Promise<AccountToken | null> {
    // One statement: of two concurrent presentations one spends it, the other finds nothing.
    const [row] = await this.sql<TokenRow[]>`
      UPDATE account_tokens SET used_at_ms = ${nowMs}
      WHERE token_hash = ${tokenHash} AND purpose = ${purpose} AND used_at_ms IS NULL AND expires_at_ms > ${nowMs}
      RETURNING purpose, user_id, email, created_at_ms, expires_at_ms`;
    return row ? toToken(row) : null;
  }

  async revokeAll(userId: string, purpose: AccountTokenPurpose, nowMs: number): Promise<number> {
    if (!isUuid(userId)) return 0;
    const result = await this.sql`
      UPDATE account_tokens SET used_at_ms = ${nowMs} WHERE user_id = ${userId} AND purpose = ${purpose} AND used_at_ms IS NULL`;
    return result.count;
  }

  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    const result = await this.sql`
      DELETE FROM account_tokens WHERE token_hash IN (
        SELECT token_hash FROM account_tokens WHERE expires_at_ms <= ${nowMs} LIMIT ${limit} FOR UPDATE SKIP LOCKED)`;
    return result.count;
  }
}
