import type { ContextAttribute, ContextAttributeRepository, SeenContextAttribute } from '../flags/context-attribute-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

/** Most recently seen first; ties by context type, then name (as the PostgreSQL adapter orders). */
const newestFirst = (a: ContextAttribute, b: ContextAttribute): number =>
  b.lastSeenAtMs - a.lastSeenAtMs || (a.contextType < b.contextType ? -1 : a.contextType > b.contextType ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** ContextAttributeRepository over the shared in-memory tables. */
export class InMemoryContextAttributeRepository implements ContextAttributeRepository {
  constructor(private readonly state: InMemoryState) {}

  async record(attributes: readonly SeenContextAttribute[], maxPerEnvironment: number): Promise<number> {
    const now = this.state.now();
    const touched = new Set<string>();
    let written = 0;
    for (const seen of attributes) {
      const environment = this.state.environments.get(seen.environmentId);
      if (!environment || environment.orgId !== seen.orgId || environment.projectId !== seen.projectId) continue;
      let table = this.state.contextAttributes.get(seen.environmentId);
      if (!table) this.state.contextAttributes.set(seen.environmentId, (table = new Map()));
      table.set(`${seen.contextType}\u0000${seen.name}`, { contextType: seen.contextType, name: seen.name, lastSeenAtMs: now });
      touched.add(seen.environmentId);
      written++;
    }
    for (const environmentId of touched) {
      const table = this.state.contextAttributes.get(environmentId)!;
      const dropped = [...table.values()].sort(newestFirst).slice(maxPerEnvironment);
      for (const attribute of dropped) table.delete(`${attribute.contextType}\u0000${attribute.name}`);
    }
    return written;
  }

  async list(scope: EnvironmentScope, limit: number): Promise<ContextAttribute[]> {
    const environment = this.state.environments.get(scope.environmentId);
    if (!environment || environment.orgId !== scope.orgId || environment.projectId !== scope.projectId) return [];
    return [...(this.state.contextAttributes.get(scope.environmentId)?.values() ?? [])].sort(newestFirst).slice(0, limit).map((a) => ({ ...a }));
  }
}
