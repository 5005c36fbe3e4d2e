import {
  applyFlagOperations,
  checkConditions,
  countingReviews,
  failedPrecondition,
  isDomainError,
  type ApprovalPolicy,
  type ChangeRequestChange,
  type ChangeRequestReview,
  type EnvironmentScope,
  type Repositories,
  type StoredChangeRequest,
} from '@switchyard/core';
import { recordChange, type Acting } from '../audit/audit-trail.ts';
import { writeFlagOperations } from '../flags/flag-operations-write.ts';
import { checkFlagsStayInBudget } from '../segments/segment-service.ts';
import { reviewersWhoMayApprove } from './approvers-now.ts';

/**
 * The apply of a change request (docs/workflow.md "Change requests and approvals"), shared by a
 * person's apply (ChangeRequestService.apply) and the scheduler's apply of a request scheduled for
 * a time (ScheduledChangeWorker): the approvals that count, the first change no longer current,
 * and the writes of every change inside the caller's unit of work.
 */

export const isFlagChange = (change: ChangeRequestChange): change is Extract<ChangeRequestChange, { flag_key: string }> => 'flag_key' in change;

/**
 * The reviews that count for the request's current content, an approval only while its reviewer
 * may still approve here (a member removed from the org or demoted since no longer counts).
 */
export async function countedReviews(repos: Repositories, scope: EnvironmentScope, request: StoredChangeRequest, policy: ApprovalPolicy): Promise<{ approvals: ChangeRequestReview[]; rejections: ChangeRequestReview[] }> {
  const counted = countingReviews(request.reviews, request.contentHash, request.authorId, policy);
  const mayApprove = await reviewersWhoMayApprove(repos, scope, counted.approvals.map((review) => review.reviewer_id));
  return { approvals: counted.approvals.filter((review) => mayApprove.has(review.reviewer_id)), rejections: counted.rejections };
}

/** Why the request may not be applied for want of approvals (a counting rejection, too few approvals), or null. */
export function approvalShortfall(id: string, policy: ApprovalPolicy, counted: { approvals: ChangeRequestReview[]; rejections: ChangeRequestReview[] }): string | null {
  if (counted.rejections.length > 0) return `change request ${id} is rejected (by ${counted.rejections.map((r) => r.reviewer_email ?? r.reviewer_id).join(', ')}): it cannot be applied`;
  if (policy.required && counted.approvals.length < policy.min_approvals) {
    return `change request ${id} has ${counted.approvals.length} of the ${policy.min_approvals} approvals its environment's policy requires for its current content`;
  }
  return null;
}

/** The first change no longer current (its version moved, its subject gone, an operation that no longer applies), or null. */
export async function firstConflict(repos: Repositories, scope: EnvironmentScope, changes: ChangeRequestChange[]): Promise<string | null> {
  for (const change of changes) {
    if (isFlagChange(change)) {
      const flag = await repos.flags.get(scope, change.flag_key);
      if (!flag) return `flag '${change.flag_key}' does not exist any more`;
      if (flag.version !== change.version) return `flag '${change.flag_key}' is at version ${flag.version}, the request was made against version ${change.version}`;
      try {
        applyFlagOperations(flag, change.operations);
      } catch (error) {
        if (isDomainError(error)) return `flag '${change.flag_key}': ${error.message}`;
        throw error;
      }
    } else {
      const segment = await repos.segments.get(scope, change.segment_key);
      if (!segment) return `segment '${change.segment_key}' does not exist any more`;
      if (segment.version !== change.version) return `segment '${change.segment_key}' is at version ${segment.version}, the request was made against version ${change.version}`;
    }
  }
  return null;
}

/**
 * Writes every change of a request inside the caller's unit of work: each flag through
 * writeFlagOperations (its version checked: a write committed in between aborts), each segment
 * with a `segment.update` entry; every entry carries `details`. The caller announces after commit.
 */
export async function writeRequestChanges(tx: Repositories, acting: Acting, scope: EnvironmentScope, changes: ChangeRequestChange[], details: Record<string, unknown>, nowMs: number): Promise<void> {
  for (const change of changes) {
    if (isFlagChange(change)) {
      await writeFlagOperations(tx, { environment: scope, flagKey: change.flag_key, operations: change.operations, acting, action: 'flag.update', details }, nowMs);
    } else {
      await applySegment(tx, acting, scope, change, details, nowMs);
    }
  }
}

async function applySegment(tx: Repositories, acting: Acting, scope: EnvironmentScope, change: Extract<ChangeRequestChange, { segment_key: string }>, details: Record<string, unknown>, nowMs: number): Promise<void> {
  const key = change.segment_key;
  let segment = (await tx.segments.get(scope, key))!;
  const before = segment;
  for (const operation of change.operations) {
    if (operation.op === 'set_conditions') {
      if (segment.kind !== 'rule') throw failedPrecondition(`segment '${key}' is a list segment: set_conditions is for rule segments`);
      const conditions = checkConditions(operation.conditions, 'conditions');
      await checkFlagsStayInBudget(tx, scope, segment, conditions);
      segment = await tx.segments.update(scope, key, { conditions }, segment.version);
    } else {
      if (segment.kind !== 'list') throw failedPrecondition(`segment '${key}' is a rule segment: it has no member lists`);
      const field = `${operation.op === 'add_members' ? 'add' : 'remove'}_${operation.list}` as const;
      segment = await tx.segments.changeMembers(scope, key, { [field]: operation.keys });
    }
  }
  await recordChange(tx, acting, {
    orgId: scope.orgId,
    action: 'segment.update',
    resourceType: 'segment',
    resourceId: key,
    projectId: scope.projectId,
    environmentId: scope.environmentId,
    before,
    after: segment,
    details: { ...details, operations: change.operations },
  }, nowMs);
}

/** A `change_request.*` entry (resource type `change_request`, not gated) in the caller's unit of work. */
export async function recordRequestChange(
  tx: Repositories,
  acting: Acting,
  scope: EnvironmentScope,
  action: string,
  request: StoredChangeRequest,
  before: StoredChangeRequest | null,
  after: StoredChangeRequest | null,
  details: Record<string, unknown>,
  nowMs: number,
): Promise<void> {
  const shown = (r: StoredChangeRequest | null) => r && { title: r.title, description: r.description, status: r.status, changes: r.changes, content_hash: r.contentHash, ...(r.executeAtMs === null ? {} : { execute_at_ms: r.executeAtMs }) };
  await recordChange(tx, acting, {
    orgId: scope.orgId,
    action,
    resourceType: 'change_request',
    resourceId: request.id,
    projectId: scope.projectId,
    environmentId: scope.environmentId,
    ...(before ? { before: shown(before) } : {}),
    ...(after ? { after: shown(after) } : {}),
    details: { title: request.title, ...details },
  }, nowMs);
}
