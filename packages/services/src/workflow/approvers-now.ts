import { authorize, type EnvironmentScope, type Principal, type Repositories } from '@switchyard/core';

/**
 * Of `reviewerIds`, those who may approve change requests in the environment now: still members
 * of the org, with a role (or bindings) that grants change_request.approve there. An approval by
 * someone removed or demoted since does not count (docs/workflow.md "Change requests"), and a
 * request's view shows the approvals as they count. `known` carries answers between calls (a list
 * reads each reviewer once).
 */
export async function reviewersWhoMayApprove(repos: Repositories, scope: EnvironmentScope, reviewerIds: Iterable<string>, known: Map<string, boolean> = new Map()): Promise<Set<string>> {
  const allowed = new Set<string>();
  for (const reviewerId of new Set(reviewerIds)) {
    let may = known.get(reviewerId);
    if (may === undefined) {
      const membership = await repos.users.getMembership(scope.orgId, reviewerId);
      const reviewer: Principal | null = membership
        ? { kind: 'user', userId: reviewerId, orgId: scope.orgId, role: membership.role, isSystem: false, ...(membership.bindings ? { bindings: membership.bindings } : {}) }
        : null;
      may = reviewer !== null && authorize(reviewer, 'change_request.approve', scope).allowed;
      known.set(reviewerId, may);
    }
    if (may) allowed.add(reviewerId);
  }
  return allowed;
}
