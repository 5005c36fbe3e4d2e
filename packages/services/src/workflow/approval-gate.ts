import { authorize, canonicalJson, failedPrecondition, permissionDenied, type Principal, type Repositories } from '@switchyard/core';
import { changeIntentOf, withChangeIntent } from '../audit/change-intent.ts';

/**
 * The approval gate (docs/workflow.md "The gate"): in an environment whose approval
 * policy has `required`, a direct write of the environment's flag configuration, segments or
 * scheduled changes is refused with FAILED_PRECONDITION naming the rule. Enforced in recordChange,
 * inside the write's unit of work, so it covers every writer (flag and segment routes, environment
 * copy, flags-as-code import, schedules) and rolls the write back. Passes:
 * - the apply of an approved change request (the ChangeRequestService marks its acting party);
 * - the platform's own actors (`{type: 'system'}`: the scheduler applies schedules that were
 *   themselves created through the gate, i.e. from an approved request or before the policy);
 * - a kill switch (only `enabled` true → false) when the policy is `kill_switch_exempt`;
 * - a bypass: `X-Approval-Bypass: true` from a caller allowed `change_request.bypass` (the
 *   entry's details say `approval_bypassed: true`).
 */

/** The change-history resource types the gate covers when the entry names an environment. */
export const GATED_RESOURCE_TYPES: ReadonlySet<string> = new Set(['flag', 'segment', 'scheduled_change']);

const approvedApplies = new WeakMap<object, string>();

/** A copy of the acting party marked as applying approved change request `changeRequestId` (its change intent kept). */
export function asApprovedApply<P extends Principal>(principal: P, changeRequestId: string): P {
  const copy = withChangeIntent(principal, changeIntentOf(principal));
  approvedApplies.set(copy, changeRequestId);
  return copy;
}

interface GatedChange {
  orgId: string;
  resourceType: string;
  projectId?: string | null;
  environmentId?: string | null;
  before?: unknown;
  after?: unknown;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Whether a flag entry's before → after turns the flag off and changes nothing else of its configuration. */
export function isKillSwitch(change: GatedChange): boolean {
  if (change.resourceType !== 'flag' || !isObject(change.before) || !isObject(change.after)) return false;
  if (change.before.enabled !== true || change.after.enabled !== false) return false;
  const rest = (flag: Record<string, unknown>) => {
    const { enabled: _e, version: _v, updated_at_ms: _u, ...others } = flag;
    return canonicalJson(others);
  };
  return rest(change.before) === rest(change.after);
}

/**
 * Refuses a gated write (see above); answers the details the entry adds (a bypass is recorded).
 * @throws FAILED_PRECONDITION naming the rule; PERMISSION_DENIED for a bypass asked without the right.
 */
export async function requireApprovalGate(repos: Repositories, acting: Principal, change: GatedChange): Promise<Record<string, unknown>> {
  if (!change.environmentId || !GATED_RESOURCE_TYPES.has(change.resourceType)) return {};
  if (approvedApplies.has(acting)) return {};
  const policy = await repos.changeRequests.getPolicy({ orgId: change.orgId, environmentId: change.environmentId });
  if (!policy?.required) return {};
  if (policy.kill_switch_exempt && isKillSwitch(change)) return { approval_kill_switch: true };
  const resource = { orgId: change.orgId, environmentId: change.environmentId, ...(change.projectId ? { projectId: change.projectId } : {}) };
  if (changeIntentOf(acting).bypassApprovals === true) {
    const decision = authorize(acting, 'change_request.bypass', resource);
    if (!decision.allowed) throw permissionDenied(`X-Approval-Bypass needs change_request.bypass (an admin of the environment): ${decision.reason}`);
    return { approval_bypassed: true };
  }
  const environment = await repos.environments.get({ orgId: change.orgId }, change.environmentId);
  const name = environment ? `"${environment.name}" (${environment.id})` : change.environmentId;
  throw failedPrecondition(
    `environment ${name} requires approval: its approval policy has required=true (min_approvals ${policy.min_approvals}), so ${change.resourceType} changes go through a change request ` +
      `(POST /v1/environments/${change.environmentId}/change-requests)${policy.kill_switch_exempt ? '; turning a flag off alone is exempt' : ''}`,
  );
}
