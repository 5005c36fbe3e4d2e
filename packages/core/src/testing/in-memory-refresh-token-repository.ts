import { alreadyExists, notFound } from '../errors/domain-error.ts';
import type { RefreshTokenConsumption, RefreshTokenRecord, RefreshTokenRepository } from '../ports/session-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

type StoredRefreshToken = RefreshTokenRecord & { revokedAtMs: number | null };

const toRecord = ({ revokedAtMs: _revoked, ...record }: StoredRefreshToken): RefreshTokenRecord => record;

/** RefreshTokenRepository over the shared in-memory tables; only hashes are stored, as in PostgreSQL. */
export class InMemoryRefreshTokenRepository implements RefreshTokenRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(input: { userId: string; orgId: string; sessionId: string; tokenHash: string; expiresAtMs: number }): Promise<RefreshTokenRecord> {
    // As the foreign keys and the unique token_hash of refresh_tokens would.
    if (!this.state.users.has(input.userId)) throw notFound('user', input.userId);
    this.state.requireOrg({ orgId: input.orgId });
    if (!this.state.sessions.has(input.sessionId)) throw notFound('session', input.sessionId);
    if (this.findByHash(input.tokenHash)) throw alreadyExists('refresh token', 'hash');
    const token: StoredRefreshToken = {
      id: this.state.newId(),
      userId: input.userId,
      orgId: input.orgId,
      sessionId: input.sessionId,
      tokenHash: input.tokenHash,
      createdAtMs: this.state.now(),
      expiresAtMs: input.expiresAtMs,
      revokedAtMs: null,
    };
    this.state.refreshTokens.set(token.id, token);
    return toRecord(token);
  }

  async consume(tokenHash: string, nowMs: number): Promise<RefreshTokenConsumption | null> {
    // No await between the check and the write: under the event loop this is as atomic as the
    // adapter's single UPDATE, so of concurrent consumes exactly one gets the token.
    const token = this.findByHash(tokenHash);
    if (!token || token.expiresAtMs <= nowMs) return null;
    if (token.revokedAtMs !== null) return { outcome: 'reused', token: toRecord(token) };
    token.revokedAtMs = nowMs;
    return { outcome: 'consumed', token: toRecord(token) };
  }

  async revokeAllForUser(userId: string): Promise<number> {
    const nowMs = this.state.now();
    let revoked = 0;
    for (const token of this.state.refreshTokens.values()) {
      if (token.userId !== userId || token.revokedAtMs !== null) continue;
      token.revokedAtMs = nowMs;
      revoked += 1;
    }
    return revoked;
  }

  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    const expired = [...this.state.refreshTokens.values()]
      .filter((token) => token.expiresAtMs <= nowMs)
      .sort((a, b) => a.expiresAtMs - b.expiresAtMs)
      .slice(0, Math.max(0, limit));
    for (const token of expired) this.state.refreshTokens.delete(token.id);
    return expired.length;
  }

  private findByHash(tokenHash: string): StoredRefreshToken | undefined {
    for (const token of this.state.refreshTokens.values()) {
      if (token.tokenHash === tokenHash) return token;
    }
    return undefined;
  }
}
