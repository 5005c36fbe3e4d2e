import { alreadyExists, notFound } from '../errors/domain-error.ts';
import type { Environment } from '../model/entities.ts';
import type { OrgScope, ProjectScope } from '../ports/scopes.ts';
import type { EnvironmentRepository } from '../ports/tenancy-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

/** EnvironmentRepository over the shared in-memory tables; names are unique per project. */
export class InMemoryEnvironmentRepository implements EnvironmentRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(scope: ProjectScope, input: { name: string }): Promise<Environment> {
    // A project of another org is NOT_FOUND, as the composite foreign key (project_id, org_id) makes it.
    this.state.requireProject(scope);
    for (const environment of this.state.environments.values()) {
      if (environment.projectId === scope.projectId && environment.name === input.name) {
        throw alreadyExists('environment', input.name);
      }
    }
    const environment: Environment = {
      id: this.state.newId(),
      orgId: scope.orgId,
      projectId: scope.projectId,
      name: input.name,
      createdAtMs: this.state.now(),
      critical: false,
      requireComment: false,
    };
    this.state.environments.set(environment.id, environment);
    return { ...environment };
  }

  async get(scope: OrgScope, environmentId: string): Promise<Environment | null> {
    const environment = this.state.environments.get(environmentId);
    return environment && environment.orgId === scope.orgId ? { ...environment } : null;
  }

  async list(scope: ProjectScope): Promise<Environment[]> {
    return [...this.state.environments.values()]
      .filter((e) => e.orgId === scope.orgId && e.projectId === scope.projectId)
      .sort((a, b) => a.createdAtMs - b.createdAtMs)
      .map((e) => ({ ...e }));
  }

  async updateProtection(scope: OrgScope, environmentId: string, settings: { critical: boolean; requireComment: boolean }): Promise<Environment> {
    const environment = this.state.environments.get(environmentId);
    if (!environment || environment.orgId !== scope.orgId) throw notFound('environment', environmentId);
    environment.critical = settings.critical;
    environment.requireComment = settings.requireComment;
    return { ...environment };
  }
}
