import { invalidArgument } from '../errors/domain-error.ts';
import { MAX_MATCHES_PROGRAM_SIZE, matchesProgramSize, validateConditions } from '../evaluation/conditions.ts';
import {
  FLAG_VALUE_TYPES,
  type Condition,
  type FlagValue,
  type FlagValueType,
  type HashingConfig,
  type Rule,
  type Segment,
  type Variant,
} from '../model/definitions.ts';

/**
 * Write-time checks of flag documents (docs/contract.md "Flags and evaluation"). Everything evaluation relies on is checked
 * here, once, so that evaluate() never meets a malformed rule it would have to guess about:
 * values match the flag's type, rules reference variants that exist, weights sum to 100%,
 * conditions (regular expressions included) compile. Each failure names the offending field.
 */

/** Keys of flags, variants, segments and rules: URL-safe, bounded. */
const KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const MAX_VARIANTS = 100;
const MAX_RULES = 500;
const MAX_SEGMENTS_PER_RULE = 50;

export function checkKey(value: unknown, field: string): string {
  if (typeof value !== 'string' || !KEY_PATTERN.test(value)) {
    throw invalidArgument(`${field} must be 1-128 characters of letters, digits, '.', '_', ':' or '-', starting with a letter or digit`, field);
  }
  return value;
}

export function checkValueType(value: unknown, field = 'value_type'): FlagValueType {
  if (typeof value !== 'string' || !(FLAG_VALUE_TYPES as readonly string[]).includes(value)) {
    throw invalidArgument(`${field} must be one of ${FLAG_VALUE_TYPES.join(', ')}`, field);
  }
  return value as FlagValueType;
}

/** A variant value must have the flag's type: bool → true/false, int → integer, double → number, string, json → any. */
export function checkValue(valueType: FlagValueType, value: unknown, field: string): FlagValue {
  const ok =
    valueType === 'bool'
      ? typeof value === 'boolean'
      : valueType === 'int'
        ? typeof value === 'number' && Number.isSafeInteger(value)
        : valueType === 'double'
          ? typeof value === 'number' && Number.isFinite(value)
          : valueType === 'string'
            ? typeof value === 'string'
            : value !== undefined;
  if (!ok) throw invalidArgument(`${field} must be a ${valueType} value to match the flag's value_type`, field);
  return value as FlagValue;
}

export function checkVariants(valueType: FlagValueType, variants: unknown, field = 'variants'): Variant[] {
  if (!Array.isArray(variants)) throw invalidArgument(`${field} must be an array of {key, value}`, field);
  if (variants.length > MAX_VARIANTS) throw invalidArgument(`${field} holds at most ${MAX_VARIANTS} variants`, field);
  const seen = new Set<string>();
  return variants.map((variant: unknown, i) => {
    const path = `${field}[${i}]`;
    if (typeof variant !== 'object' || variant === null) throw invalidArgument(`${path} must be an object {key, value}`, path);
    const { key, value } = variant as { key?: unknown; value?: unknown };
    const checkedKey = checkKey(key, `${path}.key`);
    if (seen.has(checkedKey)) throw invalidArgument(`${path}.key '${checkedKey}' is used twice`, `${path}.key`);
    seen.add(checkedKey);
    return { key: checkedKey, value: checkValue(valueType, value, `${path}.value`) };
  });
}

/** Every variant a rule or the off variant names must exist. */
function checkVariantRef(variantKeys: ReadonlySet<string>, value: unknown, field: string): string {
  if (typeof value !== 'string' || !variantKeys.has(value)) {
    throw invalidArgument(`${field} must name one of the flag's variants (${[...variantKeys].join(', ') || 'none defined'})`, field);
  }
  return value;
}

export function checkOffVariant(variantKeys: ReadonlySet<string>, value: unknown, field = 'off_variant_key'): string | null {
  if (value === null || value === undefined || value === '') return null;
  return checkVariantRef(variantKeys, value, field);
}

export function checkConditions(conditions: unknown, field: string): Condition[] {
  const problem = validateConditions(conditions ?? [], field);
  if (problem !== null) throw invalidArgument(problem, field);
  const checked = (conditions ?? []) as Condition[];
  checkMatchesBudget(matchesProgramSize(checked), field);
  return checked;
}

/** Refuses a definition whose `matches` patterns together exceed MAX_MATCHES_PROGRAM_SIZE. */
function checkMatchesBudget(size: number, field: string): void {
  if (size > MAX_MATCHES_PROGRAM_SIZE) {
    throw invalidArgument(
      `${field}: the regular expressions of "matches" conditions compile to ${size} RE2 instructions together (at most ${MAX_MATCHES_PROGRAM_SIZE}); use fewer or simpler patterns`,
      field,
    );
  }
}

function checkAllocation(variantKeys: ReadonlySet<string>, allocation: unknown, field: string): NonNullable<Rule['allocation']> {
  if (typeof allocation !== 'object' || allocation === null) throw invalidArgument(`${field} must be an object`, field);
  const { context_hash_specs: specs, buckets } = allocation as { context_hash_specs?: unknown; buckets?: unknown };
  const specsField = `${field}.context_hash_specs`;
  if (specs !== undefined && (typeof specs !== 'object' || specs === null || Array.isArray(specs))) {
    throw invalidArgument(`${specsField} must be an object keyed by context type`, specsField);
  }
  for (const [contextType, spec] of Object.entries((specs ?? {}) as Record<string, unknown>)) {
    const names = (spec as { parameter_names?: unknown } | null)?.parameter_names ?? [];
    if (!Array.isArray(names) || names.some((n) => typeof n !== 'string' || n === '')) {
      throw invalidArgument(`${specsField}.${contextType}.parameter_names must be an array of names`, specsField);
    }
  }
  if (!Array.isArray(buckets) || buckets.length === 0) throw invalidArgument(`${field}.buckets must be a non-empty array`, `${field}.buckets`);
  let total = 0;
  buckets.forEach((bucket: unknown, i) => {
    const path = `${field}.buckets[${i}]`;
    const { variant_key: variantKey, weight_milli: weight } = (bucket ?? {}) as { variant_key?: unknown; weight_milli?: unknown };
    checkVariantRef(variantKeys, variantKey, `${path}.variant_key`);
    if (typeof weight !== 'number' || !Number.isInteger(weight) || weight < 0 || weight > 1000) {
      throw invalidArgument(`${path}.weight_milli must be an integer from 0 to 1000`, `${path}.weight_milli`);
    }
    total += weight;
  });
  if (total !== 1000) throw invalidArgument(`${field}.buckets weights must sum to 1000 (100.0%), got ${total}`, `${field}.buckets`);
  return { context_hash_specs: (specs ?? {}) as Record<string, { parameter_names: string[] }>, buckets: buckets as NonNullable<Rule['allocation']>['buckets'] };
}

/**
 * Rules in order. A rule without an id gets `rule-<n>`; ids must be unique. Segment keys are only
 * checked for shape here; that they exist in the environment is the flag service's check.
 */
export function checkRules(variantKeys: ReadonlySet<string>, rules: unknown, field = 'rules'): Rule[] {
  if (!Array.isArray(rules)) throw invalidArgument(`${field} must be an array`, field);
  if (rules.length > MAX_RULES) throw invalidArgument(`${field} holds at most ${MAX_RULES} rules`, field);
  const ids = new Set<string>();
  const checked = rules.map((rule: unknown, i) => {
    const path = `${field}[${i}]`;
    if (typeof rule !== 'object' || rule === null) throw invalidArgument(`${path} must be an object`, path);
    const raw = rule as Record<string, unknown>;
    const id = raw.id === undefined || raw.id === null || raw.id === '' ? `rule-${i + 1}` : checkKey(raw.id, `${path}.id`);
    if (ids.has(id)) throw invalidArgument(`${path}.id '${id}' is used twice`, `${path}.id`);
    ids.add(id);
    const hasVariant = raw.variant_key !== undefined && raw.variant_key !== null;
    const hasAllocation = raw.allocation !== undefined && raw.allocation !== null;
    if (hasVariant === hasAllocation) throw invalidArgument(`${path} must have exactly one of variant_key or allocation`, path);
    const segmentKeys = raw.segment_keys ?? [];
    if (!Array.isArray(segmentKeys) || segmentKeys.length > MAX_SEGMENTS_PER_RULE) {
      throw invalidArgument(`${path}.segment_keys must be an array of at most ${MAX_SEGMENTS_PER_RULE} segment keys`, `${path}.segment_keys`);
    }
    segmentKeys.forEach((key: unknown, j) => {
      const field = `${path}.segment_keys[${j}]`;
      checkKey(key, field);
      // A segment named twice adds nothing to the rule (all must match) but its cost.
      if (segmentKeys.indexOf(key) !== j) throw invalidArgument(`${field} '${String(key)}' is named twice in the rule`, field);
    });
    if (raw.description !== undefined && raw.description !== null && typeof raw.description !== 'string') {
      throw invalidArgument(`${path}.description must be a string`, `${path}.description`);
    }
    const checked: Rule = { id, conditions: checkConditions(raw.conditions, `${path}.conditions`) };
    if (typeof raw.description === 'string' && raw.description !== '') checked.description = raw.description;
    if (segmentKeys.length > 0) checked.segment_keys = segmentKeys as string[];
    if (hasVariant) checked.variant_key = checkVariantRef(variantKeys, raw.variant_key, `${path}.variant_key`);
    else checked.allocation = checkAllocation(variantKeys, raw.allocation, `${path}.allocation`);
    return checked;
  });
  // One budget for the whole flag: evaluating it may run every rule's patterns.
  checkMatchesBudget(checked.reduce((size, rule) => size + matchesProgramSize(rule.conditions), 0), field);
  return checked;
}

export function checkHashing(configs: unknown, field = 'configs'): HashingConfig[] {
  if (!Array.isArray(configs)) throw invalidArgument(`${field} must be an array of {parameter_key, parameter_type, order}`, field);
  if (configs.length > 20) throw invalidArgument(`${field} holds at most 20 entries`, field);
  return configs.map((config: unknown, i) => {
    const path = `${field}[${i}]`;
    const { parameter_key: key, parameter_type: type, order } = (config ?? {}) as Record<string, unknown>;
    if (typeof key !== 'string' || key === '') throw invalidArgument(`${path}.parameter_key is required`, `${path}.parameter_key`);
    if (typeof type !== 'string' || type === '') throw invalidArgument(`${path}.parameter_type is required`, `${path}.parameter_type`);
    if (typeof order !== 'number' || !Number.isInteger(order) || order < -2147483648 || order > 2147483647) {
      throw invalidArgument(`${path}.order must be an int32`, `${path}.order`);
    }
    return { parameter_key: key, parameter_type: type, order };
  });
}

/** Every segment key the rules reference, for the existence check against the environment. */
export const referencedSegmentKeys = (rules: readonly Rule[]): string[] => [
  ...new Set(rules.flatMap((rule) => rule.segment_keys ?? [])),
];

/**
 * The RE2 program size of every pattern evaluating the flag can run: its rules' `matches`
 * conditions and those of each rule segment its rules name, counted once however often it is
 * named (evaluation evaluates a segment once per call). Segments not in `segments` count 0.
 */
export function flagMatchesProgramSize(rules: readonly Rule[], segments: ReadonlyMap<string, Segment>): number {
  let size = 0;
  for (const rule of rules) size += matchesProgramSize(rule.conditions);
  for (const key of referencedSegmentKeys(rules)) {
    const segment = segments.get(key);
    if (segment?.kind === 'rule') size += matchesProgramSize(segment.conditions ?? []);
  }
  return size;
}

/**
 * Refuses rules whose reachable patterns (flagMatchesProgramSize) exceed MAX_MATCHES_PROGRAM_SIZE:
 * one budget per flag, its segments' patterns included (docs/security.md "Cost budget per
 * definition").
 */
export function checkFlagMatchesBudget(rules: readonly Rule[], segments: ReadonlyMap<string, Segment>, field = 'rules'): void {
  const size = flagMatchesProgramSize(rules, segments);
  if (size <= MAX_MATCHES_PROGRAM_SIZE) return;
  throw invalidArgument(
    `${field}: the regular expressions of "matches" conditions this flag can run (its rules' and those of the rule segments they name, each segment once) compile to ${size} RE2 instructions together (at most ${MAX_MATCHES_PROGRAM_SIZE}); use fewer or simpler patterns`,
    field,
  );
}
