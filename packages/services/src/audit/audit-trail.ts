import type { AuditActor, AuditDraft, Principal, Repositories } from '@switchyard/core';
import { changeIntentOf } from './change-intent.ts';
import { requireProtectionMet } from './environment-protection.ts';
import { enqueueWebhookDeliveries } from '../webhooks/webhook-outbox.ts';
import { requireApprovalGate } from '../workflow/approval-gate.ts';

/** What a write says about itself; who and when are filled in by `recordChange`. */
export interface Change {
  orgId: string;
  action: string;
  resourceType: string;
  resourceId: string;
  projectId?: string | null;
  environmentId?: string | null;
  /** The resource as the API shows it before the write (absent for a creation). Never a secret. */
  before?: unknown;
  /** ... and after it (absent for a deletion). */
  after?: unknown;
  details?: Record<string, unknown>;
}

/** Whoever acts: a caller, or the platform itself (`{type: 'system', id: 'bootstrap'}`). */
export type Acting = Principal | AuditActor;

const isPrincipal = (acting: Acting): acting is Principal => 'kind' in acting;

/**
 * The audit actor of a caller. A user's email is read in the same transaction, so the entry names
 * the address the account had when it acted (an account may change later or be gone).
 */
export async function actorFor(repos: Repositories, acting: Acting): Promise<AuditActor> {
  if (!isPrincipal(acting)) return acting;
  // A token is named as it was called when it acted (a name is all a reader can recognise).
  if (acting.kind === 'api_token') return { type: 'api_token', id: acting.tokenId, name: acting.name };
  if (acting.kind !== 'user') return { type: 'sdk_key', id: acting.sdkKeyId };
  const user = await repos.users.getById(acting.userId);
  return user ? { type: 'user', id: acting.userId, email: user.email } : { type: 'user', id: acting.userId };
}

/**
 * Appends the audit entry of a write. Called with the repositories of the write's unit of work
 * (`repos.unitOfWork.run`), so the entry commits with the write or not at all
 * (docs/decisions.md "Change history").
 *
 * It is also where a critical environment's protection is enforced (docs/access.md "Critical
 * environments"): every write records its change here, inside its unit of work, so refusing here
 * (FAILED_PRECONDITION) rolls the write back, whichever service made it; the approval gate of an
 * environment whose policy requires change requests too (workflow/approval-gate.ts). The request's
 * comment, if any, is kept in the entry. And it writes the entry's webhook deliveries (the outbox),
 * in the same unit of work.
 */
export async function recordChange(repos: Repositories, acting: Acting, change: Change, atMs: number): Promise<void> {
  const intent = isPrincipal(acting) ? changeIntentOf(acting) : {};
  if (isPrincipal(acting) && change.environmentId) await requireProtectionMet(repos, acting, { orgId: change.orgId, environmentId: change.environmentId }, intent);
  // The approval gate (docs/workflow.md "Change requests and approvals"): a bypass or kill switch adds its note to the details.
  const gate = isPrincipal(acting) ? await requireApprovalGate(repos, acting, change) : {};
  const draft: AuditDraft = {
    orgId: change.orgId,
    atMs,
    actor: await actorFor(repos, acting),
    action: change.action,
    resourceType: change.resourceType,
    resourceId: change.resourceId,
    projectId: change.projectId ?? null,
    environmentId: change.environmentId ?? null,
    before: change.before ?? null,
    after: change.after ?? null,
    details: { ...(change.details ?? {}), ...gate },
    comment: intent.comment ?? null,
  };
  const entry = await repos.audit.append(draft);
  // The transactional outbox (docs/workflow.md "Webhooks"): the deliveries commit with the entry.
  await enqueueWebhookDeliveries(repos, entry, atMs);
}
