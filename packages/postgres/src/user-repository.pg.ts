import { failedPrecondition, notFound, type Membership, type OrgRole, type OrgScope, type RoleBinding, type User, type UserRepository } from '@switchyard/core';
import { bindingToStored, bindingsFromStored, type StoredBinding } from './role-bindings.pg.ts';
import type { Sql } from './connect.ts';
import { transaction } from './transaction.pg.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface UserRow {
  id: string;
  email: string;
  display_name: string;
  password_hash: string;
  created_at_ms: number;
  email_verified_at_ms: number | null;
}

interface MembershipRow {
  org_id: string;
  user_id: string;
  role: OrgRole;
  created_at_ms: number;
  bindings: StoredBinding[] | null;
}

const toUser = (row: UserRow): User => ({
  id: row.id,
  email: row.email,
  displayName: row.display_name,
  passwordHash: row.password_hash,
  createdAtMs: row.created_at_ms,
  emailVerifiedAtMs: row.email_verified_at_ms === null ? null : Number(row.email_verified_at_ms),
});

const toMembership = (row: MembershipRow): Membership => ({
  orgId: row.org_id,
  userId: row.user_id,
  role: row.role,
  createdAtMs: row.created_at_ms,
  bindings: bindingsFromStored(row.bindings),
});

/**
 * Users (global, one login across orgs) in `users` and their org memberships in `memberships`.
 * Membership statements are scoped by org_id; user rows belong to no single org.
 */
export class PgUserRepository implements UserRepository {
  constructor(private readonly sql: Sql) {}

  async create(input: { email: string; displayName: string; passwordHash: string; emailVerifiedAtMs?: number | null }): Promise<User> {
    // The unique index on lower(email) makes a differently-cased duplicate a unique violation.
    const [row] = await translateErrors(
      () => this.sql<UserRow[]>`
        INSERT INTO users (email, display_name, password_hash, email_verified_at_ms)
        VALUES (${input.email}, ${input.displayName}, ${input.passwordHash}, ${input.emailVerifiedAtMs ?? null})
        RETURNING id, email, display_name, password_hash,
                  floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms, email_verified_at_ms`,
      { resource: 'user', name: input.email },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toUser(row);
  }

  async getById(userId: string): Promise<User | null> {
    if (!isUuid(userId)) return null;
    const [row] = await this.sql<UserRow[]>`
      SELECT id, email, display_name, password_hash, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms, email_verified_at_ms
      FROM users WHERE id = ${userId}`;
    return row ? toUser(row) : null;
  }

  async getByEmail(email: string): Promise<User | null> {
    // lower(email) = lower($1) is the expression the unique index is built on, so this is one probe.
    const [row] = await this.sql<UserRow[]>`
      SELECT id, email, display_name, password_hash, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms, email_verified_at_ms
      FROM users WHERE lower(email) = lower(${email})`;
    return row ? toUser(row) : null;
  }

  async addMembership(input: { orgId: string; userId: string; role: OrgRole }): Promise<Membership> {
    if (!isUuid(input.orgId)) throw notFound('organisation', input.orgId);
    if (!isUuid(input.userId)) throw notFound('user', input.userId);
    const [row] = await translateErrors(
      () => this.sql<MembershipRow[]>`
        INSERT INTO memberships (org_id, user_id, role) VALUES (${input.orgId}, ${input.userId}, ${input.role})
        RETURNING org_id, user_id, role, bindings, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms`,
      { resource: 'membership', name: input.userId, parent: 'organisation or user' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toMembership(row);
  }

  async getMembership(orgId: string, userId: string): Promise<Membership | null> {
    if (!isUuid(orgId) || !isUuid(userId)) return null;
    const [row] = await this.sql<MembershipRow[]>`
      SELECT org_id, user_id, role, bindings, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms
      FROM memberships WHERE org_id = ${orgId} AND user_id = ${userId}`;
    return row ? toMembership(row) : null;
  }

  async lockMembership(orgId: string, userId: string): Promise<Membership | null> {
    if (!isUuid(orgId) || !isUuid(userId)) return null;
    // The org row, as removeMembership and setMembershipRole lock it first (withOrgAdminsLocked),
    // and as a provider's create does: one lock order, so no deadlock with them. Either they wait
    // for this unit of work, or this waits for them and reads the outcome.
    await this.sql`SELECT id FROM orgs WHERE id = ${orgId} FOR UPDATE`;
    const [row] = await this.sql<MembershipRow[]>`
      SELECT org_id, user_id, role, bindings, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms
      FROM memberships WHERE org_id = ${orgId} AND user_id = ${userId}`;
    return row ? toMembership(row) : null;
  }

  async listMemberships(userId: string): Promise<Membership[]> {
    if (!isUuid(userId)) return [];
    // The caller is the user itself (login picks the first as the default org): scoped by user_id.
    const rows = await this.sql<MembershipRow[]>`
      SELECT org_id, user_id, role, bindings, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms
      FROM memberships WHERE user_id = ${userId}
      ORDER BY created_at, org_id`;
    return rows.map(toMembership);
  }

  async listOrgUsers(scope: OrgScope): Promise<Array<{ user: User; membership: Membership }>> {
    if (!isUuid(scope.orgId)) return [];
    const rows = await this.sql<Array<UserRow & MembershipRow & { membership_created_at_ms: number }>>`
      SELECT u.id, u.email, u.display_name, u.password_hash,
             floor(extract(epoch FROM u.created_at) * 1000)::int8 AS created_at_ms, u.email_verified_at_ms,
             m.org_id, m.user_id, m.role, m.bindings,
             floor(extract(epoch FROM m.created_at) * 1000)::int8 AS membership_created_at_ms
      FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.org_id = ${scope.orgId}
      ORDER BY m.created_at, m.user_id`;
    return rows.map((row) => ({
      user: toUser(row),
      membership: toMembership({ ...row, created_at_ms: row.membership_created_at_ms }),
    }));
  }

  async setPasswordHash(userId: string, passwordHash: string): Promise<void> {
    if (!isUuid(userId)) throw notFound('user', userId);
    const result = await this.sql`UPDATE users SET password_hash = ${passwordHash} WHERE id = ${userId}`;
    if (result.count === 0) throw notFound('user', userId);
  }

  async markEmailVerified(userId: string, nowMs: number): Promise<void> {
    if (!isUuid(userId)) throw notFound('user', userId);
    const result = await this.sql`UPDATE users SET email_verified_at_ms = coalesce(email_verified_at_ms, ${nowMs}::int8) WHERE id = ${userId}`;
    if (result.count === 0) throw notFound('user', userId);
  }

  async releaseMemberships(userId: string, keepOrgIds: readonly string[]): Promise<Membership[]> {
    if (!isUuid(userId)) return [];
    const keep = keepOrgIds.filter(isUuid);
    const rows = await this.sql<MembershipRow[]>`
      DELETE FROM memberships WHERE user_id = ${userId} AND NOT (org_id = ANY(${keep}::uuid[]))
      RETURNING org_id, user_id, role, bindings, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms`;
    return rows.map(toMembership);
  }

  async deleteIfOrgless(userId: string): Promise<boolean> {
    if (!isUuid(userId)) return false;
    // Every table naming the user cascades (sessions, tokens, SSO identities).
    const result = await this.sql`
      DELETE FROM users WHERE id = ${userId} AND NOT EXISTS (SELECT 1 FROM memberships WHERE user_id = ${userId})`;
    return result.count > 0;
  }

  async setMembershipRole(scope: OrgScope, userId: string, role: OrgRole): Promise<Membership> {
    if (!isUuid(scope.orgId) || !isUuid(userId)) throw notFound('member', userId);
    return this.withOrgAdminsLocked(scope.orgId, userId, async (tx, current, admins) => {
      if (current.role === 'org_admin' && role !== 'org_admin' && admins === 1) {
        throw failedPrecondition('the last org_admin of an organisation cannot be demoted');
      }
      // An org_admin is admin everywhere: a promotion drops the member's bindings.
      const [row] = await tx<MembershipRow[]>`
        UPDATE memberships SET role = ${role}, bindings = CASE WHEN ${role}::text = 'org_admin' THEN NULL ELSE bindings END WHERE org_id = ${scope.orgId} AND user_id = ${userId}
        RETURNING org_id, user_id, role, bindings, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms`;
      if (!row) throw new Error('locked membership vanished');
      return toMembership(row);
    });
  }

  async removeMembership(scope: OrgScope, userId: string): Promise<void> {
    if (!isUuid(scope.orgId) || !isUuid(userId)) throw notFound('member', userId);
    await this.withOrgAdminsLocked(scope.orgId, userId, async (tx, current, admins) => {
      if (current.role === 'org_admin' && admins === 1) throw failedPrecondition('the last org_admin of an organisation cannot be removed');
      await tx`DELETE FROM memberships WHERE org_id = ${scope.orgId} AND user_id = ${userId}`;
    });
  }

  async setBindings(scope: OrgScope, userId: string, bindings: RoleBinding[] | null): Promise<Membership> {
    if (!isUuid(scope.orgId) || !isUuid(userId)) throw notFound('member', userId);
    // The org row locked, as every membership change locks it: a concurrent promotion is seen.
    return this.withOrgAdminsLocked(scope.orgId, userId, async (tx, current) => {
      if (current.role === 'org_admin') throw failedPrecondition('an org_admin is admin everywhere: make the member an org_member before giving it bindings');
      const stored = bindings === null ? null : bindings.map(bindingToStored);
      const [row] = await tx<MembershipRow[]>`
        UPDATE memberships SET bindings = ${stored === null ? null : tx.json(stored as never)} WHERE org_id = ${scope.orgId} AND user_id = ${userId}
        RETURNING org_id, user_id, role, bindings, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms`;
      return toMembership(row!);
    });
  }

  /**
   * Runs `change` with the org row locked, so that of two concurrent demotions or removals of the
   * org's last two admins the second sees one admin left (the "keep an org_admin" rule holds).
   */
  private async withOrgAdminsLocked<T>(
    orgId: string,
    userId: string,
    change: (tx: Sql, current: MembershipRow, admins: number) => Promise<T>,
  ): Promise<T> {
    return transaction(this.sql, async (tx) => {
      await tx`SELECT id FROM orgs WHERE id = ${orgId} FOR UPDATE`;
      const [current] = await tx<MembershipRow[]>`
        SELECT org_id, user_id, role, bindings, 0::int8 AS created_at_ms FROM memberships WHERE org_id = ${orgId} AND user_id = ${userId}`;
      if (!current) throw notFound('member', userId);
      const [count] = await tx<{ admins: number }[]>`
        SELECT count(*)::int AS admins FROM memberships WHERE org_id = ${orgId} AND role = 'org_admin'`;
      return change(tx as unknown as Sql, current, count?.admins ?? 0);
    }) as Promise<T>;
  }
}
