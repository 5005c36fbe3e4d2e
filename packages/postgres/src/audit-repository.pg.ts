import {
  decodeAuditCursor,
  encodeAuditCursor,
  notFound,
  type AuditActor,
  type AuditCapScan,
  type AuditDraft,
  type AuditEntry,
  type AuditQuery,
  type AuditRepository,
  type OrgScope,
  type Page,
} from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid } from './pg-errors.ts';

interface AuditRow {
  id: string;
  seq: number;
  org_id: string;
  actor_type: AuditActor['type'];
  actor: string;
  actor_email: string | null;
  actor_name: string | null;
  comment: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  project_id: string | null;
  environment_id: string | null;
  at_ms: number;
  before: unknown;
  after: unknown;
  details: Record<string, unknown>;
}

const toEntry = (row: AuditRow): AuditEntry => ({
  id: row.id,
  orgId: row.org_id,
  atMs: row.at_ms,
  actor: {
    type: row.actor_type,
    id: row.actor,
    ...(row.actor_email === null ? {} : { email: row.actor_email }),
    ...(row.actor_name === null ? {} : { name: row.actor_name }),
  },
  action: row.action,
  resourceType: row.resource_type,
  resourceId: row.resource_id,
  projectId: row.project_id,
  environmentId: row.environment_id,
  before: row.before ?? null,
  after: row.after ?? null,
  details: row.details,
  comment: row.comment ?? null,
});

type Json = Parameters<Sql['json']>[0];

/**
 * The audit trail in `audit_log`: appended to, read per org, newest first, paged by (at_ms, seq);
 * pruned from the old end by retention and the per-org cap.
 */
export class PgAuditRepository implements AuditRepository {
  constructor(private readonly sql: Sql) {}

  async append(entry: AuditDraft): Promise<AuditEntry> {
    // org_id has no foreign key (the trail outlives what it describes), but it is a uuid column.
    if (!isUuid(entry.orgId)) throw notFound('organisation', entry.orgId);
    const json = (value: unknown) => (value === null || value === undefined ? null : this.sql.json(value as Json));
    const [row] = await this.sql<AuditRow[]>`
      INSERT INTO audit_log (org_id, actor_type, actor, actor_email, actor_name, action, resource_type, resource_id,
                             project_id, environment_id, at_ms, before, after, details, comment)
      VALUES (${entry.orgId}, ${entry.actor.type}, ${entry.actor.id}, ${entry.actor.email ?? null}, ${entry.actor.name ?? null}, ${entry.action},
              ${entry.resourceType}, ${entry.resourceId}, ${uuidOrNull(entry.projectId)}, ${uuidOrNull(entry.environmentId)},
              ${entry.atMs}, ${json(entry.before)}, ${json(entry.after)}, ${this.sql.json(entry.details as Json)}, ${entry.comment ?? null})
      RETURNING *`;
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toEntry(row);
  }

  async get(scope: OrgScope, id: string): Promise<AuditEntry | null> {
    if (!isUuid(scope.orgId) || !isUuid(id)) return null;
    const [row] = await this.sql<AuditRow[]>`SELECT * FROM audit_log WHERE org_id = ${scope.orgId} AND id = ${id}`;
    return row ? toEntry(row) : null;
  }

  async list(scope: OrgScope, query: AuditQuery): Promise<Page<AuditEntry>> {
    const after = query.cursor ? decodeAuditCursor(query.cursor) : null;
    if (!isUuid(scope.orgId)) return { items: [], nextCursor: null };
    const limit = Math.max(0, Math.floor(query.limit));
    if (query.projectId !== undefined && !isUuid(query.projectId)) return { items: [], nextCursor: null };
    if (query.environmentId !== undefined && !isUuid(query.environmentId)) return { items: [], nextCursor: null };
    const sql = this.sql;
    // Each absent filter is an empty fragment, so the planner sees only the conditions asked for
    // and can use the index that fits (by resource, by environment, or by org).
    const byType = query.resourceType !== undefined ? sql`AND resource_type = ${query.resourceType}` : sql``;
    const byId = query.resourceId !== undefined ? sql`AND resource_id = ${query.resourceId}` : sql``;
    const excluded = query.excludeResourceTypes ?? [];
    const notExcluded = excluded.length > 0 ? sql`AND resource_type <> ALL(${sql.array(excluded)}::text[])` : sql``;
    const byProject = query.projectId !== undefined ? sql`AND project_id = ${query.projectId}` : sql``;
    const byEnvironment =
      query.environmentId === undefined
        ? sql``
        : query.includeProjectLevel
          ? sql`AND (environment_id = ${query.environmentId} OR environment_id IS NULL)`
          : sql`AND environment_id = ${query.environmentId}`;
    const byCursor = after ? sql`AND (at_ms, seq) < (${after.atMs}, ${after.seq})` : sql``;
    // One row more than the page tells whether another page follows.
    const rows = await sql<AuditRow[]>`
      SELECT * FROM audit_log
      WHERE org_id = ${scope.orgId} ${byType} ${byId} ${notExcluded} ${byProject} ${byEnvironment} ${byCursor}
      ORDER BY at_ms DESC, seq DESC
      LIMIT ${limit + 1}`;
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map(toEntry),
      nextCursor: rows.length > limit && last ? encodeAuditCursor({ atMs: last.at_ms, seq: last.seq }) : null,
    };
  }

  // The deletions below pick a batch by ctid in a sub-select and delete it by a TID scan. Entries are
  // never updated and one pruner runs at a time, so a ctid read names the same row when deleted.

  /** Oldest first on `audit_log_by_age` (migration 0006): each batch is one short index range. */
  async pruneOlderThan(beforeMs: number, limit: number): Promise<number> {
    if (limit < 1) return 0;
    const result = await this.sql`
      DELETE FROM audit_log
      WHERE ctid = ANY(ARRAY(
        SELECT ctid FROM audit_log WHERE at_ms < ${beforeMs}::int8 ORDER BY at_ms LIMIT ${limit}))`;
    return result.count;
  }

  /**
   * Index probes on `audit_log_by_org_seq` (migration 0006), no count: the orgs are walked one
   * `org_id > previous LIMIT 1` step at a time (a loose index scan; PostgreSQL has no skip scan),
   * and each org's newest entry beyond the cap is its `OFFSET maxEntries` in reverse append order,
   * so an org costs at most maxEntries + 1 index entries however many it holds.
   */
  async findOverCap(maxEntries: number, afterOrgId: string | null, orgLimit: number): Promise<AuditCapScan> {
    if (orgLimit < 1 || (afterOrgId !== null && !isUuid(afterOrgId))) return { overCap: [], nextAfterOrgId: null };
    const sql = this.sql;
    const start = afterOrgId === null ? sql`` : sql`WHERE org_id > ${afterOrgId}::uuid`;
    const rows = await sql<{ org_id: string; seq: number | null }[]>`
      WITH RECURSIVE orgs (org_id, n) AS (
        (SELECT org_id, 1 FROM audit_log ${start} ORDER BY org_id LIMIT 1)
        UNION ALL
        SELECT (SELECT a.org_id FROM audit_log a WHERE a.org_id > orgs.org_id ORDER BY a.org_id LIMIT 1), orgs.n + 1
        FROM orgs WHERE orgs.org_id IS NOT NULL AND orgs.n < ${orgLimit}::int4
      )
      SELECT orgs.org_id, beyond.seq
      FROM orgs
      LEFT JOIN LATERAL (
        SELECT a.seq FROM audit_log a WHERE a.org_id = orgs.org_id
        ORDER BY a.seq DESC OFFSET ${maxEntries}::int8 LIMIT 1
      ) beyond ON true
      WHERE orgs.org_id IS NOT NULL
      ORDER BY orgs.org_id`;
    const overCap = rows.flatMap((row) => (row.seq === null ? [] : [{ orgId: row.org_id, newestExcessSeq: row.seq }]));
    const last = rows[rows.length - 1];
    return { overCap, nextAfterOrgId: rows.length === orgLimit && last ? last.org_id : null };
  }

  /** One short range of the org's part of `audit_log_by_org_seq`, from its first appended entry. */
  async pruneThrough(orgId: string, throughSeq: number, limit: number): Promise<number> {
    if (limit < 1 || !isUuid(orgId)) return 0;
    const result = await this.sql`
      DELETE FROM audit_log
      WHERE ctid = ANY(ARRAY(
        SELECT ctid FROM audit_log
        WHERE org_id = ${orgId}::uuid AND seq <= ${throughSeq}::int8
        ORDER BY seq LIMIT ${limit}))`;
    return result.count;
  }
}

// project_id and environment_id are uuid columns: a malformed id (never produced by the services)
// is dropped rather than failing the write it describes.
const uuidOrNull = (value: string | null): string | null => (value !== null && isUuid(value) ? value : null);
