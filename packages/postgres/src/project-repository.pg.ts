import { notFound, type LifecycleThresholds, type OrgScope, type Project, type ProjectRepository } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface ProjectRow {
  id: string;
  org_id: string;
  name: string;
  created_at_ms: number;
  client_visible_default: boolean;
  lifecycle_status_window_days: number;
  lifecycle_code_removal_min_age_days: number;
  lifecycle_archive_after_days: number;
  lifecycle_unchanged_fallback_days: number;
}

const toProject = (row: ProjectRow): Project => ({
  id: row.id,
  orgId: row.org_id,
  name: row.name,
  createdAtMs: row.created_at_ms,
  clientVisibleDefault: row.client_visible_default,
  lifecycle: {
    statusWindowDays: row.lifecycle_status_window_days,
    codeRemovalMinAgeDays: row.lifecycle_code_removal_min_age_days,
    archiveAfterDays: row.lifecycle_archive_after_days,
    unchangedFallbackDays: row.lifecycle_unchanged_fallback_days,
  },
});

const LIFECYCLE_COLUMNS = 'lifecycle_status_window_days, lifecycle_code_removal_min_age_days, lifecycle_archive_after_days, lifecycle_unchanged_fallback_days';

/** Projects in `projects`, every statement scoped by org_id: another org's project is not found. */
export class PgProjectRepository implements ProjectRepository {
  constructor(private readonly sql: Sql) {}

  async create(scope: OrgScope, input: { name: string }): Promise<Project> {
    if (!isUuid(scope.orgId)) throw notFound('organisation', scope.orgId);
    const [row] = await translateErrors(
      () => this.sql<ProjectRow[]>`
        INSERT INTO projects (org_id, name) VALUES (${scope.orgId}, ${input.name})
        RETURNING id, org_id, name, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms, client_visible_default, ${this.sql.unsafe(LIFECYCLE_COLUMNS)}`,
      { resource: 'project', name: input.name, parent: 'organisation' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toProject(row);
  }

  async get(scope: OrgScope, projectId: string): Promise<Project | null> {
    if (!isUuid(scope.orgId) || !isUuid(projectId)) return null;
    const [row] = await this.sql<ProjectRow[]>`
      SELECT id, org_id, name, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms, client_visible_default, ${this.sql.unsafe(LIFECYCLE_COLUMNS)}
      FROM projects WHERE org_id = ${scope.orgId} AND id = ${projectId}`;
    return row ? toProject(row) : null;
  }

  async list(scope: OrgScope): Promise<Project[]> {
    if (!isUuid(scope.orgId)) return [];
    const rows = await this.sql<ProjectRow[]>`
      SELECT id, org_id, name, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms, client_visible_default, ${this.sql.unsafe(LIFECYCLE_COLUMNS)}
      FROM projects WHERE org_id = ${scope.orgId}
      ORDER BY created_at, id`;
    return rows.map(toProject);
  }

  async updateSettings(scope: OrgScope, projectId: string, settings: { clientVisibleDefault?: boolean; lifecycle?: LifecycleThresholds }): Promise<Project> {
    if (!isUuid(scope.orgId) || !isUuid(projectId)) throw notFound('project', projectId);
    const lifecycle = settings.lifecycle;
    const [row] = await this.sql<ProjectRow[]>`
      UPDATE projects SET
        client_visible_default = COALESCE(${settings.clientVisibleDefault ?? null}::boolean, client_visible_default),
        lifecycle_status_window_days = COALESCE(${lifecycle?.statusWindowDays ?? null}::int4, lifecycle_status_window_days),
        lifecycle_code_removal_min_age_days = COALESCE(${lifecycle?.codeRemovalMinAgeDays ?? null}::int4, lifecycle_code_removal_min_age_days),
        lifecycle_archive_after_days = COALESCE(${lifecycle?.archiveAfterDays ?? null}::int4, lifecycle_archive_after_days),
        lifecycle_unchanged_fallback_days = COALESCE(${lifecycle?.unchangedFallbackDays ?? null}::int4, lifecycle_unchanged_fallback_days)
      WHERE org_id = ${scope.orgId} AND id = ${projectId}
      RETURNING id, org_id, name, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms, client_visible_default, ${this.sql.unsafe(LIFECYCLE_COLUMNS)}`;
    if (!row) throw notFound('project', projectId);
    return toProject(row);
  }
}
