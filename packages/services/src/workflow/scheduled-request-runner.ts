import { DEFAULT_APPROVAL_POLICY, isDomainError, type Repositories, type StoredChangeRequest } from '@switchyard/core';
import { SCHEDULER_ACTOR, schedulerMayStillWrite } from '../schedules/scheduled-change-service.ts';
import { approvalShortfall, countedReviews, firstConflict, isFlagChange, recordRequestChange, writeRequestChanges } from './change-request-apply.ts';

/** How one due scheduled change request ended. */
export interface ScheduledRequestOutcome {
  request: StoredChangeRequest;
  applied: boolean;
}

/**
 * Claims the earliest due `scheduled` change request (FOR UPDATE SKIP LOCKED, so racing workers
 * in any number of services processes apply it once) and applies it in the same unit of work,
 * through the same writes as a person's apply (docs/workflow.md "Change requests and approvals").
 * Checked again at the time: the party who scheduled it may still write every change there, the
 * approvals of its content still count (an approver removed or demoted since does not) and no
 * rejection counts, every change's version is still current and its operations still apply. If
 * any of that fails, or a write is refused, the savepoint is undone (nothing of the request is
 * written) and the request becomes `conflicted` with the reason and a `change_request.conflict`
 * entry by the scheduler. A concurrent write (ABORTED) or a database error undoes everything: the
 * request stays scheduled and is tried again at the next look. Null when none is due.
 */
export async function runDueChangeRequest(repos: Repositories, now: () => number): Promise<ScheduledRequestOutcome | null> {
  return repos.unitOfWork.run(async (tx): Promise<ScheduledRequestOutcome | null> => {
    const request = await tx.changeRequests.claimDueScheduled(now());
    if (!request) return null;
    const atMs = now();
    const scope = { orgId: request.orgId, projectId: request.projectId, environmentId: request.environmentId };
    const executeAtMs = request.executeAtMs ?? atMs;
    const timing = { scheduled_by: request.scheduledBy, execute_at_ms: executeAtMs, applied_at_ms: atMs, late_ms: Math.max(0, atMs - executeAtMs) };
    const policy = (await tx.changeRequests.getPolicy(scope)) ?? { ...DEFAULT_APPROVAL_POLICY };
    const counted = await countedReviews(tx, scope, request, policy);
    const approvers = counted.approvals.map((review) => review.reviewer_email ?? review.reviewer_id);
    const actions = [...(request.changes.some(isFlagChange) ? (['flag.write'] as const) : []), ...(request.changes.some((c) => !isFlagChange(c)) ? (['segment.write'] as const) : [])];
    let reason: string | null =
      request.scheduledBy === null ? 'it was scheduled by no one known' : await schedulerMayStillWrite(tx, { ...scope, createdBy: request.scheduledBy }, atMs, actions);
    reason ??= approvalShortfall(request.id, policy, counted);
    reason ??= await firstConflict(tx, scope, request.changes);
    if (reason === null) {
      try {
        await tx.unitOfWork.run(async (inner) => {
          // The scheduler is a platform actor: the approval gate lets it through (the request was approved, checked above).
          const details = { change_request_id: request.id, change_request_title: request.title, approved_by: approvers, ...timing };
          await writeRequestChanges(inner, SCHEDULER_ACTOR, scope, request.changes, details, atMs);
        });
      } catch (error) {
        if (!isDomainError(error) || error.code === 'ABORTED' || error.code === 'UNAVAILABLE') throw error;
        reason = error.message;
      }
    }
    if (reason === null) {
      const applied = await tx.changeRequests.update(scope, request.id, { status: 'applied', appliedAtMs: atMs, appliedBy: { applier_id: SCHEDULER_ACTOR.id, approvers }, updatedAtMs: atMs }, request.revision);
      await recordRequestChange(tx, SCHEDULER_ACTOR, scope, 'change_request.apply', applied, request, applied, { approved_by: approvers, ...timing }, atMs);
      return { request: applied, applied: true };
    }
    const conflicted = await tx.changeRequests.update(scope, request.id, { status: 'conflicted', conflict: reason, updatedAtMs: atMs }, request.revision);
    await recordRequestChange(tx, SCHEDULER_ACTOR, scope, 'change_request.conflict', conflicted, request, conflicted, { conflict: reason, approved_by: approvers, ...timing }, atMs);
    return { request: conflicted, applied: false };
  });
}
