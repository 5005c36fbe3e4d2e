/** Roles, bindings and token scopes in words, with the names of projects and environments. */
import type { ApiTokenRecord, Environment, Project, RoleBinding, User } from '../records.ts';

export const BINDING_ROLES: Array<[RoleBinding['role'], string]> = [
  ['viewer', 'viewer: reads'],
  ['editor', 'editor: changes flags, segments and experiments'],
  ['admin', 'admin: also manages environments and SDK keys'],
];

export interface Names {
  projects: Project[];
  environments: Environment[];
}

export function projectName(names: Names, projectId: string): string {
  return names.projects.find((p) => p.project_id === projectId)?.project_name ?? projectId;
}

/** "production of Shop" style: the environment with its project. */
export function environmentName(names: Names, environmentId: string): string {
  const environment = names.environments.find((e) => e.environment_id === environmentId);
  if (!environment) return environmentId;
  return `${projectName(names, environment.project_id)} / ${environment.environment_name}`;
}

/** "editor everywhere", "viewer in Shop", "admin in Shop / production". */
export function bindingWords(binding: RoleBinding, names: Names): string {
  if (binding.environment_id) return `${binding.role} in ${environmentName(names, binding.environment_id)}`;
  if (binding.project_id) return `${binding.role} in ${projectName(names, binding.project_id)}`;
  return `${binding.role} everywhere`;
}

/** A member's access in words: org admins are admins everywhere; no list is the org role's default. */
export function memberAccessWords(user: Pick<User, 'org_role' | 'bindings'>, names: Names): string {
  if (user.org_role === 'org_admin') return 'admin everywhere';
  if (!user.bindings) return 'editor everywhere (default)';
  if (user.bindings.length === 0) return 'no access';
  return user.bindings.map((b) => bindingWords(b, names)).join('; ');
}

/** A token's scope in words: the whole org, or the projects or environments it is limited to. */
export function scopeWords(scope: ApiTokenRecord['scope'], names: Names): string {
  const environments = scope?.environment_ids ?? [];
  const projects = scope?.project_ids ?? [];
  if (environments.length > 0) return `environments ${environments.map((id) => environmentName(names, id)).join(', ')}`;
  if (projects.length > 0) return `projects ${projects.map((id) => projectName(names, id)).join(', ')}`;
  return 'the whole organisation';
}
