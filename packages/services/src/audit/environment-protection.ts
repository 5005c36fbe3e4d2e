import { failedPrecondition, type Principal, type Repositories } from '@switchyard/core';
import { MAX_CHANGE_COMMENT_LENGTH, type ChangeIntent } from './change-intent.ts';

/**
 * Refuses a write into a protected environment whose request lacks what the protection asks
 * (docs/access.md "Critical environments"):
 * - critical: a person (a `user` principal) must have confirmed this very environment
 *   (`X-Confirm-Environment: <environment_id>`); API tokens are automation and need no confirmation;
 * - require_comment: every caller must give a comment (`X-Change-Comment`).
 * The environment is read in the write's own unit of work, so the refusal rolls the write back and
 * a protection switched on concurrently is seen by the writes that commit after it.
 * @throws FAILED_PRECONDITION saying exactly which header (and gRPC metadata) to send.
 */
export async function requireProtectionMet(repos: Repositories, principal: Principal, where: { orgId: string; environmentId: string }, intent: ChangeIntent): Promise<void> {
  const environment = await repos.environments.get({ orgId: where.orgId }, where.environmentId);
  if (!environment || (!environment.critical && !environment.requireComment)) return;
  const missing: string[] = [];
  if (environment.critical && principal.kind === 'user' && intent.confirmEnvironmentId !== environment.id) {
    missing.push(`X-Confirm-Environment: ${environment.id} (gRPC metadata x-confirm-environment) to confirm the change`);
  }
  if (environment.requireComment && intent.comment === undefined) {
    missing.push(`X-Change-Comment: <a comment of 1..${MAX_CHANGE_COMMENT_LENGTH} characters> (gRPC metadata x-change-comment)`);
  }
  if (missing.length === 0) return;
  const protections = [environment.critical ? 'critical' : '', environment.requireComment ? 'requires a comment for every change' : ''].filter(Boolean).join(' and ');
  throw failedPrecondition(`environment "${environment.name}" (${environment.id}) is ${protections}: send ${missing.join(' and ')}`);
}
