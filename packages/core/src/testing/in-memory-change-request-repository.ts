import { randomUUID } from 'node:crypto';
import { notFound, versionConflict } from '../errors/domain-error.ts';
import type { ChangeRequestDraft, ChangeRequestPatch, ChangeRequestRepository, StoredChangeRequest, StoredChangeRequestStatus } from '../ports/change-request-ports.ts';
import type { EnvironmentScope } from '../ports/scopes.ts';
import type { ApprovalPolicy, ChangeRequestReview } from '../workflow/change-requests.ts';
import type { InMemoryState } from './in-memory-state.ts';

interface Tables {
  policies: Map<string, ApprovalPolicy & { orgId: string }>;
  requests: Map<string, StoredChangeRequest>;
}
const tablesOf = new WeakMap<InMemoryState, Tables>();

const inScope = (request: StoredChangeRequest, scope: EnvironmentScope) =>
  request.orgId === scope.orgId && request.projectId === scope.projectId && request.environmentId === scope.environmentId;
/** A copy, its reviews oldest first (as the Postgres adapter reads them: by time, then id). */
const copy = (request: StoredChangeRequest): StoredChangeRequest => {
  const copied = structuredClone(request);
  copied.reviews.sort((x, y) => x.at_ms - y.at_ms || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  return copied;
};

/** The fake of ChangeRequestRepository (docs/workflow.md "Change requests and approvals"). */
export class InMemoryChangeRequestRepository implements ChangeRequestRepository {
  constructor(private readonly state: InMemoryState) {}

  private get tables(): Tables {
    let tables = tablesOf.get(this.state);
    if (!tables) tablesOf.set(this.state, (tables = { policies: new Map(), requests: new Map() }));
    return tables;
  }

  async getPolicy(where: { orgId: string; environmentId: string }): Promise<ApprovalPolicy | null> {
    const stored = this.tables.policies.get(where.environmentId);
    if (!stored || stored.orgId !== where.orgId) return null;
    const { orgId: _org, ...policy } = stored;
    return policy;
  }

  async putPolicy(scope: EnvironmentScope, policy: ApprovalPolicy): Promise<ApprovalPolicy> {
    const environment = this.state.environments.get(scope.environmentId);
    if (!environment || environment.orgId !== scope.orgId || environment.projectId !== scope.projectId) throw notFound('environment', scope.environmentId);
    this.tables.policies.set(scope.environmentId, { ...policy, orgId: scope.orgId });
    return { ...policy };
  }

  async create(scope: EnvironmentScope, draft: ChangeRequestDraft): Promise<StoredChangeRequest> {
    const environment = this.state.environments.get(scope.environmentId);
    if (!environment || environment.orgId !== scope.orgId || environment.projectId !== scope.projectId) throw notFound('environment', scope.environmentId);
    const request: StoredChangeRequest = { ...structuredClone(draft), ...scope, id: randomUUID(), revision: 1, reviews: [], conflict: null, appliedBy: null, submittedAtMs: null, appliedAtMs: null, executeAtMs: null, scheduledBy: null };
    this.tables.requests.set(request.id, request);
    return copy(request);
  }

  async get(scope: EnvironmentScope, id: string): Promise<StoredChangeRequest | null> {
    const request = this.tables.requests.get(id);
    return request && inScope(request, scope) ? copy(request) : null;
  }

  async list(scope: EnvironmentScope, options: { statuses?: StoredChangeRequestStatus[]; limit: number }): Promise<StoredChangeRequest[]> {
    return [...this.tables.requests.values()]
      .filter((request) => inScope(request, scope) && (!options.statuses || options.statuses.includes(request.status)))
      .sort((x, y) => y.createdAtMs - x.createdAtMs)
      .slice(0, options.limit)
      .map(copy);
  }

  /** The fake has one writer at a time: no lock to take. */
  async countInStatuses(scope: EnvironmentScope, statuses: readonly StoredChangeRequestStatus[]): Promise<number> {
    return [...this.tables.requests.values()].filter((request) => inScope(request, scope) && statuses.includes(request.status)).length;
  }

  async update(scope: EnvironmentScope, id: string, patch: ChangeRequestPatch, expectedRevision: number): Promise<StoredChangeRequest> {
    const request = this.tables.requests.get(id);
    if (!request || !inScope(request, scope)) throw notFound('change request', id);
    if (request.revision !== expectedRevision) throw versionConflict('change request', expectedRevision, request.revision);
    const next = { ...request, ...structuredClone(patch), revision: request.revision + 1 };
    this.tables.requests.set(id, next);
    return copy(next);
  }

  async addReview(scope: EnvironmentScope, id: string, review: Omit<ChangeRequestReview, 'id'>): Promise<ChangeRequestReview> {
    const request = this.tables.requests.get(id);
    if (!request || !inScope(request, scope)) throw notFound('change request', id);
    const stored = { ...review, id: randomUUID() };
    request.reviews.push(stored);
    return { ...stored };
  }

  async listScheduled(scope: EnvironmentScope, options: { fromMs?: number; toMs?: number; limit: number }): Promise<StoredChangeRequest[]> {
    return [...this.tables.requests.values()]
      .filter((request) => inScope(request, scope) && request.status === 'scheduled' && request.executeAtMs !== null)
      .filter((request) => (options.fromMs === undefined || request.executeAtMs! >= options.fromMs) && (options.toMs === undefined || request.executeAtMs! < options.toMs))
      .sort((x, y) => x.executeAtMs! - y.executeAtMs! || (x.id < y.id ? -1 : 1))
      .slice(0, options.limit)
      .map(copy);
  }

  /** The fake has one writer at a time: the earliest due request (no lock to take). */
  async claimDueScheduled(nowMs: number): Promise<StoredChangeRequest | null> {
    const due = [...this.tables.requests.values()]
      .filter((request) => request.status === 'scheduled' && request.executeAtMs !== null && request.executeAtMs <= nowMs)
      .sort((x, y) => x.executeAtMs! - y.executeAtMs! || (x.id < y.id ? -1 : 1));
    return due[0] ? copy(due[0]) : null;
  }
}
