import type { Flag, Segment } from '../model/definitions.ts';
import { referencedSegmentKeys } from './validate-flag.ts';

/**
 * Comparison of two environments of one project (docs/contract.md "Environment compare and
 * copy"): pure, over what each environment's flag routes show. `from` is the environment a copy
 * would read, `target` the one it would write: each difference says what the target holds now
 * (`before`) and what a copy of that field would make it (`after`, the source's value).
 */

/** The per-environment fields of a flag that are compared (the definition is the project's, the same on both sides). */
export const COMPARED_FLAG_FIELDS = ['enabled', 'off_variant_key', 'rules', 'prerequisites', 'hashing'] as const;
export type ComparedFlagField = (typeof COMPARED_FLAG_FIELDS)[number];

export interface FieldDifference {
  field: ComparedFlagField;
  /** The target's value now. */
  before: unknown;
  /** The source's value: what copying the field writes. */
  after: unknown;
}

/**
 * Where a flag was ever written: `version` 0 in an environment means it never was, and that
 * environment shows the default view (off, the default rule; docs/contract.md "Default rule").
 */
export type WrittenIn = 'both' | 'from_only' | 'target_only' | 'neither';

/** The segment fields that are compared; `included`/`excluded` are a list segment's members. */
export type ComparedSegmentField = 'kind' | 'context_type' | 'description' | 'conditions' | 'included' | 'excluded';

export interface SegmentDifference {
  segment_key: string;
  /** `missing`: the target has no segment of that key; `differs`: it has one, `fields` say how. */
  status: 'missing' | 'differs';
  /** The source segment's kind. */
  kind: Segment['kind'];
  fields: ComparedSegmentField[];
  /**
   * False when a list segment's members could not be compared because one side has more members
   * than the comparison reads (then only the counts were compared: equal counts are not reported).
   */
  members_compared: boolean;
}

export interface FlagDifference {
  flag_key: string;
  archived: boolean;
  /** The state's version in each environment (0: never written there). */
  from_version: number;
  target_version: number;
  written: WrittenIn;
  /** The fields whose values differ, in COMPARED_FLAG_FIELDS order. */
  fields: FieldDifference[];
  /**
   * The segments the source's rules name that the target lacks or holds differently, when the
   * rules differ (a copy of the rules with `segments` would create or update them), by key.
   */
  segments: SegmentDifference[];
}

/**
 * A segment as the comparison reads it: the record and, for a list segment read whole, its
 * members (absent when the service did not read them: then counts are compared instead).
 */
export interface ComparedSegment extends Pick<Segment, 'key' | 'kind' | 'context_type' | 'description' | 'conditions' | 'included_count' | 'excluded_count'> {
  members?: { included: readonly string[]; excluded: readonly string[] };
}

export interface EnvironmentSide {
  flags: readonly Flag[];
  segments: readonly ComparedSegment[];
}

export interface EnvironmentComparison {
  /** Flags that differ in a compared field, or are written in one environment only, by key (code point order). */
  differing: FlagDifference[];
  /** How many flags the project has (compared on both sides). */
  compared: number;
}

/**
 * Two values equal as JSON documents: objects compare by their keys regardless of order (a
 * property that is `undefined` counts as absent), arrays in order.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((value, i) => sameJson(value, other[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = (record: Record<string, unknown>) => Object.keys(record).filter((key) => record[key] !== undefined).sort();
  const leftKeys = keys(left);
  const rightKeys = keys(right);
  return leftKeys.length === rightKeys.length && leftKeys.every((key, i) => key === rightKeys[i] && sameJson(left[key], right[key]));
}

/** A flag's value of a compared field; prerequisites absent are none ([]). */
export function flagField(flag: Pick<Flag, ComparedFlagField>, field: ComparedFlagField): unknown {
  if (field === 'prerequisites') return flag.prerequisites ?? [];
  return flag[field];
}

/** The compared fields of `from` that differ in `target`, with both values. */
export function flagFieldDifferences(from: Pick<Flag, ComparedFlagField>, target: Pick<Flag, ComparedFlagField>): FieldDifference[] {
  const differences: FieldDifference[] = [];
  for (const field of COMPARED_FLAG_FIELDS) {
    const after = flagField(from, field);
    const before = flagField(target, field);
    if (!sameJson(before, after)) differences.push({ field, before, after });
  }
  return differences;
}

const sameMembers = (a: readonly string[], b: readonly string[]): boolean => {
  if (a.length !== b.length) return false;
  const set = new Set(a);
  return b.every((key) => set.has(key));
};

/** How `target` differs from `from` (null: it does not), or that it is missing. */
export function segmentDifference(from: ComparedSegment, target: ComparedSegment | undefined): SegmentDifference | null {
  if (target === undefined) return { segment_key: from.key, status: 'missing', kind: from.kind, fields: [], members_compared: true };
  const fields: ComparedSegmentField[] = [];
  if (from.kind !== target.kind) fields.push('kind');
  if (from.context_type !== target.context_type) fields.push('context_type');
  if (from.description !== target.description) fields.push('description');
  let membersCompared = true;
  if (from.kind === 'rule' && target.kind === 'rule') {
    if (!sameJson(from.conditions ?? [], target.conditions ?? [])) fields.push('conditions');
  } else if (from.kind === 'list' && target.kind === 'list') {
    if (from.members && target.members) {
      if (!sameMembers(from.members.included, target.members.included)) fields.push('included');
      if (!sameMembers(from.members.excluded, target.members.excluded)) fields.push('excluded');
    } else {
      membersCompared = false;
      if (from.included_count !== target.included_count) fields.push('included');
      if (from.excluded_count !== target.excluded_count) fields.push('excluded');
    }
  }
  return fields.length === 0 ? null : { segment_key: from.key, status: 'differs', kind: from.kind, fields, members_compared: membersCompared };
}

/**
 * The segments `rules` name (in the source environment) that the target lacks or holds
 * differently, in the order the rules name them. A key the source itself lacks is skipped
 * (the rules could not have been written so; nothing to copy).
 */
export function namedSegmentDifferences(
  rules: Flag['rules'],
  fromSegments: ReadonlyMap<string, ComparedSegment>,
  targetSegments: ReadonlyMap<string, ComparedSegment>,
): SegmentDifference[] {
  const differences: SegmentDifference[] = [];
  for (const key of referencedSegmentKeys(rules)) {
    const source = fromSegments.get(key);
    if (source === undefined) continue;
    const difference = segmentDifference(source, targetSegments.get(key));
    if (difference) differences.push(difference);
  }
  return differences;
}

const written = (fromVersion: number, targetVersion: number): WrittenIn =>
  fromVersion > 0 ? (targetVersion > 0 ? 'both' : 'from_only') : targetVersion > 0 ? 'target_only' : 'neither';

/**
 * Compares every flag of the project between two environments. A flag is listed when a compared
 * field differs or when it was written in one environment only (even if what both show is the
 * same: one of them shows the default view). Flags are matched by key: both environments of a
 * project list the same flags, so a key on one side only comes from a create or delete between
 * the two reads and is left out (the next comparison sees it on both sides or on none).
 */
export function compareEnvironments(from: EnvironmentSide, target: EnvironmentSide): EnvironmentComparison {
  const targetFlags = new Map(target.flags.map((flag) => [flag.key, flag]));
  const fromSegments = new Map(from.segments.map((segment) => [segment.key, segment]));
  const targetSegments = new Map(target.segments.map((segment) => [segment.key, segment]));
  const keys = [...new Set([...from.flags.map((flag) => flag.key), ...target.flags.map((flag) => flag.key)])].sort(codePointOrder);
  const fromFlags = new Map(from.flags.map((flag) => [flag.key, flag]));
  const differing: FlagDifference[] = [];
  for (const key of keys) {
    const source = fromFlags.get(key);
    const destination = targetFlags.get(key);
    if (!source || !destination) continue;
    const fields = flagFieldDifferences(source, destination);
    const writtenIn = written(source.version, destination.version);
    if (fields.length === 0 && (writtenIn === 'both' || writtenIn === 'neither')) continue;
    const rulesDiffer = fields.some((difference) => difference.field === 'rules');
    differing.push({
      flag_key: key,
      archived: source.archived,
      from_version: source.version,
      target_version: destination.version,
      written: writtenIn,
      fields,
      segments: rulesDiffer ? namedSegmentDifferences(source.rules, fromSegments, targetSegments) : [],
    });
  }
  return { differing, compared: keys.length };
}

/** Code point order (as the repositories' `COLLATE "C"`), not the locale's. */
export const codePointOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
