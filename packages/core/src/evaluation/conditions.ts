import { RE2JS } from 're2js';
// The one function used, not semver's index (which loads its ~45 modules: ranges, comparators...).
import parseSemVer from 'semver/functions/parse.js';
import type { SemVer } from 'semver';
import type { EvaluationContext, ParameterValue } from '../model/context.ts';
import { CONDITION_OPS } from '../model/definitions.ts';
import type { Condition, ConditionOp, ConditionValue } from '../model/definitions.ts';
import { contextValue, findContext } from './bucketing.ts';
import { chargeExpensiveStep } from './evaluation-budget.ts';
import { requiredLiteral } from './required-literal.ts';

/**
 * Longest regular expression a `matches` condition may carry. The engine is linear in the input
 * whatever the pattern (see compilePattern), so this bounds compile time and memory per pattern,
 * not matching time (docs/security.md).
 */
export const MAX_PATTERN_LENGTH = 1000;

/** A condition compiled once: tests a present attribute value against the condition's values. */
type Predicate = (value: ParameterValue) => boolean;

const NEVER: Predicate = () => false;
const ALWAYS: Predicate = () => true;

// Numbers are decimal literals only ("1", "-2.5", ".5", "1e3"): no hex, no whitespace, no
// "Infinity", so that every SDK language parses the same strings the same way.
const NUMERIC = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * A number from a JSON number or a decimal numeric string; undefined otherwise. Numeric strings
 * are accepted because context parameters often arrive as strings (headers, query strings).
 */
export function toNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && NUMERIC.test(value)) {
    const parsed = Number(value);
    return Number.isFinite(parsed) ? parsed : undefined;
  }
  return undefined;
}

// ISO 8601 calendar date, optionally with a time and a zone; without a zone the time is UTC
// (never the host's local time, which would make results depend on where the SDK runs).
const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?)?$/;
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function parseIso8601(text: string): number | undefined {
  const m = ISO_8601.exec(text);
  if (m === null) return undefined;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = Number(m[4] ?? 0);
  const minute = Number(m[5] ?? 0);
  const second = Number(m[6] ?? 0);
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const monthDays = month === 2 && !leap ? 28 : (DAYS_IN_MONTH[month - 1] ?? 0);
  if (month < 1 || month > 12 || day < 1 || day > monthDays) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (m[9] !== undefined) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, millis);
  return utc.getTime() - offsetMinutes * 60_000;
}

/** Epoch milliseconds from a finite number (epoch ms) or an ISO 8601 date string; else undefined. */
export function toEpochMillis(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string') return parseIso8601(value);
  return undefined;
}

/**
 * Parsed versions by text. SDKs send few distinct versions, and evaluating every flag for one
 * context reads the same version once per semver condition: parsing it (a long regular
 * expression and an object) was a seventh of an all-flags evaluation. The parsed objects are only
 * compared, never changed. Bounded: cleared when full, so unusual traffic costs parses, not memory.
 */
const parsedVersions = new Map<string, SemVer | null>();
const MAX_PARSED_VERSIONS = 4096;
/** semver refuses longer strings anyway; they are not worth a cache entry. */
const MAX_VERSION_LENGTH = 256;

function toSemVer(value: unknown): SemVer | undefined {
  if (typeof value !== 'string' || value.length > MAX_VERSION_LENGTH) return undefined;
  let parsed = parsedVersions.get(value);
  if (parsed === undefined) {
    parsed = parseSemVer(value);
    if (parsedVersions.size >= MAX_PARSED_VERSIONS) parsedVersions.clear();
    parsedVersions.set(value, parsed);
  }
  return parsed ?? undefined;
}

/**
 * Compiled `matches` patterns by pattern text (null: does not compile). The per-condition cache
 * below already compiles a condition once; this one also spares a recompile when the same pattern
 * reappears in a new document (every flag update, snapshot reload or sync message builds new
 * condition objects) and lets the write-time check's compile serve evaluation. Bounded: cleared
 * when full, so unusual patterns cost compiles, not memory.
 */
const compiledPatterns = new Map<string, CompiledPattern | null>();
const MAX_COMPILED_PATTERNS = 1024;

/**
 * A compiled pattern that remembers its last input and answer. A pattern is shared by every
 * condition with the same text (compiledPatterns), so evaluating all the flags of an environment
 * for one context, where many flags test the same pattern against the same attribute, runs the
 * matcher once instead of once per flag (docs/decisions.md "Evaluate route performance").
 */
class CompiledPattern {
  private lastInput: string | undefined;
  private lastAnswer = false;

  /**
   * @param required text every match contains (requiredLiteral): an input without it is answered
   *   "no" by a substring search, without running the engine.
   */
  constructor(
    private readonly re: RE2JS,
    private readonly required: string | undefined,
  ) {}

  /** An unanchored search that keeps no state between inputs (unlike a `g` RegExp). */
  test(value: string): boolean {
    if (value !== this.lastInput) {
      // Throws once the call's evaluation budget is used up (evaluation-budget.ts).
      chargeExpensiveStep();
      const required = this.required;
      this.lastAnswer = (required === undefined || value.includes(required)) && this.re.test(value);
      this.lastInput = value;
    }
    return this.lastAnswer;
  }

  programSize(): number {
    return this.re.programSize();
  }
}

/**
 * A compiled pattern for a `matches` value; null when not a string, too long or not compiling.
 * RE2JS is the JavaScript port of RE2: RE2 syntax, and matching time linear in the input whatever
 * the pattern, so that no pattern and no attribute value can stall evaluation (ReDoS;
 * docs/security.md). Syntax RE2 lacks (backreferences, lookaround) does not compile.
 */
function compilePattern(pattern: unknown): CompiledPattern | null {
  if (typeof pattern !== 'string' || pattern.length > MAX_PATTERN_LENGTH) return null;
  let compiledPattern = compiledPatterns.get(pattern);
  if (compiledPattern === undefined) {
    try {
      compiledPattern = new CompiledPattern(RE2JS.compile(pattern), requiredLiteral(pattern));
    } catch {
      compiledPattern = null;
    }
    if (compiledPatterns.size >= MAX_COMPILED_PATTERNS) compiledPatterns.clear();
    compiledPatterns.set(pattern, compiledPattern);
  }
  return compiledPattern;
}

/**
 * Why a `matches` pattern is refused at write time, or null when it compiles. Anything refused
 * here would never match at evaluation.
 */
export function patternProblem(pattern: string): string | null {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    return `is a regular expression of ${pattern.length} characters (at most ${MAX_PATTERN_LENGTH})`;
  }
  if (compilePattern(pattern) !== null) return null;
  try {
    RE2JS.compile(pattern);
    return null;
  } catch (err) {
    // RE2JS's messages read "error parsing regexp: invalid escape sequence: `\1`".
    return `is not a valid regular expression (RE2 syntax: no backreferences, no lookaround): ${(err as Error).message}`;
  }
}

/**
 * The most RE2 program instructions the `matches` patterns of one definition (a flag's rules, or a
 * rule segment's conditions) may compile to. RE2 matching is linear in the input, but its constant
 * grows with the program: about 10-15 ns per instruction and input character here, so this bounds
 * one definition's regular-expression work on a 4096-character attribute to tens of milliseconds
 * however many patterns it carries (docs/security.md, "Cost budget per definition"). Ordinary patterns
 * compile to 10-50 instructions.
 */
export const MAX_MATCHES_PROGRAM_SIZE = 500;

/** The RE2 program size of every `matches` value in the conditions (uncompilable ones count 0). */
export function matchesProgramSize(conditions: readonly Condition[]): number {
  let size = 0;
  for (const condition of conditions) {
    if (condition.op !== 'matches') continue;
    for (const value of condition.values) size += compilePattern(value)?.programSize() ?? 0;
  }
  return size;
}

/**
 * Up to this many string values, a string is compared with each in turn: for a short list that is
 * faster than a hash lookup (eq has one value, in usually a handful).
 */
const SCAN_LIMIT = 8;

/**
 * `eq`/`in`: equal to any of the values. Same JS types compare with `===`; a number equals a
 * numeric string with the same value (see toNumber); a boolean equals the string "true"/"false".
 */
function equalsAny(values: readonly ConditionValue[]): Predicate {
  const exact = new Set<unknown>(values);
  const numbersFromStrings = new Set<number>();
  const strings: string[] = [];
  for (const value of values) {
    if (typeof value === 'string') {
      strings.push(value);
      const n = toNumber(value);
      if (n !== undefined) numbersFromStrings.add(n);
    }
  }
  const scanned = strings.length <= SCAN_LIMIT ? strings : undefined;
  // Without a number among the values, no string can equal one: skip converting strings.
  const hasNumbers = values.some((value) => typeof value === 'number');
  return (value) => {
    if (typeof value === 'string') {
      if (scanned !== undefined) {
        for (let i = 0; i < scanned.length; i++) if (scanned[i] === value) return true;
      } else if (exact.has(value)) return true;
      if (value === 'true' || value === 'false') return exact.has(value === 'true');
      if (!hasNumbers) return false;
      const n = toNumber(value);
      return n !== undefined && exact.has(n);
    }
    if (exact.has(value)) return true;
    if (typeof value === 'number') return numbersFromStrings.has(value);
    return exact.has(value ? 'true' : 'false');
  };
}

function stringPredicate(
  values: readonly ConditionValue[],
  test: (value: string, operand: string) => boolean,
): Predicate {
  const operands = values.filter((v): v is string => typeof v === 'string');
  return (value) => {
    if (typeof value !== 'string') return false;
    for (const operand of operands) if (test(value, operand)) return true;
    return false;
  };
}

/**
 * SemVer precedence (semver.org §11): major, minor and patch numerically, then a pre-release
 * below its release. Versions without pre-release tags (the usual case) are compared here;
 * anything else goes to the library's full comparison. Build metadata never counts.
 */
function compareVersions(a: SemVer, b: SemVer): number {
  if (a.prerelease.length === 0 && b.prerelease.length === 0) {
    return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
  }
  return a.compare(b);
}

function orderedPredicate<T>(
  operands: readonly (T | undefined)[],
  parse: (value: unknown) => T | undefined,
  test: (value: T, operand: T) => boolean,
): Predicate {
  const valid = operands.filter((v): v is T => v !== undefined);
  if (valid.length === 0) return NEVER;
  return (raw) => {
    const value = parse(raw);
    if (value === undefined) return false;
    for (const operand of valid) if (test(value, operand)) return true;
    return false;
  };
}

function compilePredicate(op: ConditionOp, values: readonly ConditionValue[]): Predicate | null {
  switch (op) {
    case 'eq':
    case 'in':
      return equalsAny(values);
    case 'contains':
      return stringPredicate(values, (v, o) => v.includes(o));
    case 'starts_with':
      return stringPredicate(values, (v, o) => v.startsWith(o));
    case 'ends_with':
      return stringPredicate(values, (v, o) => v.endsWith(o));
    case 'matches': {
      const patterns = values.map(compilePattern).filter((p): p is CompiledPattern => p !== null);
      return (value) => typeof value === 'string' && patterns.some((p) => p.test(value));
    }
    case 'lt':
      return orderedPredicate(values.map(toNumber), toNumber, (v, o) => v < o);
    case 'lte':
      return orderedPredicate(values.map(toNumber), toNumber, (v, o) => v <= o);
    case 'gt':
      return orderedPredicate(values.map(toNumber), toNumber, (v, o) => v > o);
    case 'gte':
      return orderedPredicate(values.map(toNumber), toNumber, (v, o) => v >= o);
    case 'semver_eq':
      return orderedPredicate(values.map(toSemVer), toSemVer, (v, o) => compareVersions(v, o) === 0);
    case 'semver_lt':
      return orderedPredicate(values.map(toSemVer), toSemVer, (v, o) => compareVersions(v, o) < 0);
    case 'semver_gt':
      return orderedPredicate(values.map(toSemVer), toSemVer, (v, o) => compareVersions(v, o) > 0);
    case 'before':
      return orderedPredicate(values.map(toEpochMillis), toEpochMillis, (v, o) => v < o);
    case 'after':
      return orderedPredicate(values.map(toEpochMillis), toEpochMillis, (v, o) => v > o);
    case 'exists':
      return ALWAYS;
    default:
      return null;
  }
}

/**
 * A condition compiled once: its fields read, its values parsed into a predicate, and what an
 * evaluation run needs to remember its answer (see memoSlotOf).
 */
export interface CompiledCondition {
  readonly attribute: string;
  readonly contextType: string | undefined;
  readonly op: ConditionOp;
  readonly negate: boolean;
  /** null: an unknown op, which never holds. */
  readonly predicate: Predicate | null;
  /** The condition's content as text, the memo's key; null: never memoised. */
  readonly memoKey: string | null;
  /** Its memo slot, valid while memoEpoch is the table's epoch (assigned on first memoised use). */
  memoSlot: number;
  memoEpoch: number;
}

/**
 * Compiled conditions by condition object. Condition documents are treated as immutable once
 * evaluated (every update stores a new document), so the regular expressions, numbers, versions
 * and times in `values` are parsed once per condition instead of once per evaluation.
 */
const compiledConditions = new WeakMap<Condition, CompiledCondition>();

/**
 * Compiled conditions by content (the memo key): conditions with the same content in different
 * flags, environments or tenants share one compiled form. A compiled condition is a pure function
 * of its content (its predicate reads only the values it was compiled from, and its memo answers
 * are per evaluation run), so sharing changes no answer; it means that evaluating one flag out of
 * many reads, for its common conditions ("plan is enterprise", a staff-email pattern), objects
 * that other flags' evaluations keep in the CPU caches, instead of that flag's own copies.
 * Bounded: emptied when full; conditions compiled before keep their forms.
 */
const sharedConditions = new Map<string, CompiledCondition>();
const MAX_SHARED_CONDITIONS = 16_384;

/**
 * Memo slots by condition content. Flags of one environment repeat the same conditions ("plan is
 * enterprise", "country in DE, FR", a staff-email pattern); within one evaluation run (one input,
 * every flag) a condition's answer depends only on its content, so it is computed once per run
 * and read back for every other flag that carries it. The table is shared by every environment
 * and bounded: when full it is emptied and its epoch advances, and conditions take new slots on
 * their next use, so no tenant's many distinct conditions can end memoisation for the others or
 * grow memory (at most MEMO_SLOTS keys of MAX_MEMO_SIGNATURE characters).
 */
const MEMO_SLOTS = 16_384;
/** Longer contents (huge `in` lists) are not worth a slot: their text would hold memory. */
const MAX_MEMO_SIGNATURE = 512;
const memoSlots = new Map<string, number>();
let memoEpoch = 0;

/** JSON writes NaN and ±Infinity as null: tagged instead, so such values never share a slot with null. */
const exactNumbers = (_key: string, value: unknown): unknown => (typeof value === 'number' && !Number.isFinite(value) ? { number: String(value) } : value);

function memoKeyOf(attribute: string, contextType: string | undefined, op: string, values: readonly unknown[], negate: boolean): string | null {
  const signature = JSON.stringify([attribute, contextType ?? null, op, negate, values], exactNumbers);
  return signature.length > MAX_MEMO_SIGNATURE ? null : signature;
}

/** The condition's slot in the current epoch, taking one (and emptying a full table) when it has none; -1: not memoised. */
function memoSlotOf(condition: CompiledCondition): number {
  if (condition.memoEpoch === memoEpoch) return condition.memoSlot;
  if (condition.memoKey === null) return -1;
  let slot = memoSlots.get(condition.memoKey);
  if (slot === undefined) {
    if (memoSlots.size >= MEMO_SLOTS) {
      // Answers already stored name slots that are about to mean other contents: forget them.
      memoSlots.clear();
      memoRuns.fill(0);
      memoEpoch++;
    }
    slot = memoSlots.size;
    memoSlots.set(condition.memoKey, slot);
  }
  condition.memoSlot = slot;
  condition.memoEpoch = memoEpoch;
  return slot;
}

/** How many compiled conditions are shared by content now (for tests of its bound). */
export function sharedConditionEntries(): number {
  return sharedConditions.size;
}

/** How many condition contents the memo table holds now (for tests of its bound). */
export function conditionMemoEntries(): number {
  return memoSlots.size;
}

/**
 * A condition's compiled form (cached per condition object). A condition that is not an object
 * is compiled afresh each time and never memoised, as before compilation existed: it reads as
 * an absent attribute and does not hold.
 */
export function compileCondition(condition: Condition): CompiledCondition {
  const cached = compiledConditions.get(condition);
  if (cached !== undefined) return cached;
  // Reading the fields first keeps the TypeError of a null or undefined condition.
  const attribute = condition.attribute;
  const contextType = condition.context_type || undefined;
  const op = condition.op;
  const negate = condition.negate === true;
  const values = Array.isArray(condition.values) ? condition.values : [];
  const isObject = typeof condition === 'object';
  const memoKey = isObject && typeof attribute === 'string' ? memoKeyOf(attribute, contextType, op, values, negate) : null;
  let compiledCondition = memoKey === null ? undefined : sharedConditions.get(memoKey);
  if (compiledCondition === undefined) {
    compiledCondition = { attribute, contextType, op, negate, predicate: compilePredicate(op, values), memoKey, memoSlot: -1, memoEpoch: -1 };
    if (memoKey !== null) {
      if (sharedConditions.size >= MAX_SHARED_CONDITIONS) sharedConditions.clear();
      sharedConditions.set(memoKey, compiledCondition);
    }
  }
  if (isObject) compiledConditions.set(condition, compiledCondition);
  return compiledCondition;
}

/**
 * Answers of memoised conditions for one evaluation run, tagged with the run's number: a slot
 * holds an answer for this run only when its tag is the run's number. Evaluation is synchronous,
 * so one table serves every run; a run nested inside another (a list-membership callback that
 * evaluates) takes a new number and can never be read as the outer run's answers.
 */
const memoRuns = new Int32Array(MEMO_SLOTS);
const memoAnswers = new Uint8Array(MEMO_SLOTS);
let lastRun = 0;

/** A number for a new evaluation run whose conditions may share answers; 0 means "do not memoise". */
export function newConditionRun(): number {
  if (lastRun === 0x7fffffff) {
    memoRuns.fill(0);
    lastRun = 0;
  }
  return ++lastRun;
}

/**
 * Whether one condition holds for the evaluation input.
 *
 * 1. The attribute is read from the context of the condition's `context_type` (else of
 *    `defaultContextType`, a rule segment's type; else the first context that has the attribute).
 *    `"key"` is the context key.
 * 2. An absent attribute makes the condition false, whatever `negate` says, except `exists`:
 *    a negated `exists` on an absent attribute is true.
 * 3. Otherwise the op holds when it holds for any of `values` (OR); a value of the wrong type for
 *    the op (a non-numeric string for `gt`, an invalid version for `semver_*`, ...) does not hold.
 *    `negate` inverts that result. An unknown op is false, negated or not.
 *
 * `run` (from newConditionRun, for conditions of flag rules only: their answer does not depend on
 * a segment's type) lets conditions with the same content share one answer within the run.
 */
export function compiledConditionHolds(
  condition: CompiledCondition,
  contexts: readonly EvaluationContext[],
  defaultContextType?: string,
  run = 0,
): boolean {
  if (run === 0) return computeHolds(condition, contexts, defaultContextType);
  const slot = memoSlotOf(condition);
  if (slot >= 0 && memoRuns[slot] === run) return memoAnswers[slot] === 1;
  const holds = computeHolds(condition, contexts, defaultContextType);
  if (slot >= 0) {
    memoRuns[slot] = run;
    memoAnswers[slot] = holds ? 1 : 0;
  }
  return holds;
}

function computeHolds(condition: CompiledCondition, contexts: readonly EvaluationContext[], defaultContextType: string | undefined): boolean {
  const attribute = condition.attribute;
  const contextType = condition.contextType || defaultContextType;
  let value: ParameterValue | undefined;
  if (contextType) {
    const context = findContext(contexts, contextType);
    value = context === undefined ? undefined : contextValue(context, attribute);
  } else {
    for (let i = 0; i < contexts.length && value === undefined; i++) value = contextValue(contexts[i]!, attribute);
  }
  const negate = condition.negate;
  if (value === undefined) return negate && condition.op === 'exists';
  const predicate = condition.predicate;
  if (predicate === null) return false;
  return predicate(value) !== negate;
}

/** Whether one condition holds for the evaluation input (see compiledConditionHolds). */
export function conditionHolds(
  condition: Condition,
  contexts: readonly EvaluationContext[],
  defaultContextType?: string,
): boolean {
  return computeHolds(compileCondition(condition), contexts, defaultContextType);
}

/** Whether every condition holds (AND; an empty list holds). */
export function allConditionsHold(
  conditions: readonly Condition[],
  contexts: readonly EvaluationContext[],
  defaultContextType?: string,
): boolean {
  for (let i = 0; i < conditions.length; i++) {
    if (!conditionHolds(conditions[i]!, contexts, defaultContextType)) return false;
  }
  return true;
}

const OPS: ReadonlySet<string> = new Set(CONDITION_OPS);
const NUMERIC_OPS: ReadonlySet<string> = new Set(['lt', 'lte', 'gt', 'gte']);
const SEMVER_OPS: ReadonlySet<string> = new Set(['semver_eq', 'semver_lt', 'semver_gt']);
const TIME_OPS: ReadonlySet<string> = new Set(['before', 'after']);
const STRING_OPS: ReadonlySet<string> = new Set(['contains', 'starts_with', 'ends_with', 'matches']);

function describe(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

function validateValue(op: string, value: unknown, at: string): string | null {
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    return `${at} must be a string, number or boolean`;
  }
  if (STRING_OPS.has(op) && typeof value !== 'string') return `${at} must be a string for op "${op}"`;
  if (op === 'matches') {
    const problem = patternProblem(value as string);
    if (problem !== null) return `${at} ${problem}`;
  }
  if (NUMERIC_OPS.has(op) && toNumber(value) === undefined) {
    return `${at} must be a number for op "${op}", got ${describe(value)}`;
  }
  if (SEMVER_OPS.has(op) && toSemVer(value) === undefined) {
    return `${at} must be a semantic version (e.g. "1.2.3") for op "${op}", got ${describe(value)}`;
  }
  if (TIME_OPS.has(op) && toEpochMillis(value) === undefined) {
    return `${at} must be epoch milliseconds or an ISO 8601 date for op "${op}", got ${describe(value)}`;
  }
  return null;
}

/**
 * Write-time check of a list of conditions (rules and rule segments). Returns the first problem
 * as a message naming the field (`conditions[1].values[0] ...`), or null when all are valid.
 * Evaluation never throws on what this rejects; it would only make such conditions false.
 */
export function validateConditions(conditions: unknown, path = 'conditions'): string | null {
  if (!Array.isArray(conditions)) return `${path} must be an array`;
  for (let i = 0; i < conditions.length; i++) {
    const at = `${path}[${i}]`;
    const condition: unknown = conditions[i];
    if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) {
      return `${at} must be an object`;
    }
    const c = condition as Record<string, unknown>;
    if (typeof c.attribute !== 'string' || c.attribute === '') return `${at}.attribute must be a non-empty string`;
    if (typeof c.op !== 'string' || !OPS.has(c.op)) {
      return `${at}.op must be one of ${CONDITION_OPS.join(', ')}, got ${describe(c.op)}`;
    }
    if (c.context_type !== undefined && typeof c.context_type !== 'string') {
      return `${at}.context_type must be a string`;
    }
    if (c.negate !== undefined && typeof c.negate !== 'boolean') return `${at}.negate must be a boolean`;
    if (!Array.isArray(c.values)) return `${at}.values must be an array`;
    if (c.op !== 'exists' && c.values.length === 0) return `${at}.values must not be empty for op "${c.op}"`;
    for (let j = 0; j < c.values.length; j++) {
      const problem = validateValue(c.op, c.values[j], `${at}.values[${j}]`);
      if (problem !== null) return problem;
    }
  }
  return null;
}
