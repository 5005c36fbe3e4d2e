import { DomainError, authorize, type Action, type Principal, type ResourceRef } from '@switchyard/core';

/** Runs core's RBAC decision and turns a refusal into the matching domain error. */
export function requireAllowed(principal: Principal, action: Action, resource: ResourceRef): void {
  const decision = authorize(principal, action, resource);
  if (!decision.allowed) {
    throw new DomainError(decision.code, decision.code === 'NOT_FOUND' ? 'not found' : decision.reason);
  }
}
