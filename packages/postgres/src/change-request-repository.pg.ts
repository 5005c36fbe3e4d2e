import {
  notFound,
  type AuditActor,
  versionConflict,
  type ApprovalPolicy,
  type ChangeRequestChange,
  type ChangeRequestDraft,
  type ChangeRequestPatch,
  type ChangeRequestRepository,
  type ChangeRequestReview,
  type EnvironmentScope,
  type StoredChangeRequest,
  type StoredChangeRequestStatus,
} from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid } from './pg-errors.ts';

/** pg_advisory_xact_lock class of an environment's new change requests (flag-repository.pg.ts uses 7244, advisory-lock.pg.ts 7243). */
const CHANGE_REQUEST_LOCK_CLASS = 7245;

const validScope = (scope: EnvironmentScope): boolean => isUuid(scope.orgId) && isUuid(scope.projectId) && isUuid(scope.environmentId);

interface RequestRow {
  id: string;
  org_id: string;
  project_id: string;
  environment_id: string;
  title: string;
  description: string;
  changes: ChangeRequestChange[];
  content_hash: string;
  status: StoredChangeRequestStatus;
  author_id: string;
  author_email: string | null;
  revision: number;
  conflict: string | null;
  applied_by: StoredChangeRequest['appliedBy'];
  created_at_ms: string | number;
  updated_at_ms: string | number;
  submitted_at_ms: string | number | null;
  applied_at_ms: string | number | null;
  execute_at_ms: string | number | null;
  scheduled_by: AuditActor | null;
}

interface ReviewRow {
  id: string;
  change_request_id: string;
  reviewer_id: string;
  reviewer_email: string | null;
  verdict: ChangeRequestReview['verdict'];
  comment: string | null;
  content_hash: string;
  at_ms: string | number;
}

const ms = (value: string | number | null): number | null => (value === null ? null : Number(value));

const reviewOf = (row: ReviewRow): ChangeRequestReview => ({
  id: row.id,
  reviewer_id: row.reviewer_id,
  reviewer_email: row.reviewer_email,
  verdict: row.verdict,
  comment: row.comment,
  content_hash: row.content_hash,
  at_ms: Number(row.at_ms),
});

const requestOf = (row: RequestRow, reviews: ChangeRequestReview[]): StoredChangeRequest => ({
  id: row.id,
  orgId: row.org_id,
  projectId: row.project_id,
  environmentId: row.environment_id,
  title: row.title,
  description: row.description,
  changes: row.changes,
  contentHash: row.content_hash,
  status: row.status,
  authorId: row.author_id,
  authorEmail: row.author_email,
  revision: row.revision,
  conflict: row.conflict,
  appliedBy: row.applied_by,
  createdAtMs: Number(row.created_at_ms),
  updatedAtMs: Number(row.updated_at_ms),
  submittedAtMs: ms(row.submitted_at_ms),
  appliedAtMs: ms(row.applied_at_ms),
  executeAtMs: ms(row.execute_at_ms),
  scheduledBy: row.scheduled_by,
  reviews,
});

/** `approval_policies`, `change_requests` and `change_request_reviews`, every statement scoped by org, project and environment. */
export class PgChangeRequestRepository implements ChangeRequestRepository {
  constructor(private readonly sql: Sql) {}

  async getPolicy(where: { orgId: string; environmentId: string }): Promise<ApprovalPolicy | null> {
    if (!isUuid(where.orgId) || !isUuid(where.environmentId)) return null;
    const [row] = await this.sql<ApprovalPolicy[]>`
      SELECT required, min_approvals, allow_self_approval, reset_on_change, kill_switch_exempt
      FROM approval_policies WHERE environment_id = ${where.environmentId} AND org_id = ${where.orgId}`;
    return row ? { ...row } : null;
  }

  async putPolicy(scope: EnvironmentScope, policy: ApprovalPolicy, atMs: number): Promise<ApprovalPolicy> {
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    const rows = await this.sql`
      INSERT INTO approval_policies (environment_id, org_id, project_id, required, min_approvals, allow_self_approval, reset_on_change, kill_switch_exempt, updated_at_ms)
      SELECT e.id, e.org_id, e.project_id, ${policy.required}, ${policy.min_approvals}, ${policy.allow_self_approval}, ${policy.reset_on_change}, ${policy.kill_switch_exempt}, ${atMs}
      FROM environments e WHERE e.id = ${scope.environmentId} AND e.project_id = ${scope.projectId} AND e.org_id = ${scope.orgId}
      ON CONFLICT (environment_id) DO UPDATE SET required = excluded.required, min_approvals = excluded.min_approvals,
        allow_self_approval = excluded.allow_self_approval, reset_on_change = excluded.reset_on_change,
        kill_switch_exempt = excluded.kill_switch_exempt, updated_at_ms = excluded.updated_at_ms`;
    if (rows.count === 0) throw notFound('environment', scope.environmentId);
    return { ...policy };
  }

  async create(scope: EnvironmentScope, draft: ChangeRequestDraft): Promise<StoredChangeRequest> {
    if (!validScope(scope)) throw notFound('environment', scope.environmentId);
    const [row] = await this.sql<RequestRow[]>`
      INSERT INTO change_requests (org_id, project_id, environment_id, title, description, changes, content_hash, status, author_id, author_email, created_at_ms, updated_at_ms)
      SELECT e.org_id, e.project_id, e.id, ${draft.title}, ${draft.description}, ${this.sql.json(draft.changes as never)}, ${draft.contentHash}, ${draft.status},
             ${draft.authorId}, ${draft.authorEmail}, ${draft.createdAtMs}, ${draft.updatedAtMs}
      FROM environments e WHERE e.id = ${scope.environmentId} AND e.project_id = ${scope.projectId} AND e.org_id = ${scope.orgId}
      RETURNING *`;
    if (!row) throw notFound('environment', scope.environmentId);
    return requestOf(row, []);
  }

  async get(scope: EnvironmentScope, id: string): Promise<StoredChangeRequest | null> {
    if (!validScope(scope) || !isUuid(id)) return null;
    const [row] = await this.sql<RequestRow[]>`
      SELECT * FROM change_requests WHERE id = ${id} AND environment_id = ${scope.environmentId} AND project_id = ${scope.projectId} AND org_id = ${scope.orgId}`;
    if (!row) return null;
    const reviews = await this.sql<ReviewRow[]>`SELECT * FROM change_request_reviews WHERE change_request_id = ${id} ORDER BY at_ms, id`;
    return requestOf(row, reviews.map(reviewOf));
  }

  async list(scope: EnvironmentScope, options: { statuses?: StoredChangeRequestStatus[]; limit: number }): Promise<StoredChangeRequest[]> {
    if (!validScope(scope)) return [];
    const statuses = options.statuses ?? null;
    const rows = await this.sql<RequestRow[]>`
      SELECT * FROM change_requests
      WHERE environment_id = ${scope.environmentId} AND project_id = ${scope.projectId} AND org_id = ${scope.orgId}
        AND (${statuses === null}::boolean OR status = ANY(${this.sql.array(statuses ?? [])}::text[]))
      ORDER BY created_at_ms DESC, id LIMIT ${options.limit}`;
    if (rows.length === 0) return [];
    const reviews = await this.sql<ReviewRow[]>`
      SELECT * FROM change_request_reviews WHERE change_request_id = ANY(${this.sql.array(rows.map((r) => r.id))}::uuid[]) ORDER BY at_ms, id`;
    return rows.map((row) => requestOf(row, reviews.filter((review) => review.change_request_id === row.id).map(reviewOf)));
  }

  async countInStatuses(scope: EnvironmentScope, statuses: readonly StoredChangeRequestStatus[]): Promise<number> {
    if (!validScope(scope)) return 0;
    // Held to the commit inside a unit of work (outside one, to the end of this statement's own transaction).
    await this.sql`SELECT pg_advisory_xact_lock(${CHANGE_REQUEST_LOCK_CLASS}::int4, hashtext(${scope.environmentId}))`;
    const [row] = await this.sql<Array<{ count: number }>>`
      SELECT count(*)::int AS count FROM change_requests
      WHERE environment_id = ${scope.environmentId} AND project_id = ${scope.projectId} AND org_id = ${scope.orgId}
        AND status = ANY(${this.sql.array([...statuses])}::text[])`;
    return row?.count ?? 0;
  }

  async update(scope: EnvironmentScope, id: string, patch: ChangeRequestPatch, expectedRevision: number): Promise<StoredChangeRequest> {
    const current = await this.get(scope, id);
    if (!current) throw notFound('change request', id);
    const next = { ...current, ...patch };
    const [row] = await this.sql<RequestRow[]>`
      UPDATE change_requests SET title = ${next.title}, description = ${next.description}, changes = ${this.sql.json(next.changes as never)},
        content_hash = ${next.contentHash}, status = ${next.status}, conflict = ${next.conflict},
        applied_by = ${next.appliedBy === null ? null : this.sql.json(next.appliedBy as never)},
        submitted_at_ms = ${next.submittedAtMs}, applied_at_ms = ${next.appliedAtMs}, updated_at_ms = ${next.updatedAtMs},
        execute_at_ms = ${next.executeAtMs}, scheduled_by = ${next.scheduledBy === null ? null : this.sql.json(next.scheduledBy as never)}, revision = revision + 1
      WHERE id = ${id} AND environment_id = ${scope.environmentId} AND org_id = ${scope.orgId} AND revision = ${expectedRevision}
      RETURNING *`;
    if (!row) throw versionConflict('change request', expectedRevision, current.revision);
    return requestOf(row, current.reviews);
  }

  async addReview(scope: EnvironmentScope, id: string, review: Omit<ChangeRequestReview, 'id'>): Promise<ChangeRequestReview> {
    if (!validScope(scope) || !isUuid(id)) throw notFound('change request', id);
    const [row] = await this.sql<ReviewRow[]>`
      INSERT INTO change_request_reviews (change_request_id, reviewer_id, reviewer_email, verdict, comment, content_hash, at_ms)
      SELECT c.id, ${review.reviewer_id}, ${review.reviewer_email}, ${review.verdict}, ${review.comment}, ${review.content_hash}, ${review.at_ms}
      FROM change_requests c WHERE c.id = ${id} AND c.environment_id = ${scope.environmentId} AND c.org_id = ${scope.orgId}
      RETURNING *`;
    if (!row) throw notFound('change request', id);
    return reviewOf(row);
  }

  async listScheduled(scope: EnvironmentScope, options: { fromMs?: number; toMs?: number; limit: number }): Promise<StoredChangeRequest[]> {
    if (!validScope(scope)) return [];
    const sql = this.sql;
    const from = options.fromMs !== undefined ? sql`AND execute_at_ms >= ${options.fromMs}` : sql``;
    const to = options.toMs !== undefined ? sql`AND execute_at_ms < ${options.toMs}` : sql``;
    const rows = await sql<RequestRow[]>`
      SELECT * FROM change_requests
      WHERE environment_id = ${scope.environmentId} AND project_id = ${scope.projectId} AND org_id = ${scope.orgId}
        AND status = 'scheduled' ${from} ${to}
      ORDER BY execute_at_ms, id LIMIT ${Math.max(0, Math.floor(options.limit))}`;
    if (rows.length === 0) return [];
    const reviews = await sql<ReviewRow[]>`
      SELECT * FROM change_request_reviews WHERE change_request_id = ANY(${sql.array(rows.map((r) => r.id))}::uuid[]) ORDER BY at_ms, id`;
    return rows.map((row) => requestOf(row, reviews.filter((review) => review.change_request_id === row.id).map(reviewOf)));
  }

  async claimDueScheduled(nowMs: number): Promise<StoredChangeRequest | null> {
    // The scheduler's queue spans every org (as scheduled_changes' claimDue); the row is locked for the claiming unit of work.
    const [row] = await this.sql<RequestRow[]>`
      SELECT * FROM change_requests
      WHERE status = 'scheduled' AND execute_at_ms <= ${nowMs}
      ORDER BY execute_at_ms, id
      LIMIT 1
      FOR UPDATE SKIP LOCKED`;
    if (!row) return null;
    const reviews = await this.sql<ReviewRow[]>`SELECT * FROM change_request_reviews WHERE change_request_id = ${row.id} ORDER BY at_ms, id`;
    return requestOf(row, reviews.map(reviewOf));
  }
}
