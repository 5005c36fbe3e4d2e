import {
  applyFlagOperations,
  authorize,
  failedPrecondition,
  invalidArgument,
  notFound,
  operationsContend,
  parseFlagOperations,
  permissionDenied,
  MAX_PENDING_SCHEDULES_PER_FLAG,
  SCHEDULED_CHANGE_STATUSES,
  type Action,
  type AuditActor,
  type AuditEntry,
  type ChangeNotifier,
  type EnvironmentScope,
  type Flag,
  type FlagOperation,
  type Principal,
  type Repositories,
  type Rule,
  type ScheduledChange,
  type ScheduledChangeStatus,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import { actorFor, recordChange, type Acting } from '../audit/audit-trail.ts';
import { userPrincipalOf } from '../auth/session-registry.ts';
import { changeIntentOf } from '../audit/change-intent.ts';
import { asShown } from '../flags/flag-state-checks.ts';
import { isKillSwitch } from '../workflow/approval-gate.ts';
import type { ChangeRequestRecord } from '../workflow/change-request-service.ts';
import type { ScopeResolver } from '../scopes.ts';
import { DEFINITIONS_CHANGED_CHANNEL, encodeChange } from '../flags/definition-events.ts';
import { writeFlagOperations } from '../flags/flag-operations-write.ts';

/** The platform part that applies schedules, as change-history entries name it. */
export const SCHEDULER_ACTOR: AuditActor = Object.freeze({ type: 'system', id: 'scheduler' }) as AuditActor;

/** A schedule as the API shows it (docs/workflow.md "Scheduled changes"). */
export interface ScheduledChangeRecord {
  id: string;
  environment_id: string;
  project_id: string;
  flag_key: string;
  execute_at_ms: number;
  operations: FlagOperation[];
  comment: string;
  status: ScheduledChangeStatus;
  /** Why it failed (or why the platform cancelled it); null otherwise. */
  reason: string | null;
  created_by: AuditActor;
  created_at_ms: number;
  updated_at_ms: number;
  /** When it was applied (or found failed); later than execute_at_ms when the services were down at the time. */
  applied_at_ms: number | null;
  version: number;
}

/**
 * A change request scheduled for a time, as the environment's calendar lists it beside the
 * scheduled changes (the request itself: GET /v1/environments/{env}/change-requests/{id}).
 */
export interface ScheduledRequestEntry {
  id: string;
  environment_id: string;
  project_id: string;
  title: string;
  execute_at_ms: number;
  scheduled_by: AuditActor | null;
  author: { id: string; email: string | null };
  /** The flags and segments it changes. */
  flag_keys: string[];
  segment_keys: string[];
}

/** The environment's calendar: its scheduled changes and the change requests scheduled for a time. */
export interface ScheduleCalendar {
  scheduled_changes: ScheduledChangeRecord[];
  change_requests: ScheduledRequestEntry[];
}

/** The answer of a create or an edit: the schedule and the other pending schedules of the flag that contend with it. */
export interface ScheduledChangeAnswer extends ScheduledChangeRecord {
  contending: ScheduledChangeRecord[];
}

export const toScheduledChangeRecord = (change: ScheduledChange): ScheduledChangeRecord => ({
  id: change.id,
  environment_id: change.environmentId,
  project_id: change.projectId,
  flag_key: change.flagKey,
  execute_at_ms: change.executeAtMs,
  operations: change.operations,
  comment: change.comment,
  status: change.status,
  reason: change.reason,
  created_by: change.createdBy,
  created_at_ms: change.createdAtMs,
  updated_at_ms: change.updatedAtMs,
  applied_at_ms: change.appliedAtMs,
  version: change.version,
});

/** Furthest ahead a change may be scheduled (about 5 years). */
export const MAX_SCHEDULE_AHEAD_MS = 5 * 366 * 24 * 60 * 60_000;
/** A calendar page: at most this many schedules per list answer. */
export const MAX_SCHEDULE_LIST = 500;
const MAX_COMMENT = 2000;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const present = (value: unknown): boolean => value !== undefined && value !== null;

function timeField(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalidArgument(`${field} must be a time in milliseconds since the epoch (an integer >= 0)`, field);
  return value;
}

function commentField(value: unknown): string {
  if (!present(value)) return '';
  if (typeof value !== 'string' || value.length > MAX_COMMENT) throw invalidArgument(`comment must be a string of at most ${MAX_COMMENT} characters`, 'comment');
  return value;
}

function onlyFields(body: Record<string, unknown>, allowed: readonly string[]): void {
  for (const name of Object.keys(body)) if (!allowed.includes(name)) throw invalidArgument(`${name} is not a field of a scheduled change`, name);
}

/**
 * What a revert answers: the flag written (`flag`), or, where the environment requires approval,
 * the change request opened to make the change (`change_request`, as GET shows it).
 */
export type RevertAnswer = { flag: Flag } | { change_request: ChangeRequestRecord };

/** Opens the change request of a revert in an environment that requires approval (workflow/revert-request.ts). */
export interface RevertRequests {
  openRevertRequest(principal: Principal, scope: EnvironmentScope, flagKey: string, entryId: string): Promise<ChangeRequestRecord>;
}

/** Signals the end of a validation run whose writes are undone. */
class DryRun extends Error {}

/** The body of a list: `{flag_key?, status?, from_ms?, to_ms?, limit?}` (query strings arrive as text). */
export interface ScheduledChangeListQuery {
  flag_key?: unknown;
  status?: unknown;
  from_ms?: unknown;
  to_ms?: unknown;
  limit?: unknown;
}

function queryNumber(value: unknown, field: string): number | undefined {
  if (!present(value) || value === '') return undefined;
  const number = typeof value === 'string' && /^\d{1,16}$/.test(value) ? Number(value) : value;
  return timeField(number, field);
}

/**
 * ScheduledChangeService (docs/workflow.md "Scheduled changes"): changes of one environment's flag, made of
 * operations (docs/workflow.md "Operations") and applied at a time by the ScheduledChangeWorker;
 * and Revert, which applies a change-history entry's `before` state as a new version. Every write
 * is one unit of work with its change-history entry; a flag write is announced after its commit.
 */
export class ScheduledChangeService {
  constructor(
    private readonly repos: Repositories,
    private readonly scopes: ScopeResolver,
    private readonly notifier: ChangeNotifier,
    private readonly now: () => number = Date.now,
    /** Where approval is required, a revert opens a request through this (absent: the gate refuses it as any direct write). */
    private readonly revertRequests?: RevertRequests,
  ) {}

  /** The route's environment for the caller. */
  scope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    return this.scopes.environment(principal, environmentId);
  }

  /**
   * Schedules operations on the flag at `execute_at_ms`. Checked now against the flag's current
   * state exactly as the write will be (run in a unit of work that is then undone). Callable by
   * another service (an approved change request applied at a time) with the principal it acts for.
   */
  async create(principal: Principal, scope: EnvironmentScope, flagKey: string, body: unknown): Promise<ScheduledChangeAnswer> {
    requireAllowed(principal, 'flag.write', scope);
    if (!isObject(body)) throw invalidArgument('the body must be an object {execute_at_ms, operations, comment}', 'body');
    onlyFields(body, ['execute_at_ms', 'operations', 'comment']);
    const nowMs = this.now();
    const executeAtMs = this.checkTime(body.execute_at_ms, nowMs);
    const operations = parseFlagOperations(body.operations);
    const comment = commentField(body.comment);
    await this.validate(scope, flagKey, operations);
    const createdBy = await this.actorOf(principal);
    const { change, pending } = await this.repos.unitOfWork.run(async (tx) => {
      await this.requireFlag(tx, scope, flagKey);
      const pending = await tx.scheduledChanges.list(scope, { flagKey, statuses: ['pending'], limit: MAX_PENDING_SCHEDULES_PER_FLAG });
      if (pending.length >= MAX_PENDING_SCHEDULES_PER_FLAG) throw failedPrecondition(`flag '${flagKey}' already has ${MAX_PENDING_SCHEDULES_PER_FLAG} pending scheduled changes in this environment`);
      const change = await tx.scheduledChanges.create({ scope, flagKey, executeAtMs, operations, comment, createdBy, atMs: nowMs });
      await this.record(tx, principal, change, 'scheduled_change.create', null, change);
      return { change, pending };
    });
    return { ...toScheduledChangeRecord(change), contending: this.contending(change, pending) };
  }

  /**
   * One environment's schedules (a calendar: `from_ms` ≤ execute_at_ms < `to_ms`), or one flag's
   * (`flagKey`; null: the query's `flag_key`, if any). Every argument is always passed (the gateway hop counts them).
   */
  async list(principal: Principal, scope: EnvironmentScope, query: ScheduledChangeListQuery, flagKey: string | null): Promise<ScheduledChangeRecord[]> {
    requireAllowed(principal, 'flag.read', scope);
    const fromMs = queryNumber(query.from_ms, 'from_ms');
    const toMs = queryNumber(query.to_ms, 'to_ms');
    const limit = present(query.limit) && query.limit !== '' ? Number(query.limit) : 100;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_SCHEDULE_LIST) throw invalidArgument(`limit must be an integer from 1 to ${MAX_SCHEDULE_LIST}`, 'limit');
    let statuses: ScheduledChangeStatus[] | undefined;
    if (present(query.status) && query.status !== '') {
      const names = String(query.status).split(',');
      for (const name of names) if (!SCHEDULED_CHANGE_STATUSES.includes(name as ScheduledChangeStatus)) throw invalidArgument(`status must be one or more of ${SCHEDULED_CHANGE_STATUSES.join(', ')}`, 'status');
      statuses = names as ScheduledChangeStatus[];
    }
    let key = flagKey ?? undefined;
    if (key === undefined && present(query.flag_key) && query.flag_key !== '') {
      if (typeof query.flag_key !== 'string') throw invalidArgument('flag_key must be a flag key', 'flag_key');
      key = query.flag_key;
    }
    const changes = await this.repos.scheduledChanges.list(scope, {
      limit,
      ...(key === undefined ? {} : { flagKey: key }),
      ...(statuses === undefined ? {} : { statuses }),
      ...(fromMs === undefined ? {} : { fromMs }),
      ...(toMs === undefined ? {} : { toMs }),
    });
    return changes.map(toScheduledChangeRecord);
  }

  /**
   * The list above (every argument as there), plus the change requests now `scheduled` in the same
   * window (`from_ms` ≤ execute_at_ms < `to_ms`), earliest first, at most `limit`; with a flag,
   * only the requests that change it.
   */
  async calendar(principal: Principal, scope: EnvironmentScope, query: ScheduledChangeListQuery, flagKey: string | null): Promise<ScheduleCalendar> {
    const scheduled = await this.list(principal, scope, query, flagKey);
    const fromMs = queryNumber(query.from_ms, 'from_ms');
    const toMs = queryNumber(query.to_ms, 'to_ms');
    const limit = present(query.limit) && query.limit !== '' ? Number(query.limit) : 100;
    const key = flagKey ?? (typeof query.flag_key === 'string' && query.flag_key !== '' ? query.flag_key : undefined);
    const requests = await this.repos.changeRequests.listScheduled(scope, { limit, ...(fromMs === undefined ? {} : { fromMs }), ...(toMs === undefined ? {} : { toMs }) });
    const entries = requests.map((request): ScheduledRequestEntry => ({
      id: request.id,
      environment_id: request.environmentId,
      project_id: request.projectId,
      title: request.title,
      execute_at_ms: request.executeAtMs!,
      scheduled_by: request.scheduledBy,
      author: { id: request.authorId, email: request.authorEmail },
      flag_keys: request.changes.flatMap((change) => ('flag_key' in change ? [change.flag_key] : [])),
      segment_keys: request.changes.flatMap((change) => ('segment_key' in change ? [change.segment_key] : [])),
    }));
    return { scheduled_changes: scheduled, change_requests: key === undefined ? entries : entries.filter((entry) => entry.flag_keys.includes(key)) };
  }

  async get(principal: Principal, scope: EnvironmentScope, flagKey: string, id: string): Promise<ScheduledChangeRecord> {
    requireAllowed(principal, 'flag.read', scope);
    return toScheduledChangeRecord(await this.find(scope, flagKey, id));
  }

  /** Edits a pending schedule: the fields given (`execute_at_ms`, `operations`, `comment`), checked as at creation; `version` if given must match. */
  async update(principal: Principal, scope: EnvironmentScope, flagKey: string, id: string, body: unknown): Promise<ScheduledChangeAnswer> {
    requireAllowed(principal, 'flag.write', scope);
    if (!isObject(body)) throw invalidArgument('the body must be an object {execute_at_ms?, operations?, comment?, version?}', 'body');
    onlyFields(body, ['execute_at_ms', 'operations', 'comment', 'version']);
    const nowMs = this.now();
    const patch: { executeAtMs?: number; operations?: FlagOperation[]; comment?: string } = {};
    if (present(body.execute_at_ms)) patch.executeAtMs = this.checkTime(body.execute_at_ms, nowMs);
    if (present(body.operations)) patch.operations = parseFlagOperations(body.operations);
    if (present(body.comment)) patch.comment = commentField(body.comment);
    let version: number | undefined;
    if (present(body.version)) {
      if (typeof body.version !== 'number' || !Number.isSafeInteger(body.version) || body.version < 1) throw invalidArgument('version must be an integer >= 1', 'version');
      version = body.version;
    }
    const current = await this.find(scope, flagKey, id);
    if (current.status !== 'pending') throw failedPrecondition(`scheduled change '${id}' is ${current.status}: only a pending one can change`);
    await this.validate(scope, flagKey, patch.operations ?? current.operations);
    const { after, pending } = await this.repos.unitOfWork.run(async (tx) => {
      const before = (await tx.scheduledChanges.lockPending(id)) ?? current;
      const after = await tx.scheduledChanges.update(scope, id, patch, version, nowMs);
      await this.record(tx, principal, after, 'scheduled_change.update', before, after);
      const pending = await tx.scheduledChanges.list(scope, { flagKey, statuses: ['pending'], limit: MAX_PENDING_SCHEDULES_PER_FLAG });
      return { after, pending };
    });
    return { ...toScheduledChangeRecord(after), contending: this.contending(after, pending) };
  }

  /** Cancels a pending schedule (409 FAILED_PRECONDITION when it is applied, failed or cancelled already). */
  async cancel(principal: Principal, scope: EnvironmentScope, flagKey: string, id: string): Promise<ScheduledChangeRecord> {
    requireAllowed(principal, 'flag.write', scope);
    const current = await this.find(scope, flagKey, id);
    const nowMs = this.now();
    const cancelled = await this.repos.unitOfWork.run(async (tx) => {
      const locked = await tx.scheduledChanges.lockPending(current.id);
      if (!locked) {
        const now = (await tx.scheduledChanges.get(scope, id)) ?? current;
        throw failedPrecondition(`scheduled change '${id}' is ${now.status}: only a pending one can be cancelled`);
      }
      const after = (await tx.scheduledChanges.finish(id, { status: 'cancelled', reason: null, atMs: nowMs }))!;
      await this.record(tx, principal, after, 'scheduled_change.cancel', locked, after);
      return after;
    });
    return toScheduledChangeRecord(cancelled);
  }

  /**
   * `POST .../revert {audit_entry_id}`: applies the `before` state (enabled, off_variant_key, rules,
   * prerequisites) of a change-history entry of this flag in this environment as a new version,
   * through the same write as a person's (writeFlagOperations), recorded as `flag.revert` with the
   * entry it reverts. Where the environment's approval policy requires approval, and the caller
   * asks for no bypass and the revert is not an exempt kill switch, it opens a change request
   * holding those operations instead (RevertRequests) and answers it.
   */
  async revert(principal: Principal, scope: EnvironmentScope, flagKey: string, body: unknown): Promise<RevertAnswer> {
    requireAllowed(principal, 'flag.write', scope);
    if (!isObject(body)) throw invalidArgument('the body must be an object {audit_entry_id}', 'body');
    onlyFields(body, ['audit_entry_id']);
    if (typeof body.audit_entry_id !== 'string' || body.audit_entry_id === '' || body.audit_entry_id.length > 100) throw invalidArgument('audit_entry_id must be a change-history entry id', 'audit_entry_id');
    const entryId = body.audit_entry_id;
    if (this.revertRequests && (await this.needsRequest(principal, scope, flagKey, entryId))) {
      return { change_request: await this.revertRequests.openRevertRequest(principal, scope, flagKey, entryId) };
    }
    const after = await this.repos.unitOfWork.run(async (tx) => applyRevert(tx, principal, scope, flagKey, entryId, this.now()));
    await this.announce(scope);
    return { flag: after };
  }

  /**
   * Whether a revert goes through a change request: the policy requires approval, the caller asks
   * for no bypass (one asked for is judged by the gate: 403 without the right), and it is not a
   * kill switch the policy exempts (the gate judges the write itself again).
   */
  private async needsRequest(principal: Principal, scope: EnvironmentScope, flagKey: string, entryId: string): Promise<boolean> {
    const policy = await this.repos.changeRequests.getPolicy(scope);
    if (!policy?.required || changeIntentOf(principal).bypassApprovals === true) return false;
    if (!policy.kill_switch_exempt) return true;
    const entry = await revertibleEntry(this.repos, scope, flagKey, entryId);
    const current = await this.repos.flags.get(scope, flagKey);
    if (!current) throw notFound('flag', flagKey);
    const before = asShown(current);
    return !isKillSwitch({ orgId: scope.orgId, resourceType: 'flag', before, after: { ...before, ...applyFlagOperations(current, revertOperations(entry.before)) } });
  }

  // --- helpers ---

  private checkTime(value: unknown, nowMs: number): number {
    const executeAtMs = timeField(value, 'execute_at_ms');
    if (executeAtMs <= nowMs) throw invalidArgument('execute_at_ms must be in the future', 'execute_at_ms');
    if (executeAtMs > nowMs + MAX_SCHEDULE_AHEAD_MS) throw invalidArgument('execute_at_ms is more than 5 years ahead', 'execute_at_ms');
    return executeAtMs;
  }

  /** The operations applied to the flag's current state and checked as the write will be, then undone. */
  private async validate(scope: EnvironmentScope, flagKey: string, operations: FlagOperation[]): Promise<void> {
    try {
      await this.repos.unitOfWork.run(async (tx) => {
        await writeFlagOperations(tx, { environment: scope, flagKey, operations, acting: SCHEDULER_ACTOR, action: 'flag.update' }, this.now());
        throw new DryRun();
      });
    } catch (error) {
      if (!(error instanceof DryRun)) throw error;
    }
  }

  private async requireFlag(tx: Repositories, scope: EnvironmentScope, flagKey: string): Promise<void> {
    if (!(await tx.flags.get(scope, flagKey))) throw notFound('flag', flagKey);
  }

  private async find(scope: EnvironmentScope, flagKey: string, id: string): Promise<ScheduledChange> {
    const change = await this.repos.scheduledChanges.get(scope, id);
    if (!change || change.flagKey !== flagKey) throw notFound('scheduled change', id);
    return change;
  }

  private contending(change: ScheduledChange, pending: ScheduledChange[]): ScheduledChangeRecord[] {
    return pending.filter((other) => other.id !== change.id && operationsContend(change.operations, other.operations)).map(toScheduledChangeRecord);
  }

  private async actorOf(principal: Principal): Promise<AuditActor> {
    if (principal.kind !== 'user' && principal.kind !== 'api_token') throw permissionDenied('only a person or an API token can schedule changes');
    return actorFor(this.repos, principal);
  }


  private async record(tx: Repositories, acting: Acting, change: ScheduledChange, action: string, before: ScheduledChange | null, after: ScheduledChange | null): Promise<void> {
    await recordChange(
      tx,
      acting,
      {
        orgId: change.orgId,
        action,
        resourceType: 'scheduled_change',
        resourceId: change.id,
        projectId: change.projectId,
        environmentId: change.environmentId,
        before: before === null ? null : toScheduledChangeRecord(before),
        after: after === null ? null : toScheduledChangeRecord(after),
        details: { flag_key: change.flagKey },
      },
      this.now(),
    );
  }

  private async announce(scope: EnvironmentScope): Promise<void> {
    await this.notifier.publish(DEFINITIONS_CHANGED_CHANNEL, encodeChange({ environmentId: scope.environmentId }));
  }
}

/**
 * The operations that put a flag's environment state back to an entry's `before`: the whole rule
 * list (ignore_conflicts: the entry names the state to return to, whatever came after), enabled,
 * the off variant and the prerequisites (an entry's state leaves the list out when there were none,
 * as stored flags do: absent is none).
 */
export function revertOperations(before: Flag): FlagOperation[] {
  return [
    { op: 'set_rules', rules: (before.rules ?? []) as Rule[], ignore_conflicts: true },
    { op: 'set_enabled', enabled: before.enabled === true },
    { op: 'set_off_variant', variant_key: before.off_variant_key ?? null },
    { op: 'set_prerequisites', prerequisites: Array.isArray(before.prerequisites) ? before.prerequisites : [] },
  ];
}

/**
 * The entry a revert names, checked: an entry of this org about this flag in this environment
 * (404 otherwise, so another flag's or environment's entry is never applied) that has a `before`
 * (400 for a creation).
 */
export async function revertibleEntry(tx: Repositories, scope: EnvironmentScope, flagKey: string, entryId: string): Promise<AuditEntry & { before: Flag }> {
  const entry = await tx.audit.get({ orgId: scope.orgId }, entryId);
  if (!entry || entry.resourceType !== 'flag' || entry.resourceId !== flagKey || entry.environmentId !== scope.environmentId || entry.projectId !== scope.projectId) {
    throw notFound('change-history entry of this flag in this environment', entryId);
  }
  if (!isObject(entry.before) || !Array.isArray((entry.before as Record<string, unknown>).rules)) {
    throw invalidArgument(`entry '${entryId}' has no earlier state of the flag to return to (it records a creation)`, 'audit_entry_id');
  }
  return entry as AuditEntry & { before: Flag };
}

/**
 * Reverts the flag to an entry's `before` state inside the caller's unit of work (the approvals
 * workflow calls this when applying an approved revert). The caller announces after commit.
 */
export async function applyRevert(tx: Repositories, acting: Acting, scope: EnvironmentScope, flagKey: string, entryId: string, nowMs: number): Promise<Flag> {
  const entry = await revertibleEntry(tx, scope, flagKey, entryId);
  const { after } = await writeFlagOperations(
    tx,
    { environment: scope, flagKey, operations: revertOperations(entry.before), acting, action: 'flag.revert', details: { reverts_entry_id: entry.id, reverts_action: entry.action } },
    nowMs,
  );
  return after;
}

/**
 * Whether the party who scheduled a change (or a change request applied at a time) may still do
 * `actions` there (flag.write for a schedule; a request's segment changes add segment.write); the
 * reason when not.
 */
export async function schedulerMayStillWrite(
  tx: Repositories,
  change: Pick<ScheduledChange, 'orgId' | 'projectId' | 'environmentId' | 'createdBy'>,
  nowMs: number,
  actions: readonly Action[] = ['flag.write'],
): Promise<string | null> {
  const scope = { orgId: change.orgId, projectId: change.projectId, environmentId: change.environmentId };
  const who = change.createdBy;
  const what = (action: Action) => (action === 'segment.write' ? 'segments' : 'flags');
  if (who.type === 'user') {
    const membership = await tx.users.lockMembership(change.orgId, who.id);
    const name = who.email ?? who.id;
    if (!membership) return `${name}, who scheduled it, is no longer a member of the organisation`;
    const principal = userPrincipalOf({ userId: who.id, orgId: change.orgId, isSystem: false, sessionId: 'scheduler' }, { role: membership.role, bindings: membership.bindings });
    for (const action of actions) if (!authorize(principal, action, scope).allowed) return `${name}, who scheduled it, may no longer change ${what(action)} in this environment`;
    return null;
  }
  if (who.type === 'api_token') {
    const token = await tx.apiTokens.get({ orgId: change.orgId }, who.id);
    const name = `API token '${who.name ?? who.id}'`;
    if (!token || token.revokedAtMs !== null) return `${name}, which scheduled it, is revoked`;
    if (token.expiresAtMs !== null && token.expiresAtMs <= nowMs) return `${name}, which scheduled it, has expired`;
    const principal: Principal = { kind: 'api_token', tokenId: token.id, name: token.name, orgId: token.orgId, role: token.role, scope: token.scope, expiresAtMs: token.expiresAtMs };
    for (const action of actions) if (!authorize(principal, action, scope).allowed) return `${name}, which scheduled it, may no longer change ${what(action)} in this environment`;
    return null;
  }
  return 'scheduled by a party that cannot write flags';
}
