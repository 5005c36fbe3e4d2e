import {
  MAX_MATCHES_PROGRAM_SIZE,
  matchesProgramSize,
  patternProblem,
  validateConditions,
  type Condition,
  type ConditionOp,
  type ConditionValue,
  type FlagValue,
  type FlagValueType,
  type HashingConfig,
  type Prerequisite,
  type Rule,
  type SegmentKind,
  type Variant,
} from '@switchyard/core';

/**
 * A pure converter from a LaunchDarkly export (the JSON its REST API returns for
 * `GET /api/v2/flags/{projectKey}?summary=0` and `GET /api/v2/segments/{projectKey}/{environmentKey}`)
 * to Switchyard flag and segment documents, with a report of what could not be carried and what
 * changes. No I/O: the caller reads the files and writes the documents. Every mapping decision is
 * in docs/launchdarkly-import.md; the rule throughout is that what cannot be carried exactly is
 * dropped or narrowed, with a report entry, never silently made broader.
 */

// ---------------------------------------------------------------------------------------------
// LaunchDarkly's documents (the fields read here; everything else is ignored)

export interface LdVariation {
  _id?: string;
  value: unknown;
  name?: string;
  description?: string;
}

export interface LdClause {
  _id?: string;
  attribute: string;
  op: string;
  values: unknown[];
  negate?: boolean;
  contextKind?: string;
}

export interface LdWeightedVariation {
  variation: number;
  /** Thousandths of a percent: 0..100000. */
  weight: number;
  untracked?: boolean;
}

export interface LdRollout {
  variations: LdWeightedVariation[];
  bucketBy?: string;
  contextKind?: string;
  kind?: string;
  seed?: number;
}

export interface LdVariationOrRollout {
  variation?: number | null;
  rollout?: LdRollout | null;
}

export interface LdRule extends LdVariationOrRollout {
  _id?: string;
  description?: string;
  clauses?: LdClause[];
  trackEvents?: boolean;
}

export interface LdTarget {
  values: string[];
  variation: number;
  contextKind?: string;
}

export interface LdPrerequisite {
  key: string;
  variation: number;
}

export interface LdFlagEnvironment {
  on: boolean;
  offVariation?: number | null;
  fallthrough?: LdVariationOrRollout | null;
  targets?: LdTarget[];
  contextTargets?: LdTarget[];
  rules?: LdRule[];
  prerequisites?: LdPrerequisite[];
  archived?: boolean;
}

export interface LdFlag {
  key: string;
  name?: string;
  description?: string;
  kind?: string;
  variations: LdVariation[];
  temporary?: boolean;
  tags?: string[];
  maintainerId?: string;
  _maintainer?: { _id?: string; email?: string } | null;
  clientSideAvailability?: { usingEnvironmentId?: boolean; usingMobileKey?: boolean };
  includeInSnippet?: boolean;
  archived?: boolean;
  environments?: Record<string, LdFlagEnvironment>;
}

export interface LdSegmentTarget {
  contextKind?: string;
  values: string[];
}

export interface LdSegmentRule {
  _id?: string;
  clauses?: LdClause[];
  weight?: number | null;
  bucketBy?: string;
  rolloutContextKind?: string;
}

export interface LdSegment {
  key: string;
  name?: string;
  description?: string;
  tags?: string[];
  included?: string[];
  excluded?: string[];
  includedContexts?: LdSegmentTarget[];
  excludedContexts?: LdSegmentTarget[];
  rules?: LdSegmentRule[];
  unbounded?: boolean;
  unboundedContextKind?: string;
}

/** A list response (`{items: [...]}`) or the bare array. */
export type LdList<T> = { items: T[] } | T[];

export interface LaunchDarklyExport {
  /** The flags response (`summary=0`, so that every environment's targeting is there). */
  flags: LdList<LdFlag>;
  /** Segments responses by LaunchDarkly environment key; an environment without one: segments unknown. */
  segments?: Record<string, LdList<LdSegment>>;
}

export interface LaunchDarklyImportOptions {
  /**
   * LaunchDarkly environment key → Switchyard environment name. Absent: every LaunchDarkly
   * environment under its own key. LaunchDarkly environments not listed are not imported.
   */
  environments?: Record<string, string>;
  /** LaunchDarkly context kind → Switchyard context type; a kind not listed keeps its name. */
  contextKinds?: Record<string, string>;
}

// ---------------------------------------------------------------------------------------------
// What comes out

export interface ImportedFlagDefinition {
  key: string;
  description: string;
  value_type: FlagValueType;
  variants: Variant[];
  tags: string[];
  lifetime: 'temporary' | 'permanent';
  maintainer: string | null;
  client_visible: boolean;
}

export interface ImportedFlagEnvironment {
  enabled: boolean;
  off_variant_key: string | null;
  rules: Rule[];
  prerequisites: Prerequisite[];
  hashing: HashingConfig[];
}

export interface ImportedFlag {
  definition: ImportedFlagDefinition;
  environments: Record<string, ImportedFlagEnvironment>;
}

/** The segment body of the segment routes, list members included. */
export interface ImportedSegment {
  key: string;
  context_type: string;
  kind: SegmentKind;
  description: string;
  conditions?: Condition[];
  included_keys?: string[];
  excluded_keys?: string[];
}

export type ImportSeverity = 'dropped' | 'changed' | 'info';

export interface ImportReportEntry {
  severity: ImportSeverity;
  flag_key?: string;
  segment_key?: string;
  environment?: string;
  message: string;
}

export interface LaunchDarklyImport {
  flags: ImportedFlag[];
  segments: Record<string, ImportedSegment[]>;
  report: ImportReportEntry[];
}

// ---------------------------------------------------------------------------------------------

const KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** A rule whose clauses need more than this many Switchyard rules (OR expanded) is dropped. */
export const MAX_EXPANDED_RULES = 16;
const DEFAULT_KIND = 'user';
/** RFC 3339 date-time, the only string form LaunchDarkly's before/after accept. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$/;
/** LaunchDarkly's version parsing: minor and patch may be left out ("2" is 2.0.0, "2.1" is 2.1.0). */
const LD_VERSION = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?([-+][0-9A-Za-z.+-]*)?$/;

const itemsOf = <T>(list: LdList<T> | undefined): T[] => (list === undefined ? [] : Array.isArray(list) ? list : (list.items ?? []));

/** A Switchyard key from free text: runs of other characters become '-', it starts with a letter or digit. */
function sanitizeKey(text: string): string {
  let key = text.replace(/^-(?=\d)/, 'minus-').replace(/[^A-Za-z0-9._:-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '');
  key = key.slice(0, 128).replace(/[-.:_]+$/, '');
  return key;
}

function uniqueKey(candidate: string, taken: Set<string>): string {
  let key = candidate;
  for (let n = 2; taken.has(key); n++) key = `${candidate.slice(0, 120)}-${n}`;
  taken.add(key);
  return key;
}

/** Variant keys for variations, by index: the name, else the value (scalar), else `variation-<i>`; sanitised and unique. */
export function variantKeysFor(variations: readonly LdVariation[]): string[] {
  const taken = new Set<string>();
  return variations.map((variation, i) => {
    const name = typeof variation.name === 'string' ? sanitizeKey(variation.name) : '';
    const value = variation.value;
    const fromValue = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? sanitizeKey(String(value)) : '';
    return uniqueKey(name || fromValue || `variation-${i}`, taken);
  });
}

export function valueTypeFor(_kind: string | undefined, values: readonly unknown[]): FlagValueType {
  if (values.length > 0 && values.every((v) => typeof v === 'boolean')) return 'bool';
  if (values.length > 0 && values.every((v) => typeof v === 'string')) return 'string';
  if (values.length > 0 && values.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    return values.every((v) => Number.isSafeInteger(v)) ? 'int' : 'double';
  }
  return 'json';
}

/**
 * Rollout weights (thousandths of a percent) as weight_milli (tenths of a percent) summing to
 * exactly 1000: LaunchDarkly serves the last variation to whatever the weights leave out, so a
 * short total is given to the last entry first; then largest remainders (earlier entries first on
 * ties) round to tenths.
 */
export function rolloutWeightsMilli(weights: readonly number[]): number[] {
  const w = weights.map((x) => (Number.isFinite(x) && x > 0 ? x : 0));
  const total = w.reduce((a, b) => a + b, 0);
  if (w.length > 0 && total < 100_000) w[w.length - 1]! += 100_000 - total;
  // Over 100000: LaunchDarkly's cumulative walk never reaches past 100000, so later entries lose what is over.
  let running = 0;
  for (let i = 0; i < w.length; i++) {
    const room = Math.max(0, 100_000 - running);
    w[i] = Math.min(w[i]!, room);
    running += w[i]!;
  }
  const floors = w.map((x) => Math.floor(x / 100));
  let left = 1000 - floors.reduce((a, b) => a + b, 0);
  const order = w.map((x, i) => ({ i, frac: x / 100 - Math.floor(x / 100) })).sort((a, b) => b.frac - a.frac || a.i - b.i);
  for (const { i, frac } of order) {
    if (left <= 0 || frac === 0) break;
    floors[i]! += 1;
    left--;
  }
  return floors;
}

/** A LaunchDarkly attribute (a name, or a reference "/a/b" when the clause has a contextKind) as a Switchyard attribute name; null when nested. */
function attributeName(attribute: string, hasContextKind: boolean): string | null {
  if (!hasContextKind || !attribute.startsWith('/')) return attribute === '' ? null : attribute;
  const parts = attribute.slice(1).split('/');
  if (parts.length !== 1 || parts[0] === '') return null;
  return parts[0]!.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** One way a clause (or a rule) can hold: all its conditions and all its segments (AND). */
interface Alternative {
  conditions: Condition[];
  segmentKeys: string[];
}

type ClauseResult = { alternatives: Alternative[]; notes: string[]; never?: string } | { dropped: string };

/** The Switchyard segments an LaunchDarkly segment became (any of them matching = the LD segment matching). */
type SegmentAlternatives = Map<string, { keys: string[]; why?: string }>;

interface Scope {
  kind: (ldKind: string | undefined) => string;
  /** Undefined: the environment's segments were not given; references are kept as they are. */
  segments: SegmentAlternatives | undefined;
  /** Segment rules may not name segments. */
  inSegment: boolean;
}

const OP_MAP: Record<string, ConditionOp> = {
  in: 'in',
  endsWith: 'ends_with',
  startsWith: 'starts_with',
  matches: 'matches',
  contains: 'contains',
  lessThan: 'lt',
  lessThanOrEqual: 'lte',
  greaterThan: 'gt',
  greaterThanOrEqual: 'gte',
  before: 'before',
  after: 'after',
  semVerEqual: 'semver_eq',
  semVerLessThan: 'semver_lt',
  semVerGreaterThan: 'semver_gt',
};

const isScalar = (v: unknown): v is ConditionValue => typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) || typeof v === 'boolean';
const NUMERIC_TEXT = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A clause as alternatives (OR) of condition sets, or why it cannot be carried. */
function convertClause(clause: LdClause, scope: Scope): ClauseResult {
  const notes: string[] = [];
  const negate = clause.negate === true;
  const values = Array.isArray(clause.values) ? clause.values : [];
  const op = clause.op;
  if (op === 'segmentMatch') {
    if (negate) return { dropped: 'a negated segmentMatch clause (Switchyard rules cannot require not being in a segment)' };
    if (scope.inSegment) return { dropped: 'a segmentMatch clause inside a segment rule (Switchyard segments cannot name segments)' };
    const alternatives: Alternative[] = [];
    const missing: string[] = [];
    for (const value of values) {
      if (typeof value !== 'string') continue;
      if (scope.segments === undefined) {
        alternatives.push({ conditions: [], segmentKeys: [value] });
        continue;
      }
      const known = scope.segments.get(value);
      if (known === undefined || known.keys.length === 0) missing.push(known?.why ? `${value} (${known.why})` : `${value} (not in the export)`);
      for (const key of known?.keys ?? []) alternatives.push({ conditions: [], segmentKeys: [key] });
    }
    if (alternatives.length === 0) return { alternatives, notes, never: `it names only segments that are not imported: ${missing.join(', ')}` };
    if (missing.length > 0) notes.push(`segments ${missing.join(', ')} named by a segmentMatch clause were not imported; the clause now matches the others only`);
    return { alternatives, notes };
  }
  const kind = scope.kind(clause.contextKind ?? DEFAULT_KIND);
  if (clause.attribute === 'kind') {
    if (op !== 'in') return { dropped: `a clause on the context kind with op "${op}" (only "in" is carried)` };
    const kinds = values.filter((v): v is string => typeof v === 'string').map((v) => scope.kind(v));
    const exists = (contextType: string): Condition => ({ context_type: contextType, attribute: 'key', op: 'exists', values: [] });
    if (negate) return { alternatives: [{ conditions: kinds.map((k) => ({ ...exists(k), negate: true })), segmentKeys: [] }], notes };
    return { alternatives: kinds.map((k) => ({ conditions: [exists(k)], segmentKeys: [] })), notes, never: kinds.length === 0 ? 'its kind clause lists no kinds' : undefined };
  }
  const mapped = OP_MAP[op];
  if (mapped === undefined) return { dropped: `an unknown clause operator "${op}"` };
  const attribute = attributeName(clause.attribute, clause.contextKind !== undefined);
  if (attribute === null) return { dropped: `a clause on the nested attribute "${clause.attribute}" (Switchyard attributes are flat)` };

  let kept: ConditionValue[];
  switch (op) {
    case 'in': {
      kept = values.filter(isScalar);
      if (attribute !== 'key' && values.some((v) => typeof v === 'number' || typeof v === 'boolean' || (typeof v === 'string' && (NUMERIC_TEXT.test(v) || v === 'true' || v === 'false')))) {
        notes.push(`"in" on ${attribute}: Switchyard also equals a number to a numeric string and a boolean to "true"/"false", LaunchDarkly only the same JSON type`);
      }
      break;
    }
    case 'endsWith':
    case 'startsWith':
    case 'contains':
      kept = values.filter((v): v is string => typeof v === 'string');
      break;
    case 'matches': {
      const strings = values.filter((v): v is string => typeof v === 'string');
      kept = strings.filter((v) => patternProblem(v) === null);
      if (kept.length < strings.length) {
        const refused = strings.filter((v) => patternProblem(v) !== null);
        if (negate || kept.length === 0) {
          return { dropped: `a ${negate ? 'negated ' : ''}"matches" clause with patterns RE2 does not accept: ${refused.map((p) => JSON.stringify(p)).join(', ')}` };
        }
        notes.push(`"matches" patterns RE2 does not accept were removed (the clause now matches less): ${refused.map((p) => JSON.stringify(p)).join(', ')}`);
      }
      break;
    }
    case 'lessThan':
    case 'lessThanOrEqual':
    case 'greaterThan':
    case 'greaterThanOrEqual':
      kept = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
      notes.push(`"${op}" on ${attribute}: Switchyard also compares numeric strings in the context, LaunchDarkly numbers only`);
      break;
    case 'before':
    case 'after':
      kept = values.filter((v): v is number | string => (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'string' && RFC3339.test(v)));
      notes.push(`"${op}" on ${attribute}: Switchyard also reads ISO 8601 dates without a time or zone in the context (as UTC), which LaunchDarkly does not match`);
      break;
    default: {
      // semVerEqual, semVerLessThan, semVerGreaterThan: LaunchDarkly's loose versions written out in full.
      kept = [];
      for (const v of values) {
        const m = typeof v === 'string' ? LD_VERSION.exec(v) : null;
        if (m !== null) kept.push(`${m[1]}.${m[2] ?? '0'}.${m[3] ?? '0'}${m[4] ?? ''}`);
      }
      notes.push(`"${op}" on ${attribute}: LaunchDarkly reads a context version "2" or "2.1" as 2.0.0 or 2.1.0, Switchyard needs all three parts (such contexts no longer match)`);
    }
  }
  // A value Switchyard's write-time check refuses (an impossible date, a version with leading zeros) is one LaunchDarkly never matches either.
  kept = kept.filter((v) => validateConditions([{ attribute, op: mapped, values: [v] }]) === null);
  const removed = values.length - kept.length;
  if (removed > 0 && op !== 'matches') notes.push(`${removed} value(s) of the "${op}" clause on ${attribute} that LaunchDarkly never matches were removed`);
  if (kept.length === 0) {
    // No value can match: LaunchDarkly's clause is false for a present attribute, so negated it is "the attribute exists".
    if (negate) return { alternatives: [{ conditions: [{ context_type: kind, attribute, op: 'exists', values: [] }], segmentKeys: [] }], notes };
    return { alternatives: [], notes, never: `its "${op}" clause on ${attribute} has no value LaunchDarkly can match` };
  }
  const condition: Condition = { context_type: kind, attribute, op: mapped, values: kept };
  if (negate) condition.negate = true;
  return { alternatives: [{ conditions: [condition], segmentKeys: [] }], notes };
}

type ClausesResult = { alternatives: Alternative[]; notes: string[]; never?: string } | { dropped: string };

/** Clauses (AND) as alternatives (OR) of condition sets: the product of each clause's alternatives. */
function convertClauses(clauses: readonly LdClause[], scope: Scope): ClausesResult {
  let product: Alternative[] = [{ conditions: [], segmentKeys: [] }];
  const notes: string[] = [];
  let never: string | undefined;
  for (const clause of clauses) {
    const result = convertClause(clause, scope);
    if ('dropped' in result) return result;
    notes.push(...result.notes);
    if (result.never !== undefined) never ??= result.never;
    const next: Alternative[] = [];
    for (const left of product) {
      for (const right of result.alternatives) {
        next.push({
          conditions: [...left.conditions, ...right.conditions],
          segmentKeys: [...new Set([...left.segmentKeys, ...right.segmentKeys])],
        });
      }
    }
    product = next;
    if (product.length > MAX_EXPANDED_RULES) {
      return { dropped: `its clauses would need more than ${MAX_EXPANDED_RULES} Switchyard rules (each segment or kind listed in a clause is one alternative)` };
    }
  }
  return { alternatives: product, notes, never: product.length === 0 ? never : undefined };
}

interface FlagContext {
  flagKey: string;
  environment: string;
  variantKeys: string[];
  report: (severity: ImportSeverity, message: string) => void;
  kind: (ldKind: string | undefined) => string;
}

/** What a rule or the fallthrough serves, or a reason it cannot. */
function convertServe(serve: LdVariationOrRollout, where: string, ctx: FlagContext): Pick<Rule, 'variant_key' | 'allocation'> | { dropped: string } {
  if (typeof serve.variation === 'number') {
    const key = ctx.variantKeys[serve.variation];
    return key === undefined ? { dropped: `${where} serves variation ${serve.variation}, which does not exist` } : { variant_key: key };
  }
  const rollout = serve.rollout;
  if (rollout === null || rollout === undefined || !Array.isArray(rollout.variations) || rollout.variations.length === 0) {
    return { dropped: `${where} serves neither a variation nor a rollout` };
  }
  for (const entry of rollout.variations) {
    if (ctx.variantKeys[entry.variation] === undefined) return { dropped: `${where} rolls out variation ${entry.variation}, which does not exist` };
  }
  const milli = rolloutWeightsMilli(rollout.variations.map((v) => v.weight));
  const buckets = rollout.variations.map((v, i) => ({ variant_key: ctx.variantKeys[v.variation]!, weight_milli: milli[i]! }));
  const total = rollout.variations.reduce((sum, v) => sum + (Number.isFinite(v.weight) && v.weight > 0 ? v.weight : 0), 0);
  if (total !== 100_000) {
    ctx.report('changed', `${where}: rollout weights sum to ${total / 1000}% instead of 100%; as LaunchDarkly does, the last variation gets what is left over (or loses what is over)`);
  }
  if (rollout.variations.some((v, i) => v.weight !== milli[i]! * 100)) {
    const pairs = rollout.variations.map((v, i) => `${ctx.variantKeys[v.variation]} ${v.weight / 1000}% → ${milli[i]! / 10}%`);
    ctx.report('changed', `${where}: rollout weights rounded to 0.1%: ${pairs.join(', ')}`);
  }
  const kind = ctx.kind(rollout.contextKind ?? DEFAULT_KIND);
  const bucketBy = rollout.bucketBy === undefined || rollout.bucketBy === '' ? 'key' : attributeName(rollout.bucketBy, rollout.contextKind !== undefined);
  if (bucketBy === null) return { dropped: `${where} buckets by the nested attribute "${rollout.bucketBy}"` };
  let message = `${where}: percentage rollout — users are re-bucketed (Switchyard hashes ${bucketBy === 'key' ? 'the' : `"${bucketBy}" of the`} ${kind} context with its own hash, so different ${kind}s land in each share)`;
  message += `; an input without a ${kind} context${bucketBy === 'key' ? '' : ` or without "${bucketBy}"`} no longer gets the first variation (LaunchDarkly's bucket 0) but falls through to the next rule`;
  ctx.report('changed', message);
  if (rollout.kind === 'experiment') ctx.report('info', `${where}: the rollout is a LaunchDarkly experiment; it is imported as a plain rollout (experiments are not carried)`);
  return {
    allocation: {
      context_hash_specs: { [kind]: { parameter_names: bucketBy === 'key' ? [] : [bucketBy] } },
      buckets,
    },
  };
}

/** A rule id from LaunchDarkly's `_id`, or `rule-<n>`; unique within the flag environment. */
function ruleIdFor(ldId: string | undefined, n: number, taken: Set<string>): string {
  const base = typeof ldId === 'string' && KEY_PATTERN.test(ldId) ? ldId : `rule-${n}`;
  return uniqueKey(base, taken);
}

function convertTargets(env: LdFlagEnvironment, ctx: FlagContext, ids: Set<string>): Rule[] {
  // LaunchDarkly checks contextTargets in order; a user-kind entry there has no values of its own:
  // they are in `targets` under the same variation. Without contextTargets, `targets` (user) in order.
  const targets = env.targets ?? [];
  const ordered: { kind: string; values: string[]; variation: number }[] = [];
  if ((env.contextTargets ?? []).length === 0) {
    for (const t of targets) ordered.push({ kind: DEFAULT_KIND, values: t.values ?? [], variation: t.variation });
  } else {
    for (const t of env.contextTargets ?? []) {
      const kind = t.contextKind || DEFAULT_KIND;
      const values = kind === DEFAULT_KIND && (t.values ?? []).length === 0 ? (targets.find((u) => u.variation === t.variation)?.values ?? []) : (t.values ?? []);
      ordered.push({ kind, values, variation: t.variation });
    }
  }
  const rules: Rule[] = [];
  for (const target of ordered) {
    if (target.values.length === 0) continue;
    const variantKey = ctx.variantKeys[target.variation];
    if (variantKey === undefined) {
      ctx.report('dropped', `individual targets of ${target.kind} for variation ${target.variation}, which does not exist`);
      continue;
    }
    const type = ctx.kind(target.kind);
    rules.push({
      id: uniqueKey(sanitizeKey(`targets-${type}-${variantKey}`) || 'targets', ids),
      description: `individual ${target.kind} targets (LaunchDarkly)`,
      conditions: [{ context_type: type, attribute: 'key', op: 'in', values: [...target.values] }],
      variant_key: variantKey,
    });
  }
  return rules;
}

function convertRules(env: LdFlagEnvironment, ctx: FlagContext, segments: SegmentAlternatives | undefined, ids: Set<string>): Rule[] {
  const out: Rule[] = [];
  const scope: Scope = { kind: ctx.kind, segments, inSegment: false };
  (env.rules ?? []).forEach((ldRule, index) => {
    const where = `rule ${index + 1}${ldRule.description ? ` ("${ldRule.description}")` : ''}`;
    const clauses = convertClauses(ldRule.clauses ?? [], scope);
    if ('dropped' in clauses) {
      ctx.report('dropped', `${where} was dropped: it has ${clauses.dropped}`);
      return;
    }
    if (clauses.alternatives.length === 0) {
      ctx.report('dropped', `${where} was dropped: ${clauses.never ?? 'it can never match'}`);
      return;
    }
    for (const note of new Set(clauses.notes)) ctx.report('changed', `${where}: ${note}`);
    const serve = convertServe(ldRule, where, ctx);
    if ('dropped' in serve) {
      ctx.report('dropped', `${where} was dropped: ${serve.dropped}`);
      return;
    }
    const many = clauses.alternatives.length > 1;
    if (many) ctx.report('changed', `${where} became ${clauses.alternatives.length} rules, one per segment or context kind its clauses list (any of them matching, as in LaunchDarkly)`);
    const baseId = ruleIdFor(ldRule._id, index + 1, ids);
    clauses.alternatives.forEach((alternative, k) => {
      const rule: Rule = { id: many ? uniqueKey(`${baseId}-${k + 1}`, ids) : baseId, conditions: alternative.conditions };
      if (ldRule.description) rule.description = ldRule.description;
      if (alternative.segmentKeys.length > 0) rule.segment_keys = alternative.segmentKeys;
      Object.assign(rule, structuredClone(serve));
      out.push(rule);
    });
  });
  return out;
}

/** One LaunchDarkly segment in one environment as Switchyard segments (any matching = the LD segment matching). */
function convertSegment(segment: LdSegment, kind: (k: string | undefined) => string, report: (severity: ImportSeverity, message: string) => void): { documents: ImportedSegment[]; why?: string } {
  if (segment.unbounded === true) {
    report('dropped', 'a big (unbounded) segment: its members live outside the export and are not imported; flag rules naming it are dropped');
    return { documents: [], why: 'a big segment, not imported' };
  }
  const description = segment.description || segment.name || '';
  if ((segment.tags ?? []).length > 0) report('info', `segment tags (${segment.tags!.join(', ')}) are not carried: Switchyard segments have no tags`);
  const included = new Map<string, string[]>();
  const excluded = new Map<string, string[]>();
  const add = (map: Map<string, string[]>, ldKind: string | undefined, values: readonly string[] | undefined) => {
    if (!values || values.length === 0) return;
    const type = kind(ldKind || DEFAULT_KIND);
    map.set(type, [...(map.get(type) ?? []), ...values]);
  };
  add(included, DEFAULT_KIND, segment.included);
  for (const t of segment.includedContexts ?? []) add(included, t.contextKind, t.values);
  add(excluded, DEFAULT_KIND, segment.excluded);
  for (const t of segment.excludedContexts ?? []) add(excluded, t.contextKind, t.values);
  // LaunchDarkly checks included before excluded: a key in both is a member.
  for (const [type, keys] of excluded) {
    const inc = new Set(included.get(type) ?? []);
    const kept = keys.filter((k) => !inc.has(k));
    if (kept.length < keys.length) report('info', `${keys.length - kept.length} ${type} key(s) both included and excluded stay members (LaunchDarkly's included wins) and were left out of the excluded keys`);
    excluded.set(type, kept);
  }
  const parts: { suffix: string; document: Omit<ImportedSegment, 'key'> }[] = [];
  for (const [type, keys] of included) {
    parts.push({
      suffix: type,
      document: { context_type: type, kind: 'list', description, included_keys: [...new Set(keys)], excluded_keys: [...new Set(excluded.get(type) ?? [])] },
    });
  }
  const scope: Scope = { kind, segments: undefined, inSegment: true };
  (segment.rules ?? []).forEach((ldRule, index) => {
    const where = `segment rule ${index + 1}`;
    if (typeof ldRule.weight === 'number' && ldRule.weight < 100_000) {
      report('dropped', `${where} was dropped: it includes ${ldRule.weight / 1000}% of the matching contexts by hash, which Switchyard segments cannot express`);
      return;
    }
    const clauses = convertClauses(ldRule.clauses ?? [], scope);
    if ('dropped' in clauses) {
      report('dropped', `${where} was dropped: it has ${clauses.dropped}`);
      return;
    }
    if (clauses.alternatives.length === 0) {
      report('dropped', `${where} was dropped: ${clauses.never ?? 'it can never match'}`);
      return;
    }
    for (const note of new Set(clauses.notes)) report('changed', `${where}: ${note}`);
    clauses.alternatives.forEach((alternative, k) => {
      const typed = alternative.conditions.find((c) => c.context_type && !(c.op === 'exists' && c.negate));
      const type = typed?.context_type ?? kind(DEFAULT_KIND);
      const conditions = [...alternative.conditions];
      // Excluded keys keep contexts out of the rules (included ones are list parts, matched first).
      for (const [excludedType, keys] of excluded) {
        if (keys.length === 0) continue;
        conditions.push({ context_type: excludedType, attribute: 'key', op: 'in', values: [...new Set(keys)], negate: true });
        if (excludedType !== type) {
          report('changed', `${where}: its exclusion of ${excludedType} keys also requires a ${excludedType} context now (a context without one no longer matches the rule)`);
        }
      }
      parts.push({
        suffix: clauses.alternatives.length > 1 ? `rule-${index + 1}-${k + 1}` : `rule-${index + 1}`,
        document: { context_type: type, kind: 'rule', description, conditions },
      });
    });
  });
  if (parts.length === 0) {
    // Nothing included and no rule: a segment nobody is in, as in LaunchDarkly.
    parts.push({ suffix: '', document: { context_type: kind(DEFAULT_KIND), kind: 'list', description, included_keys: [], excluded_keys: [] } });
  }
  const documents = parts.map((part, i) => ({ key: i === 0 ? segment.key : `${segment.key}--${sanitizeKey(part.suffix)}`, ...part.document }));
  if (documents.length > 1) {
    report(
      'changed',
      `became ${documents.length} Switchyard segments (${documents.map((d) => d.key).join(', ')}): a Switchyard segment is a key list or rules of one context type; flag rules naming it are split, one rule per segment`,
    );
  }
  return { documents };
}

/**
 * Switchyard refuses a flag whose `matches` patterns together compile to more than
 * MAX_MATCHES_PROGRAM_SIZE RE2 instructions (docs/security.md "Cost budget per definition"). Rules
 * with patterns are dropped from the end until the rest fit, each reported, so that the flag can
 * be written. (Patterns of rule segments the flag names count too; the write reports those.)
 */
function trimToMatchesBudget(rules: Rule[], report: (severity: ImportSeverity, message: string) => void): void {
  let size = rules.reduce((sum, rule) => sum + matchesProgramSize(rule.conditions), 0);
  for (let i = rules.length - 1; i >= 0 && size > MAX_MATCHES_PROGRAM_SIZE; i--) {
    const cost = matchesProgramSize(rules[i]!.conditions);
    if (cost === 0) continue;
    report('dropped', `rule ${rules[i]!.id} was dropped: the flag's "matches" patterns together exceed Switchyard's budget of ${MAX_MATCHES_PROGRAM_SIZE} RE2 instructions per flag (rules with patterns are dropped from the last)`);
    rules.splice(i, 1);
    size -= cost;
  }
}

/** Converts a LaunchDarkly export. Pure: the same input gives the same output. */
export function convertLaunchDarkly(input: LaunchDarklyExport, options: LaunchDarklyImportOptions = {}): LaunchDarklyImport {
  const report: ImportReportEntry[] = [];
  const kind = (ldKind: string | undefined): string => {
    const k = ldKind || DEFAULT_KIND;
    return options.contextKinds?.[k] ?? k;
  };
  const ldFlags = itemsOf(input.flags);
  const ldEnvKeys = options.environments !== undefined
    ? Object.keys(options.environments)
    : [...new Set(ldFlags.flatMap((f) => Object.keys(f.environments ?? {})))];
  const envName = (ldKey: string): string => options.environments?.[ldKey] ?? ldKey;
  if (options.environments === undefined) {
    for (const ldKey of Object.keys(input.segments ?? {})) if (!ldEnvKeys.includes(ldKey)) ldEnvKeys.push(ldKey);
  } else {
    const skipped = [...new Set([...ldFlags.flatMap((f) => Object.keys(f.environments ?? {})), ...Object.keys(input.segments ?? {})])].filter((k) => !ldEnvKeys.includes(k));
    for (const k of skipped) report.push({ severity: 'info', environment: k, message: `LaunchDarkly environment "${k}" is not mapped to a Switchyard environment and was not imported` });
  }

  // Segments first: flag rules need to know what each LaunchDarkly segment became.
  const segments: Record<string, ImportedSegment[]> = {};
  const alternativesByEnv = new Map<string, SegmentAlternatives>();
  for (const ldKey of ldEnvKeys) {
    const list = input.segments?.[ldKey];
    if (list === undefined) continue;
    const environment = envName(ldKey);
    const documents: ImportedSegment[] = [];
    const alternatives: SegmentAlternatives = new Map();
    for (const segment of itemsOf(list)) {
      const segmentReport = (severity: ImportSeverity, message: string) => report.push({ severity, segment_key: segment.key, environment, message });
      if (typeof segment.key !== 'string' || !KEY_PATTERN.test(segment.key)) {
        segmentReport('dropped', 'the segment key is not a valid Switchyard key; the segment was not imported');
        alternatives.set(String(segment.key), { keys: [], why: 'its key is not a valid Switchyard key' });
        continue;
      }
      const converted = convertSegment(segment, kind, segmentReport);
      documents.push(...converted.documents);
      alternatives.set(segment.key, { keys: converted.documents.map((d) => d.key), why: converted.why });
    }
    segments[environment] = documents;
    alternativesByEnv.set(ldKey, alternatives);
  }

  // Variant keys of every flag, for prerequisites naming other flags.
  const variantKeysByFlag = new Map<string, string[]>();
  const importable = ldFlags.filter((flag) => {
    if (typeof flag.key !== 'string' || !KEY_PATTERN.test(flag.key)) {
      report.push({ severity: 'dropped', flag_key: String(flag.key), message: 'the flag key is not a valid Switchyard key; the flag was not imported' });
      return false;
    }
    if (flag.archived === true) {
      report.push({ severity: 'dropped', flag_key: flag.key, message: 'the flag is archived in LaunchDarkly and was not imported' });
      return false;
    }
    if (!Array.isArray(flag.variations) || flag.variations.length === 0) {
      report.push({ severity: 'dropped', flag_key: flag.key, message: 'the flag has no variations and was not imported' });
      return false;
    }
    variantKeysByFlag.set(flag.key, variantKeysFor(flag.variations));
    return true;
  });

  const flags: ImportedFlag[] = [];
  for (const flag of importable) {
    const variantKeys = variantKeysByFlag.get(flag.key)!;
    const values = flag.variations.map((v) => v.value);
    const valueType = valueTypeFor(flag.kind, values);
    const variants: Variant[] = flag.variations.map((v, i) => ({ key: variantKeys[i]!, value: (v.value ?? null) as FlagValue }));
    flag.variations.forEach((v, i) => {
      const scalar = typeof v.value === 'string' || typeof v.value === 'number' || typeof v.value === 'boolean' ? String(v.value) : '';
      const source = typeof v.name === 'string' && v.name !== '' ? v.name : scalar;
      if (source !== variantKeys[i]) {
        report.push({ severity: 'info', flag_key: flag.key, message: `variation ${i} (${source === '' ? JSON.stringify(v.value) : JSON.stringify(source)}) is variant "${variantKeys[i]}"` });
      }
    });
    const availability = flag.clientSideAvailability;
    const definition: ImportedFlagDefinition = {
      key: flag.key,
      description: flag.description || flag.name || '',
      value_type: valueType,
      variants,
      tags: [...(flag.tags ?? [])],
      lifetime: flag.temporary === true ? 'temporary' : 'permanent',
      maintainer: flag._maintainer?.email ?? flag.maintainerId ?? null,
      client_visible: availability !== undefined ? availability.usingEnvironmentId === true || availability.usingMobileKey === true : flag.includeInSnippet === true,
    };
    const environments: Record<string, ImportedFlagEnvironment> = {};
    for (const ldKey of ldEnvKeys) {
      const env = flag.environments?.[ldKey];
      const environment = envName(ldKey);
      const flagReport = (severity: ImportSeverity, message: string) => report.push({ severity, flag_key: flag.key, environment, message });
      if (env === undefined) {
        if (options.environments !== undefined) flagReport('info', `the export has no configuration of this flag in LaunchDarkly environment "${ldKey}"`);
        continue;
      }
      const ctx: FlagContext = { flagKey: flag.key, environment, variantKeys, report: flagReport, kind };
      const ids = new Set<string>();
      const rules = [...convertTargets(env, ctx, ids), ...convertRules(env, ctx, alternativesByEnv.get(ldKey), ids)];
      if (input.segments?.[ldKey] === undefined && (env.rules ?? []).some((r) => (r.clauses ?? []).some((c) => c.op === 'segmentMatch'))) {
        flagReport('info', `the export has no segments of LaunchDarkly environment "${ldKey}": segmentMatch clauses name the segments by their LaunchDarkly keys`);
      }
      if (!env.fallthrough) {
        flagReport('info', 'no fallthrough (LaunchDarkly answers such a flag with an error and the fallback value): no default rule, so the off variant is served when no rule matches');
      } else {
        const serve = convertServe(env.fallthrough, 'the default rule (fallthrough)', ctx);
        if ('dropped' in serve) flagReport('dropped', `${serve.dropped}: the flag has no default rule and serves its off variant when no rule matches`);
        else rules.push({ id: uniqueKey('default', ids), conditions: [], ...serve });
      }
      trimToMatchesBudget(rules, flagReport);
      let offVariantKey: string | null = null;
      if (typeof env.offVariation === 'number') {
        offVariantKey = variantKeys[env.offVariation] ?? null;
        if (offVariantKey === null) flagReport('dropped', `the off variation ${env.offVariation} does not exist: no off variant`);
      } else {
        flagReport('info', "no off variation: LaunchDarkly serves the application's fallback value when the flag is off; Switchyard serves no variant (a null value), which SDKs also turn into the fallback value");
      }
      let enabled = env.on === true;
      const prerequisites: Prerequisite[] = [];
      for (const p of env.prerequisites ?? []) {
        const keys = variantKeysByFlag.get(p.key);
        const variantKey = keys?.[p.variation];
        if (variantKey === undefined) {
          flagReport('dropped', `prerequisite "${p.key}" (variation ${p.variation}) ${keys === undefined ? 'is not imported (not in the export, or archived)' : 'names a variation that does not exist'}: the flag is imported switched off here, so that it does not serve more than in LaunchDarkly`);
          enabled = false;
          continue;
        }
        prerequisites.push({ flag_key: p.key, variant_keys: [variantKey] });
      }
      environments[environment] = { enabled, off_variant_key: offVariantKey, rules, prerequisites, hashing: [] };
    }
    flags.push({ definition, environments });
  }
  return { flags, segments, report };
}
