import { notFound, type EnvironmentScope, type Principal, type ProjectScope, type Repositories } from '@switchyard/core';

/**
 * Turns an id from a URL into a full tenant scope, looked up only inside the caller's org: an id
 * of another org is simply not found. SDK keys carry their environment's scope already.
 */
export class ScopeResolver {
  constructor(private readonly repos: Pick<Repositories, 'projects' | 'environments'>) {}

  async environment(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    if (principal.kind === 'sdk_key') {
      // Whether the key may act here is authorize()'s decision; the scope is the key's own.
      if (principal.environmentId === environmentId) {
        return { orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId };
      }
    }
    const environment = await this.repos.environments.get({ orgId: principal.orgId }, environmentId);
    if (!environment) throw notFound('environment', environmentId);
    return { orgId: environment.orgId, projectId: environment.projectId, environmentId: environment.id };
  }

  /** A project id, or (as SPEC allows on /v1/projects/{id}/flags) an environment id. */
  async projectOrEnvironment(principal: Principal, id: string): Promise<{ project: ProjectScope } | { environment: EnvironmentScope }> {
    const project = await this.repos.projects.get({ orgId: principal.orgId }, id);
    if (project) return { project: { orgId: project.orgId, projectId: project.id } };
    return { environment: await this.environment(principal, id) };
  }
}
