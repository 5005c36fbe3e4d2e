import { isDomainError, type AuthProvider, type ChangeNotifier, type GroupBinding, type Repositories, type RoleBinding } from '@switchyard/core';
import { recordChange } from '../audit/audit-trail.ts';
import { announceSessionChange } from '../auth/session-registry.ts';
import { dedupeBindings, sameBindings } from '../role-bindings/binding-lookups.ts';
import { roleBindingRecord } from '../role-bindings/role-binding-records.ts';
import { ANY_GROUP, MAX_GROUP_NAME_LENGTH } from './group-bindings-input.ts';

/** Group values read from one sign-in: an identity provider's answer is not ours to size. */
export const MAX_GROUPS_READ = 1_000;

/**
 * The groups an identity provider's claim or attribute names: a string array or a single string.
 * Only the first 1000 values are read; values that are not strings, empty, or longer than 256
 * characters match no mapping and are dropped.
 */
export function groupsOf(value: unknown): string[] {
  const values = Array.isArray(value) ? value.slice(0, MAX_GROUPS_READ) : [value];
  const groups = new Set<string>();
  for (const item of values) if (typeof item === 'string' && item.length > 0 && item.length <= MAX_GROUP_NAME_LENGTH) groups.add(item);
  return [...groups];
}

/**
 * The bindings a person with `groups` gets (docs/access.md "Group mapping"): the union of their
 * mapped groups' bindings; none mapped: the "*" entry's; no "*" entry either: null (the org
 * role's default). Group names match exactly ("*" is only a catch-all entry, not a pattern).
 */
export function bindingsForGroups(mapping: readonly GroupBinding[], groups: readonly string[]): RoleBinding[] | null {
  const held = new Set(groups);
  const matched = mapping.filter((entry) => entry.group !== ANY_GROUP && held.has(entry.group));
  if (matched.length > 0) return dedupeBindings(matched.flatMap((entry) => entry.bindings));
  const fallback = mapping.find((entry) => entry.group === ANY_GROUP);
  return fallback ? dedupeBindings(fallback.bindings) : null;
}

/**
 * Applies the provider's group mapping to a member signing in through it: their bindings become
 * what their groups give, at once for tokens already issued (the session change is announced).
 * Leaves them alone when the provider maps no groups, when they are an org_admin (admin
 * everywhere; setBindings refuses them), or when nothing changes. Audited as the person's own
 * change, naming the provider and the groups that matched.
 */
export class GroupMapping {
  constructor(
    private readonly repos: Pick<Repositories, 'users' | 'unitOfWork'>,
    private readonly notifier: ChangeNotifier | undefined,
    private readonly now: () => number,
  ) {}

  async apply(provider: AuthProvider, userId: string, groups: readonly string[]): Promise<void> {
    if (provider.groupBindings.length === 0) return;
    const scope = { orgId: provider.orgId };
    const next = bindingsForGroups(provider.groupBindings, groups);
    const changed = await this.repos.unitOfWork.run(async (tx) => {
      const membership = await tx.users.getMembership(provider.orgId, userId);
      if (!membership || membership.role !== 'org_member' || sameBindings(membership.bindings, next)) return false;
      const user = await tx.users.getById(userId);
      try {
        await tx.users.setBindings(scope, userId, next);
      } catch (error) {
        // Promoted to org_admin meanwhile: admin everywhere, nothing to map.
        if (isDomainError(error) && error.code === 'FAILED_PRECONDITION') return false;
        throw error;
      }
      const held = new Set(groups);
      await recordChange(tx, { type: 'user', id: userId, ...(user ? { email: user.email } : {}) }, {
        orgId: provider.orgId,
        action: 'sso.group_bindings_applied',
        resourceType: 'user',
        resourceId: userId,
        before: { bindings: membership.bindings?.map(roleBindingRecord) ?? null },
        after: { bindings: next?.map(roleBindingRecord) ?? null },
        details: {
          provider_id: provider.id,
          matched_groups: provider.groupBindings.filter((entry) => entry.group !== ANY_GROUP && held.has(entry.group)).map((entry) => entry.group),
        },
      }, this.now());
      return true;
    });
    if (changed && this.notifier) await announceSessionChange(this.notifier, userId);
  }
}
