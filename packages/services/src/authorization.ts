import { DomainError, authorize, type Action, type Principal, type ResourceRef } from '@switchyard/core';

/** Runs core's RBAC decision and turns a refusal into the matching domain error. */
export function requireAllowed(principal: Principal, action: Action, resource: ResourceRef): void {
  const decision = authorize(principal, action, resource);
  if (!decision.allowed) {
    throw new DomainError(decision.code, decision.code === 'NOT_FOUND' ? 'not found' : decision.reason);
  }
}

/** The user id or SDK key id that acted, for the audit log. */
export const actorOf = (principal: Principal): string =>
  principal.kind === 'user' ? principal.userId : `sdk_key:${principal.sdkKeyId}`;
