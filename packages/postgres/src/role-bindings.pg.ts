import type { RoleBinding } from '@switchyard/core';

/** A binding as stored in jsonb (memberships.bindings, auth_providers.group_bindings): the wire's snake_case. */
export interface StoredBinding {
  role: RoleBinding['role'];
  project_id?: string;
  environment_id?: string;
}

export const bindingToStored = (binding: RoleBinding): StoredBinding => ({
  role: binding.role,
  ...(binding.projectId !== undefined ? { project_id: binding.projectId } : {}),
  ...(binding.environmentId !== undefined ? { environment_id: binding.environmentId } : {}),
});

export const bindingFromStored = (stored: StoredBinding): RoleBinding => ({
  role: stored.role,
  ...(stored.project_id !== undefined ? { projectId: stored.project_id } : {}),
  ...(stored.environment_id !== undefined ? { environmentId: stored.environment_id } : {}),
});

/** null stays null: the org role's default. */
export const bindingsFromStored = (stored: StoredBinding[] | null | undefined): RoleBinding[] | null =>
  stored === null || stored === undefined ? null : stored.map(bindingFromStored);
