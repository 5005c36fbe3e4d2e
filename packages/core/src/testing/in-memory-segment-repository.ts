import { alreadyExists, failedPrecondition, invalidArgument, notFound, versionConflict } from '../errors/domain-error.ts';
import type { Condition, Segment } from '../model/definitions.ts';
import type { MemberChanges, MemberList, MemberLists, SegmentInput, SegmentRepository } from '../ports/flag-ports.ts';
import type { EnvironmentScope, Page } from '../ports/scopes.ts';
import { compareKeys } from './compare-keys.ts';
import type { InMemoryState } from './in-memory-state.ts';

/** Copies through JSON, as the jsonb column does (no shared objects, `undefined` properties dropped). */
const viaJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

interface StoredSegment {
  scope: EnvironmentScope;
  segment: Segment;
}

/**
 * SegmentRepository over InMemoryState: records in `state.segments`, list members in
 * `state.segmentMembers` as one Set per list. Behaves as PgSegmentRepository does; both run the
 * same contract suite.
 */
export class InMemorySegmentRepository implements SegmentRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(scope: EnvironmentScope, input: SegmentInput): Promise<Segment> {
    this.state.requireEnvironment(scope);
    if (this.find(scope, input.key)) throw alreadyExists('segment', input.key);
    const now = this.state.now();
    const segment: Segment = {
      id: this.state.newId(),
      key: input.key,
      context_type: input.context_type,
      kind: input.kind,
      description: input.description ?? '',
      // Conditions only mean something for rule segments; a list segment is its members.
      conditions: input.kind === 'rule' ? viaJson(input.conditions ?? []) : [],
      included_count: 0,
      excluded_count: 0,
      version: 1,
      created_at_ms: now,
      updated_at_ms: now,
    };
    const scopeCopy = { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId };
    this.state.segments.set(segment.id, { scope: scopeCopy, segment });
    this.state.segmentMembers.set(segment.id, { included: new Set(), excluded: new Set() });
    return viaJson(segment);
  }

  async get(scope: EnvironmentScope, key: string): Promise<Segment | null> {
    const stored = this.find(scope, key);
    return stored ? viaJson(stored.segment) : null;
  }

  async list(scope: EnvironmentScope): Promise<Segment[]> {
    return [...this.state.segments.values()]
      .filter((stored) => sameScope(stored.scope, scope))
      .map((stored) => viaJson(stored.segment))
      .sort((a, b) => compareKeys(a.key, b.key));
  }

  async update(
    scope: EnvironmentScope,
    key: string,
    patch: { context_type?: string; description?: string; conditions?: Condition[] },
    expectedVersion?: number,
  ): Promise<Segment> {
    const { segment } = this.require(scope, key, expectedVersion);
    if (patch.context_type !== undefined) segment.context_type = patch.context_type;
    if (patch.description !== undefined) segment.description = patch.description;
    if (patch.conditions !== undefined && segment.kind === 'rule') segment.conditions = viaJson(patch.conditions);
    this.touch(segment);
    return viaJson(segment);
  }

  async delete(scope: EnvironmentScope, key: string, expectedVersion?: number): Promise<void> {
    const { segment } = this.require(scope, key, expectedVersion);
    this.state.segments.delete(segment.id);
    this.state.segmentMembers.delete(segment.id);
  }

  async changeMembers(scope: EnvironmentScope, key: string, changes: MemberChanges): Promise<Segment> {
    const { segment } = this.require(scope, key, undefined);
    if (segment.kind !== 'list') throw failedPrecondition(`segment '${key}' is a rule segment and has no member lists`);
    const members = this.membersOf(segment.id);
    // Removals first, then additions: a key both removed and added in one call ends up a member.
    for (const contextKey of changes.remove_included ?? []) members.included.delete(contextKey);
    for (const contextKey of changes.remove_excluded ?? []) members.excluded.delete(contextKey);
    for (const contextKey of changes.add_included ?? []) members.included.add(contextKey);
    for (const contextKey of changes.add_excluded ?? []) members.excluded.add(contextKey);
    segment.included_count = members.included.size;
    segment.excluded_count = members.excluded.size;
    this.touch(segment);
    return viaJson(segment);
  }

  async replaceMembers(scope: EnvironmentScope, key: string, lists: MemberLists): Promise<Segment> {
    const { segment } = this.require(scope, key, undefined);
    if (segment.kind !== 'list') throw failedPrecondition(`segment '${key}' is a rule segment and has no member lists`);
    const members = this.membersOf(segment.id);
    if (lists.included) members.included = new Set(lists.included);
    if (lists.excluded) members.excluded = new Set(lists.excluded);
    segment.included_count = members.included.size;
    segment.excluded_count = members.excluded.size;
    this.touch(segment);
    return viaJson(segment);
  }

  async listMembers(
    scope: EnvironmentScope,
    key: string,
    list: MemberList,
    page: { cursor?: string | null; limit: number },
  ): Promise<Page<string>> {
    checkLimit(page.limit);
    const { segment } = this.require(scope, key, undefined);
    const cursor = page.cursor ?? null;
    const after = [...this.membersOf(segment.id)[list]]
      .filter((contextKey) => cursor === null || compareKeys(contextKey, cursor) > 0)
      .sort(compareKeys);
    const items = after.slice(0, page.limit);
    const hasMore = after.length > page.limit;
    return { items, nextCursor: hasMore ? (items[items.length - 1] ?? null) : null };
  }

  async checkMembers(
    scope: EnvironmentScope,
    pairs: Array<{ segmentKey: string; contextKey: string }>,
  ): Promise<Array<boolean | null>> {
    return pairs.map(({ segmentKey, contextKey }) => {
      const stored = this.find(scope, segmentKey);
      if (!stored) return null;
      const members = this.membersOf(stored.segment.id);
      // Excluded wins over included.
      return !members.excluded.has(contextKey) && members.included.has(contextKey);
    });
  }

  private find(scope: EnvironmentScope, key: string): StoredSegment | undefined {
    for (const stored of this.state.segments.values()) {
      if (stored.segment.key === key && sameScope(stored.scope, scope)) return stored;
    }
    return undefined;
  }

  /** The segment, or NOT_FOUND; ABORTED when an expected version is given and differs. */
  private require(scope: EnvironmentScope, key: string, expectedVersion: number | undefined): StoredSegment {
    const stored = this.find(scope, key);
    if (!stored) throw notFound('segment', key);
    if (expectedVersion !== undefined && expectedVersion !== stored.segment.version) {
      throw versionConflict('segment', expectedVersion, stored.segment.version);
    }
    return stored;
  }

  private membersOf(segmentId: string): { included: Set<string>; excluded: Set<string> } {
    let members = this.state.segmentMembers.get(segmentId);
    if (!members) {
      members = { included: new Set(), excluded: new Set() };
      this.state.segmentMembers.set(segmentId, members);
    }
    return members;
  }

  private touch(segment: Segment): void {
    segment.version += 1;
    segment.updated_at_ms = this.state.now();
  }
}

const sameScope = (a: EnvironmentScope, b: EnvironmentScope): boolean =>
  a.orgId === b.orgId && a.projectId === b.projectId && a.environmentId === b.environmentId;

/** A page holds at least one key (the PostgreSQL adapter rejects the same limits). */
function checkLimit(limit: number): void {
  if (!Number.isInteger(limit) || limit < 1) throw invalidArgument('limit must be a positive integer', 'limit');
}
