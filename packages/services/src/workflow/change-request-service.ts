import { createHash } from 'node:crypto';
import {
  ACTIVE_CHANGE_REQUEST_STATUSES,
  DEFAULT_APPROVAL_POLICY,
  MAX_ACTIVE_CHANGE_REQUESTS_PER_ENVIRONMENT,
  MAX_DESCRIPTION_LENGTH,
  MAX_REVIEWS_PER_REQUEST,
  MAX_REVIEW_COMMENT_LENGTH,
  MAX_TITLE_LENGTH,
  applyFlagOperations,
  canonicalJson,
  checkConditions,
  checkOffVariant,
  checkPrerequisites,
  checkRules,
  countingReviews,
  failedPrecondition,
  invalidArgument,
  isDomainError,
  notFound,
  parseApprovalPolicy,
  parseChangeRequestChanges,
  permissionDenied,
  type ApprovalPolicy,
  type AuditActor,
  type ChangeNotifier,
  type ChangeRequestChange,
  type ChangeRequestReview,
  type ChangeRequestStatus,
  type EnvironmentScope,
  type Flag,
  type Principal,
  type Repositories,
  type ReviewVerdict,
  type Segment,
  type StoredChangeRequest,
  type StoredChangeRequestStatus,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import { actorFor, recordChange } from '../audit/audit-trail.ts';
import { DEFINITIONS_CHANGED_CHANNEL, encodeChange } from '../flags/definition-events.ts';
import { asShown } from '../flags/flag-state-checks.ts';
import type { ScopeResolver } from '../scopes.ts';
import { MAX_SCHEDULE_AHEAD_MS } from '../schedules/scheduled-change-service.ts';
import { asApprovedApply } from './approval-gate.ts';
import { approvalShortfall, countedReviews, firstConflict, isFlagChange, recordRequestChange, writeRequestChanges } from './change-request-apply.ts';
import { reviewersWhoMayApprove } from './approvers-now.ts';

/**
 * Change requests and approvals (docs/workflow.md "Change requests and approvals"): an environment's approval policy,
 * and change requests holding flag and segment operations with the versions they were made
 * against; reviews count for the exact content reviewed (a hash of the changes); apply is one unit
 * of work, every change or none, and a change whose version is no longer current makes the
 * request `conflicted` with nothing written.
 */

/** At most this many requests per list answer. */
export const MAX_LISTED_CHANGE_REQUESTS = 200;

export interface ApprovalPolicyRecord extends ApprovalPolicy {
  environment_id: string;
}

export interface ChangeRequestRecord {
  id: string;
  project_id: string;
  environment_id: string;
  title: string;
  description: string;
  changes: ChangeRequestChange[];
  content_hash: string;
  /** `rejected`: open with a counting rejection (it cannot be applied until an edit clears it, or it is cancelled). */
  status: ChangeRequestStatus;
  author: { id: string; email: string | null };
  revision: number;
  conflict: string | null;
  applied_by: unknown;
  /** The approvals that count now (for the current content), and how many the policy needs. */
  approvals: Array<{ reviewer_id: string; reviewer_email: string | null; at_ms: number }>;
  approvals_needed: number;
  reviews: ChangeRequestReview[];
  created_at_ms: number;
  updated_at_ms: number;
  submitted_at_ms: number | null;
  applied_at_ms: number | null;
  /** When a `scheduled` request is due (kept once it ran or was cancelled); null if never scheduled. */
  execute_at_ms: number | null;
  /** Who scheduled it. */
  scheduled_by: AuditActor | null;
}

/** Per change, the state now and the state after the request's operations (what the console's diff shows). */
export interface ChangePreview {
  flag_key?: string;
  segment_key?: string;
  version_made_against: number;
  current_version: number;
  before: unknown;
  after: unknown;
  /** Why the change would not apply now (a conflict), or null. */
  problem: string | null;
}

export interface ChangeRequestBody {
  title?: unknown;
  description?: unknown;
  changes?: unknown;
  submit?: unknown;
  revision?: unknown;
}

const hashOf = (changes: ChangeRequestChange[]): string => createHash('sha256').update(canonicalJson(changes)).digest('hex');

function text(value: unknown, field: string, max: number, required: boolean): string | undefined {
  if (value === undefined || value === null) {
    if (required) throw invalidArgument(`${field} is required`, field);
    return undefined;
  }
  if (typeof value !== 'string' || (required && value.trim() === '') || [...value].length > max) throw invalidArgument(`${field} must be ${required ? '1' : '0'}..${max} characters`, field);
  return value;
}


const authorOf = (principal: Principal): string => (principal.kind === 'user' ? principal.userId : principal.kind === 'api_token' ? principal.tokenId : principal.sdkKeyId);

export class ChangeRequestService {
  constructor(
    private readonly repos: Repositories,
    private readonly scopes: ScopeResolver,
    private readonly notifier: ChangeNotifier,
    private readonly now: () => number = Date.now,
  ) {}

  /** The environment of a route, for the caller (another org's: 404). */
  async scope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    return this.scopes.environment(principal, environmentId);
  }

  async getPolicy(principal: Principal, scope: EnvironmentScope): Promise<ApprovalPolicyRecord> {
    requireAllowed(principal, 'flag.read', scope);
    return { environment_id: scope.environmentId, ...(await this.policy(scope)) };
  }

  /** PUT: fields left out keep their value (environment.update: an admin of the environment). */
  async putPolicy(principal: Principal, scope: EnvironmentScope, body: unknown): Promise<ApprovalPolicyRecord> {
    requireAllowed(principal, 'environment.update', scope);
    const before = await this.policy(scope);
    const next = parseApprovalPolicy(body, before);
    await this.repos.unitOfWork.run(async (tx) => {
      await tx.changeRequests.putPolicy(scope, next, this.now());
      await recordChange(tx, principal, {
        orgId: scope.orgId,
        action: 'environment.approval_policy',
        resourceType: 'environment',
        resourceId: scope.environmentId,
        projectId: scope.projectId,
        environmentId: scope.environmentId,
        before,
        after: next,
      }, this.now());
    });
    return { environment_id: scope.environmentId, ...next };
  }

  async list(principal: Principal, scope: EnvironmentScope, query: { status?: unknown; limit?: unknown }): Promise<{ change_requests: ChangeRequestRecord[] }> {
    requireAllowed(principal, 'flag.read', scope);
    let statuses: StoredChangeRequestStatus[] | undefined;
    if (query.status !== undefined && query.status !== '') {
      const allowed: StoredChangeRequestStatus[] = ['draft', 'open', 'applied', 'cancelled', 'conflicted', 'scheduled'];
      const asked = String(query.status).split(',');
      if (asked.length > allowed.length || asked.some((s) => !allowed.includes(s as StoredChangeRequestStatus))) throw invalidArgument(`status must be a comma-separated list of ${allowed.join(', ')}`, 'status');
      statuses = asked as StoredChangeRequestStatus[];
    }
    const limit = query.limit === undefined ? 50 : Number(query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LISTED_CHANGE_REQUESTS) throw invalidArgument(`limit must be 1..${MAX_LISTED_CHANGE_REQUESTS}`, 'limit');
    const policy = await this.policy(scope);
    const requests = await this.repos.changeRequests.list(scope, { ...(statuses ? { statuses } : {}), limit });
    const known = new Map<string, boolean>();
    const shown: ChangeRequestRecord[] = [];
    for (const request of requests) shown.push(await this.view(scope, request, policy, known));
    return { change_requests: shown };
  }

  async get(principal: Principal, scope: EnvironmentScope, id: string): Promise<ChangeRequestRecord> {
    requireAllowed(principal, 'flag.read', scope);
    return this.view(scope, await this.find(scope, id), await this.policy(scope));
  }

  /** Each change's state now and after the request's operations (nothing written). */
  async preview(principal: Principal, scope: EnvironmentScope, id: string): Promise<{ changes: ChangePreview[] }> {
    requireAllowed(principal, 'flag.read', scope);
    requireAllowed(principal, 'segment.read', scope);
    const request = await this.find(scope, id);
    const changes: ChangePreview[] = [];
    for (const change of request.changes) {
      if (isFlagChange(change)) {
        const flag = await this.repos.flags.get(scope, change.flag_key);
        if (!flag) {
          changes.push({ flag_key: change.flag_key, version_made_against: change.version, current_version: 0, before: null, after: null, problem: `flag '${change.flag_key}' does not exist any more` });
          continue;
        }
        const before = asShown(flag);
        let after: unknown = null;
        let problem: string | null = change.version === flag.version ? null : `made against version ${change.version}, the flag is at version ${flag.version}`;
        try {
          const next = applyFlagOperations(flag, change.operations);
          after = { ...before, ...next };
        } catch (error) {
          if (!isDomainError(error)) throw error;
          problem ??= error.message;
        }
        changes.push({ flag_key: change.flag_key, version_made_against: change.version, current_version: flag.version, before, after, problem });
      } else {
        const segment = await this.repos.segments.get(scope, change.segment_key);
        if (!segment) {
          changes.push({ segment_key: change.segment_key, version_made_against: change.version, current_version: 0, before: null, after: null, problem: `segment '${change.segment_key}' does not exist any more` });
          continue;
        }
        const problem = change.version === segment.version ? null : `made against version ${change.version}, the segment is at version ${segment.version}`;
        changes.push({ segment_key: change.segment_key, version_made_against: change.version, current_version: segment.version, before: segment, after: { ...segment, operations: change.operations }, problem });
      }
    }
    return { changes };
  }

  /**
   * Creates a draft (or an open request with `submit: true`).
   * @throws FAILED_PRECONDITION when the environment holds MAX_ACTIVE_CHANGE_REQUESTS_PER_ENVIRONMENT unfinished requests.
   */
  async create(principal: Principal, scope: EnvironmentScope, body: ChangeRequestBody): Promise<ChangeRequestRecord> {
    return this.createNoting(principal, scope, body, {});
  }

  /**
   * `create`, with `details` added to its `change_request.create` entry (a revert names the entry
   * it reverts). For in-process callers only: it is not a method of the gateway hop (so no client
   * writes an entry's details).
   */
  async createNoting(principal: Principal, scope: EnvironmentScope, body: ChangeRequestBody, details: Record<string, unknown>): Promise<ChangeRequestRecord> {
    requireAllowed(principal, 'flag.read', scope);
    if (typeof body !== 'object' || body === null) throw invalidArgument('the body must be a change request object', 'body');
    const title = text(body.title, 'title', MAX_TITLE_LENGTH, true)!;
    const description = text(body.description, 'description', MAX_DESCRIPTION_LENGTH, false) ?? '';
    if (body.submit !== undefined && body.submit !== null && typeof body.submit !== 'boolean') throw invalidArgument('submit must be a boolean', 'submit');
    const changes = await this.checkChanges(principal, scope, body.changes);
    const now = this.now();
    const request = await this.repos.unitOfWork.run(async (tx) => {
      // Counted under the environment's change-request lock: racing creates cannot pass the cap together.
      const active = await tx.changeRequests.countInStatuses(scope, ACTIVE_CHANGE_REQUEST_STATUSES);
      if (active >= MAX_ACTIVE_CHANGE_REQUESTS_PER_ENVIRONMENT) {
        throw failedPrecondition(`the environment already holds ${MAX_ACTIVE_CHANGE_REQUESTS_PER_ENVIRONMENT} unfinished change requests (draft, open, conflicted or scheduled; MAX_ACTIVE_CHANGE_REQUESTS_PER_ENVIRONMENT): apply or cancel some first`);
      }
      let created = await tx.changeRequests.create(scope, {
        orgId: scope.orgId,
        projectId: scope.projectId,
        environmentId: scope.environmentId,
        title,
        description,
        changes,
        contentHash: hashOf(changes),
        status: 'draft',
        authorId: authorOf(principal),
        authorEmail: principal.kind === 'user' ? ((await tx.users.getById(principal.userId))?.email ?? null) : principal.kind === 'api_token' ? principal.name : null,
        createdAtMs: now,
        updatedAtMs: now,
      });
      if (body.submit === true) created = await tx.changeRequests.update(scope, created.id, { status: 'open', submittedAtMs: now, updatedAtMs: now }, created.revision);
      await this.audit(tx, principal, scope, 'change_request.create', created, null, created, details);
      return created;
    });
    return this.record(request, await this.policy(scope));
  }

  /**
   * Edits a draft, open or conflicted request (its author only). New changes take the versions
   * they name, or the current ones (a rebase); a conflicted request is open again. Reviews of the
   * earlier content stop counting when the policy resets on change.
   */
  async update(principal: Principal, scope: EnvironmentScope, id: string, body: ChangeRequestBody): Promise<ChangeRequestRecord> {
    requireAllowed(principal, 'flag.read', scope);
    if (typeof body !== 'object' || body === null) throw invalidArgument('the body must be a change request object', 'body');
    const current = await this.find(scope, id);
    this.requireAuthor(principal, current, 'edit');
    if (current.status === 'scheduled') throw failedPrecondition(`change request ${id} is scheduled for ${new Date(current.executeAtMs ?? 0).toISOString()}: a scheduled request is not edited (cancel it and create another)`);
    if (!['draft', 'open', 'conflicted'].includes(current.status)) throw failedPrecondition(`change request ${id} is ${current.status}: only draft, open or conflicted requests are edited`);
    const expected = this.revision(body, current);
    const title = text(body.title, 'title', MAX_TITLE_LENGTH, false);
    const description = text(body.description, 'description', MAX_DESCRIPTION_LENGTH, false);
    const changes = body.changes === undefined || body.changes === null ? undefined : await this.checkChanges(principal, scope, body.changes);
    const now = this.now();
    const updated = await this.repos.unitOfWork.run(async (tx) => {
      const next = await tx.changeRequests.update(scope, id, {
        ...(title === undefined ? {} : { title }),
        ...(description === undefined ? {} : { description }),
        ...(changes === undefined ? {} : { changes, contentHash: hashOf(changes) }),
        ...(current.status === 'conflicted' ? { status: 'open' as const, conflict: null } : {}),
        updatedAtMs: now,
      }, expected);
      await this.audit(tx, principal, scope, 'change_request.update', next, current, next);
      return next;
    });
    return this.record(updated, await this.policy(scope));
  }

  async submit(principal: Principal, scope: EnvironmentScope, id: string): Promise<ChangeRequestRecord> {
    requireAllowed(principal, 'flag.read', scope);
    const current = await this.find(scope, id);
    this.requireAuthor(principal, current, 'submit');
    if (current.status !== 'draft') throw failedPrecondition(`change request ${id} is ${current.status}: only a draft is submitted`);
    const now = this.now();
    const updated = await this.repos.unitOfWork.run(async (tx) => {
      const next = await tx.changeRequests.update(scope, id, { status: 'open', submittedAtMs: now, updatedAtMs: now }, current.revision);
      await this.audit(tx, principal, scope, 'change_request.submit', next, current, next);
      return next;
    });
    return this.record(updated, await this.policy(scope));
  }

  /** Cancels a draft, open, conflicted or scheduled request: its author, or whoever may bypass approvals here. */
  async cancel(principal: Principal, scope: EnvironmentScope, id: string): Promise<ChangeRequestRecord> {
    requireAllowed(principal, 'flag.read', scope);
    const current = await this.find(scope, id);
    if (authorOf(principal) !== current.authorId) requireAllowed(principal, 'change_request.bypass', scope);
    if (!['draft', 'open', 'conflicted', 'scheduled'].includes(current.status)) throw failedPrecondition(`change request ${id} is ${current.status}: only draft, open, conflicted or scheduled requests are cancelled`);
    const updated = await this.repos.unitOfWork.run(async (tx) => {
      const next = await tx.changeRequests.update(scope, id, { status: 'cancelled', updatedAtMs: this.now() }, current.revision);
      await this.audit(tx, principal, scope, 'change_request.cancel', next, current, next);
      return next;
    });
    return this.record(updated, await this.policy(scope));
  }

  /**
   * A review of an open request's current content: `approve` and `reject` need
   * change_request.approve (a person: API tokens never approve), `comment` a reader. The author
   * approves their own request only when the policy allows it.
   */
  async review(principal: Principal, scope: EnvironmentScope, id: string, body: { verdict?: unknown; comment?: unknown; content_hash?: unknown }): Promise<ChangeRequestRecord> {
    if (typeof body !== 'object' || body === null) throw invalidArgument('the body must be a review object', 'body');
    const verdict = body.verdict;
    if (verdict !== 'approve' && verdict !== 'reject' && verdict !== 'comment') throw invalidArgument('verdict must be approve, reject or comment', 'verdict');
    requireAllowed(principal, verdict === 'comment' ? 'flag.read' : 'change_request.approve', scope);
    if (principal.kind !== 'user') throw permissionDenied('only a person reviews a change request');
    const comment = text(body.comment, 'comment', MAX_REVIEW_COMMENT_LENGTH, verdict === 'comment') ?? null;
    const current = await this.find(scope, id);
    if (current.status === 'scheduled') throw failedPrecondition(`change request ${id} is scheduled for ${new Date(current.executeAtMs ?? 0).toISOString()}: its reviews are closed (cancel it to change what was approved)`);
    if (current.status !== 'open') throw failedPrecondition(`change request ${id} is ${current.status}: only an open request is reviewed`);
    // What the reviewer saw: a review of older content is refused rather than counted for the new one.
    if (body.content_hash !== undefined && body.content_hash !== null && body.content_hash !== current.contentHash) {
      throw failedPrecondition(`change request ${id} changed since you read it (content_hash ${current.contentHash}): read it again before reviewing`);
    }
    // Bound to the revision read (below): a review committed meanwhile aborts this one, so the cap holds under races.
    if (current.reviews.length >= MAX_REVIEWS_PER_REQUEST) {
      throw failedPrecondition(`change request ${id} already holds ${MAX_REVIEWS_PER_REQUEST} reviews (MAX_REVIEWS_PER_REQUEST, comments included): no more can be added`);
    }
    const policy = await this.policy(scope);
    if (verdict === 'approve' && principal.userId === current.authorId && !policy.allow_self_approval) {
      throw permissionDenied('the author cannot approve their own change request (the approval policy has allow_self_approval=false)');
    }
    const updated = await this.repos.unitOfWork.run(async (tx) => {
      const email = (await tx.users.getById(principal.userId))?.email ?? null;
      const review = await tx.changeRequests.addReview(scope, id, { reviewer_id: principal.userId, reviewer_email: email, verdict: verdict as ReviewVerdict, comment, content_hash: current.contentHash, at_ms: this.now() });
      // The review is bound to the revision read: an edit committed meanwhile aborts it.
      const next = await tx.changeRequests.update(scope, id, { updatedAtMs: this.now() }, current.revision);
      await this.audit(tx, principal, scope, `change_request.${verdict}`, next, null, null, { review_id: review.id, content_hash: current.contentHash, ...(comment === null ? {} : { review_comment: comment }) });
      return { ...next, reviews: [...current.reviews, review] };
    });
    return this.view(scope, updated, policy);
  }

  /**
   * Applies an open request in one unit of work: every change's version must still be current and
   * its operations must still apply, or the request becomes `conflicted` (its reason kept) and
   * nothing is written. Needs the policy's approvals for the current content (when the policy
   * requires them) and no counting rejection; the applier needs the write rights of every change.
   * Each flag and segment entry names the applier (actor) and the approvers (details).
   *
   * With `{execute_at_ms}` (a time in the future, at most 5 years ahead, as for scheduled changes)
   * the same checks are made now and the request becomes `scheduled` instead, with
   * a `change_request.schedule` entry: the ScheduledChangeWorker applies it at that time through
   * the same writes (checking versions, operations, approvals and the scheduler's rights again).
   * @throws FAILED_PRECONDITION (not approved, rejected, conflicted: the request says why).
   */
  async apply(principal: Principal, scope: EnvironmentScope, id: string, body?: unknown): Promise<ChangeRequestRecord> {
    requireAllowed(principal, 'flag.read', scope);
    const executeAtMs = this.applyTime(body);
    const current = await this.find(scope, id);
    this.requireWriteRights(principal, scope, current.changes);
    if (current.status !== 'open') {
      const why = current.status === 'conflicted' ? ' (edit it against the current versions first)' : current.status === 'scheduled' ? ` (it is scheduled for ${new Date(current.executeAtMs ?? 0).toISOString()}; cancel it to apply it otherwise)` : '';
      throw failedPrecondition(`change request ${id} is ${current.status}: only an open request is applied${why}`);
    }
    const policy = await this.policy(scope);
    // An approval counts while its reviewer may still approve here (a removed or demoted member's does not).
    const counted = await countedReviews(this.repos, scope, current, policy);
    const shortfall = approvalShortfall(id, policy, counted);
    if (shortfall !== null) throw failedPrecondition(shortfall);
    const approvers = counted.approvals.map((review) => review.reviewer_email ?? review.reviewer_id);
    const conflict = await firstConflict(this.repos, scope, current.changes);
    if (conflict !== null) return this.markConflicted(principal, scope, current, conflict, policy);
    if (executeAtMs !== undefined) return this.schedule(principal, scope, current, executeAtMs, approvers, policy);
    const acting = asApprovedApply(principal, id);
    const details = { change_request_id: id, change_request_title: current.title, approved_by: approvers };
    let applied: StoredChangeRequest;
    try {
      applied = await this.repos.unitOfWork.run(async (tx) => {
        // Again inside the unit of work: a write that committed since the check above is seen here.
        const late = await firstConflict(tx, scope, current.changes);
        if (late !== null) throw new ConflictFound(late);
        await writeRequestChanges(tx, acting, scope, current.changes, details, this.now());
        const next = await tx.changeRequests.update(scope, id, { status: 'applied', appliedAtMs: this.now(), appliedBy: { applier_id: authorOf(principal), approvers }, updatedAtMs: this.now() }, current.revision);
        await this.audit(tx, principal, scope, 'change_request.apply', next, current, next, { approved_by: approvers });
        return next;
      });
    } catch (error) {
      if (error instanceof ConflictFound) return this.markConflicted(principal, scope, current, error.message, policy);
      throw error;
    }
    await this.notifier.publish(DEFINITIONS_CHANGED_CHANNEL, encodeChange({ environmentId: scope.environmentId }));
    return this.record({ ...applied, reviews: current.reviews }, policy);
  }

  /** The optional apply body: `{execute_at_ms}` (undefined: apply now). */
  private applyTime(body: unknown): number | undefined {
    if (body === undefined || body === null) return undefined;
    if (typeof body !== 'object' || Array.isArray(body)) throw invalidArgument('the body must be an object {execute_at_ms?}', 'body');
    const fields = body as Record<string, unknown>;
    for (const name of Object.keys(fields)) if (name !== 'execute_at_ms') throw invalidArgument(`${name} is not a field of an apply`, name);
    if (fields.execute_at_ms === undefined || fields.execute_at_ms === null) return undefined;
    const value = fields.execute_at_ms;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalidArgument('execute_at_ms must be a time in milliseconds since the epoch (an integer >= 0)', 'execute_at_ms');
    const nowMs = this.now();
    if (value <= nowMs) throw invalidArgument('execute_at_ms must be in the future', 'execute_at_ms');
    if (value > nowMs + MAX_SCHEDULE_AHEAD_MS) throw invalidArgument('execute_at_ms is more than 5 years ahead', 'execute_at_ms');
    return value;
  }

  /** Open → scheduled (checked by apply), with its `change_request.schedule` entry; the request itself is the scheduled unit. */
  private async schedule(principal: Principal, scope: EnvironmentScope, current: StoredChangeRequest, executeAtMs: number, approvers: string[], policy: ApprovalPolicy): Promise<ChangeRequestRecord> {
    const scheduledBy = await this.actorOf(principal);
    let scheduled: StoredChangeRequest;
    try {
      scheduled = await this.repos.unitOfWork.run(async (tx) => {
        const late = await firstConflict(tx, scope, current.changes);
        if (late !== null) throw new ConflictFound(late);
        const next = await tx.changeRequests.update(scope, current.id, { status: 'scheduled', executeAtMs, scheduledBy, updatedAtMs: this.now() }, current.revision);
        await this.audit(tx, principal, scope, 'change_request.schedule', next, current, next, { execute_at_ms: executeAtMs, approved_by: approvers });
        return next;
      });
    } catch (error) {
      if (error instanceof ConflictFound) return this.markConflicted(principal, scope, current, error.message, policy);
      throw error;
    }
    return this.record({ ...scheduled, reviews: current.reviews }, policy);
  }

  private async actorOf(principal: Principal): Promise<AuditActor> {
    if (principal.kind !== 'user' && principal.kind !== 'api_token') throw permissionDenied('only a person or an API token can schedule a change request');
    return actorFor(this.repos, principal);
  }


  private async markConflicted(principal: Principal, scope: EnvironmentScope, current: StoredChangeRequest, conflict: string, policy: ApprovalPolicy): Promise<never> {
    await this.repos.unitOfWork.run(async (tx) => {
      const next = await tx.changeRequests.update(scope, current.id, { status: 'conflicted', conflict, updatedAtMs: this.now() }, current.revision);
      await this.audit(tx, principal, scope, 'change_request.conflict', next, current, next, { conflict });
    });
    void policy;
    throw failedPrecondition(`change request ${current.id} is conflicted, nothing was written: ${conflict}. Its author edits it against the current versions (approvals reset)`);
  }

  /** Checks the changes' shapes, that their flags and segments exist, that their operations apply now; fills the versions. */
  private async checkChanges(principal: Principal, scope: EnvironmentScope, input: unknown): Promise<ChangeRequestChange[]> {
    const parsed = parseChangeRequestChanges(input);
    const changes: ChangeRequestChange[] = [];
    for (const [i, change] of parsed.entries()) {
      if ('flag_key' in change) {
        requireAllowed(principal, 'flag.write', scope);
        const flag = await this.repos.flags.get(scope, change.flag_key);
        if (!flag) throw notFound('flag', change.flag_key);
        const version = change.version ?? flag.version;
        if (version !== flag.version) throw failedPrecondition(`changes[${i}]: flag '${flag.key}' is at version ${flag.version}, not ${version}`);
        this.checkFlagResult(flag, change.operations, i);
        changes.push({ flag_key: flag.key, operations: change.operations, version });
      } else {
        requireAllowed(principal, 'segment.write', scope);
        const key = change.segment_key;
        const segment = await this.repos.segments.get(scope, key);
        if (!segment) throw notFound('segment', key);
        const version = change.version ?? segment.version;
        if (version !== segment.version) throw failedPrecondition(`changes[${i}]: segment '${key}' is at version ${segment.version}, not ${version}`);
        this.checkSegmentOperations(segment, change.operations, i);
        changes.push({ segment_key: key, operations: change.operations, version });
      }
    }
    return changes;
  }

  private checkFlagResult(flag: Flag, operations: Extract<ChangeRequestChange, { flag_key: string }>['operations'], i: number): void {
    if (flag.archived) throw failedPrecondition(`changes[${i}]: flag '${flag.key}' is archived`);
    const next = applyFlagOperations(flag, operations);
    const variants = new Set(flag.variants.map((variant) => variant.key));
    checkRules(variants, next.rules);
    checkOffVariant(variants, next.off_variant_key);
    if (operations.some((operation) => operation.op === 'set_prerequisites')) checkPrerequisites(flag.key, next.prerequisites ?? [], `changes[${i}].operations`);
  }

  private checkSegmentOperations(segment: Segment, operations: Extract<ChangeRequestChange, { segment_key: string }>['operations'], i: number): void {
    operations.forEach((operation, j) => {
      const path = `changes[${i}].operations[${j}]`;
      if (operation.op === 'set_conditions') {
        if (segment.kind !== 'rule') throw invalidArgument(`${path}: segment '${segment.key}' is a list segment: set_conditions is for rule segments`, path);
        checkConditions(operation.conditions, `${path}.conditions`);
      } else if (segment.kind !== 'list') throw invalidArgument(`${path}: segment '${segment.key}' is a rule segment: it has no member lists`, path);
    });
  }

  private requireWriteRights(principal: Principal, scope: EnvironmentScope, changes: ChangeRequestChange[]): void {
    if (changes.some(isFlagChange)) requireAllowed(principal, 'flag.write', scope);
    if (changes.some((change) => !isFlagChange(change))) requireAllowed(principal, 'segment.write', scope);
  }

  private requireAuthor(principal: Principal, request: StoredChangeRequest, what: string): void {
    if (authorOf(principal) !== request.authorId) throw permissionDenied(`only the author of a change request may ${what} it`);
  }

  private revision(body: ChangeRequestBody, current: StoredChangeRequest): number {
    if (body.revision === undefined || body.revision === null) return current.revision;
    if (typeof body.revision !== 'number' || !Number.isSafeInteger(body.revision)) throw invalidArgument('revision must be an integer', 'revision');
    return body.revision;
  }

  private async find(scope: EnvironmentScope, id: string): Promise<StoredChangeRequest> {
    const request = await this.repos.changeRequests.get(scope, id);
    if (!request) throw notFound('change request', id);
    return request;
  }

  private async policy(scope: EnvironmentScope): Promise<ApprovalPolicy> {
    return (await this.repos.changeRequests.getPolicy(scope)) ?? { ...DEFAULT_APPROVAL_POLICY };
  }

  private async audit(tx: Repositories, principal: Principal, scope: EnvironmentScope, action: string, request: StoredChangeRequest, before: StoredChangeRequest | null, after: StoredChangeRequest | null, details: Record<string, unknown> = {}): Promise<void> {
    await recordRequestChange(tx, principal, scope, action, request, before, after, details, this.now());
  }

  /** The record with the approvals as they count now (their reviewers' rights read again). */
  private async view(scope: EnvironmentScope, request: StoredChangeRequest, policy: ApprovalPolicy, known?: Map<string, boolean>): Promise<ChangeRequestRecord> {
    const { approvals } = countingReviews(request.reviews, request.contentHash, request.authorId, policy);
    return this.record(request, policy, await reviewersWhoMayApprove(this.repos, scope, approvals.map((review) => review.reviewer_id), known));
  }

  /** `mayApprove`: the reviewers whose approvals still count (absent: every approval of the current content is shown). */
  private record(request: StoredChangeRequest, policy: ApprovalPolicy, mayApprove?: ReadonlySet<string>): ChangeRequestRecord {
    const counted = countingReviews(request.reviews, request.contentHash, request.authorId, policy);
    const { rejections } = counted;
    const approvals = mayApprove ? counted.approvals.filter((review) => mayApprove.has(review.reviewer_id)) : counted.approvals;
    return {
      id: request.id,
      project_id: request.projectId,
      environment_id: request.environmentId,
      title: request.title,
      description: request.description,
      changes: request.changes,
      content_hash: request.contentHash,
      status: request.status === 'open' && rejections.length > 0 ? 'rejected' : request.status,
      author: { id: request.authorId, email: request.authorEmail },
      revision: request.revision,
      conflict: request.conflict,
      applied_by: request.appliedBy,
      approvals: approvals.map((review) => ({ reviewer_id: review.reviewer_id, reviewer_email: review.reviewer_email, at_ms: review.at_ms })),
      approvals_needed: policy.required ? policy.min_approvals : 0,
      reviews: request.reviews,
      created_at_ms: request.createdAtMs,
      updated_at_ms: request.updatedAtMs,
      submitted_at_ms: request.submittedAtMs,
      applied_at_ms: request.appliedAtMs,
      execute_at_ms: request.executeAtMs,
      scheduled_by: request.scheduledBy,
    };
  }
}

/** A conflict found inside the apply's unit of work: rolls it back, then the request is marked. */
class ConflictFound extends Error {}
