import { notFound, type ChangeNotifier, type Membership, type Principal, type Repositories, type RoleBinding } from '@switchyard/core';
import { recordChange } from '../audit/audit-trail.ts';
import { requireAllowed } from '../authorization.ts';
import { announceSessionChange } from '../auth/session-registry.ts';
import { parseRoleBindingsBody, resolveRoleBindings } from './role-binding-input.ts';
import { roleBindingsRecord, type RoleBindingsRecord } from './role-binding-records.ts';

/**
 * A member's role bindings per project and environment (docs/access.md "Managing bindings"): read,
 * replaced, or reset to the org role's default. Changing them is `user.manage` (org-level admins;
 * never an API token), audited as `user.bindings_change`, and announced as a session change after
 * the commit, so bearer tokens already issued carry the new rights from their next request on every
 * instance and gateway.
 */
export class RoleBindingService {
  constructor(
    private readonly repos: Pick<Repositories, 'users' | 'projects' | 'environments' | 'unitOfWork'>,
    private readonly notifier: ChangeNotifier,
    private readonly now: () => number = Date.now,
  ) {}

  /** A member's bindings: an org admin asks about anyone, a person about itself. NOT_FOUND: not a member of the org. */
  async get(principal: Principal, orgId: string, userId: string): Promise<RoleBindingsRecord> {
    const self = principal.kind === 'user' && !principal.isSystem && principal.orgId === orgId && principal.userId === userId;
    if (!self) requireAllowed(principal, 'user.manage', { orgId });
    const membership = await this.repos.users.getMembership(orgId, userId);
    if (!membership) throw notFound('member', userId);
    return roleBindingsRecord(membership);
  }

  /**
   * Replaces an org_member's bindings with `{bindings: [...]}` (an empty list: no rights). An
   * org_admin is admin everywhere: FAILED_PRECONDITION. @throws INVALID_ARGUMENT naming the entry.
   */
  async set(principal: Principal, orgId: string, userId: string, body: unknown): Promise<RoleBindingsRecord> {
    requireAllowed(principal, 'user.manage', { orgId });
    const sent = parseRoleBindingsBody(body);
    return this.change(principal, orgId, userId, (tx) => resolveRoleBindings(tx, orgId, sent));
  }

  /** Back to the org role's default (an org_member: editor everywhere). An org_admin: FAILED_PRECONDITION, as for set. */
  async reset(principal: Principal, orgId: string, userId: string): Promise<RoleBindingsRecord> {
    requireAllowed(principal, 'user.manage', { orgId });
    return this.change(principal, orgId, userId, async () => null);
  }

  private async change(
    principal: Principal,
    orgId: string,
    userId: string,
    bindingsOf: (tx: Repositories) => Promise<RoleBinding[] | null>,
  ): Promise<RoleBindingsRecord> {
    const record = await this.repos.unitOfWork.run(async (tx) => {
      const before: Membership | null = await tx.users.getMembership(orgId, userId);
      if (!before) throw notFound('member', userId);
      // setBindings locks the org's memberships and refuses an org_admin (a concurrent promotion included).
      const after = roleBindingsRecord(await tx.users.setBindings({ orgId }, userId, await bindingsOf(tx)));
      await recordChange(
        tx,
        principal,
        { orgId, action: 'user.bindings_change', resourceType: 'user', resourceId: userId, before: roleBindingsRecord(before), after },
        this.now(),
      );
      return after;
    });
    await announceSessionChange(this.notifier, userId);
    return record;
  }
}
