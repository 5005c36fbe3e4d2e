import { failedPrecondition, notFound, versionConflict } from '../errors/domain-error.ts';
import type { ScheduledChange, ScheduledChangeDraft, ScheduledChangeQuery, ScheduledChangeRepository, ScheduledChangeStatus } from '../flags/scheduled-change-ports.ts';
import type { FlagOperation } from '../flags/flag-operations.ts';
import type { EnvironmentScope, ProjectScope } from '../ports/scopes.ts';
import type { InMemoryState } from './in-memory-state.ts';

const copy = (change: ScheduledChange): ScheduledChange => structuredClone(change);
const byTime = (a: ScheduledChange, b: ScheduledChange): number => a.executeAtMs - b.executeAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** ScheduledChangeRepository over the shared in-memory tables (no locking: concurrency is tested on PostgreSQL). */
export class InMemoryScheduledChangeRepository implements ScheduledChangeRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(draft: ScheduledChangeDraft): Promise<ScheduledChange> {
    this.state.requireEnvironment(draft.scope);
    const change: ScheduledChange = {
      id: this.state.newId(),
      orgId: draft.scope.orgId,
      projectId: draft.scope.projectId,
      environmentId: draft.scope.environmentId,
      flagKey: draft.flagKey,
      executeAtMs: draft.executeAtMs,
      operations: structuredClone(draft.operations),
      comment: draft.comment,
      status: 'pending',
      reason: null,
      createdBy: { ...draft.createdBy },
      createdAtMs: draft.atMs,
      updatedAtMs: draft.atMs,
      appliedAtMs: null,
      version: 1,
    };
    this.state.scheduledChanges.set(change.id, change);
    return copy(change);
  }

  private find(scope: EnvironmentScope, id: string): ScheduledChange | undefined {
    const change = this.state.scheduledChanges.get(id);
    return change && change.orgId === scope.orgId && change.environmentId === scope.environmentId ? change : undefined;
  }

  async get(scope: EnvironmentScope, id: string): Promise<ScheduledChange | null> {
    const change = this.find(scope, id);
    return change ? copy(change) : null;
  }

  async list(scope: EnvironmentScope, query: ScheduledChangeQuery): Promise<ScheduledChange[]> {
    return [...this.state.scheduledChanges.values()]
      .filter((c) => c.orgId === scope.orgId && c.environmentId === scope.environmentId)
      .filter((c) => query.flagKey === undefined || c.flagKey === query.flagKey)
      .filter((c) => query.statuses === undefined || query.statuses.includes(c.status))
      .filter((c) => query.fromMs === undefined || c.executeAtMs >= query.fromMs)
      .filter((c) => query.toMs === undefined || c.executeAtMs < query.toMs)
      .sort(byTime)
      .slice(0, query.limit)
      .map(copy);
  }

  async update(
    scope: EnvironmentScope,
    id: string,
    patch: { executeAtMs?: number; operations?: FlagOperation[]; comment?: string },
    expectedVersion: number | undefined,
    atMs: number,
  ): Promise<ScheduledChange> {
    const change = this.find(scope, id);
    if (!change) throw notFound('scheduled change', id);
    if (change.status !== 'pending') throw failedPrecondition(`scheduled change '${id}' is ${change.status}: only a pending one can change`);
    if (expectedVersion !== undefined && expectedVersion !== change.version) throw versionConflict('scheduled change', expectedVersion, change.version);
    if (patch.executeAtMs !== undefined) change.executeAtMs = patch.executeAtMs;
    if (patch.operations !== undefined) change.operations = structuredClone(patch.operations);
    if (patch.comment !== undefined) change.comment = patch.comment;
    change.version += 1;
    change.updatedAtMs = atMs;
    return copy(change);
  }

  async finish(id: string, outcome: { status: Exclude<ScheduledChangeStatus, 'pending'>; reason: string | null; atMs: number; appliedAtMs?: number | null }): Promise<ScheduledChange | null> {
    const change = this.state.scheduledChanges.get(id);
    if (!change || change.status !== 'pending') return null;
    change.status = outcome.status;
    change.reason = outcome.reason;
    change.updatedAtMs = outcome.atMs;
    change.appliedAtMs = outcome.appliedAtMs ?? null;
    change.version += 1;
    return copy(change);
  }

  async cancelPendingForFlag(project: ProjectScope, flagKey: string, reason: string, atMs: number): Promise<ScheduledChange[]> {
    const out: ScheduledChange[] = [];
    for (const change of this.state.scheduledChanges.values()) {
      if (change.orgId !== project.orgId || change.projectId !== project.projectId || change.flagKey !== flagKey || change.status !== 'pending') continue;
      out.push((await this.finish(change.id, { status: 'cancelled', reason, atMs }))!);
    }
    return out;
  }

  async claimDue(nowMs: number): Promise<ScheduledChange | null> {
    const due = [...this.state.scheduledChanges.values()].filter((c) => c.status === 'pending' && c.executeAtMs <= nowMs).sort(byTime)[0];
    return due ? copy(due) : null;
  }

  async lockPending(id: string): Promise<ScheduledChange | null> {
    const change = this.state.scheduledChanges.get(id);
    return change && change.status === 'pending' ? copy(change) : null;
  }
}
