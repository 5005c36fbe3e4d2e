import {
  COMPARED_FLAG_FIELDS,
  DomainError,
  checkConditions,
  checkHashing,
  checkKey,
  checkOffVariant,
  checkPrerequisites,
  checkRules,
  compareEnvironments,
  flagFieldDifferences,
  invalidArgument,
  isDomainError,
  notFound,
  referencedSegmentKeys,
  segmentDifference,
  type ChangeNotifier,
  type ComparedFlagField,
  type ComparedSegment,
  type EnvironmentScope,
  type Flag,
  type FlagDifference,
  type FlagEnvironmentStateInput,
  type MemberList,
  type Principal,
  type Repositories,
  type Segment,
  type SegmentKind,
} from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import { recordChange } from '../audit/audit-trail.ts';
import { DEFINITIONS_CHANGED_CHANNEL, encodeChange } from '../flags/definition-events.ts';
import { asShown, checkSegmentReferences, checkStudiedRules, servesOnlyItsVariants } from '../flags/flag-state-checks.ts';
import { checkFlagsStayInBudget } from '../segments/segment-service.ts';
import type { ScopeResolver } from '../scopes.ts';

/**
 * Environment compare and copy (docs/contract.md "Environment compare and copy"): which flags of a
 * project differ between two of its environments, and a copy of chosen flags' configuration from
 * one to the other in one unit of work — every flag or none — with the checks a person's write of
 * the same state meets (FlagService's, shared through flags/flag-state-checks.ts), one change-history
 * entry per flag and segment written, and optimistic versions.
 */

/** What a copy carries; see COPY_PARTS_FIELDS. */
export const COPY_PARTS = ['rules', 'enabled', 'prerequisites', 'segments'] as const;
export type CopyPart = (typeof COPY_PARTS)[number];

/**
 * The flag fields each part writes: `rules` the targeting (rules, off variant and hashing: what the
 * rules serve and how they bucket), `enabled` the on/off switch, `prerequisites` the list.
 * `segments` writes no flag field: it makes the segments the copied rules name match the source.
 */
const COPY_PARTS_FIELDS: Record<CopyPart, readonly ComparedFlagField[]> = {
  rules: ['rules', 'off_variant_key', 'hashing'],
  enabled: ['enabled'],
  prerequisites: ['prerequisites'],
  segments: [],
};

/** At most this many flags per copy (after removing repeated keys). */
export const MAX_COPY_FLAGS = 500;
/**
 * At most this many list-segment members (included plus excluded, over every list segment the
 * copy writes) per copy: a larger list is refused, naming it; its members are copied through the
 * segment routes (PUT .../segments/{key} with the key lists) first. The same bound as one
 * segment request's key lists (MAX_KEYS_PER_CALL).
 */
export const MAX_COPIED_MEMBERS = 10_000;
/** At most this many segments created or updated per copy (the segments the copied rules name). */
export const MAX_COPIED_SEGMENTS = 200;
/** A comparison reads the members of the list segments it reports, at most this many per side of one segment; beyond, counts are compared. */
export const MAX_COMPARED_MEMBERS_PER_SEGMENT = 10_000;
/** ... and at most this many members in all, per comparison (a copy reads the target's lists within the same total). */
export const MAX_COMPARED_MEMBERS = 50_000;
const MEMBERS_PAGE = 10_000;

export interface EnvironmentComparisonRecord {
  target_environment_id: string;
  from_environment_id: string;
  /** How many flags the project has (each compared). */
  compared: number;
  /** The flags that differ, by key (code point order). */
  flags: FlagDifference[];
}

export interface EnvironmentCopyBody {
  from_environment_id?: unknown;
  flag_keys?: unknown;
  include?: unknown;
  versions?: unknown;
}

export interface CopiedFlag {
  flag_key: string;
  /** The target state's version before and after (equal when nothing differed: nothing written). */
  before_version: number;
  after_version: number;
  /** The fields written (those of the included parts that differed), in COMPARED_FLAG_FIELDS order. */
  fields: ComparedFlagField[];
}

export interface CopiedSegment {
  segment_key: string;
  kind: SegmentKind;
  action: 'created' | 'updated';
  /** 0 for a created segment. */
  before_version: number;
  after_version: number;
  /** List segments: the members written (included plus excluded). */
  members_copied: number;
}

export interface EnvironmentCopyRecord {
  target_environment_id: string;
  from_environment_id: string;
  include: CopyPart[];
  flags: CopiedFlag[];
  segments: CopiedSegment[];
}

interface CopyRequest {
  fromEnvironmentId: string;
  flagKeys: string[];
  include: CopyPart[];
  versions: Map<string, number>;
}

interface PlannedFlag {
  key: string;
  current: Flag;
  /** The state to write (only the changed fields). */
  state: FlagEnvironmentStateInput;
  fields: ComparedFlagField[];
  expectedVersion: number;
}

interface PlannedSegment {
  source: Segment;
  /** The target's segment now; absent: created. */
  existing: Segment | undefined;
  members?: { included: string[]; excluded: string[] };
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Checks a copy body (every caller's: REST validates its shape too, a gateway hop passes it as sent). */
export function checkCopyBody(body: unknown): CopyRequest {
  if (!isRecord(body)) throw invalidArgument('the body must be an object {from_environment_id, flag_keys, include, versions?}', 'body');
  const known = new Set(['from_environment_id', 'flag_keys', 'include', 'versions']);
  for (const field of Object.keys(body)) if (!known.has(field)) throw invalidArgument(`${field} is not a field of a copy (from_environment_id, flag_keys, include, versions)`, field);
  const from = body.from_environment_id;
  if (typeof from !== 'string' || from === '' || from.length > 100) throw invalidArgument('from_environment_id must be an environment id', 'from_environment_id');
  const keys = body.flag_keys;
  if (!Array.isArray(keys) || keys.length === 0) throw invalidArgument(`flag_keys must be a non-empty array of flag keys (at most ${MAX_COPY_FLAGS})`, 'flag_keys');
  // Bounded before anything is done per key: a repeated key counts once, but the array itself is bounded too.
  if (keys.length > MAX_COPY_FLAGS * 2) throw invalidArgument(`flag_keys holds at most ${MAX_COPY_FLAGS} flag keys`, 'flag_keys');
  const flagKeys = [...new Set(keys.map((key: unknown, i) => checkKey(key, `flag_keys[${i}]`)))];
  if (flagKeys.length > MAX_COPY_FLAGS) throw invalidArgument(`flag_keys holds at most ${MAX_COPY_FLAGS} flag keys (${flagKeys.length} given)`, 'flag_keys');
  const include = body.include;
  if (!Array.isArray(include) || include.length === 0 || include.length > COPY_PARTS.length) {
    throw invalidArgument(`include must be a non-empty array of ${COPY_PARTS.join(', ')}`, 'include');
  }
  const parts = include.map((part: unknown, i) => {
    if (typeof part !== 'string' || !(COPY_PARTS as readonly string[]).includes(part)) throw invalidArgument(`include[${i}] must be one of ${COPY_PARTS.join(', ')}`, `include[${i}]`);
    if (include.indexOf(part) !== i) throw invalidArgument(`include[${i}] '${part}' is named twice`, `include[${i}]`);
    return part as CopyPart;
  });
  if (parts.includes('segments') && !parts.includes('rules')) {
    throw invalidArgument('include: segments are copied with the rules that name them: include rules too', 'include');
  }
  const versions = new Map<string, number>();
  if (body.versions !== undefined && body.versions !== null) {
    if (!isRecord(body.versions)) throw invalidArgument('versions must be an object {flag_key: expected version in the target}', 'versions');
    const listed = new Set(flagKeys);
    for (const [key, version] of Object.entries(body.versions)) {
      if (!listed.has(key)) throw invalidArgument(`versions.${key}: not one of flag_keys`, `versions.${key}`);
      if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) throw invalidArgument(`versions.${key} must be an integer >= 0`, `versions.${key}`);
      versions.set(key, version);
    }
  }
  return { fromEnvironmentId: from, flagKeys, include: COPY_PARTS.filter((part) => parts.includes(part)), versions };
}

/** A stale expected version, naming the flag (409 ABORTED). */
const flagVersionConflict = (key: string, expected: number, stored: number): DomainError =>
  new DomainError('ABORTED', `flag '${key}': version mismatch in the target environment: expected ${expected}, stored ${stored}; compare again`);

export class EnvironmentCopyService {
  constructor(
    private readonly repos: Pick<Repositories, 'flags' | 'segments' | 'environments' | 'experiments' | 'unitOfWork'>,
    private readonly scopes: ScopeResolver,
    private readonly notifier: ChangeNotifier,
    private readonly now: () => number = Date.now,
  ) {}

  /** The target environment of a route, for the caller (another org's: 404). */
  async scope(principal: Principal, environmentId: string): Promise<EnvironmentScope> {
    return this.scopes.environment(principal, environmentId);
  }

  /** Which flags differ between `fromEnvironmentId` and the target, and how (flag.read and segment.read on both). */
  async compare(principal: Principal, target: EnvironmentScope, fromEnvironmentId: unknown): Promise<EnvironmentComparisonRecord> {
    this.authorizeRead(principal, target);
    if (typeof fromEnvironmentId !== 'string' || fromEnvironmentId === '' || fromEnvironmentId.length > 100) {
      throw invalidArgument('from_environment_id must be an environment id', 'from_environment_id');
    }
    const from = await this.source(principal, target, fromEnvironmentId);
    this.authorizeRead(principal, from);
    const [fromFlags, targetFlags, fromSegments, targetSegments] = await Promise.all([
      this.repos.flags.list(from),
      this.repos.flags.list(target),
      this.repos.segments.list(from),
      this.repos.segments.list(target),
    ]);
    // First without members; then the list segments reported are read whole (bounded) and compared again.
    const first = compareEnvironments({ flags: fromFlags, segments: fromSegments }, { flags: targetFlags, segments: targetSegments });
    const listed = new Set(first.differing.flatMap((flag) => flag.segments.filter((s) => s.kind === 'list' && s.status === 'differs').map((s) => s.segment_key)));
    const withMembers = async (scope: EnvironmentScope, segments: Segment[], budget: { left: number }): Promise<ComparedSegment[]> => {
      const out: ComparedSegment[] = [];
      for (const segment of segments) {
        const size = segment.included_count + segment.excluded_count;
        if (segment.kind === 'list' && listed.has(segment.key) && size <= MAX_COMPARED_MEMBERS_PER_SEGMENT && size <= budget.left) {
          budget.left -= size;
          out.push({ ...segment, members: await this.members(scope, segment) });
        } else out.push(segment);
      }
      return out;
    };
    const budget = { left: MAX_COMPARED_MEMBERS };
    const result =
      listed.size === 0
        ? first
        : compareEnvironments(
            { flags: fromFlags, segments: await withMembers(from, fromSegments, budget) },
            { flags: targetFlags, segments: await withMembers(target, targetSegments, budget) },
          );
    return { target_environment_id: target.environmentId, from_environment_id: from.environmentId, compared: result.compared, flags: result.differing };
  }

  /**
   * Copies the chosen parts of the chosen flags' configuration from `body.from_environment_id`
   * into the target: one unit of work, every flag or none.
   */
  async copy(principal: Principal, target: EnvironmentScope, body: unknown): Promise<EnvironmentCopyRecord> {
    requireAllowed(principal, 'flag.write', target);
    const request = checkCopyBody(body);
    const withSegments = request.include.includes('segments');
    if (withSegments) requireAllowed(principal, 'segment.write', target);
    const from = await this.source(principal, target, request.fromEnvironmentId);
    requireAllowed(principal, 'flag.read', from);
    if (withSegments) requireAllowed(principal, 'segment.read', from);
    const fromEnvironment = await this.repos.environments.get({ orgId: from.orgId }, from.environmentId);

    const [fromFlags, targetFlags] = await Promise.all([this.repos.flags.list(from), this.repos.flags.list(target)]);
    const sources = new Map(fromFlags.map((flag) => [flag.key, flag]));
    const currents = new Map(targetFlags.map((flag) => [flag.key, flag]));
    const copiedFields = new Set(request.include.flatMap((part) => COPY_PARTS_FIELDS[part]));
    const fields = COMPARED_FLAG_FIELDS.filter((field) => copiedFields.has(field));
    const planned: PlannedFlag[] = [];
    for (const key of request.flagKeys) {
      const source = sources.get(key);
      const current = currents.get(key);
      if (!source || !current) throw notFound('flag', key);
      const expected = request.versions.get(key);
      if (expected !== undefined && expected !== current.version) throw flagVersionConflict(key, expected, current.version);
      planned.push(await this.planFlag(target, key, source, current, fields, expected ?? current.version));
    }
    const segments = withSegments ? await this.planSegments(from, target, planned.map((p) => sources.get(p.key)!)) : [];

    // Prerequisites: written one flag after another, each write checks the environment's graph
    // (the repository, under the environment's prerequisite lock). When several copied flags'
    // lists change, their old lists are cleared first, so that no intermediate graph holds an
    // edge the result does not: an intermediate cycle or chain is then one of the result too.
    const prerequisitesChanging = planned.filter((flag) => flag.fields.includes('prerequisites'));
    const twoSteps = prerequisitesChanging.length > 1;
    const copiedFrom = {
      copied_from_environment_id: from.environmentId,
      copied_from_environment_name: fromEnvironment?.name ?? null,
      include: request.include,
    };

    const written = await this.repos.unitOfWork.run(async (tx) => {
      const copiedSegments: CopiedSegment[] = [];
      for (const segment of segments) copiedSegments.push(await this.writeSegment(tx, principal, target, segment, copiedFrom));
      const after = new Map<string, Flag>();
      for (const flag of planned) {
        if (flag.fields.length === 0) continue;
        if (flag.state.rules) await checkSegmentReferences(tx, target, flag.state.rules).catch((error: unknown) => Promise.reject(named(error, flag.key)));
        const state = twoSteps && flag.state.prerequisites !== undefined ? { ...flag.state, prerequisites: [] } : flag.state;
        const updated = await this.writeState(tx, target, flag.key, state, flag.expectedVersion);
        servesOnlyItsVariants(updated);
        after.set(flag.key, updated);
      }
      if (twoSteps) {
        for (const flag of prerequisitesChanging) {
          const list = flag.state.prerequisites ?? [];
          if (list.length === 0) continue;
          const first = after.get(flag.key)!;
          after.set(flag.key, await this.writeState(tx, target, flag.key, { prerequisites: list }, first.version));
        }
      }
      const copiedFlags: CopiedFlag[] = [];
      for (const flag of planned) {
        const updated = after.get(flag.key);
        if (updated) {
          await recordChange(
            tx,
            principal,
            {
              orgId: target.orgId,
              action: 'flag.copy',
              resourceType: 'flag',
              resourceId: flag.key,
              projectId: target.projectId,
              environmentId: target.environmentId,
              before: asShown(flag.current),
              after: asShown(updated),
              details: { ...copiedFrom, fields: flag.fields },
            },
            this.now(),
          );
        }
        copiedFlags.push({ flag_key: flag.key, before_version: flag.current.version, after_version: updated?.version ?? flag.current.version, fields: flag.fields });
      }
      return { flags: copiedFlags, segments: copiedSegments };
    });
    if (written.flags.some((flag) => flag.fields.length > 0) || written.segments.length > 0) {
      await this.notifier.publish(DEFINITIONS_CHANGED_CHANNEL, encodeChange({ environmentId: target.environmentId }));
    }
    return { target_environment_id: target.environmentId, from_environment_id: from.environmentId, include: request.include, ...written };
  }

  // --- helpers ---

  private authorizeRead(principal: Principal, scope: EnvironmentScope): void {
    requireAllowed(principal, 'flag.read', scope);
    requireAllowed(principal, 'segment.read', scope);
  }

  /**
   * The source environment, resolved for the caller as any route id is (another org's: 404);
   * it must be another environment of the target's project (400 otherwise).
   */
  private async source(principal: Principal, target: EnvironmentScope, id: string): Promise<EnvironmentScope> {
    const from = await this.scopes.environment(principal, id);
    if (from.projectId !== target.projectId) {
      throw invalidArgument('from_environment_id: the environment belongs to another project; compare and copy work between environments of one project', 'from_environment_id');
    }
    if (from.environmentId === target.environmentId) throw invalidArgument('from_environment_id: the source and the target are the same environment', 'from_environment_id');
    return from;
  }

  /** The state a person's update of `fields` to the source's values would write, checked as FlagService checks it. */
  private async planFlag(target: EnvironmentScope, key: string, source: Flag, current: Flag, fields: readonly ComparedFlagField[], expectedVersion: number): Promise<PlannedFlag> {
    const differing = new Set(flagFieldDifferences(source, current).map((difference) => difference.field));
    const changed = fields.filter((field) => differing.has(field));
    const variantKeys = new Set(current.variants.map((variant) => variant.key));
    const state: FlagEnvironmentStateInput = {};
    const at = (field: string) => `flags.${key}.${field}`;
    try {
      if (changed.includes('rules')) state.rules = checkRules(variantKeys, source.rules, at('rules'));
      if (changed.includes('off_variant_key')) state.off_variant_key = checkOffVariant(variantKeys, source.off_variant_key, at('off_variant_key'));
      if (changed.includes('hashing')) state.hashing = checkHashing(source.hashing, at('hashing'));
      if (changed.includes('enabled')) state.enabled = source.enabled;
      if (changed.includes('prerequisites')) state.prerequisites = checkPrerequisites(key, source.prerequisites ?? [], at('prerequisites'));
      // A target that never wrote the flag shows rules derived from its off variant; a first write
      // without rules derives them again from the off variant written (FlagService.update does the
      // same), which a copied off variant could change. The copied rules are written as they are.
      if (current.version === 0 && changed.length > 0 && fields.includes('rules') && state.rules === undefined) state.rules = checkRules(variantKeys, source.rules, at('rules'));
    } catch (error) {
      throw named(error, key);
    }
    if (state.rules) await checkStudiedRules(this.repos, target, current, state.rules).catch((error: unknown) => Promise.reject(named(error, key)));
    return { key, current, state, fields: changed, expectedVersion };
  }

  /**
   * The segments the copied flags' source rules name that the target lacks or holds differently,
   * with the members of list segments (bounded by MAX_COPIED_MEMBERS in all).
   */
  private async planSegments(from: EnvironmentScope, target: EnvironmentScope, flags: Flag[]): Promise<PlannedSegment[]> {
    const keys = referencedSegmentKeys(flags.flatMap((flag) => flag.rules));
    if (keys.length === 0) return [];
    if (keys.length > MAX_COPIED_SEGMENTS) {
      throw invalidArgument(`segments: the copied rules name ${keys.length} segments; a copy with segments writes at most ${MAX_COPIED_SEGMENTS}: copy fewer flags at once`, 'include');
    }
    // The target's lists are read to compare them (bounded in all); one not read is replaced whatever it holds.
    let targetReads = MAX_COMPARED_MEMBERS;
    const [fromSegments, targetSegments] = await Promise.all([this.repos.segments.list(from), this.repos.segments.list(target)]);
    const sources = new Map(fromSegments.map((segment) => [segment.key, segment]));
    const existing = new Map(targetSegments.map((segment) => [segment.key, segment]));
    let members = 0;
    const planned: PlannedSegment[] = [];
    for (const key of keys) {
      const source = sources.get(key);
      if (!source) throw notFound('segment', key);
      const current = existing.get(key);
      if (current && current.kind !== source.kind) {
        throw invalidArgument(`segments: '${key}' is a ${source.kind} segment in the source and a ${current.kind} segment in the target; a segment's kind cannot change (delete it in the target first)`, 'include');
      }
      if (source.kind === 'rule') {
        const compared = segmentDifference(source, current);
        if (compared) planned.push({ source: { ...source, conditions: checkConditions(source.conditions, `segments.${key}.conditions`) }, existing: current });
        continue;
      }
      const size = source.included_count + source.excluded_count;
      members += size;
      if (size > MAX_COPIED_MEMBERS || members > MAX_COPIED_MEMBERS) {
        throw invalidArgument(
          `segments: list segment '${key}' has ${size} members (included plus excluded)${size > MAX_COPIED_MEMBERS ? '' : `, ${members} with the copy's other list segments`}; a copy carries at most ${MAX_COPIED_MEMBERS} list-segment members: set its members in the target through the segment routes first, or copy fewer flags at once`,
          'include',
        );
      }
      const sourceMembers = await this.members(from, source);
      const targetSize = current ? current.included_count + current.excluded_count : 0;
      // A target list too large to read is replaced whatever it holds (the replacement's work is bounded by the source's lists).
      const readTarget = current !== undefined && targetSize <= MAX_COPIED_MEMBERS && targetSize <= targetReads;
      if (readTarget) targetReads -= targetSize;
      const targetMembers = readTarget ? await this.members(target, current) : undefined;
      const compared = segmentDifference({ ...source, members: sourceMembers }, current && { ...current, ...(targetMembers ? { members: targetMembers } : {}) });
      if (compared || (current && !targetMembers)) planned.push({ source, existing: current, members: sourceMembers });
    }
    return planned;
  }

  /** A list segment's members, read in pages (callers bound the size). */
  private async members(scope: EnvironmentScope, segment: Segment): Promise<{ included: string[]; excluded: string[] }> {
    const read = async (list: MemberList): Promise<string[]> => {
      const keys: string[] = [];
      let cursor: string | null = null;
      // At most MAX_COMPARED_MEMBERS_PER_SEGMENT / MEMBERS_PAGE + 1 pages: the callers read segments of at most that size.
      for (let page = 0; page <= Math.ceil(MAX_COMPARED_MEMBERS_PER_SEGMENT / MEMBERS_PAGE); page++) {
        const next = await this.repos.segments.listMembers(scope, segment.key, list, { cursor, limit: MEMBERS_PAGE });
        keys.push(...next.items);
        cursor = next.nextCursor;
        if (cursor === null) break;
      }
      return keys;
    };
    return { included: await read('included'), excluded: await read('excluded') };
  }

  private async writeSegment(tx: Repositories, principal: Principal, target: EnvironmentScope, planned: PlannedSegment, copiedFrom: Record<string, unknown>): Promise<CopiedSegment> {
    const { source, existing, members } = planned;
    const key = source.key;
    let written: Segment;
    if (!existing) {
      written = await tx.segments.create(target, { key, context_type: source.context_type, kind: source.kind, description: source.description, conditions: source.kind === 'rule' ? source.conditions : [] });
      if (members && (members.included.length > 0 || members.excluded.length > 0)) {
        written = await tx.segments.changeMembers(target, key, { add_included: members.included, add_excluded: members.excluded });
      }
    } else {
      if (source.kind === 'rule') await checkFlagsStayInBudget(tx, target, existing, source.conditions);
      written = await tx.segments.update(
        target,
        key,
        { context_type: source.context_type, description: source.description, ...(source.kind === 'rule' ? { conditions: source.conditions } : {}) },
        existing.version,
      );
      if (members) written = await tx.segments.replaceMembers(target, key, { included: members.included, excluded: members.excluded });
    }
    await recordChange(
      tx,
      principal,
      {
        orgId: target.orgId,
        action: 'segment.copy',
        resourceType: 'segment',
        resourceId: key,
        projectId: target.projectId,
        environmentId: target.environmentId,
        before: existing ?? null,
        after: written,
        details: { ...copiedFrom, ...(members ? { members_copied: members.included.length + members.excluded.length } : {}) },
      },
      this.now(),
    );
    return {
      segment_key: key,
      kind: source.kind,
      action: existing ? 'updated' : 'created',
      before_version: existing?.version ?? 0,
      after_version: written.version,
      members_copied: members ? members.included.length + members.excluded.length : 0,
    };
  }

  /** One state write under the expected version; a stale one is 409 naming the flag. */
  private async writeState(tx: Repositories, target: EnvironmentScope, key: string, state: FlagEnvironmentStateInput, expectedVersion: number): Promise<Flag> {
    try {
      return await tx.flags.updateState(target, key, state, expectedVersion);
    } catch (error) {
      if (isDomainError(error) && error.code === 'ABORTED') {
        const stored = (await tx.flags.get(target, key))?.version;
        throw flagVersionConflict(key, expectedVersion, stored ?? -1);
      }
      throw named(error, key);
    }
  }
}

/** A refusal of one flag's copy, its message prefixed with the flag (the rest of the copy is rolled back). */
function named(error: unknown, key: string): unknown {
  if (!isDomainError(error) || error.code === 'ABORTED' || error.message.startsWith(`flag '${key}'`)) return error;
  return new DomainError(error.code, `flag '${key}': ${error.message}`, error.field);
}
