import { notFound, type Environment, type EnvironmentRepository, type OrgScope, type ProjectScope } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid, translateErrors } from './pg-errors.ts';

interface EnvironmentRow {
  id: string;
  org_id: string;
  project_id: string;
  name: string;
  created_at_ms: number;
  critical: boolean;
  require_comment: boolean;
}

const toEnvironment = (row: EnvironmentRow): Environment => ({
  id: row.id,
  orgId: row.org_id,
  projectId: row.project_id,
  name: row.name,
  createdAtMs: row.created_at_ms,
  critical: row.critical,
  requireComment: row.require_comment,
});

/** Environments in `environments`, every statement scoped by org_id (and project_id where given). */
export class PgEnvironmentRepository implements EnvironmentRepository {
  constructor(private readonly sql: Sql) {}

  async create(scope: ProjectScope, input: { name: string }): Promise<Environment> {
    if (!isUuid(scope.orgId) || !isUuid(scope.projectId)) throw notFound('project', scope.projectId);
    // The composite foreign key (project_id, org_id) rejects a project of another org: NOT_FOUND.
    const [row] = await translateErrors(
      () => this.sql<EnvironmentRow[]>`
        INSERT INTO environments (org_id, project_id, name) VALUES (${scope.orgId}, ${scope.projectId}, ${input.name})
        RETURNING id, org_id, project_id, name, critical, require_comment, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms`,
      { resource: 'environment', name: input.name, parent: 'project' },
    );
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toEnvironment(row);
  }

  async get(scope: OrgScope, environmentId: string): Promise<Environment | null> {
    if (!isUuid(scope.orgId) || !isUuid(environmentId)) return null;
    const [row] = await this.sql<EnvironmentRow[]>`
      SELECT id, org_id, project_id, name, critical, require_comment, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms
      FROM environments WHERE org_id = ${scope.orgId} AND id = ${environmentId}`;
    return row ? toEnvironment(row) : null;
  }

  async list(scope: ProjectScope): Promise<Environment[]> {
    if (!isUuid(scope.orgId) || !isUuid(scope.projectId)) return [];
    const rows = await this.sql<EnvironmentRow[]>`
      SELECT id, org_id, project_id, name, critical, require_comment, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms
      FROM environments WHERE org_id = ${scope.orgId} AND project_id = ${scope.projectId}
      ORDER BY created_at, id`;
    return rows.map(toEnvironment);
  }

  async updateProtection(scope: OrgScope, environmentId: string, settings: { critical: boolean; requireComment: boolean }): Promise<Environment> {
    if (!isUuid(scope.orgId) || !isUuid(environmentId)) throw notFound('environment', environmentId);
    const [row] = await this.sql<EnvironmentRow[]>`
      UPDATE environments SET critical = ${settings.critical}, require_comment = ${settings.requireComment}
      WHERE org_id = ${scope.orgId} AND id = ${environmentId}
      RETURNING id, org_id, project_id, name, critical, require_comment, floor(extract(epoch FROM created_at) * 1000)::int8 AS created_at_ms`;
    if (!row) throw notFound('environment', environmentId);
    return toEnvironment(row);
  }
}
