import type { EvaluationContext, ParameterValue } from '../model/context.ts';
import type { AllocationBucket, HashingConfig, PercentageAllocation } from '../model/definitions.ts';
import { murmur3SignedWithSuffix, prepareSuffix, type HashSuffix } from './murmur3.ts';

export { murmur3 } from './murmur3.ts';

/** Number of buckets a hash falls into: 0..99999, so a weight_milli unit is 100 buckets. */
export const BUCKET_COUNT = 100_000;

/** `weight_milli` is in units of 0.1 percent; this many buckets make one unit. */
export const BUCKETS_PER_MILLI = BUCKET_COUNT / 1000;

/**
 * "/flag_key/project_id/environment_id" prepared for hashing (murmur3.ts): the fixed end of a
 * flag's hash input in one environment. `environmentId` null (a flag with `bucket_by: project`):
 * "/flag_key/project_id", the same end in every environment of the project.
 */
export function hashSuffix(flagKey: string, projectId: string, environmentId: string | null): HashSuffix {
  return prepareSuffix(environmentId === null ? `/${flagKey}/${projectId}` : `/${flagKey}/${projectId}/${environmentId}`);
}

/**
 * The suffix for the last flag and environment bucketed: an SDK evaluates the same flag for many
 * users in a row, so it is usually reused and only the hash input itself has to be read.
 * (Evaluation keeps each flag's suffix with its compiled form and calls bucketWithSuffix.)
 */
let suffixFlag = '';
let suffixProject = '';
let suffixEnvironment: string | null = '';
let suffixPrepared: HashSuffix = hashSuffix('', '', '');

function suffixFor(flagKey: string, projectId: string, environmentId: string | null): HashSuffix {
  if (flagKey !== suffixFlag || projectId !== suffixProject || environmentId !== suffixEnvironment) {
    suffixPrepared = hashSuffix(flagKey, projectId, environmentId);
    suffixFlag = flagKey;
    suffixProject = projectId;
    suffixEnvironment = environmentId;
  }
  return suffixPrepared;
}

/**
 * The bucket (0..99999) of a hash input for one flag in one environment (docs/contract.md "Flags and evaluation"):
 * murmur3_x86_32(seed 0) of the UTF-8 bytes of `hash_input/flag_key/project_id/environment_id`,
 * modulo 100000. Flag, project and environment are part of the input so that one user lands in
 * independent buckets for different flags and environments. `environmentId` null is a flag with
 * `bucket_by: project`: `hash_input/flag_key/project_id`, one bucket in every environment.
 */
export function bucketFor(hashInput: string, flagKey: string, projectId: string, environmentId: string | null): number {
  return bucketWithSuffix(hashInput, suffixFor(flagKey, projectId, environmentId));
}

/**
 * bucketFor with the suffix already prepared (hashSuffix of the flag key, project and
 * environment): the hash input's code units are hashed, then the suffix's ready blocks; no string
 * is built. The separators are ASCII, so this is byte-for-byte the hash of the joined string.
 */
export function bucketWithSuffix(hashInput: string, suffix: HashSuffix): number {
  return bucketOfHash(murmur3SignedWithSuffix(hashInput, suffix));
}

/**
 * `(hash >>> 0) % BUCKET_COUNT` for a signed 32-bit hash, in integer arithmetic only. The unsigned
 * value of half of all hashes is above 2^31, which V8 holds as a floating-point number, and `%`
 * on it is a floating-point remainder: measured at about a twentieth of a whole evaluation.
 * 67_296 is 2^32 mod 100_000: what a negative signed hash is short of its unsigned value, modulo
 * the count. The numbers are literals, not BUCKET_COUNT: V8 folds a literal divisor into a
 * multiplication, where a module-level constant is read and divided by (see murmur3.ts).
 */
export function bucketOfHash(hash: number): number {
  if (hash >= 0) return hash % 100_000;
  const bucket = (hash % 100_000) + 67_296;
  return bucket < 0 ? bucket + 100_000 : bucket;
}

/**
 * The allocation bucket a bucket number falls in: the first whose cumulative `weight_milli * 100`
 * exceeds it. Undefined when the weights sum to less than the bucket (an invalid allocation;
 * weights are checked to sum to 1000 at write time). Raising one bucket's weight only moves the
 * boundary, so keys already inside a growing first bucket stay there (monotonic rollouts).
 */
export function pickBucket(buckets: readonly AllocationBucket[], bucket: number): AllocationBucket | undefined {
  let cumulative = 0;
  for (let i = 0; i < buckets.length; i++) {
    const candidate = buckets[i]!;
    cumulative += candidate.weight_milli * BUCKETS_PER_MILLI;
    if (cumulative > bucket) return candidate;
  }
  return undefined;
}

/** A parameter value as it enters a hash input: JS number formatting (1, 1.5, 1e+21), "true"/"false". */
function parameterText(value: ParameterValue): string {
  return typeof value === 'string' ? value : String(value);
}

/**
 * A context's key (`name === "key"`) or one of its scalar parameters. Anything that is not an own
 * scalar parameter (a missing name, `null`, or an inherited member such as `toString`) is absent.
 */
export function contextValue(context: EvaluationContext, name: string): ParameterValue | undefined {
  if (name === 'key') return context.key;
  const parameters = context.parameters;
  if (parameters === undefined || parameters === null) return undefined;
  const value: unknown = parameters[name];
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return Object.hasOwn(parameters, name) ? (value as ParameterValue) : undefined;
    default:
      return undefined;
  }
}

/** The first context of `contextType`, or undefined. */
export function findContext(
  contexts: readonly EvaluationContext[],
  contextType: string,
): EvaluationContext | undefined {
  for (let i = 0; i < contexts.length; i++) {
    const context = contexts[i]!;
    if (context.context_type === contextType) return context;
  }
  return undefined;
}

const NO_NAMES: readonly string[] = [];

/** Values of `names` on one context joined by "/"; undefined as soon as one is missing. */
function joinedValues(context: EvaluationContext, names: readonly string[]): string | undefined {
  if (names.length === 0) return context.key;
  let joined = '';
  for (let i = 0; i < names.length; i++) {
    const value = contextValue(context, names[i]!);
    if (value === undefined) return undefined;
    joined = i === 0 ? parameterText(value) : joined + '/' + parameterText(value);
  }
  return joined;
}

function isSortedByOrder(configs: readonly HashingConfig[]): boolean {
  for (let i = 1; i < configs.length; i++) {
    if (configs[i - 1]!.order > configs[i]!.order) return false;
  }
  return true;
}

/** Flag-level hashing configs: each names a context type and a parameter ("key": the context key); `ordered` by `order`. */
function hashInputFromConfigs(
  ordered: readonly HashingConfig[],
  contexts: readonly EvaluationContext[],
): string | undefined {
  let joined = '';
  for (let i = 0; i < ordered.length; i++) {
    const config = ordered[i]!;
    const context = findContext(contexts, config.parameter_type);
    if (context === undefined) return undefined;
    const value = contextValue(context, config.parameter_key);
    if (value === undefined) return undefined;
    joined = i === 0 ? parameterText(value) : joined + '/' + parameterText(value);
  }
  return joined;
}

/**
 * Where a split finds its hash input (resolveHashInput's rules), read out of the allocation and
 * the flag's hashing configs once and written into an array at its end, so that a compiled flag
 * can carry it inline (evaluation then reads one array instead of walking the documents):
 *
 *   specCount, then for each `context_hash_specs` type in object key order: the type and its
 *   `parameter_names` (undefined when empty: the context key), then the flag-level configs sorted
 *   by `order` (undefined when there are none).
 */
export function appendHashInputPlan(out: unknown[], allocation: PercentageAllocation, hashing: readonly HashingConfig[] | undefined): void {
  const countAt = out.length;
  out.push(0);
  const specs = allocation.context_hash_specs;
  if (specs !== undefined && specs !== null) {
    for (const contextType in specs) {
      if (!Object.hasOwn(specs, contextType)) continue;
      const names = specs[contextType]?.parameter_names ?? NO_NAMES;
      out.push(contextType, names.length === 0 ? undefined : names);
      out[countAt] = (out[countAt] as number) + 1;
    }
  }
  let configs: readonly HashingConfig[] | undefined;
  if (hashing !== undefined && hashing !== null && hashing.length > 0) {
    // Stored configs are normally already in order; only copy when they are not.
    configs = isSortedByOrder(hashing) ? hashing : [...hashing].sort((a, b) => a.order - b.order);
  }
  out.push(configs);
}

/** The hash input the plan written at `plan[at]` (appendHashInputPlan) gives for this input. */
export function hashInputAt(plan: readonly unknown[], at: number, contexts: readonly EvaluationContext[]): string | undefined {
  const specCount = plan[at] as number;
  for (let i = 0; i < specCount; i++) {
    const context = findContext(contexts, plan[at + 1 + 2 * i] as string);
    if (context !== undefined) return joinedValues(context, (plan[at + 2 + 2 * i] as readonly string[] | undefined) ?? NO_NAMES);
  }
  if (specCount > 0) return undefined;
  const configs = plan[at + 1 + 2 * specCount] as readonly HashingConfig[] | undefined;
  if (configs !== undefined) return hashInputFromConfigs(configs, contexts);
  return contexts[0]?.key;
}

/**
 * The string a split hashes for this input, or undefined when the input cannot provide it (the
 * rule then does not match):
 *
 * 1. The allocation's `context_hash_specs`, when it has any: the first spec type (object key order)
 *    of which the input has a context. Its `parameter_names` empty: that context's key; otherwise
 *    the named values joined by "/" in order ("key" names the context key). A missing value, or
 *    no context of any spec type, gives undefined.
 * 2. Else the flag-level `hashing` configs, when there are any, sorted by `order`: for each, the
 *    `parameter_key` value of the first context of `parameter_type`, joined by "/". Any missing
 *    context or value gives undefined.
 * 3. Else the first context's key.
 */
export function resolveHashInput(
  allocation: PercentageAllocation,
  hashing: readonly HashingConfig[] | undefined,
  contexts: readonly EvaluationContext[],
): string | undefined {
  const plan: unknown[] = [];
  appendHashInputPlan(plan, allocation, hashing);
  return hashInputAt(plan, 0, contexts);
}
