import { notFound, permissionDenied, type EnvironmentScope, type Principal, type ProjectScope, type Repositories } from '@switchyard/core';

/**
 * System-org users act on /v1/admin only (docs/contract.md "Roles (RBAC)": 403 on environment routes). Checked before
 * the lookup, which searches the caller's org and would otherwise answer 404.
 */
function refuseSystemUser(principal: Principal): void {
  if (principal.kind === 'user' && principal.isSystem) throw permissionDenied('system-org users may only use /v1/admin routes');
}

/**
 * Turns an id from a URL into a full tenant scope, looked up only inside the caller's org: an id
 * of another org is simply not found. SDK keys carry their environment's scope already.
 */
export class ScopeResolver {
  constructor(private readonly repos: Pick<Repositories, 'projects' | 'environments'>) {}

  async environment(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    refuseSystemUser(principal);
    if (principal.kind === 'sdk_key') {
      // An SDK key grants exactly one environment: any other id is 403 (docs/contract.md "Roles (RBAC)"), the same
      // answer whichever org the id belongs to or whether it exists, so nothing is revealed.
      if (principal.environmentId !== environmentId) throw permissionDenied('the SDK key does not grant access to this environment');
      return { orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId };
    }
    const environment = await this.repos.environments.get({ orgId: principal.orgId }, environmentId);
    if (!environment) throw notFound('environment', environmentId);
    return { orgId: environment.orgId, projectId: environment.projectId, environmentId: environment.id };
  }

  /** A project of the caller's org (SDK and client keys belong to one environment: refused). */
  async project(principal: Principal, projectId: string): Promise<ProjectScope> {
    refuseSystemUser(principal);
    if (principal.kind === 'sdk_key' || principal.kind === 'client_key') throw permissionDenied('an SDK or client key grants one environment, not a project');
    const project = await this.repos.projects.get({ orgId: principal.orgId }, projectId);
    if (!project) throw notFound('project', projectId);
    return { orgId: project.orgId, projectId: project.id };
  }

  /** A project id, or (as /v1/projects/{id}/flags allows, docs/contract.md "Flags") an environment id. */
  async projectOrEnvironment(principal: Principal, id: string): Promise<{ project: ProjectScope } | { environment: EnvironmentScope }> {
    refuseSystemUser(principal);
    const project = await this.repos.projects.get({ orgId: principal.orgId }, id);
    if (project) return { project: { orgId: project.orgId, projectId: project.id } };
    return { environment: await this.environment(principal, id) };
  }
}
