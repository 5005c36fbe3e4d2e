import type { EvaluationContext } from '../model/context.ts';
import type { Condition, Flag, FlagValue, Rule, Segment } from '../model/definitions.ts';
import type { EvaluationErrorCode, EvaluationResult } from '../model/evaluation.ts';
import { bucketWithSuffix, findContext, hashSuffix, pickBucket, resolveHashInput } from './bucketing.ts';
import { allConditionsHold, compileCondition, compiledConditionHolds, newConditionRun, type CompiledCondition } from './conditions.ts';

/** Everything evaluation needs besides the flag and the input. */
export interface EvaluationEnvironment {
  projectId: string;
  environmentId: string;
  /** The environment's segments by key. */
  segments?: ReadonlyMap<string, Segment>;
  /**
   * Membership of a list segment, excluded keys winning over included ones. Absent: no context
   * is a member of any list segment.
   */
  isListMember?: (segmentKey: string, contextKey: string) => boolean;
}

const NO_SEGMENTS: ReadonlyMap<string, Segment> = new Map();
const NO_CONDITIONS: readonly never[] = [];

/**
 * A variant's value. A key naming no variant (a dangling off_variant_key or rule variant) gives
 * null rather than an error: the variant key itself is still reported, and an SDK falls back to
 * its caller's default for a null value.
 */
function variantValue(flag: Flag, variantKey: string): FlagValue {
  const variants = flag.variants;
  for (let i = 0; i < variants.length; i++) {
    const variant = variants[i]!;
    if (variant.key === variantKey) return variant.value;
  }
  return null;
}

function offResult(
  flag: Flag,
  isEnabled: boolean,
  reason: 'DISABLED' | 'DEFAULT' | 'ERROR',
  errorCode?: EvaluationErrorCode,
  errorMessage?: string,
): EvaluationResult {
  const offKey = flag.off_variant_key;
  const result: EvaluationResult = {
    flag_key: flag.key,
    variant_key: typeof offKey === 'string' ? offKey : '',
    value: typeof offKey === 'string' ? variantValue(flag, offKey) : null,
    is_enabled: isEnabled,
    reason,
  };
  if (errorCode !== undefined) {
    result.error_code = errorCode;
    result.error_message = errorMessage ?? errorCode;
  }
  return result;
}

/** A single context or a non-empty list of well-formed contexts; undefined otherwise. */
function normalizeContexts(input: EvaluationContext | EvaluationContext[]): readonly EvaluationContext[] | undefined {
  const contexts = Array.isArray(input) ? input : [input];
  if (contexts.length === 0) return undefined;
  for (let i = 0; i < contexts.length; i++) {
    const context: unknown = contexts[i];
    if (typeof context !== 'object' || context === null) return undefined;
    const c = context as EvaluationContext;
    if (typeof c.key !== 'string' || typeof c.context_type !== 'string') return undefined;
  }
  return contexts;
}

/** Whether the input belongs to one (existing) segment. */
function segmentMatches(
  segment: Segment,
  contexts: readonly EvaluationContext[],
  env: EvaluationEnvironment,
): boolean {
  if (segment.kind === 'list') {
    const context = findContext(contexts, segment.context_type);
    if (context === undefined || env.isListMember === undefined) return false;
    return env.isListMember(segment.key, context.key) === true;
  }
  if (segment.kind === 'rule') {
    // A typed rule segment describes contexts of its type only: without one, nothing matches.
    if (segment.context_type && findContext(contexts, segment.context_type) === undefined) return false;
    const conditions = segment.conditions ?? NO_CONDITIONS;
    if (!Array.isArray(conditions)) throw new TypeError(`segment "${segment.key}" conditions must be an array`);
    return allConditionsHold(conditions, contexts, segment.context_type || undefined);
  }
  return false;
}

function matchedResult(flag: Flag, rule: Rule, ruleIndex: number, variantKey: string): EvaluationResult {
  return {
    flag_key: flag.key,
    variant_key: variantKey,
    value: variantValue(flag, variantKey),
    is_enabled: true,
    reason: 'TARGETING_MATCH',
    rule_index: ruleIndex,
    rule_id: rule.id,
  };
}

function evaluateUnchecked(
  flag: Flag,
  input: EvaluationContext | EvaluationContext[],
  env: EvaluationEnvironment,
  run: number,
): EvaluationResult {
  // 0. Something that is not a flag document at all is a GENERAL error (see evaluate()).
  if (typeof flag !== 'object' || flag === null || typeof flag.key !== 'string') {
    throw new TypeError('flag must be an object with a string key');
  }

  // 1. A disabled flag serves its off variant whatever the input (even an invalid one).
  if (flag.enabled !== true) return offResult(flag, false, 'DISABLED');

  // 2. An enabled flag needs at least one context with a string key and type.
  const contexts = normalizeContexts(input);
  if (contexts === undefined) {
    const message = 'at least one context with a string key and context_type is required';
    return offResult(flag, true, 'ERROR', 'INVALID_CONTEXT', message);
  }

  return evaluateRules(flag, contexts, env, run);
}

/** The first problem a rule's missing segments cause, or undefined when every named segment exists. */
function missingSegmentMessage(segmentKeys: readonly string[], segments: ReadonlyMap<string, Segment>, rule: Rule, i: number): string | undefined {
  for (const key of segmentKeys) {
    if (!segments.has(key)) return `segment "${key}" named by rule ${i}${rule.id ? ` (${rule.id})` : ''} does not exist`;
  }
  return undefined;
}

function inAllSegments(segmentKeys: readonly string[], segments: ReadonlyMap<string, Segment>, contexts: readonly EvaluationContext[], env: EvaluationEnvironment): boolean {
  for (const key of segmentKeys) {
    if (!segmentMatches(segments.get(key)!, contexts, env)) return false;
  }
  return true;
}

/**
 * What evaluation keeps with a flag document (flags are immutable once evaluated): each rule's
 * compiled conditions, and the encoded end of its hash input for the environment it was last
 * bucketed in. One lookup per flag finds both, instead of one per condition and three for the
 * suffix: with many flags evaluated in turn, each lookup is a likely cache miss.
 */
interface CompiledFlag {
  /** The rules list compiled (a flag given a new list is compiled again). */
  readonly rules: readonly Rule[];
  /** Undefined for a rule whose conditions are not a list of objects; evaluation then reads that rule's conditions one by one, failing where it always did. */
  readonly conditions: (readonly CompiledCondition[] | undefined)[];
  suffixProjectId: string;
  suffixEnvironmentId: string;
  suffix: Uint8Array | undefined;
}

const compiledFlags = new WeakMap<Flag, CompiledFlag>();

function compiledFlagOf(flag: Flag, rules: readonly Rule[]): CompiledFlag {
  let compiled = compiledFlags.get(flag);
  if (compiled === undefined || compiled.rules !== rules) {
    const conditions = rules.map((rule) => {
      const list: unknown = typeof rule === 'object' && rule !== null ? (rule.conditions ?? NO_CONDITIONS) : undefined;
      if (!Array.isArray(list) || !list.every((c) => typeof c === 'object' && c !== null)) return undefined;
      return (list as Condition[]).map((condition) => compileCondition(condition));
    });
    compiled = { rules, conditions, suffixProjectId: '', suffixEnvironmentId: '', suffix: undefined };
    compiledFlags.set(flag, compiled);
  }
  return compiled;
}

/** The flag's bucket for a hash input in this environment (bucketFor, with the flag's suffix kept). */
function flagBucket(compiled: CompiledFlag, flagKey: string, hashInput: string, env: EvaluationEnvironment): number {
  if (compiled.suffix === undefined || compiled.suffixProjectId !== env.projectId || compiled.suffixEnvironmentId !== env.environmentId) {
    compiled.suffix = hashSuffix(flagKey, env.projectId, env.environmentId);
    compiled.suffixProjectId = env.projectId;
    compiled.suffixEnvironmentId = env.environmentId;
  }
  return bucketWithSuffix(hashInput, compiled.suffix);
}

/** Whether every condition of a flag rule holds; `run` lets equal conditions share answers (compiledConditionHolds). */
function ruleConditionsHold(compiled: readonly CompiledCondition[] | undefined, conditions: readonly Condition[], contexts: readonly EvaluationContext[], run: number): boolean {
  if (compiled !== undefined) {
    for (let i = 0; i < compiled.length; i++) {
      if (!compiledConditionHolds(compiled[i]!, contexts, undefined, run)) return false;
    }
    return true;
  }
  for (let i = 0; i < conditions.length; i++) {
    if (!compiledConditionHolds(compileCondition(conditions[i]!), contexts, undefined, run)) return false;
  }
  return true;
}

function evaluateRules(flag: Flag, contexts: readonly EvaluationContext[], env: EvaluationEnvironment, run: number): EvaluationResult {
  // 3. Rules in order; the first that matches decides. A rule matches when
  //    a. every segment it names exists (else it is skipped and the first such problem is kept
  //       as error details, which survive onto the result even when a later rule matches),
  //    b. all its conditions hold,
  //    c. the input belongs to all its segments (rule segment: its conditions hold on the
  //       context of its type; list segment: isListMember on the context of its type), and
  //    d. for a split, the input yields a hash input and the bucket lands in a weight.
  const segments = env.segments ?? NO_SEGMENTS;
  const rules = flag.rules;
  // Malformed lists fail the whole evaluation rather than being read as empty: an unreadable
  // condition list must never turn into "matches everyone".
  if (!Array.isArray(rules)) throw new TypeError('rules must be an array');
  const compiled = compiledFlagOf(flag, rules);
  let errorMessage: string | undefined;
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i]!;
    const segmentKeys = rule.segment_keys ?? undefined;
    const conditions = rule.conditions ?? NO_CONDITIONS;
    if (!Array.isArray(conditions)) throw new TypeError(`rule ${i} conditions must be an array`);
    if (segmentKeys !== undefined && !Array.isArray(segmentKeys)) {
      throw new TypeError(`rule ${i} segment_keys must be an array`);
    }
    if (segmentKeys !== undefined && segmentKeys.length > 0) {
      const missing = missingSegmentMessage(segmentKeys, segments, rule, i);
      if (missing !== undefined) {
        errorMessage ??= missing;
        continue;
      }
    }
    if (!ruleConditionsHold(compiled.conditions[i], conditions, contexts, run)) continue;
    if (segmentKeys !== undefined && !inAllSegments(segmentKeys, segments, contexts, env)) continue;

    // 4. A fixed variant: TARGETING_MATCH. (A rule carrying both serves its variant_key.)
    let result: EvaluationResult;
    if (typeof rule.variant_key === 'string') {
      result = matchedResult(flag, rule, i, rule.variant_key);
    } else if (rule.allocation !== undefined && rule.allocation !== null) {
      // 5. A split: hash the input into 0..99999 and serve the weight it lands in: SPLIT.
      const hashInput = resolveHashInput(rule.allocation, flag.hashing, contexts);
      if (hashInput === undefined) continue;
      const bucket = flagBucket(compiled, flag.key, hashInput, env);
      const chosen = pickBucket(rule.allocation.buckets, bucket);
      if (chosen === undefined) continue;
      result = matchedResult(flag, rule, i, chosen.variant_key);
      result.reason = 'SPLIT';
      result.bucket = bucket;
    } else {
      continue;
    }
    if (errorMessage !== undefined) {
      result.error_code = 'SEGMENT_NOT_FOUND';
      result.error_message = errorMessage;
    }
    return result;
  }

  // 6. No rule matched: the off variant, DEFAULT, or ERROR when a rule was skipped for a missing segment.
  if (errorMessage !== undefined) return offResult(flag, true, 'ERROR', 'SEGMENT_NOT_FOUND', errorMessage);
  return offResult(flag, true, 'DEFAULT');
}

/** Reads a field of something that may not be a flag at all, without ever throwing. */
function safeField(flag: unknown, field: 'key' | 'off_variant_key'): string {
  try {
    const value: unknown = (flag as Record<string, unknown>)[field];
    return typeof value === 'string' ? value : '';
  } catch {
    return '';
  }
}

function describeError(err: unknown): string {
  try {
    return err instanceof Error ? err.message : String(err);
  } catch {
    return 'unknown error';
  }
}

/**
 * Evaluates one flag for one context or several (a multi-context input), docs/contract.md "Flags and evaluation".
 *
 * Never throws: a malformed flag or input comes back as reason ERROR (error_code GENERAL, or
 * INVALID_CONTEXT for an empty or malformed context list) with the off variant and a null value.
 * Variant values are returned by reference, not copied. A flag document must not be changed once
 * evaluated (every update stores a new one): its compiled form is kept with the object.
 */
export function evaluate(
  flag: Flag,
  contexts: EvaluationContext | EvaluationContext[],
  env: EvaluationEnvironment,
): EvaluationResult {
  return evaluateGuarded(flag, contexts, env, 0);
}

/**
 * Evaluates every flag for the same input: the results of evaluate() for each, in order. Within
 * the call, conditions with the same content are tested once and their answer reused by every
 * other flag that carries them (the input cannot change during the call).
 */
export function evaluateAll(
  flags: readonly Flag[],
  contexts: EvaluationContext | EvaluationContext[],
  env: EvaluationEnvironment,
): EvaluationResult[] {
  // One flag has nobody to share answers with: the memo would only cost.
  const run = flags.length > 1 ? newConditionRun() : 0;
  const results = new Array<EvaluationResult>(flags.length);
  for (let i = 0; i < flags.length; i++) results[i] = evaluateGuarded(flags[i]!, contexts, env, run);
  return results;
}

function evaluateGuarded(
  flag: Flag,
  contexts: EvaluationContext | EvaluationContext[],
  env: EvaluationEnvironment,
  run: number,
): EvaluationResult {
  try {
    return evaluateUnchecked(flag, contexts, env, run);
  } catch (err) {
    let enabled = false;
    try {
      enabled = (flag as { enabled?: unknown }).enabled === true;
    } catch {
      // keep false: nothing about this flag can be trusted
    }
    return {
      flag_key: safeField(flag, 'key'),
      variant_key: safeField(flag, 'off_variant_key'),
      value: null,
      is_enabled: enabled,
      reason: 'ERROR',
      error_code: 'GENERAL',
      error_message: `flag could not be evaluated: ${describeError(err)}`,
    };
  }
}
