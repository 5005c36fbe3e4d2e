import type { CopyPart, FieldDifference, FlagDifference, Rule, SegmentDifference } from '../records.ts';

/**
 * The words of the compare and copy page (docs/console.md "Compare and copy environments"): what
 * each difference says, and what a copy of the chosen flags and parts will change — the
 * confirmation shows exactly this before anything is sent. Pure, so it is tested on its own.
 */

/** The flag fields each part of a copy writes (docs/contract.md "Environment compare and copy"). */
export const PART_FIELDS: Record<CopyPart, readonly string[]> = {
  rules: ['rules', 'off_variant_key', 'hashing'],
  enabled: ['enabled'],
  prerequisites: ['prerequisites'],
  segments: [],
};

export const PART_LABELS: Record<CopyPart, string> = {
  rules: 'Targeting (rules, off variant, hashing)',
  enabled: 'On/off',
  prerequisites: 'Prerequisites',
  segments: 'Segments the rules name',
};

const FIELD_LABELS: Record<string, string> = {
  enabled: 'On/off',
  off_variant_key: 'Off variant',
  rules: 'Rules',
  prerequisites: 'Prerequisites',
  hashing: 'Hashing',
};

export const fieldLabel = (field: string): string => FIELD_LABELS[field] ?? field;

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** One field's value in a few words. */
export function describeValue(field: string, value: unknown): string {
  switch (field) {
    case 'enabled':
      return value === true ? 'on' : 'off';
    case 'off_variant_key':
      return typeof value === 'string' && value !== '' ? value : 'none';
    case 'rules': {
      const rules = Array.isArray(value) ? (value as Rule[]) : [];
      if (rules.length === 0) return 'no rules';
      const rollouts = rules.filter((rule) => rule.allocation).length;
      return rollouts > 0 ? `${plural(rules.length, 'rule')} (${plural(rollouts, 'rollout')})` : plural(rules.length, 'rule');
    }
    case 'prerequisites': {
      const list = Array.isArray(value) ? (value as Array<{ flag_key: string }>) : [];
      return list.length === 0 ? 'none' : list.map((p) => p.flag_key).join(', ');
    }
    case 'hashing': {
      const list = Array.isArray(value) ? (value as Array<{ parameter_key: string }>) : [];
      return list.length === 0 ? 'by context key' : `by ${list.map((h) => h.parameter_key).join(', ')}`;
    }
    default:
      return JSON.stringify(value);
  }
}

/** "Rules: 1 rule → 3 rules (1 rollout)" */
export const describeDifference = (difference: FieldDifference): string =>
  `${fieldLabel(difference.field)}: ${describeValue(difference.field, difference.before)} → ${describeValue(difference.field, difference.after)}`;

/** Where the flag was written, when only on one side. */
export function describeWritten(flag: FlagDifference, fromName: string, targetName: string): string | undefined {
  if (flag.written === 'from_only') return `never changed in ${targetName} (it shows the default)`;
  if (flag.written === 'target_only') return `never changed in ${fromName} (it shows the default)`;
  return undefined;
}

/** "segment beta-users: missing in production" / "... differs (included)" */
export function describeSegment(segment: SegmentDifference, targetName: string): string {
  if (segment.status === 'missing') return `${segment.kind} segment ${segment.segment_key}: missing in ${targetName}`;
  const members = segment.members_compared ? '' : ' (member counts only: too large to compare)';
  return `${segment.kind} segment ${segment.segment_key}: differs (${segment.fields.join(', ')})${members}`;
}

export interface PlannedFlagChange {
  flag_key: string;
  /** The differences the copy writes (those of the included parts). */
  changes: FieldDifference[];
  /** The segments it creates or updates (with `segments` and `rules`). */
  segments: SegmentDifference[];
  /** A rollout is copied: it will bucket other users in the target. */
  copiesRollout: boolean;
  target_version: number;
}

/**
 * What copying `include` of the chosen flags changes, flag by flag, from the comparison: only the
 * included fields that differ. A chosen flag with nothing to change is left out.
 */
export function plannedChanges(differences: readonly FlagDifference[], chosen: ReadonlySet<string>, include: readonly CopyPart[]): PlannedFlagChange[] {
  const fields = new Set(include.flatMap((part) => PART_FIELDS[part]));
  const planned: PlannedFlagChange[] = [];
  for (const flag of differences) {
    if (!chosen.has(flag.flag_key)) continue;
    const changes = flag.fields.filter((difference) => fields.has(difference.field));
    const rules = changes.find((difference) => difference.field === 'rules');
    const segments = include.includes('segments') && rules ? flag.segments : [];
    if (changes.length === 0 && segments.length === 0) continue;
    const copiesRollout = Array.isArray(rules?.after) && (rules.after as Rule[]).some((rule) => rule.allocation);
    planned.push({ flag_key: flag.flag_key, changes, segments, copiesRollout, target_version: flag.target_version });
  }
  return planned;
}

/** The segments a copy writes, each once, in the order the flags name them. */
export function segmentsToCopy(planned: readonly PlannedFlagChange[]): SegmentDifference[] {
  const seen = new Map<string, SegmentDifference>();
  for (const flag of planned) for (const segment of flag.segments) if (!seen.has(segment.segment_key)) seen.set(segment.segment_key, segment);
  return [...seen.values()];
}

/** The copy body for the planned flags: each with the target version the comparison showed, so a change made since is refused (409). */
export function copyBody(fromEnvironmentId: string, planned: readonly PlannedFlagChange[], include: readonly CopyPart[]) {
  return {
    from_environment_id: fromEnvironmentId,
    flag_keys: planned.map((flag) => flag.flag_key),
    include: [...include],
    versions: Object.fromEntries(planned.map((flag) => [flag.flag_key, flag.target_version])),
  };
}
