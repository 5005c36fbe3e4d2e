import type { Principal, ProjectScope, Repositories } from '@switchyard/core';
import { recordChange } from '../audit/audit-trail.ts';
import { SCHEDULER_ACTOR, toScheduledChangeRecord } from './scheduled-change-service.ts';

/**
 * A flag's delete or archive cancels its pending scheduled changes in every environment, inside
 * the delete's or archive's unit of work, each with a `scheduled_change.cancel` entry naming why
 * (docs/workflow.md "Scheduled changes"). The entries name the scheduler as the actor
 * and who deleted or archived the flag in their details: the person's own entry is the flag's
 * `flag.delete` / `flag.archive`, and a protected environment's confirmation is not asked again for
 * the schedules a project-level delete ends.
 */
export async function cancelFlagSchedules(tx: Repositories, principal: Principal, project: ProjectScope, flagKey: string, reason: string, atMs: number): Promise<void> {
  const cancelled = await tx.scheduledChanges.cancelPendingForFlag(project, flagKey, reason, atMs);
  for (const change of cancelled) {
    await recordChange(
      tx,
      SCHEDULER_ACTOR,
      {
        orgId: change.orgId,
        action: 'scheduled_change.cancel',
        resourceType: 'scheduled_change',
        resourceId: change.id,
        projectId: change.projectId,
        environmentId: change.environmentId,
        before: { ...toScheduledChangeRecord(change), status: 'pending', reason: null },
        after: toScheduledChangeRecord(change),
        details: { flag_key: flagKey, reason, cancelled_for: principalRef(principal) },
      },
      atMs,
    );
  }
}

/** Who a cascade acted for, as entry details name them. */
function principalRef(principal: Principal): Record<string, string> {
  switch (principal.kind) {
    case 'user':
      return { type: 'user', id: principal.userId };
    case 'api_token':
      return { type: 'api_token', id: principal.tokenId, name: principal.name };
    default:
      return { type: 'sdk_key', id: principal.sdkKeyId };
  }
}
