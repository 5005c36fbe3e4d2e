import { DomainError, authorize, authorizeSomewhere, permissionDenied, type Action, type Principal, type Repositories, type ResourceRef } from '@switchyard/core';

/** Runs core's RBAC decision and turns a refusal into the matching domain error. */
export function requireAllowed(principal: Principal, action: Action, resource: ResourceRef): void {
  throwIfRefused(authorize(principal, action, resource));
}

/**
 * The check before a use case looks its resource up (core's authorizeSomewhere): a caller without the
 * action's role anywhere in the org is refused before it learns whether the id exists. Always followed
 * by requireAllowed with the resource's project and environment once found.
 */
export function requireAllowedSomewhere(principal: Principal, action: Action, orgId: string): void {
  throwIfRefused(authorizeSomewhere(principal, action, orgId));
}

function throwIfRefused(decision: ReturnType<typeof authorize>): void {
  if (!decision.allowed) {
    throw new DomainError(decision.code, decision.code === 'NOT_FOUND' ? 'not found' : decision.reason);
  }
}

/**
 * Inside a unit of work that leaves something an admin's removal must withdraw (an invitation, an
 * identity provider): locks the org's membership changes and checks it is still an org_admin of the
 * org. A removal or demotion racing the write then either waits for it and withdraws what it
 * wrote, or comes first and the write is refused (docs/security.md "Removed and demoted admins").
 * System administrators (who invite into any org without being members) are not members: skipped.
 */
export async function requireStillOrgAdmin(tx: Pick<Repositories, 'users'>, principal: Principal, orgId: string): Promise<void> {
  if (principal.kind !== 'user' || principal.isSystem) return;
  const membership = await tx.users.lockMembership(orgId, principal.userId);
  if (membership?.role !== 'org_admin') throw permissionDenied('no longer an org_admin of this organisation');
}
