import { alreadyExists, failedPrecondition, notFound } from '../errors/domain-error.ts';
import type { Membership, OrgRole, User } from '../model/entities.ts';
import type { OrgScope } from '../ports/scopes.ts';
import type { RoleBinding } from '../rbac/authorize.ts';
import type { UserRepository } from '../ports/tenancy-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

/** UserRepository over the shared in-memory tables; emails are unique case-insensitively, as in `users_email_ci`. */
export class InMemoryUserRepository implements UserRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(input: { email: string; displayName: string; passwordHash: string; emailVerifiedAtMs?: number | null }): Promise<User> {
    if (this.findByEmail(input.email)) throw alreadyExists('user', input.email);
    const user: User = {
      id: this.state.newId(),
      email: input.email,
      displayName: input.displayName,
      passwordHash: input.passwordHash,
      createdAtMs: this.state.now(),
      emailVerifiedAtMs: input.emailVerifiedAtMs ?? null,
    };
    this.state.users.set(user.id, user);
    return { ...user };
  }

  async getById(userId: string): Promise<User | null> {
    const user = this.state.users.get(userId);
    return user ? { ...user } : null;
  }

  async getByEmail(email: string): Promise<User | null> {
    const user = this.findByEmail(email);
    return user ? { ...user } : null;
  }

  async addMembership(input: { orgId: string; userId: string; role: OrgRole }): Promise<Membership> {
    // As the foreign keys would: both parents must exist.
    this.state.requireOrg({ orgId: input.orgId });
    if (!this.state.users.has(input.userId)) throw notFound('user', input.userId);
    if (this.find(input.orgId, input.userId)) throw alreadyExists('membership', input.userId);
    const membership: Membership = { orgId: input.orgId, userId: input.userId, role: input.role, createdAtMs: this.state.now(), bindings: null };
    this.state.memberships.push(membership);
    return { ...membership };
  }

  async getMembership(orgId: string, userId: string): Promise<Membership | null> {
    const membership = this.find(orgId, userId);
    return membership ? { ...membership } : null;
  }

  /** The fake runs one call at a time: nothing can interleave, so nothing to lock. */
  async lockMembership(orgId: string, userId: string): Promise<Membership | null> {
    return this.getMembership(orgId, userId);
  }

  async listMemberships(userId: string): Promise<Membership[]> {
    return this.state.memberships
      .filter((m) => m.userId === userId)
      .sort((a, b) => a.createdAtMs - b.createdAtMs)
      .map((m) => ({ ...m }));
  }

  async listOrgUsers(scope: OrgScope): Promise<Array<{ user: User; membership: Membership }>> {
    const rows: Array<{ user: User; membership: Membership }> = [];
    const members = this.state.memberships.filter((m) => m.orgId === scope.orgId).sort((a, b) => a.createdAtMs - b.createdAtMs);
    for (const membership of members) {
      const user = this.state.users.get(membership.userId);
      if (user) rows.push({ user: { ...user }, membership: { ...membership } });
    }
    return rows;
  }

  async setPasswordHash(userId: string, passwordHash: string): Promise<void> {
    const user = this.state.users.get(userId);
    if (!user) throw notFound('user', userId);
    user.passwordHash = passwordHash;
  }

  async markEmailVerified(userId: string, nowMs: number): Promise<void> {
    const user = this.state.users.get(userId);
    if (!user) throw notFound('user', userId);
    user.emailVerifiedAtMs ??= nowMs;
  }

  async releaseMemberships(userId: string, keepOrgIds: readonly string[]): Promise<Membership[]> {
    const released = this.state.memberships.filter((m) => m.userId === userId && !keepOrgIds.includes(m.orgId));
    for (const membership of released) this.state.memberships.splice(this.state.memberships.indexOf(membership), 1);
    return released.map((m) => ({ ...m }));
  }

  async deleteIfOrgless(userId: string): Promise<boolean> {
    if (!this.state.users.has(userId) || this.state.memberships.some((m) => m.userId === userId)) return false;
    this.state.users.delete(userId);
    return true;
  }

  async setMembershipRole(scope: OrgScope, userId: string, role: OrgRole): Promise<Membership> {
    const membership = this.find(scope.orgId, userId);
    if (!membership) throw notFound('member', userId);
    if (membership.role === 'org_admin' && role !== 'org_admin' && this.adminCount(scope.orgId) === 1) {
      throw failedPrecondition('the last org_admin of an organisation cannot be demoted');
    }
    membership.role = role;
    // An org_admin is admin everywhere: a promotion drops the member's bindings.
    if (role === 'org_admin') membership.bindings = null;
    return { ...membership };
  }

  async setBindings(scope: OrgScope, userId: string, bindings: RoleBinding[] | null): Promise<Membership> {
    const membership = this.find(scope.orgId, userId);
    if (!membership) throw notFound('member', userId);
    if (membership.role === 'org_admin') throw failedPrecondition('an org_admin is admin everywhere: make the member an org_member before giving it bindings');
    membership.bindings = bindings === null ? null : bindings.map((binding) => ({ ...binding }));
    return { ...membership, bindings: membership.bindings?.map((binding) => ({ ...binding })) ?? null };
  }

  async removeMembership(scope: OrgScope, userId: string): Promise<void> {
    const membership = this.find(scope.orgId, userId);
    if (!membership) throw notFound('member', userId);
    if (membership.role === 'org_admin' && this.adminCount(scope.orgId) === 1) {
      throw failedPrecondition('the last org_admin of an organisation cannot be removed');
    }
    this.state.memberships.splice(this.state.memberships.indexOf(membership), 1);
  }

  private adminCount(orgId: string): number {
    return this.state.memberships.filter((m) => m.orgId === orgId && m.role === 'org_admin').length;
  }

  private findByEmail(email: string): User | undefined {
    const wanted = email.toLowerCase();
    for (const user of this.state.users.values()) if (user.email.toLowerCase() === wanted) return user;
    return undefined;
  }

  private find(orgId: string, userId: string): Membership | undefined {
    return this.state.memberships.find((m) => m.orgId === orgId && m.userId === userId);
  }
}
