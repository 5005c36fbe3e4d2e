import type { EvaluationContext } from '../model/context.ts';
import type { Flag, FlagValue, Prerequisite, Segment } from '../model/definitions.ts';
import type { EvaluationErrorCode, EvaluationResult } from '../model/evaluation.ts';
import { bucketWithSuffix, findContext, hashInputAt, hashSuffix } from './bucketing.ts';
import {
  BUCKET_SLOTS,
  DOCUMENT,
  DOCUMENT_ENABLED,
  DOCUMENT_KEY,
  FIRST_RULE,
  OFF_OUTCOME,
  OFF_VALUE,
  OFF_VARIANT_KEY,
  OUTCOME_STORES,
  PREREQUISITES,
  PREREQUISITE_OUTCOMES,
  RULE_CONDITIONS,
  RULE_CONDITION_COUNT,
  RULE_COUNT,
  RULE_ID,
  RULE_NEXT,
  RULE_SEGMENT_KEYS,
  RULE_SERVES,
  SERVES_SPLIT,
  SERVES_VARIANT,
  SPLIT_BUCKETS,
  SPLIT_BUCKET_COUNT,
  SPLIT_OUTCOMES,
  SUFFIX,
  SUFFIX_ENVIRONMENT,
  SUFFIX_PROJECT,
  compileFlag,
  holdsStateOf,
  isCompiledFrom,
  variantValue,
  type CompiledFlag,
} from './compiled-flag.ts';
import type { HashSuffix } from './murmur3.ts';
import { allConditionsHold, compiledConditionHolds, newConditionRun, type CompiledCondition } from './conditions.ts';
import { BUDGET_EXHAUSTED, budget, budgetUsedUp } from './evaluation-budget.ts';
import { clearOutcome, setOutcome, type Outcomes } from './outcomes.ts';

/** Everything evaluation needs besides the flag and the input. */
export interface EvaluationEnvironment {
  projectId: string;
  environmentId: string;
  /** The environment's segments by key. */
  segments?: ReadonlyMap<string, Segment>;
  /**
   * The environment's flags by key, where prerequisites are found. Absent, or without the flag a
   * prerequisite names: that prerequisite does not hold (the dependent serves its off variant).
   */
  flags?: ReadonlyMap<string, Flag>;
  /**
   * Membership of a list segment, excluded keys winning over included ones. Absent: no context
   * is a member of any list segment.
   */
  isListMember?: (segmentKey: string, contextKey: string) => boolean;
  /**
   * How long one call (evaluate, evaluateCompiled, evaluateAll) may run, in milliseconds; absent
   * or 0: no limit. Once used up, every flag still to evaluate in the call answers ERROR
   * (GENERAL) instead of running (evaluation-budget.ts). A call made while another call's budget
   * is active (from an isListMember callback) runs under that budget.
   */
  budgetMs?: number;
}

/** Answers of the segments evaluated so far in one call: each segment is evaluated at most once per call. */
type SegmentAnswers = Map<Segment, boolean>;

/**
 * Longest chain of prerequisites evaluated (a flag, its prerequisite, that one's, ...): writes
 * refuse longer ones (validate-flag.ts); this bounds the recursion for documents that did not go
 * through them. A longer chain's last link does not hold.
 */
export const MAX_PREREQUISITE_DEPTH = 16;

/**
 * The prerequisites of one call: each flag evaluated as a prerequisite is evaluated once per call
 * (null: it did not give a result to check: missing, in a cycle, past the depth, not evaluable),
 * and the chain being evaluated, where meeting a flag again is a cycle.
 */
class PrerequisiteCall {
  // Made on first use: every evaluateAll call makes a PrerequisiteCall, few meet a prerequisite.
  private knownResults: Map<string, EvaluationResult | null> | undefined;
  private evaluating: Set<string> | undefined;

  get results(): Map<string, EvaluationResult | null> {
    return (this.knownResults ??= new Map());
  }

  get chain(): Set<string> {
    return (this.evaluating ??= new Set());
  }
}

const NO_SEGMENTS: ReadonlyMap<string, Segment> = new Map();
const NO_CONDITIONS: readonly never[] = [];

function offResult(
  flagKey: string,
  offVariantKey: string,
  offValue: FlagValue,
  isEnabled: boolean,
  reason: 'DISABLED' | 'DEFAULT' | 'PREREQUISITE_FAILED' | 'ERROR',
  errorCode?: EvaluationErrorCode,
  errorMessage?: string,
): EvaluationResult {
  const result: EvaluationResult = { flag_key: flagKey, variant_key: offVariantKey, value: offValue, is_enabled: isEnabled, reason };
  if (errorCode !== undefined) {
    result.error_code = errorCode;
    result.error_message = errorMessage ?? errorCode;
  }
  return result;
}

/** The off result read from the document (a disabled flag, or an input that is not one): no compiling needed. */
function documentOffResult(flag: Flag, isEnabled: boolean, reason: 'DISABLED' | 'ERROR', errorCode?: EvaluationErrorCode, errorMessage?: string): EvaluationResult {
  const offKey = flag.off_variant_key;
  const hasOff = typeof offKey === 'string';
  return offResult(flag.key, hasOff ? offKey : '', hasOff ? variantValue(flag, offKey) : null, isEnabled, reason, errorCode, errorMessage);
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

function evaluateUnchecked(
  flag: Flag,
  input: EvaluationContext | EvaluationContext[],
  env: EvaluationEnvironment,
  run: number,
  outcomes: Outcomes | undefined,
  index: number,
  kept: CompiledFlag | undefined,
  answers: SegmentAnswers | undefined,
  call: PrerequisiteCall | undefined,
): EvaluationResult {
  // 0. Something that is not a flag document at all is a GENERAL error (see evaluate()). A kept
  //    compiled form was made of a document with a string key (compileFlagToKeep).
  if (kept === undefined && (typeof flag !== 'object' || flag === null || typeof flag.key !== 'string')) {
    throw new TypeError('flag must be an object with a string key');
  }

  // 1. A disabled flag serves its off variant whatever the input (even an invalid one).
  if ((kept === undefined ? flag.enabled : kept[DOCUMENT_ENABLED]) !== true) {
    const disabled = documentOffResult(flag, false, 'DISABLED');
    if (outcomes !== undefined) setDisabledOutcome(flag, outcomes, index);
    return disabled;
  }

  // 2. An enabled flag needs at least one context with a string key and type.
  const contexts = normalizeContexts(input);
  if (contexts === undefined) {
    const message = 'at least one context with a string key and context_type is required';
    return documentOffResult(flag, true, 'ERROR', 'INVALID_CONTEXT', message);
  }

  // The kept form is read instead of the document and its lookup: one object where there were three.
  const compiled = kept ?? compiledFlagOf(flag);
  const flagKey = kept === undefined ? flag.key : (kept[DOCUMENT_KEY] as string);

  // 3. Prerequisites, in order: each must be on and serve one of its listed variants for the same
  //    input, else the flag serves its off variant, PREREQUISITE_FAILED, naming the first that
  //    failed (an outcome per prerequisite).
  const prerequisites = compiled[PREREQUISITES] as readonly Prerequisite[] | undefined;
  if (prerequisites !== undefined) {
    const failed = failedPrerequisite(flagKey, prerequisites, contexts, env, run, answers, call ?? new PrerequisiteCall());
    if (failed !== -1) {
      const result = offResult(flagKey, compiled[OFF_VARIANT_KEY] as string, compiled[OFF_VALUE] as FlagValue, true, 'PREREQUISITE_FAILED');
      result.prerequisite_key = prerequisites[failed]!.flag_key;
      if (outcomes !== undefined) setOutcome(outcomes, index, compiled, (compiled[PREREQUISITE_OUTCOMES] as number) + failed * OUTCOME_STORES);
      return result;
    }
  }
  return evaluateRules(compiled, flagKey, contexts, env, run, outcomes, index, answers);
}

/** The index of the first of the flag's prerequisites that does not hold for the input, or -1 when all hold. */
function failedPrerequisite(
  flagKey: string,
  prerequisites: readonly Prerequisite[],
  contexts: readonly EvaluationContext[],
  env: EvaluationEnvironment,
  run: number,
  answers: SegmentAnswers | undefined,
  call: PrerequisiteCall,
): number {
  // The flag is on the chain while its prerequisites are evaluated: one of them leading back to it is a cycle.
  const outermost = !call.chain.has(flagKey);
  if (outermost) call.chain.add(flagKey);
  try {
    for (let i = 0; i < prerequisites.length; i++) {
      const prerequisite = prerequisites[i]!;
      const result = prerequisiteResult(prerequisite.flag_key, contexts, env, run, answers, call);
      if (result === null || !result.is_enabled || result.reason === 'ERROR' || !prerequisite.variant_keys.includes(result.variant_key)) {
        return i;
      }
    }
    return -1;
  } finally {
    if (outermost) call.chain.delete(flagKey);
  }
}

/**
 * A prerequisite's result for the input, evaluated once per call (no outcome, so no exposure or
 * kept answer comes of it), or null when there is none to check: the flag is missing, already on
 * the chain (a cycle), past MAX_PREREQUISITE_DEPTH, or cannot be evaluated. An evaluation budget
 * used up inside it ends the whole call, as anywhere else.
 */
function prerequisiteResult(
  flagKey: string,
  contexts: readonly EvaluationContext[],
  env: EvaluationEnvironment,
  run: number,
  answers: SegmentAnswers | undefined,
  call: PrerequisiteCall,
): EvaluationResult | null {
  const known = call.results.get(flagKey);
  if (known !== undefined) return known;
  const flag = env.flags?.get(flagKey);
  if (flag === undefined || call.chain.has(flagKey) || call.chain.size >= MAX_PREREQUISITE_DEPTH) return null;
  call.chain.add(flagKey);
  let result: EvaluationResult | null;
  try {
    result = evaluateUnchecked(flag, contexts as EvaluationContext[], env, run, undefined, 0, undefined, answers, call);
  } catch (err) {
    if (err === BUDGET_EXHAUSTED) throw err;
    result = null;
  } finally {
    call.chain.delete(flagKey);
  }
  call.results.set(flagKey, result);
  return result;
}

/**
 * A disabled flag's result is read from the document, never compiled: a malformed disabled flag
 * still answers DISABLED. Its outcome stores are in the compiled form, so they are there only when
 * the flag compiles.
 */
function setDisabledOutcome(flag: Flag, outcomes: Outcomes, index: number): void {
  let compiled: CompiledFlag;
  try {
    compiled = compiledFlagOf(flag);
  } catch {
    return;
  }
  setOutcome(outcomes, index, compiled, (compiled[OFF_OUTCOME] as number) + OUTCOME_STORES);
}

/** The first problem a rule's missing segments cause, or undefined when every named segment exists. */
function missingSegmentMessage(segmentKeys: readonly string[], segments: ReadonlyMap<string, Segment>, ruleId: string, i: number): string | undefined {
  for (const key of segmentKeys) {
    if (!segments.has(key)) return `segment "${key}" named by rule ${i}${ruleId ? ` (${ruleId})` : ''} does not exist`;
  }
  return undefined;
}

/**
 * Whether the input belongs to every named segment. A segment's answer is kept in `answers` for
 * the rest of the call: rules and flags may name the same segment many times, and evaluating it
 * again each time would multiply its cost (its patterns run once per distinct attribute value, and
 * alternating segments defeat a pattern's memory of its last input).
 */
function inAllSegments(
  segmentKeys: readonly string[],
  segments: ReadonlyMap<string, Segment>,
  contexts: readonly EvaluationContext[],
  env: EvaluationEnvironment,
  answers: SegmentAnswers,
): boolean {
  for (const key of segmentKeys) {
    const segment = segments.get(key)!;
    let matches = answers.get(segment);
    if (matches === undefined) {
      matches = segmentMatches(segment, contexts, env);
      answers.set(segment, matches);
    }
    if (!matches) return false;
  }
  return true;
}

const compiledFlags = new WeakMap<Flag, CompiledFlag>();

/**
 * The last flag looked up and its form: an SDK or a server evaluates the same flag for many
 * contexts in a row, and comparing one reference is cheaper than the WeakMap's lookup. Held
 * strongly, but only one: the document it keeps alive is the one most recently evaluated.
 */
let lastFlag: Flag | undefined;
let lastCompiled: CompiledFlag | undefined;

/**
 * The flag's compiled form, compiled on first use (and again when the document's lists were
 * replaced; with `keep`, also when its key or enabled state changed, which a kept form carries).
 */
function compiledFlagOf(flag: Flag, keep = false): CompiledFlag {
  let compiled = flag === lastFlag ? lastCompiled : compiledFlags.get(flag);
  if (compiled === undefined || !isCompiledFrom(compiled, flag) || (keep && !holdsStateOf(compiled, flag))) {
    compiled = compileFlag(flag);
    compiledFlags.set(flag, compiled);
  }
  lastFlag = flag;
  lastCompiled = compiled;
  return compiled;
}

/**
 * The flag's bucket for a hash input in this environment (bucketFor, with the flag's suffix kept in
 * its compiled form). A flag with `bucket_by: project` leaves the environment out of the suffix
 * (kept as null in SUFFIX_ENVIRONMENT, which no environment id equals). bucket_by is read from the
 * document each time, so a document whose bucket_by was changed in place is bucketed by its new value.
 */
function flagBucket(compiled: CompiledFlag, flagKey: string, hashInput: string, env: EvaluationEnvironment): number {
  const environmentId = (compiled[DOCUMENT] as Flag).bucket_by === 'project' ? null : env.environmentId;
  let suffix = compiled[SUFFIX] as HashSuffix | undefined;
  if (suffix === undefined || compiled[SUFFIX_PROJECT] !== env.projectId || compiled[SUFFIX_ENVIRONMENT] !== environmentId) {
    suffix = hashSuffix(flagKey, env.projectId, environmentId);
    compiled[SUFFIX] = suffix;
    compiled[SUFFIX_PROJECT] = env.projectId;
    compiled[SUFFIX_ENVIRONMENT] = environmentId;
  }
  return bucketWithSuffix(hashInput, suffix);
}

/** Whether the `count` compiled conditions from `compiled[at]` all hold; `run` lets equal conditions share answers (compiledConditionHolds). */
function conditionsHold(compiled: CompiledFlag, at: number, count: number, contexts: readonly EvaluationContext[], run: number): boolean {
  for (let i = at; i < at + count; i++) {
    if (!compiledConditionHolds(compiled[i] as CompiledCondition, contexts, undefined, run)) return false;
  }
  return true;
}

function matchedResult(flagKey: string, ruleId: string, ruleIndex: number, variantKey: string, value: FlagValue): EvaluationResult {
  return { flag_key: flagKey, variant_key: variantKey, value, is_enabled: true, reason: 'TARGETING_MATCH', rule_index: ruleIndex, rule_id: ruleId };
}

/**
 * The result of the split at `compiled[at]` for this input, or undefined when the input gives no
 * hash input or the bucket falls past the weights. `outcomes` (when given) learns which bucket
 * range served it.
 */
function splitResult(
  flagKey: string,
  compiled: CompiledFlag,
  at: number,
  ruleId: string,
  ruleIndex: number,
  contexts: readonly EvaluationContext[],
  env: EvaluationEnvironment,
  outcomes: Outcomes | undefined,
  index: number,
): EvaluationResult | undefined {
  const bucketCount = compiled[at + SPLIT_BUCKET_COUNT] as number;
  const first = at + SPLIT_BUCKETS;
  const hashInput = hashInputAt(compiled, first + bucketCount * BUCKET_SLOTS, contexts);
  if (hashInput === undefined) return undefined;
  const bucket = flagBucket(compiled, flagKey, hashInput, env);
  for (let k = 0; k < bucketCount; k++) {
    const b = first + k * BUCKET_SLOTS;
    if ((compiled[b] as number) > bucket) {
      // One literal with every field, in matchedResult's order and then the bucket: adding fields
      // to a built object moves it to a new shape and a separate property store.
      const result: EvaluationResult = {
        flag_key: flagKey,
        variant_key: compiled[b + 1] as string,
        value: compiled[b + 2] as FlagValue,
        is_enabled: true,
        reason: 'SPLIT',
        rule_index: ruleIndex,
        rule_id: ruleId,
        bucket,
      };
      if (outcomes !== undefined) setOutcome(outcomes, index, compiled, (compiled[at + SPLIT_OUTCOMES] as number) + k * OUTCOME_STORES);
      return result;
    }
  }
  return undefined;
}

function evaluateRules(
  compiled: CompiledFlag,
  flagKey: string,
  contexts: readonly EvaluationContext[],
  env: EvaluationEnvironment,
  run: number,
  outcomes: Outcomes | undefined,
  index: number,
  sharedAnswers: SegmentAnswers | undefined,
): EvaluationResult {
  // 4. Rules in order; the first that matches decides. A rule matches when
  //    a. every segment it names exists (else it is skipped and the first such problem is kept
  //       as error details, which survive onto the result even when a later rule matches),
  //    b. all its conditions hold,
  //    c. the input belongs to all its segments (rule segment: its conditions hold on the
  //       context of its type; list segment: isListMember on the context of its type), and
  //    d. for a split, the input yields a hash input and the bucket lands in a weight.
  const segments = env.segments ?? NO_SEGMENTS;
  const ruleCount = compiled[RULE_COUNT] as number;
  let errorMessage: string | undefined;
  // Where a served result's outcome is recorded: nowhere once a missing segment gave it a message.
  let record = outcomes;
  let answers = sharedAnswers;
  let at = FIRST_RULE;
  for (let i = 0; i < ruleCount; i++) {
    const rule = at;
    at = compiled[rule + RULE_NEXT] as number;
    const ruleId = compiled[rule + RULE_ID] as string;
    const segmentKeys = compiled[rule + RULE_SEGMENT_KEYS] as readonly string[] | undefined;
    if (segmentKeys !== undefined) {
      const missing = missingSegmentMessage(segmentKeys, segments, ruleId, i);
      if (missing !== undefined) {
        errorMessage ??= missing;
        record = undefined;
        continue;
      }
    }
    const conditionCount = compiled[rule + RULE_CONDITION_COUNT] as number;
    if (!conditionsHold(compiled, rule + RULE_CONDITIONS, conditionCount, contexts, run)) continue;
    if (segmentKeys !== undefined && !inAllSegments(segmentKeys, segments, contexts, env, (answers ??= new Map()))) continue;

    // 5. A fixed variant: TARGETING_MATCH. 6. A split: hash the input into 0..99999 and serve the weight it lands in: SPLIT.
    const served = rule + RULE_CONDITIONS + conditionCount;
    const serves = compiled[rule + RULE_SERVES] as number;
    let result: EvaluationResult | undefined;
    if (serves === SERVES_VARIANT) {
      result = matchedResult(flagKey, ruleId, i, compiled[served] as string, compiled[served + 1] as FlagValue);
      if (record !== undefined) setOutcome(record, index, compiled, served + 2);
    } else if (serves === SERVES_SPLIT) {
      result = splitResult(flagKey, compiled, served, ruleId, i, contexts, env, record, index);
    }
    if (result === undefined) continue;
    if (errorMessage !== undefined) {
      result.error_code = 'SEGMENT_NOT_FOUND';
      result.error_message = errorMessage;
    }
    return result;
  }

  // 7. No rule matched: the off variant, DEFAULT, or ERROR when a rule was skipped for a missing segment.
  const offKey = compiled[OFF_VARIANT_KEY] as string;
  const offValue = compiled[OFF_VALUE] as FlagValue;
  if (errorMessage !== undefined) return offResult(flagKey, offKey, offValue, true, 'ERROR', 'SEGMENT_NOT_FOUND', errorMessage);
  if (outcomes !== undefined) setOutcome(outcomes, index, compiled, compiled[OFF_OUTCOME] as number);
  return offResult(flagKey, offKey, offValue, true, 'DEFAULT');
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
  if (!startsBudget(env)) return evaluateGuarded(flag, contexts, env, 0, undefined, 0, undefined, undefined);
  try {
    return evaluateGuarded(flag, contexts, env, 0, undefined, 0, undefined, undefined);
  } finally {
    endBudget();
  }
}

/**
 * Makes the environment's budget the active one for this call, unless a budget is already active
 * (a call nested in another's: it runs under the outer budget). True when this call started one
 * and must end it (endBudget) when it returns.
 */
function startsBudget(env: EvaluationEnvironment): boolean {
  // A malformed environment (null) has no budget; evaluation answers its error.
  const ms = env?.budgetMs;
  if (ms === undefined || !(ms > 0) || budget.ms !== 0) return false;
  budget.ms = ms;
  budget.deadline = 0;
  return true;
}

function endBudget(): void {
  budget.ms = 0;
  budget.deadline = 0;
}

/** A flag the call's budget left no time for: ERROR, serving the off variant as any ERROR does. */
function budgetResult(flag: Flag): EvaluationResult {
  const message = `not evaluated: this evaluation used up its budget of ${budget.ms} ms`;
  try {
    return documentOffResult(flag, flag.enabled === true, 'ERROR', 'GENERAL', message);
  } catch {
    return { flag_key: safeField(flag, 'key'), variant_key: '', value: null, is_enabled: false, reason: 'ERROR', error_code: 'GENERAL', error_message: message };
  }
}

/**
 * A flag's compiled form for a host to keep with a definition that is never changed in place (an
 * environment snapshot's, which a change replaces as a whole), for evaluateCompiled(). Undefined
 * when the flag cannot be compiled: the host then evaluates the document (evaluate() or
 * evaluateAll()), which answers the error. The same form evaluate() and evaluateAll() use for
 * this document, with the same outcome stores.
 */
export function compileFlagToKeep(flag: Flag): CompiledFlag | undefined {
  if (typeof flag !== 'object' || flag === null || typeof flag.key !== 'string') return undefined;
  try {
    return compiledFlagOf(flag, true);
  } catch {
    return undefined;
  }
}

/**
 * The kept compiled form of the flag `key` of `flags`, made on first use and remembered in `kept`
 * (a host's map, replaced with its flags): null when the flag does not compile (evaluating the
 * document answers the error), undefined when there is no such flag (nothing is kept for unknown
 * keys, so `kept` holds at most one entry per flag).
 */
export function keptFlagForm(kept: Map<string, CompiledFlag | null>, flags: ReadonlyMap<string, Flag>, key: string): CompiledFlag | null | undefined {
  let form = kept.get(key);
  if (form === undefined) {
    const flag = flags.get(key);
    if (flag === undefined) return undefined;
    form = compileFlagToKeep(flag) ?? null;
    kept.set(key, form);
  }
  return form;
}

/** The flag document a kept compiled form was compiled from. */
export function documentOfCompiled(compiled: CompiledFlag): Flag {
  return compiled[DOCUMENT] as Flag;
}

/**
 * evaluateAll() of the one flag whose kept compiled form (compileFlagToKeep) this is, reading the
 * form instead of the document and its lookup: a server rotating over many flags finds each out of
 * the CPU caches, and every separate object costs a miss the next read waits for. The form's copy
 * of the document's key and enabled state is read, so the document must not have been changed in
 * place since (evaluate() checks for replaced lists; this does not).
 */
export function evaluateCompiled(
  compiled: CompiledFlag,
  contexts: EvaluationContext | EvaluationContext[],
  env: EvaluationEnvironment,
  outcomes?: Outcomes,
): EvaluationResult {
  if (!startsBudget(env)) return evaluateGuarded(compiled[DOCUMENT] as Flag, contexts, env, 0, outcomes, 0, compiled, undefined);
  try {
    return evaluateGuarded(compiled[DOCUMENT] as Flag, contexts, env, 0, outcomes, 0, compiled, undefined);
  } finally {
    endBudget();
  }
}

/**
 * Evaluates every flag for the same input: the results of evaluate() for each, in order. Within
 * the call, conditions with the same content are tested once and their answer reused by every
 * other flag that carries them (the input cannot change during the call).
 *
 * `outcomes` (newOutcomes(flags.length)), when given, learns each result's outcome (outcomes.ts).
 */
export function evaluateAll(
  flags: readonly Flag[],
  contexts: EvaluationContext | EvaluationContext[],
  env: EvaluationEnvironment,
  outcomes?: Outcomes,
): EvaluationResult[] {
  // One flag has nobody to share answers with: the memo would only cost.
  const run = flags.length > 1 ? newConditionRun() : 0;
  const answers: SegmentAnswers = new Map();
  // Prerequisites shared by several flags of the call are evaluated once.
  const call = new PrerequisiteCall();
  const results = new Array<EvaluationResult>(flags.length);
  if (!startsBudget(env)) {
    for (let i = 0; i < flags.length; i++) results[i] = evaluateGuarded(flags[i]!, contexts, env, run, outcomes, i, undefined, answers, call);
    return results;
  }
  try {
    for (let i = 0; i < flags.length; i++) {
      // The clock is read before every 16th flag (and before each pattern run): flags without
      // patterns cost a microsecond or less, and a read before each would cost a few percent.
      if ((i & BUDGET_CHECK_MASK) === 0 ? budgetUsedUp() : budget.deadline === -1) {
        if (outcomes !== undefined) clearOutcome(outcomes, i);
        results[i] = budgetResult(flags[i]!);
      } else {
        results[i] = evaluateGuarded(flags[i]!, contexts, env, run, outcomes, i, undefined, answers, call);
      }
    }
  } finally {
    endBudget();
  }
  return results;
}

/** evaluateAll reads the budget's clock before every 16th flag (BUDGET_CHECK_MASK + 1). */
const BUDGET_CHECK_MASK = 15;

function evaluateGuarded(
  flag: Flag,
  contexts: EvaluationContext | EvaluationContext[],
  env: EvaluationEnvironment,
  run: number,
  outcomes: Outcomes | undefined,
  index: number,
  kept: CompiledFlag | undefined,
  answers: SegmentAnswers | undefined,
  call?: PrerequisiteCall,
): EvaluationResult {
  // No outcome until the evaluation names one, which it does only once its result is built (an
  // error with a message never names one), so nothing thrown can leave one behind.
  if (outcomes !== undefined) clearOutcome(outcomes, index);
  try {
    return evaluateUnchecked(flag, contexts, env, run, outcomes, index, kept, answers, call);
  } catch (err) {
    if (err === BUDGET_EXHAUSTED) return budgetResult(flag);
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
