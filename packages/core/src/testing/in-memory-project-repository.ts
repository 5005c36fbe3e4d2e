import { DEFAULT_LIFECYCLE_THRESHOLDS, type LifecycleThresholds } from '../insights/flag-lifecycle.ts';
import { alreadyExists, notFound } from '../errors/domain-error.ts';
import type { Project } from '../model/entities.ts';
import type { OrgScope } from '../ports/scopes.ts';
import type { ProjectRepository } from '../ports/tenancy-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

/** ProjectRepository over the shared in-memory tables; a project of another org is simply not found. */
export class InMemoryProjectRepository implements ProjectRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(scope: OrgScope, input: { name: string }): Promise<Project> {
    this.state.requireOrg(scope);
    for (const project of this.state.projects.values()) {
      if (project.orgId === scope.orgId && project.name === input.name) throw alreadyExists('project', input.name);
    }
    const project: Project = { id: this.state.newId(), orgId: scope.orgId, name: input.name, createdAtMs: this.state.now(), clientVisibleDefault: false, lifecycle: { ...DEFAULT_LIFECYCLE_THRESHOLDS } };
    this.state.projects.set(project.id, project);
    return { ...project };
  }

  async get(scope: OrgScope, projectId: string): Promise<Project | null> {
    const project = this.state.projects.get(projectId);
    return project && project.orgId === scope.orgId ? { ...project } : null;
  }

  async list(scope: OrgScope): Promise<Project[]> {
    return [...this.state.projects.values()]
      .filter((p) => p.orgId === scope.orgId)
      .sort((a, b) => a.createdAtMs - b.createdAtMs)
      .map((p) => ({ ...p }));
  }

  async updateSettings(scope: OrgScope, projectId: string, settings: { clientVisibleDefault?: boolean; lifecycle?: LifecycleThresholds }): Promise<Project> {
    const project = this.state.projects.get(projectId);
    if (!project || project.orgId !== scope.orgId) throw notFound('project', projectId);
    if (settings.clientVisibleDefault !== undefined) project.clientVisibleDefault = settings.clientVisibleDefault;
    if (settings.lifecycle !== undefined) project.lifecycle = { ...settings.lifecycle };
    return { ...project };
  }
}
