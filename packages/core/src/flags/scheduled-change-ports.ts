import type { AuditActor } from '../model/entities.ts';
import type { EnvironmentScope, ProjectScope } from '../ports/scopes.ts';
import type { FlagOperation } from './flag-operations.ts';

/** pending → applied | failed (with a reason) | cancelled (docs/workflow.md "Scheduled changes"). */
export type ScheduledChangeStatus = 'pending' | 'applied' | 'failed' | 'cancelled';
export const SCHEDULED_CHANGE_STATUSES: readonly ScheduledChangeStatus[] = ['pending', 'applied', 'failed', 'cancelled'];

/** A change of one environment's flag to be applied at a time. */
export interface ScheduledChange {
  id: string;
  orgId: string;
  projectId: string;
  environmentId: string;
  flagKey: string;
  /** When it is due (ms since the epoch, UTC). */
  executeAtMs: number;
  operations: FlagOperation[];
  comment: string;
  status: ScheduledChangeStatus;
  /** Why it failed or was cancelled by the platform; null otherwise. */
  reason: string | null;
  /** Who scheduled it (a user or an API token), as the change history names them. */
  createdBy: AuditActor;
  createdAtMs: number;
  updatedAtMs: number;
  /** When the worker applied it or found it failed (later than executeAtMs after downtime); null before. */
  appliedAtMs: number | null;
  /** Bumped by every edit; an edit may name the version it was made against. */
  version: number;
}

export interface ScheduledChangeDraft {
  scope: EnvironmentScope;
  flagKey: string;
  executeAtMs: number;
  operations: FlagOperation[];
  comment: string;
  createdBy: AuditActor;
  atMs: number;
}

export interface ScheduledChangeQuery {
  flagKey?: string;
  statuses?: ScheduledChangeStatus[];
  /** executeAtMs >= fromMs */
  fromMs?: number;
  /** executeAtMs < toMs */
  toMs?: number;
  limit: number;
}

/** Pending schedules of one flag in one environment at most (a bound for contention checks). */
export const MAX_PENDING_SCHEDULES_PER_FLAG = 100;

/**
 * Scheduled changes (docs/workflow.md "Scheduled changes"). The worker's `claimDue` and `lockPending` lock the
 * row for the caller's unit of work (FOR UPDATE SKIP LOCKED / FOR UPDATE): the status change commits
 * with the flag write, so two workers never apply one schedule twice.
 */
export interface ScheduledChangeRepository {
  create(draft: ScheduledChangeDraft): Promise<ScheduledChange>;
  get(scope: EnvironmentScope, id: string): Promise<ScheduledChange | null>;
  /** Ordered by executeAtMs, then id. */
  list(scope: EnvironmentScope, query: ScheduledChangeQuery): Promise<ScheduledChange[]>;
  /**
   * Replaces the fields given of a pending schedule; with `expectedVersion`, only at that version.
   * @throws NOT_FOUND, FAILED_PRECONDITION (no longer pending), ABORTED (another version).
   */
  update(
    scope: EnvironmentScope,
    id: string,
    patch: { executeAtMs?: number; operations?: FlagOperation[]; comment?: string },
    expectedVersion: number | undefined,
    atMs: number,
  ): Promise<ScheduledChange>;
  /** Ends a pending schedule (applied, failed or cancelled); null when it is not pending (any more). */
  finish(id: string, outcome: { status: Exclude<ScheduledChangeStatus, 'pending'>; reason: string | null; atMs: number; appliedAtMs?: number | null }): Promise<ScheduledChange | null>;
  /**
   * Cancels every pending schedule of the flag in every environment of the project (its delete or
   * archive, in the same unit of work); returns them as cancelled.
   */
  cancelPendingForFlag(project: ProjectScope, flagKey: string, reason: string, atMs: number): Promise<ScheduledChange[]>;
  /** Locks and returns the earliest due pending schedule no other unit of work holds; null when none. */
  claimDue(nowMs: number): Promise<ScheduledChange | null>;
  /** Locks one schedule by id (waiting for another holder) and returns it if it is still pending. */
  lockPending(id: string): Promise<ScheduledChange | null>;
}
