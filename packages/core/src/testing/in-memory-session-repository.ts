import { failedPrecondition, notFound } from '../errors/domain-error.ts';
import type { SessionEndFilter, SessionRecord, SessionRepository } from '../ports/session-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

/** SessionRepository over the shared in-memory tables. */
export class InMemorySessionRepository implements SessionRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(input: { userId: string; orgId: string; expiresAtMs: number; providerId?: string | null }): Promise<SessionRecord> {
    // As the foreign keys of `sessions` would.
    if (!this.state.users.has(input.userId)) throw notFound('user', input.userId);
    this.state.requireOrg({ orgId: input.orgId });
    if (input.providerId) {
      // As the adapter's stamp of the provider's last use, which finds only an enabled provider of the org.
      const provider = this.state.authProviders.get(input.providerId);
      if (!provider || provider.orgId !== input.orgId || !provider.enabled) throw failedPrecondition('this identity provider is disabled');
      provider.lastUsedAtMs = this.state.now();
    }
    const session: SessionRecord = {
      id: this.state.newId(),
      userId: input.userId,
      orgId: input.orgId,
      createdAtMs: this.state.now(),
      expiresAtMs: input.expiresAtMs,
      endedAtMs: null,
      providerId: input.providerId ?? null,
    };
    this.state.sessions.set(session.id, session);
    return { ...session };
  }

  async get(sessionId: string): Promise<SessionRecord | null> {
    const session = this.state.sessions.get(sessionId);
    return session ? { ...session } : null;
  }

  async listLive(userId: string, nowMs: number): Promise<SessionRecord[]> {
    return [...this.state.sessions.values()]
      .filter((s) => s.userId === userId && s.endedAtMs === null && s.expiresAtMs > nowMs)
      .sort((a, b) => a.createdAtMs - b.createdAtMs)
      .map((s) => ({ ...s }));
  }

  async end(filter: SessionEndFilter, nowMs: number): Promise<number> {
    let ended = 0;
    for (const session of this.state.sessions.values()) {
      // Live sessions only, as listLive counts them: an expired one is not ended (nor counted).
      if (session.userId !== filter.userId || session.endedAtMs !== null || session.expiresAtMs <= nowMs) continue;
      if (filter.sessionId !== undefined && session.id !== filter.sessionId) continue;
      if (filter.exceptSessionId !== undefined && session.id === filter.exceptSessionId) continue;
      if (filter.orgId !== undefined && session.orgId !== filter.orgId) continue;
      session.endedAtMs = nowMs;
      ended += 1;
    }
    return ended;
  }

  async endOpenedBy(providerIds: string[], nowMs: number): Promise<string[]> {
    const users = new Set<string>();
    for (const session of this.state.sessions.values()) {
      if (session.providerId === null || !providerIds.includes(session.providerId) || session.endedAtMs !== null || session.expiresAtMs <= nowMs) continue;
      session.endedAtMs = nowMs;
      users.add(session.userId);
    }
    return [...users];
  }

  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    const gone = [...this.state.sessions.values()]
      .filter((s) => s.endedAtMs !== null || s.expiresAtMs <= nowMs)
      .slice(0, Math.max(0, limit));
    for (const session of gone) {
      this.state.sessions.delete(session.id);
      // As ON DELETE CASCADE on refresh_tokens.session_id would.
      for (const [id, token] of this.state.refreshTokens) if (token.sessionId === session.id) this.state.refreshTokens.delete(id);
    }
    return gone.length;
  }
}
