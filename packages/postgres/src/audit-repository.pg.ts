import { notFound, type AuditEntry, type AuditRepository, type OrgScope } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid } from './pg-errors.ts';

interface AuditRow {
  id: string;
  org_id: string;
  actor: string;
  action: string;
  resource_type: string;
  resource_id: string;
  at_ms: number;
  details: Record<string, unknown>;
}

const toEntry = (row: AuditRow): AuditEntry => ({
  id: row.id,
  orgId: row.org_id,
  actor: row.actor,
  action: row.action,
  resourceType: row.resource_type,
  resourceId: row.resource_id,
  atMs: row.at_ms,
  details: row.details,
});

/** The audit trail in `audit_log`, append-only, read per org. */
export class PgAuditRepository implements AuditRepository {
  constructor(private readonly sql: Sql) {}

  async append(entry: Omit<AuditEntry, 'id'>): Promise<AuditEntry> {
    // org_id has no foreign key (the trail outlives what it describes), but it is a uuid column.
    if (!isUuid(entry.orgId)) throw notFound('organisation', entry.orgId);
    const details = this.sql.json(entry.details as Parameters<Sql['json']>[0]);
    const [row] = await this.sql<AuditRow[]>`
      INSERT INTO audit_log (org_id, actor, action, resource_type, resource_id, at_ms, details)
      VALUES (${entry.orgId}, ${entry.actor}, ${entry.action}, ${entry.resourceType}, ${entry.resourceId}, ${entry.atMs}, ${details})
      RETURNING id, org_id, actor, action, resource_type, resource_id, at_ms, details`;
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toEntry(row);
  }

  async list(scope: OrgScope, options: { limit: number }): Promise<AuditEntry[]> {
    if (!isUuid(scope.orgId)) return [];
    const limit = Math.max(0, Math.floor(options.limit));
    // id breaks ties between equal timestamps so that the order is stable (the fake does the same).
    const rows = await this.sql<AuditRow[]>`
      SELECT id, org_id, actor, action, resource_type, resource_id, at_ms, details
      FROM audit_log WHERE org_id = ${scope.orgId}
      ORDER BY at_ms DESC, id DESC
      LIMIT ${limit}`;
    return rows.map(toEntry);
  }
}
