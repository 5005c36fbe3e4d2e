import type { Condition, Flag, FlagValue, PercentageAllocation, Prerequisite, Rule } from '../model/definitions.ts';
import { BUCKETS_PER_MILLI, appendHashInputPlan } from './bucketing.ts';
import { compileCondition } from './conditions.ts';

/**
 * A flag document compiled for evaluation: one array (docs/decisions.md "Evaluate route
 * performance").
 *
 * Why an array: a server evaluating one flag per request, rotating over many flags, finds each
 * flag's data out of the CPU caches and out of the address translation caches, and pays for every
 * separate object it reads. The JSON-shaped document is some forty objects spread over the heap
 * (rules, condition lists, conditions, values, allocation, buckets, hash specs, variants); measured
 * in process with the caches disturbed between evaluations, reading them cost about four times
 * the evaluation itself. The compiled array holds the rules back to back (their conditions, as
 * compiled conditions shared with every other flag carrying the same content; the variant and
 * value each serves; bucket boundaries summed ahead; the hash input's plan), so an evaluation
 * reads one contiguous object plus what is shared and stays cached.
 *
 * Layout (slot names below are the offsets):
 *
 *   header: the document fields it was compiled from (a flag given a new list is compiled
 *           again), the encoded end of the hash input for the environment last bucketed in, the
 *           off variant and its value, the number of rules, the offset of the off variant's
 *           outcome stores (DEFAULT there, DISABLED right after), the document itself, its key
 *           and whether it is enabled (what evaluateCompiled reads instead of the document), its
 *           prerequisites (undefined: none) and the offset of their outcome stores;
 *   each rule, in order: the offset of the next rule, its condition count, what it serves
 *           (SERVES_*), its id, its segment keys (undefined: none), its compiled conditions, then
 *     SERVES_VARIANT: the variant key and its value, then the outcome's stores;
 *     SERVES_SPLIT:   the bucket count, the offset of the buckets' outcome stores, then per bucket
 *                     its end (cumulative weight in buckets: bucket b is served by the first with
 *                     b < end), variant key and value, then the hash input plan
 *                     (appendHashInputPlan), then each bucket's outcome stores in bucket order;
 *   the off variant's outcome stores (DEFAULT, then DISABLED), then one outcome's stores per
 *   prerequisite (PREREQUISITE_FAILED naming it).
 *
 * Outcome stores (outcomes.ts): OUTCOME_STORES empty slots per outcome, where a host keeps what it
 * derives from the outcome's results (a transport, their JSON). They sit with the data the
 * evaluation has just read, so the host reaches them without a lookup of its own.
 *
 * Compiling reads the whole document, so a malformed part anywhere (rules that are not a list, a
 * rule that is not an object, conditions or segment keys that are not lists, a null condition,
 * variants that cannot be read, an allocation without buckets) throws, and the caller answers
 * ERROR GENERAL for every input: never some inputs served and others not.
 */
export type CompiledFlag = unknown[];

export const SOURCE_RULES = 0;
export const SOURCE_VARIANTS = 1;
export const SOURCE_HASHING = 2;
export const SOURCE_OFF_VARIANT_KEY = 3;
export const SUFFIX_PROJECT = 4;
export const SUFFIX_ENVIRONMENT = 5;
export const SUFFIX = 6;
export const OFF_VARIANT_KEY = 7;
export const OFF_VALUE = 8;
export const RULE_COUNT = 9;
export const OFF_OUTCOME = 10;
export const DOCUMENT = 11;
export const DOCUMENT_KEY = 12;
export const DOCUMENT_ENABLED = 13;
export const SOURCE_PREREQUISITES = 14;
/** The prerequisites to check before the rules (checked well-formed), or undefined when there are none. */
export const PREREQUISITES = 15;
/** The offset of the first prerequisite's PREREQUISITE_FAILED outcome stores (one outcome per prerequisite, in order). */
export const PREREQUISITE_OUTCOMES = 16;
export const FIRST_RULE = 17;

/**
 * Slots per outcome for hosts to keep derived data in (outcomes.ts): one per consumer, the
 * evaluate answers (bytes, and one flag's as a string) and the OFREP entries taking three.
 */
export const OUTCOME_STORES = 4;

/** Offsets within a rule. */
export const RULE_NEXT = 0;
export const RULE_CONDITION_COUNT = 1;
export const RULE_SERVES = 2;
export const RULE_ID = 3;
export const RULE_SEGMENT_KEYS = 4;
export const RULE_CONDITIONS = 5;

const SERVES_NOTHING = 0;
export const SERVES_VARIANT = 1;
export const SERVES_SPLIT = 2;

/** Slots per bucket of a split: end, variant key, value. */
export const BUCKET_SLOTS = 3;

/** Offsets within a split. */
export const SPLIT_BUCKET_COUNT = 0;
export const SPLIT_OUTCOMES = 1;
export const SPLIT_BUCKETS = 2;

const NO_CONDITIONS: readonly never[] = [];

/**
 * A variant's value. A key naming no variant (a dangling off_variant_key or rule variant) gives
 * null rather than an error: the variant key itself is still reported, and an SDK falls back to
 * its caller's default for a null value.
 */
export function variantValue(flag: Flag, variantKey: string): FlagValue {
  const variants = flag.variants;
  for (let i = 0; i < variants.length; i++) {
    const variant = variants[i]!;
    if (variant.key === variantKey) return variant.value;
  }
  return null;
}

function appendSplit(out: unknown[], flag: Flag, allocation: PercentageAllocation): void {
  const buckets = allocation.buckets;
  const start = out.length;
  out.push(buckets.length, 0);
  let cumulative = 0;
  for (let i = 0; i < buckets.length; i++) {
    const bucket = buckets[i]!;
    cumulative += bucket.weight_milli * BUCKETS_PER_MILLI;
    out.push(cumulative, bucket.variant_key, variantValue(flag, bucket.variant_key));
  }
  appendHashInputPlan(out, allocation, flag.hashing);
  out[start + SPLIT_OUTCOMES] = out.length;
  appendOutcomeStores(out, buckets.length);
}

function appendOutcomeStores(out: unknown[], outcomes: number): void {
  for (let i = 0; i < outcomes * OUTCOME_STORES; i++) out.push(undefined);
}

function appendRule(out: unknown[], flag: Flag, rule: Rule, i: number): void {
  const start = out.length;
  const segmentKeys = rule.segment_keys ?? undefined;
  const conditions = rule.conditions ?? NO_CONDITIONS;
  if (!Array.isArray(conditions)) throw new TypeError(`rule ${i} conditions must be an array`);
  if (segmentKeys !== undefined && !Array.isArray(segmentKeys)) throw new TypeError(`rule ${i} segment_keys must be an array`);
  // A rule carrying both a variant_key and an allocation serves its variant_key.
  const variantKey = typeof rule.variant_key === 'string' ? rule.variant_key : undefined;
  const allocation = rule.allocation;
  const serves = variantKey !== undefined ? SERVES_VARIANT : allocation !== undefined && allocation !== null ? SERVES_SPLIT : SERVES_NOTHING;
  out.push(0, conditions.length, serves, rule.id, segmentKeys !== undefined && segmentKeys.length > 0 ? segmentKeys : undefined);
  for (const condition of conditions as Condition[]) out.push(compileCondition(condition));
  if (serves === SERVES_VARIANT) {
    out.push(variantKey, variantValue(flag, variantKey!));
    appendOutcomeStores(out, 1);
  } else if (serves === SERVES_SPLIT) appendSplit(out, flag, allocation!);
  out[start + RULE_NEXT] = out.length;
}

/** Compiles a flag document (see CompiledFlag); throws on a malformed one. */
export function compileFlag(flag: Flag): CompiledFlag {
  const rules = flag.rules;
  // Malformed lists fail the whole evaluation rather than being read as empty: an unreadable
  // condition list must never turn into "matches everyone".
  if (!Array.isArray(rules)) throw new TypeError('rules must be an array');
  const offKey = flag.off_variant_key;
  const prerequisites = checkedPrerequisites(flag.prerequisites);
  const out: unknown[] = [
    rules,
    flag.variants,
    flag.hashing,
    offKey,
    '',
    '',
    undefined,
    typeof offKey === 'string' ? offKey : '',
    typeof offKey === 'string' ? variantValue(flag, offKey) : null,
    rules.length,
    0,
    flag,
    flag.key,
    flag.enabled,
    flag.prerequisites,
    prerequisites,
    0,
  ];
  for (let i = 0; i < rules.length; i++) appendRule(out, flag, rules[i]!, i);
  out[OFF_OUTCOME] = out.length;
  appendOutcomeStores(out, 2);
  out[PREREQUISITE_OUTCOMES] = out.length;
  appendOutcomeStores(out, prerequisites?.length ?? 0);
  return out;
}

/** A flag's prerequisites if it has any, each checked well-formed (else it throws, as for rules). */
function checkedPrerequisites(prerequisites: unknown): Prerequisite[] | undefined {
  if (prerequisites === undefined || prerequisites === null) return undefined;
  if (!Array.isArray(prerequisites)) throw new TypeError('prerequisites must be an array');
  for (const prerequisite of prerequisites as unknown[]) {
    const p = prerequisite as Prerequisite | null;
    if (typeof p !== 'object' || p === null || typeof p.flag_key !== 'string' || !Array.isArray(p.variant_keys)) {
      throw new TypeError('each prerequisite must have a flag_key and a list of variant_keys');
    }
  }
  return prerequisites.length === 0 ? undefined : (prerequisites as Prerequisite[]);
}

/**
 * Whether `compiled` holds the flag's current key and enabled state: what evaluateCompiled reads
 * from the form instead of the document (evaluate() reads them from the document).
 */
export function holdsStateOf(compiled: CompiledFlag, flag: Flag): boolean {
  return compiled[DOCUMENT_KEY] === flag.key && compiled[DOCUMENT_ENABLED] === flag.enabled;
}

/** Whether `compiled` was compiled from the flag's current rules, variants, hashing configs, off variant and prerequisites. */
export function isCompiledFrom(compiled: CompiledFlag, flag: Flag): boolean {
  return (
    compiled[SOURCE_PREREQUISITES] === flag.prerequisites &&
    compiled[SOURCE_RULES] === flag.rules &&
    compiled[SOURCE_VARIANTS] === flag.variants &&
    compiled[SOURCE_HASHING] === flag.hashing &&
    compiled[SOURCE_OFF_VARIANT_KEY] === flag.off_variant_key
  );
}
