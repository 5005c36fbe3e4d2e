import { alreadyExists, failedPrecondition, notFound } from '../errors/domain-error.ts';
import type { Membership, User } from '../model/entities.ts';
import type { OrgScope } from '../ports/scopes.ts';
import type {
  AuthProvider,
  AuthProviderInput,
  AuthProviderRepository,
  PendingSsoLogin,
  SsoCodeGrant,
  SsoIdentityRepository,
  SsoLoginRepository,
  SsoProvisionInput,
} from '../ports/sso-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

const copy = (provider: AuthProvider): AuthProvider => structuredClone(provider);
const identityKey = (providerId: string, subject: string): string => `${providerId}\n${subject}`;

/** AuthProviderRepository over the shared in-memory tables. */
export class InMemoryAuthProviderRepository implements AuthProviderRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(scope: OrgScope, input: AuthProviderInput, maxPerOrg: number): Promise<AuthProvider> {
    this.state.requireOrg(scope);
    if (this.state.authProviders.has(input.id)) throw alreadyExists('auth provider', input.id);
    if ((await this.list(scope)).length >= maxPerOrg) {
      throw failedPrecondition(`the organisation already has ${maxPerOrg} identity providers; delete one first`);
    }
    const now = this.state.now();
    const provider: AuthProvider = {
      ...structuredClone(input),
      groupBindings: structuredClone(input.groupBindings ?? []),
      orgId: scope.orgId,
      createdBy: input.updatedBy ? { ...input.updatedBy } : null,
      writtenByUserIds: input.updatedBy ? [input.updatedBy.userId] : [],
      lastUsedAtMs: null,
      createdAtMs: now,
      updatedAtMs: now,
    };
    this.state.authProviders.set(provider.id, provider);
    return copy(provider);
  }

  async list(scope: OrgScope): Promise<AuthProvider[]> {
    return [...this.state.authProviders.values()].filter((p) => p.orgId === scope.orgId).sort((a, b) => a.createdAtMs - b.createdAtMs).map(copy);
  }

  async get(scope: OrgScope, providerId: string): Promise<AuthProvider> {
    const provider = this.state.authProviders.get(providerId);
    if (!provider || provider.orgId !== scope.orgId) throw notFound('auth provider', providerId);
    return copy(provider);
  }

  async findById(providerId: string): Promise<AuthProvider | null> {
    const provider = this.state.authProviders.get(providerId);
    return provider ? copy(provider) : null;
  }

  async update(scope: OrgScope, input: AuthProviderInput): Promise<AuthProvider> {
    const current = await this.get(scope, input.id);
    const provider: AuthProvider = {
      ...structuredClone(input),
      groupBindings: structuredClone(input.groupBindings ?? []),
      orgId: current.orgId,
      createdBy: current.createdBy,
      writtenByUserIds: input.updatedBy && !current.writtenByUserIds.includes(input.updatedBy.userId) ? [...current.writtenByUserIds, input.updatedBy.userId] : current.writtenByUserIds,
      lastUsedAtMs: current.lastUsedAtMs,
      createdAtMs: current.createdAtMs,
      updatedAtMs: Math.max(this.state.now(), current.updatedAtMs + 1),
    };
    this.state.authProviders.set(provider.id, provider);
    return copy(provider);
  }

  async delete(scope: OrgScope, providerId: string): Promise<void> {
    await this.get(scope, providerId);
    this.state.authProviders.delete(providerId);
    // As ON DELETE CASCADE would.
    for (const [hash, pending] of this.state.ssoPending) if (pending.providerId === providerId) this.state.ssoPending.delete(hash);
    for (const [hash, code] of this.state.ssoCodes) if (code.providerId === providerId) this.state.ssoCodes.delete(hash);
    for (const key of this.state.ssoIdentities.keys()) if (key.startsWith(`${providerId}\n`)) this.state.ssoIdentities.delete(key);
  }

  async confirmEnable(scope: OrgScope, providerId: string, expected: { requestedByUserId: string; updatedAtMs: number }): Promise<AuthProvider | null> {
    const provider = this.state.authProviders.get(providerId);
    if (!provider || provider.orgId !== scope.orgId) return null;
    if (provider.enableRequestedBy?.userId !== expected.requestedByUserId || provider.updatedAtMs !== expected.updatedAtMs) return null;
    provider.enabled = true;
    provider.enableRequestedBy = null;
    provider.updatedAtMs = Math.max(this.state.now(), provider.updatedAtMs + 1);
    return copy(provider);
  }

  async disableWrittenBy(scope: OrgScope, userId: string): Promise<AuthProvider[]> {
    const before: AuthProvider[] = [];
    for (const provider of this.state.authProviders.values()) {
      if (provider.orgId !== scope.orgId || !provider.writtenByUserIds.includes(userId)) continue;
      if (!provider.enabled && provider.enableRequestedBy === null) continue;
      before.push(copy(provider));
      provider.enabled = false;
      provider.enableRequestedBy = null;
      provider.updatedAtMs = Math.max(this.state.now(), provider.updatedAtMs + 1);
    }
    return before;
  }
}

/** SsoLoginRepository over the shared in-memory tables. */
export class InMemorySsoLoginRepository implements SsoLoginRepository {
  constructor(private readonly state: InMemoryState) {}

  async createPending(input: Omit<PendingSsoLogin, 'createdAtMs'>, nowMs: number, maxLivePerProvider: number): Promise<boolean> {
    // An unknown provider, or an org that is not the provider's, stores nothing (as the adapter).
    if (this.state.authProviders.get(input.providerId)?.orgId !== input.orgId || maxLivePerProvider < 1) return false;
    if (this.state.ssoPending.has(input.stateHash)) throw alreadyExists('pending login', 'state');
    // Newest first; everything past the newest maxLivePerProvider - 1 makes room for this one.
    const live = [...this.state.ssoPending.values()]
      .filter((p) => p.providerId === input.providerId && p.expiresAtMs > nowMs)
      .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.stateHash < b.stateHash ? -1 : 1));
    for (const dropped of live.slice(maxLivePerProvider - 1)) this.state.ssoPending.delete(dropped.stateHash);
    this.state.ssoPending.set(input.stateHash, { ...input, createdAtMs: nowMs });
    return true;
  }

  async consumePending(stateHash: string, nowMs: number): Promise<PendingSsoLogin | null> {
    const pending = this.state.ssoPending.get(stateHash);
    this.state.ssoPending.delete(stateHash);
    return pending && pending.expiresAtMs > nowMs ? { ...pending } : null;
  }

  async createCode(input: SsoCodeGrant & { codeHash: string; expiresAtMs: number }): Promise<void> {
    // As the foreign keys of `sso_codes` would.
    this.state.requireOrg({ orgId: input.orgId });
    if (!this.state.authProviders.has(input.providerId) || !this.state.users.has(input.userId)) throw notFound('auth provider or user');
    if (this.state.ssoCodes.has(input.codeHash)) throw alreadyExists('sign-in code', 'code');
    const { codeHash, ...grant } = input;
    this.state.ssoCodes.set(codeHash, grant);
  }

  async consumeCode(codeHash: string, nowMs: number): Promise<SsoCodeGrant | null> {
    const grant = this.state.ssoCodes.get(codeHash);
    this.state.ssoCodes.delete(codeHash);
    return grant && grant.expiresAtMs > nowMs ? { providerId: grant.providerId, userId: grant.userId, orgId: grant.orgId } : null;
  }

  async spendState(stateHash: string, expiresAtMs: number): Promise<boolean> {
    if (this.state.ssoSpentStates.has(stateHash)) return false;
    this.state.ssoSpentStates.set(stateHash, { expiresAtMs });
    return true;
  }

  async isStateSpent(stateHash: string): Promise<boolean> {
    return this.state.ssoSpentStates.has(stateHash);
  }

  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    let pruned = 0;
    for (const table of [this.state.ssoPending, this.state.ssoSpentStates, this.state.ssoCodes] as Array<Map<string, { expiresAtMs: number }>>) {
      for (const [key, row] of table) {
        if (pruned >= limit) return pruned;
        if (row.expiresAtMs <= nowMs) {
          table.delete(key);
          pruned += 1;
        }
      }
    }
    return pruned;
  }
}

/** SsoIdentityRepository over the shared in-memory tables. */
export class InMemorySsoIdentityRepository implements SsoIdentityRepository {
  constructor(private readonly state: InMemoryState) {}

  async findUser(providerId: string, subject: string): Promise<string | null> {
    return this.state.ssoIdentities.get(identityKey(providerId, subject)) ?? null;
  }

  async bind(input: { providerId: string; subject: string; userId: string }): Promise<void> {
    if (!this.state.authProviders.has(input.providerId) || !this.state.users.has(input.userId)) throw notFound('auth provider or user');
    const key = identityKey(input.providerId, input.subject);
    if (this.state.ssoIdentities.has(key)) throw alreadyExists('identity', input.subject);
    this.state.ssoIdentities.set(key, input.userId);
  }

  async provision(input: SsoProvisionInput): Promise<{ user: User; membership: Membership }> {
    // Every check before any write: all three rows or none, as the adapter's transaction.
    this.state.requireOrg({ orgId: input.orgId });
    if (!this.state.authProviders.has(input.providerId)) throw notFound('auth provider', input.providerId);
    const lower = input.email.toLowerCase();
    if ([...this.state.users.values()].some((u) => u.email.toLowerCase() === lower)) throw alreadyExists('account', input.email);
    const key = identityKey(input.providerId, input.subject);
    if (this.state.ssoIdentities.has(key)) throw alreadyExists('account', input.email);
    const now = this.state.now();
    const user: User = { id: this.state.newId(), email: input.email, displayName: input.displayName, passwordHash: input.passwordHash, createdAtMs: now, emailVerifiedAtMs: null };
    const membership: Membership = { orgId: input.orgId, userId: user.id, role: input.role, createdAtMs: now, bindings: null };
    this.state.users.set(user.id, user);
    this.state.memberships.push(membership);
    this.state.ssoIdentities.set(key, user.id);
    return { user: { ...user }, membership: { ...membership } };
  }
}
