import {
  MAX_MATCHES_PROGRAM_SIZE,
  checkConditions,
  flagMatchesProgramSize,
  matchesProgramSize,
  checkKey,
  failedPrecondition,
  invalidArgument,
  notFound,
  type ChangeNotifier,
  type Condition,
  type EnvironmentScope,
  type MemberChanges,
  type MemberList,
  type Page,
  type Principal,
  type Repositories,
  type Segment,
  type SegmentKind,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import { recordChange } from '../audit/audit-trail.ts';
import { DEFINITIONS_CHANGED_CHANNEL, encodeChange } from '../flags/definition-events.ts';
import type { ScopeResolver } from '../scopes.ts';
import { IngestRateLimiter } from '../limits/ingest-rate-limiter.ts';

/** The segment body of docs/contract.md "Segments". */
export interface SegmentBody {
  key?: string;
  context_type?: string;
  kind?: string;
  description?: string | null;
  included_keys?: string[] | null;
  excluded_keys?: string[] | null;
  conditions?: unknown;
  version?: number | null;
}

export interface MembershipQuery {
  segment_key: string;
  context_key: string;
  context_type: string;
}

/** Keys in one request (create body or members PATCH), per list: bounded work per call. */
export const MAX_KEYS_PER_CALL = 10_000;

function checkKeys(keys: unknown, field: string): string[] {
  if (keys === undefined || keys === null) return [];
  if (!Array.isArray(keys) || keys.some((k) => typeof k !== 'string' || k === '' || k.length > 512)) {
    throw invalidArgument(`${field} must be an array of non-empty strings (at most 512 characters)`, field);
  }
  if (keys.length > MAX_KEYS_PER_CALL) throw invalidArgument(`${field} holds at most ${MAX_KEYS_PER_CALL} keys per request`, field);
  return keys as string[];
}

function checkContextType(value: unknown, field = 'context_type'): string {
  if (typeof value !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(value)) {
    throw invalidArgument(`${field} must be 1-64 characters of letters, digits, '.', '_' or '-'`, field);
  }
  return value;
}

/**
 * SegmentationService (svc.segments.v1): list segments (members kept in an indexed table so
 * membership is one index probe even for millions of keys) and rule segments (conditions, evaluated
 * by SDKs). Excluded keys win over included ones.
 */
export class SegmentService {
  constructor(
    private readonly repos: Pick<Repositories, 'segments' | 'flags' | 'unitOfWork'>,
    private readonly scopes: ScopeResolver,
    private readonly notifier: ChangeNotifier,
    private readonly now: () => number = Date.now,
    /** List-checks per credential and environment (default: DEFAULT_INGEST_RATE_LIMITS). */
    private readonly limiter: IngestRateLimiter = new IngestRateLimiter(undefined, now),
  ) {}

  async scope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    return this.scopes.environment(principal, environmentId);
  }

  async list(principal: Principal, scope: EnvironmentScope): Promise<Segment[]> {
    this.authorize(principal, 'segment.read', scope);
    return this.repos.segments.list(scope);
  }

  async get(principal: Principal, scope: EnvironmentScope, key: string): Promise<Segment> {
    this.authorize(principal, 'segment.read', scope);
    const segment = await this.repos.segments.get(scope, key);
    if (!segment) throw notFound('segment', key);
    return segment;
  }

  async create(principal: Principal, scope: EnvironmentScope, body: SegmentBody): Promise<Segment> {
    this.authorize(principal, 'segment.write', scope);
    const key = checkKey(body.key, 'key');
    const contextType = checkContextType(body.context_type);
    if (body.kind !== 'list' && body.kind !== 'rule') throw invalidArgument('kind must be list or rule', 'kind');
    const kind: SegmentKind = body.kind;
    const included = checkKeys(body.included_keys, 'included_keys');
    const excluded = checkKeys(body.excluded_keys, 'excluded_keys');
    if (kind === 'rule' && (included.length > 0 || excluded.length > 0)) throw invalidArgument('included_keys and excluded_keys are for list segments: a rule segment has conditions', 'included_keys');
    if (kind === 'list' && body.conditions !== undefined && body.conditions !== null && (body.conditions as unknown[]).length > 0) {
      throw invalidArgument('conditions are for rule segments: a list segment has keys', 'conditions');
    }
    const conditions = kind === 'rule' ? checkConditions(body.conditions ?? [], 'conditions') : [];
    const segment = await this.repos.unitOfWork.run(async (tx) => {
      let created = await tx.segments.create(scope, { key, context_type: contextType, kind, description: body.description ?? '', conditions });
      if (included.length > 0 || excluded.length > 0) {
        created = await tx.segments.changeMembers(scope, key, { add_included: included, add_excluded: excluded });
      }
      await this.record(tx, principal, scope, 'segment.create', key, null, created);
      return created;
    });
    await this.announce(scope);
    return segment;
  }

  async update(principal: Principal, scope: EnvironmentScope, key: string, body: SegmentBody): Promise<Segment> {
    this.authorize(principal, 'segment.write', scope);
    const current = await this.get(principal, scope, key);
    if (body.key !== undefined && body.key !== key) throw invalidArgument('key cannot change', 'key');
    if (body.kind !== undefined && body.kind !== current.kind) throw invalidArgument('kind cannot change', 'kind');
    const patch: { context_type?: string; description?: string; conditions?: ReturnType<typeof checkConditions> } = {};
    if (body.context_type !== undefined) patch.context_type = checkContextType(body.context_type);
    if (body.description !== undefined && body.description !== null) patch.description = body.description;
    if (body.conditions !== undefined && body.conditions !== null) {
      if (current.kind === 'list') throw invalidArgument('conditions are for rule segments: a list segment has keys', 'conditions');
      patch.conditions = checkConditions(body.conditions, 'conditions');
      await this.checkFlagsStayInBudget(scope, current, patch.conditions);
    }
    // Checked before the first write: a rejected update must not have bumped the version.
    const included = checkKeys(body.included_keys, 'included_keys');
    const excluded = checkKeys(body.excluded_keys, 'excluded_keys');
    const replacesMembers = current.kind === 'list' && (body.included_keys || body.excluded_keys);
    const segment = await this.repos.unitOfWork.run(async (tx) => {
      let updated = await tx.segments.update(scope, key, patch, body.version ?? undefined);
      if (replacesMembers) {
        // Replaced in the database (the stored members, possibly millions, are never loaded here).
        updated = await tx.segments.replaceMembers(scope, key, {
          included: body.included_keys ? included : null,
          excluded: body.excluded_keys ? excluded : null,
        });
      }
      // before/after carry the member counts; a replaced list is named, not copied (it may hold 10,000 keys).
      const details = replacesMembers ? { replaced_lists: [...(body.included_keys ? ['included'] : []), ...(body.excluded_keys ? ['excluded'] : [])] } : {};
      await this.record(tx, principal, scope, 'segment.update', key, current, updated, details);
      return updated;
    });
    await this.announce(scope);
    return segment;
  }

  /** Refuses while a flag rule of the environment still references the segment. */
  async remove(principal: Principal, scope: EnvironmentScope, key: string, version?: number): Promise<void> {
    this.authorize(principal, 'segment.write', scope);
    const current = await this.get(principal, scope, key);
    const users = (await this.repos.flags.list(scope)).filter((flag) => flag.rules.some((rule) => rule.segment_keys?.includes(key)));
    if (users.length > 0) throw failedPrecondition(`segment '${key}' is used by flags: ${users.map((f) => f.key).join(', ')}`);
    await this.repos.unitOfWork.run(async (tx) => {
      await tx.segments.delete(scope, key, version);
      await this.record(tx, principal, scope, 'segment.delete', key, current, null);
    });
    await this.announce(scope);
  }

  async changeMembers(principal: Principal, scope: EnvironmentScope, key: string, changes: MemberChanges): Promise<Segment> {
    this.authorize(principal, 'segment.write', scope);
    const segment = await this.get(principal, scope, key);
    if (segment.kind !== 'list') throw failedPrecondition('only list segments have members');
    const checked: MemberChanges = {
      add_included: checkKeys(changes.add_included, 'add_included'),
      remove_included: checkKeys(changes.remove_included, 'remove_included'),
      add_excluded: checkKeys(changes.add_excluded, 'add_excluded'),
      remove_excluded: checkKeys(changes.remove_excluded, 'remove_excluded'),
    };
    const updated = await this.repos.unitOfWork.run(async (tx) => {
      const changed = await tx.segments.changeMembers(scope, key, checked);
      // The keys added and removed are what changed: before/after only carry the counts.
      await this.record(tx, principal, scope, 'segment.members', key, segment, changed, { ...checked });
      return changed;
    });
    await this.announce(scope);
    return updated;
  }

  async listMembers(principal: Principal, scope: EnvironmentScope, key: string, list: MemberList, cursor: string | null, limit: number): Promise<Page<string>> {
    this.authorize(principal, 'segment.read', scope);
    await this.get(principal, scope, key);
    return this.repos.segments.listMembers(scope, key, list, { cursor, limit });
  }

  /**
   * Membership checks (SDK list-check). An unknown segment is NOT_FOUND; a context of another type
   * than the segment's is not a member. All pairs are answered by one query.
   * @throws RESOURCE_EXHAUSTED (Retry-After) beyond the list-check rate limits: a batch counts as its queries.
   */
  async checkMembership(principal: Principal, scope: EnvironmentScope, queries: MembershipQuery[]): Promise<boolean[]> {
    requireAllowed(principal, principal.kind === 'sdk_key' || principal.kind === 'api_token' ? 'segment.check' : 'segment.read', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    this.limiter.admit('list_check', principal, scope, queries.length);
    const segments = new Map((await this.repos.segments.list(scope)).map((s) => [s.key, s]));
    for (const query of queries) if (!segments.has(query.segment_key)) throw notFound('segment', query.segment_key);
    const answers = await this.repos.segments.checkMembers(
      scope,
      queries.map((q) => ({ segmentKey: q.segment_key, contextKey: q.context_key })),
    );
    return queries.map((query, i) => segments.get(query.segment_key)?.context_type === query.context_type && answers[i] === true);
  }

  private checkFlagsStayInBudget(scope: EnvironmentScope, current: Segment, conditions: Condition[]): Promise<void> {
    return checkFlagsStayInBudget(this.repos, scope, current, conditions);
  }

  private authorize(principal: Principal, action: 'segment.read' | 'segment.write', scope: EnvironmentScope): void {
    requireAllowed(principal, action, { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
  }

  private async record(tx: Repositories, principal: Principal, scope: EnvironmentScope, action: string, key: string, before: Segment | null, after: Segment | null, details: Record<string, unknown> = {}): Promise<void> {
    await recordChange(tx, principal, {
      orgId: scope.orgId,
      action,
      resourceType: 'segment',
      resourceId: key,
      projectId: scope.projectId,
      environmentId: scope.environmentId,
      before,
      after,
      details,
    }, this.now());
  }

  /** After the commit: every instance's snapshots of the environment refresh. */
  private async announce(scope: EnvironmentScope): Promise<void> {
    await this.notifier.publish(DEFINITIONS_CHANGED_CHANNEL, encodeChange({ environmentId: scope.environmentId }));
  }
}

/**
 * A flag's regular-expression budget covers the rule segments it names (checkFlagMatchesBudget):
 * new conditions that would put a flag naming this segment over it are refused, naming the
 * flags. Conditions no costlier than the current ones cannot. Shared with a copy of segments
 * between environments (EnvironmentCopyService), which passes its unit of work's repositories.
 */
export async function checkFlagsStayInBudget(repos: Pick<Repositories, 'flags' | 'segments'>, scope: EnvironmentScope, current: Segment, conditions: Condition[]): Promise<void> {
  if (matchesProgramSize(conditions) <= matchesProgramSize(current.conditions ?? [])) return;
  const users = (await repos.flags.list(scope)).filter((flag) => flag.rules.some((rule) => rule.segment_keys?.includes(current.key)));
  if (users.length === 0) return;
  const segments = new Map((await repos.segments.list(scope)).map((s) => [s.key, s]));
  segments.set(current.key, { ...current, conditions });
  const over = users
    .map((flag) => ({ key: flag.key, size: flagMatchesProgramSize(flag.rules, segments) }))
    .filter((flag) => flag.size > MAX_MATCHES_PROGRAM_SIZE);
  if (over.length === 0) return;
  throw invalidArgument(
    `conditions: with these patterns, flags naming segment '${current.key}' could run regular expressions of more than ${MAX_MATCHES_PROGRAM_SIZE} RE2 instructions together: ${over.map((f) => `${f.key} (${f.size})`).join(', ')}; use fewer or simpler patterns`,
    'conditions',
  );
}
