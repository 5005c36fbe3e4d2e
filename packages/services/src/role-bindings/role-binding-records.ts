import type { Membership, RoleBinding } from '@switchyard/core';

/** A role binding on the wire (docs/access.md "Managing bindings"): snake_case, ids only where they apply. */
export interface RoleBindingRecord {
  role: RoleBinding['role'];
  project_id?: string;
  environment_id?: string;
}

/**
 * A member's bindings (GET/PUT/DELETE .../members/{user_id}/role-bindings). `default: true`: none
 * stored, and `bindings` shows the org role's ([{role: 'admin'}] or [{role: 'editor'}]).
 */
export interface RoleBindingsRecord {
  user_id: string;
  org_role: Membership['role'];
  default: boolean;
  bindings: RoleBindingRecord[];
}

export const roleBindingRecord = (binding: RoleBinding): RoleBindingRecord => ({
  role: binding.role,
  ...(binding.projectId === undefined ? {} : { project_id: binding.projectId }),
  ...(binding.environmentId === undefined ? {} : { environment_id: binding.environmentId }),
});

/** The member's stored bindings for a members-list record; null: the org role's default. */
export const storedBindingsRecord = (membership: Membership): RoleBindingRecord[] | null =>
  membership.bindings === null ? null : membership.bindings.map(roleBindingRecord);

export function roleBindingsRecord(membership: Membership): RoleBindingsRecord {
  const stored = membership.role === 'org_member' ? membership.bindings : null;
  const bindings: RoleBinding[] = stored ?? [{ role: membership.role === 'org_admin' ? 'admin' : 'editor' }];
  return { user_id: membership.userId, org_role: membership.role, default: stored === null, bindings: bindings.map(roleBindingRecord) };
}
