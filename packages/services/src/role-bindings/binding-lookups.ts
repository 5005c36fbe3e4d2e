import type { Environment, Project, Repositories, RoleBinding } from '@switchyard/core';

/** What makes two bindings the same binding: role, project and environment. */
const bindingKey = (binding: RoleBinding): string => `${binding.role}\u0000${binding.projectId ?? ''}\u0000${binding.environmentId ?? ''}`;

/** The bindings with duplicates dropped, in first-seen order. */
export function dedupeBindings(bindings: Iterable<RoleBinding>): RoleBinding[] {
  const seen = new Map<string, RoleBinding>();
  for (const binding of bindings) if (!seen.has(bindingKey(binding))) seen.set(bindingKey(binding), binding);
  return [...seen.values()];
}

/** Whether two binding lists give the same (order and duplicates aside); null is the default. */
export function sameBindings(a: readonly RoleBinding[] | null, b: readonly RoleBinding[] | null): boolean {
  if (a === null || b === null) return a === b;
  const keys = (list: readonly RoleBinding[]) => [...new Set(list.map(bindingKey))].sort().join('\u0001');
  return keys(a) === keys(b);
}

/**
 * The org's projects and environments as bindings name them, each id read at most once per
 * request (however many bindings name it): a member's bindings and a provider's group mapping are
 * checked with one of these. An id of another org reads as absent.
 */
export function bindingLookups(repos: Pick<Repositories, 'projects' | 'environments'>, orgId: string) {
  const projects = new Map<string, Promise<Project | null>>();
  const environments = new Map<string, Promise<Environment | null>>();
  return {
    project: (id: string): Promise<Project | null> => projects.get(id) ?? projects.set(id, repos.projects.get({ orgId }, id)).get(id)!,
    environment: (id: string): Promise<Environment | null> => environments.get(id) ?? environments.set(id, repos.environments.get({ orgId }, id)).get(id)!,
  };
}
