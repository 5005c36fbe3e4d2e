import type { AuditActor } from '../model/entities.ts';
import type { EnvironmentScope } from './scopes.ts';
import type { ApprovalPolicy, ChangeRequestChange, ChangeRequestReview, ChangeRequestStatus } from '../workflow/change-requests.ts';

/** The stored part of a change request's status ('rejected' is derived from its reviews). */
export type StoredChangeRequestStatus = Exclude<ChangeRequestStatus, 'rejected'>;

/** A change request as stored (docs/workflow.md "Change requests and approvals"). */
export interface StoredChangeRequest {
  id: string;
  orgId: string;
  projectId: string;
  environmentId: string;
  title: string;
  description: string;
  changes: ChangeRequestChange[];
  /** sha256 over the canonical JSON of `changes`: what reviews are given on. */
  contentHash: string;
  status: StoredChangeRequestStatus;
  authorId: string;
  authorEmail: string | null;
  /** Bumped by every write of the request (optimistic: a stale writer is ABORTED). */
  revision: number;
  /** Why the last apply found a change no longer current (status conflicted). */
  conflict: string | null;
  /** Who applied it (user or token id) and whose approvals counted. */
  appliedBy: { applier_id: string; approvers: string[] } | null;
  createdAtMs: number;
  updatedAtMs: number;
  submittedAtMs: number | null;
  appliedAtMs: number | null;
  /** When a `scheduled` request is due (kept after it is applied, conflicted or cancelled); null if never scheduled. */
  executeAtMs: number | null;
  /** Who scheduled it (the scheduler checks their write rights again at the time). */
  scheduledBy: AuditActor | null;
  reviews: ChangeRequestReview[];
}

export type ChangeRequestDraft = Omit<StoredChangeRequest, 'id' | 'revision' | 'reviews' | 'conflict' | 'appliedBy' | 'submittedAtMs' | 'appliedAtMs' | 'executeAtMs' | 'scheduledBy'>;
export type ChangeRequestPatch = Partial<Pick<StoredChangeRequest, 'title' | 'description' | 'changes' | 'contentHash' | 'status' | 'conflict' | 'appliedBy' | 'submittedAtMs' | 'appliedAtMs' | 'updatedAtMs' | 'executeAtMs' | 'scheduledBy'>>;

/** Approval policies and change requests, every call scoped by the environment. */
export interface ChangeRequestRepository {
  /** The environment's policy; null: none stored (DEFAULT_APPROVAL_POLICY applies). */
  getPolicy(where: { orgId: string; environmentId: string }): Promise<ApprovalPolicy | null>;
  putPolicy(scope: EnvironmentScope, policy: ApprovalPolicy, atMs: number): Promise<ApprovalPolicy>;
  create(scope: EnvironmentScope, draft: ChangeRequestDraft): Promise<StoredChangeRequest>;
  /** With its reviews, oldest first; null when absent in the scope. */
  get(scope: EnvironmentScope, id: string): Promise<StoredChangeRequest | null>;
  /** Newest first, at most `limit`, optionally of some statuses (reviews included). */
  list(scope: EnvironmentScope, options: { statuses?: StoredChangeRequestStatus[]; limit: number }): Promise<StoredChangeRequest[]>;
  /**
   * How many of the environment's requests have one of `statuses`. Inside a unit of work it first
   * takes the environment's change-request lock, held to the commit, so that a cap checked with it
   * (MAX_ACTIVE_CHANGE_REQUESTS_PER_ENVIRONMENT) holds when creates race: the second waits, then counts the first.
   */
  countInStatuses(scope: EnvironmentScope, statuses: readonly StoredChangeRequestStatus[]): Promise<number>;
  /** Writes the patch when the stored revision is `expectedRevision` (bumping it). @throws ABORTED otherwise; NOT_FOUND when absent. */
  update(scope: EnvironmentScope, id: string, patch: ChangeRequestPatch, expectedRevision: number): Promise<StoredChangeRequest>;
  addReview(scope: EnvironmentScope, id: string, review: Omit<ChangeRequestReview, 'id'>): Promise<ChangeRequestReview>;
  /** `scheduled` requests due in [fromMs, toMs) (bounds optional), earliest first, at most `limit` (a calendar). */
  listScheduled(scope: EnvironmentScope, options: { fromMs?: number; toMs?: number; limit: number }): Promise<StoredChangeRequest[]>;
  /**
   * The earliest `scheduled` request due at `nowMs` in any environment, locked for the caller's
   * unit of work (a row another worker holds is skipped: FOR UPDATE SKIP LOCKED); null when none.
   */
  claimDueScheduled(nowMs: number): Promise<StoredChangeRequest | null>;
}
