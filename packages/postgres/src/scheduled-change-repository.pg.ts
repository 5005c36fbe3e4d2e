import {
  failedPrecondition,
  notFound,
  versionConflict,
  type AuditActor,
  type EnvironmentScope,
  type FlagOperation,
  type ProjectScope,
  type ScheduledChange,
  type ScheduledChangeDraft,
  type ScheduledChangeQuery,
  type ScheduledChangeRepository,
  type ScheduledChangeStatus,
} from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid } from './pg-errors.ts';

interface ScheduledChangeRow {
  id: string;
  org_id: string;
  project_id: string;
  environment_id: string;
  flag_key: string;
  execute_at_ms: string | number;
  operations: FlagOperation[];
  comment: string;
  status: ScheduledChangeStatus;
  reason: string | null;
  created_by: AuditActor;
  created_at_ms: string | number;
  updated_at_ms: string | number;
  applied_at_ms: string | number | null;
  version: string | number;
}

const toChange = (row: ScheduledChangeRow): ScheduledChange => ({
  id: row.id,
  orgId: row.org_id,
  projectId: row.project_id,
  environmentId: row.environment_id,
  flagKey: row.flag_key,
  executeAtMs: Number(row.execute_at_ms),
  operations: row.operations,
  comment: row.comment,
  status: row.status,
  reason: row.reason,
  createdBy: row.created_by,
  createdAtMs: Number(row.created_at_ms),
  updatedAtMs: Number(row.updated_at_ms),
  appliedAtMs: row.applied_at_ms === null ? null : Number(row.applied_at_ms),
  version: Number(row.version),
});

type Json = Parameters<Sql['json']>[0];

const inScope = (scope: EnvironmentScope): boolean => isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

/** Scheduled changes in `scheduled_changes` (migration 0023). */
export class PgScheduledChangeRepository implements ScheduledChangeRepository {
  constructor(private readonly sql: Sql) {}

  async create(draft: ScheduledChangeDraft): Promise<ScheduledChange> {
    const { scope } = draft;
    if (!inScope(scope)) throw notFound('environment', scope.environmentId);
    const [row] = await this.sql<ScheduledChangeRow[]>`
      INSERT INTO scheduled_changes (org_id, project_id, environment_id, flag_key, execute_at_ms, operations, comment, created_by, created_at_ms, updated_at_ms)
      VALUES (${scope.orgId}, ${scope.projectId}, ${scope.environmentId}, ${draft.flagKey}, ${draft.executeAtMs}, ${this.sql.json(draft.operations as unknown as Json)},
              ${draft.comment}, ${this.sql.json(draft.createdBy as unknown as Json)}, ${draft.atMs}, ${draft.atMs})
      RETURNING *`;
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toChange(row);
  }

  async get(scope: EnvironmentScope, id: string): Promise<ScheduledChange | null> {
    if (!inScope(scope) || !isUuid(id)) return null;
    const [row] = await this.sql<ScheduledChangeRow[]>`
      SELECT * FROM scheduled_changes WHERE id = ${id} AND org_id = ${scope.orgId} AND environment_id = ${scope.environmentId}`;
    return row ? toChange(row) : null;
  }

  async list(scope: EnvironmentScope, query: ScheduledChangeQuery): Promise<ScheduledChange[]> {
    if (!inScope(scope)) return [];
    const sql = this.sql;
    const byFlag = query.flagKey !== undefined ? sql`AND flag_key = ${query.flagKey}` : sql``;
    const byStatus = query.statuses !== undefined ? sql`AND status = ANY(${sql.array(query.statuses)}::text[])` : sql``;
    const from = query.fromMs !== undefined ? sql`AND execute_at_ms >= ${query.fromMs}` : sql``;
    const to = query.toMs !== undefined ? sql`AND execute_at_ms < ${query.toMs}` : sql``;
    const rows = await sql<ScheduledChangeRow[]>`
      SELECT * FROM scheduled_changes
      WHERE org_id = ${scope.orgId} AND environment_id = ${scope.environmentId} ${byFlag} ${byStatus} ${from} ${to}
      ORDER BY execute_at_ms, id
      LIMIT ${Math.max(0, Math.floor(query.limit))}`;
    return rows.map(toChange);
  }

  async update(
    scope: EnvironmentScope,
    id: string,
    patch: { executeAtMs?: number; operations?: FlagOperation[]; comment?: string },
    expectedVersion: number | undefined,
    atMs: number,
  ): Promise<ScheduledChange> {
    if (!inScope(scope) || !isUuid(id)) throw notFound('scheduled change', id);
    const [current] = await this.sql<ScheduledChangeRow[]>`
      SELECT * FROM scheduled_changes WHERE id = ${id} AND org_id = ${scope.orgId} AND environment_id = ${scope.environmentId} FOR UPDATE`;
    if (!current) throw notFound('scheduled change', id);
    const change = toChange(current);
    if (change.status !== 'pending') throw failedPrecondition(`scheduled change '${id}' is ${change.status}: only a pending one can change`);
    if (expectedVersion !== undefined && expectedVersion !== change.version) throw versionConflict('scheduled change', expectedVersion, change.version);
    const [row] = await this.sql<ScheduledChangeRow[]>`
      UPDATE scheduled_changes SET
        execute_at_ms = ${patch.executeAtMs ?? change.executeAtMs},
        operations = ${this.sql.json((patch.operations ?? change.operations) as unknown as Json)},
        comment = ${patch.comment ?? change.comment},
        version = version + 1,
        updated_at_ms = ${atMs}
      WHERE id = ${id}
      RETURNING *`;
    return toChange(row!);
  }

  async finish(id: string, outcome: { status: Exclude<ScheduledChangeStatus, 'pending'>; reason: string | null; atMs: number; appliedAtMs?: number | null }): Promise<ScheduledChange | null> {
    if (!isUuid(id)) return null;
    const [row] = await this.sql<ScheduledChangeRow[]>`
      UPDATE scheduled_changes SET status = ${outcome.status}, reason = ${outcome.reason}, updated_at_ms = ${outcome.atMs},
        applied_at_ms = ${outcome.appliedAtMs ?? null}, version = version + 1
      WHERE id = ${id} AND status = 'pending'
      RETURNING *`;
    return row ? toChange(row) : null;
  }

  async cancelPendingForFlag(project: ProjectScope, flagKey: string, reason: string, atMs: number): Promise<ScheduledChange[]> {
    if (!isUuid(project.orgId) || !isUuid(project.projectId)) return [];
    const rows = await this.sql<ScheduledChangeRow[]>`
      UPDATE scheduled_changes SET status = 'cancelled', reason = ${reason}, updated_at_ms = ${atMs}, version = version + 1
      WHERE org_id = ${project.orgId} AND project_id = ${project.projectId} AND flag_key = ${flagKey} AND status = 'pending'
      RETURNING *`;
    return rows.map(toChange).sort((a, b) => a.executeAtMs - b.executeAtMs || (a.id < b.id ? -1 : 1));
  }

  async claimDue(nowMs: number): Promise<ScheduledChange | null> {
    const [row] = await this.sql<ScheduledChangeRow[]>`
      SELECT * FROM scheduled_changes
      WHERE status = 'pending' AND execute_at_ms <= ${nowMs}
      ORDER BY execute_at_ms, id
      LIMIT 1
      FOR UPDATE SKIP LOCKED`;
    return row ? toChange(row) : null;
  }

  async lockPending(id: string): Promise<ScheduledChange | null> {
    if (!isUuid(id)) return null;
    const [row] = await this.sql<ScheduledChangeRow[]>`SELECT * FROM scheduled_changes WHERE id = ${id} AND status = 'pending' FOR UPDATE`;
    return row ? toChange(row) : null;
  }
}
