import { notFound } from '../errors/domain-error.ts';
import type { ApiToken } from '../model/entities.ts';
import type { OrgScope } from '../ports/scopes.ts';
import type { ApiTokenRepository } from '../ports/tenancy-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

const copy = (token: ApiToken): ApiToken => ({ ...token, scope: { ...token.scope } });

/** ApiTokenRepository over the shared in-memory tables (hashes kept beside the records). */
export class InMemoryApiTokenRepository implements ApiTokenRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(scope: OrgScope, input: Parameters<ApiTokenRepository['create']>[1]): Promise<ApiToken> {
    if (!this.state.orgs.has(scope.orgId)) throw notFound('organisation', scope.orgId);
    const token: ApiToken = {
      id: this.state.newId(),
      orgId: scope.orgId,
      name: input.name,
      role: input.role,
      scope: { ...input.scope },
      tokenPrefix: input.tokenPrefix,
      createdByUserId: input.createdByUserId,
      createdAtMs: this.state.now(),
      expiresAtMs: input.expiresAtMs,
      revokedAtMs: null,
      lastUsedAtMs: null,
    };
    this.state.apiTokens.set(token.id, { token, hash: input.tokenHash });
    return copy(token);
  }

  async findActiveByHash(tokenHash: string): Promise<ApiToken | null> {
    for (const { token, hash } of this.state.apiTokens.values()) if (hash === tokenHash && token.revokedAtMs === null) return copy(token);
    return null;
  }

  async list(scope: OrgScope): Promise<ApiToken[]> {
    return [...this.state.apiTokens.values()]
      .map(({ token }) => token)
      .filter((token) => token.orgId === scope.orgId && token.revokedAtMs === null)
      .sort((a, b) => a.createdAtMs - b.createdAtMs)
      .map(copy);
  }

  async get(scope: OrgScope, tokenId: string): Promise<ApiToken | null> {
    const entry = this.state.apiTokens.get(tokenId);
    return entry && entry.token.orgId === scope.orgId ? copy(entry.token) : null;
  }

  async revoke(scope: OrgScope, tokenId: string, nowMs: number): Promise<ApiToken> {
    const entry = this.state.apiTokens.get(tokenId);
    if (!entry || entry.token.orgId !== scope.orgId || entry.token.revokedAtMs !== null) throw notFound('API token', tokenId);
    entry.token.revokedAtMs = nowMs;
    return copy(entry.token);
  }

  async pruneEnded(beforeMs: number, limit: number): Promise<number> {
    let deleted = 0;
    for (const [id, { token }] of this.state.apiTokens) {
      if (deleted >= limit) break;
      const ended = (token.revokedAtMs !== null && token.revokedAtMs < beforeMs) || (token.expiresAtMs !== null && token.expiresAtMs < beforeMs);
      if (!ended) continue;
      this.state.apiTokens.delete(id);
      deleted++;
    }
    return deleted;
  }

  async recordUses(tokenIds: readonly string[], minIntervalMs: number): Promise<number> {
    const now = this.state.now();
    let changed = 0;
    for (const id of new Set(tokenIds)) {
      const token = this.state.apiTokens.get(id)?.token;
      if (!token || token.revokedAtMs !== null) continue;
      if (token.lastUsedAtMs !== null && now - token.lastUsedAtMs < minIntervalMs) continue;
      token.lastUsedAtMs = now;
      changed++;
    }
    return changed;
  }
}
