import { failedPrecondition, invalidArgument } from '../errors/domain-error.ts';
import { MAX_PREREQUISITE_DEPTH } from '../evaluation/evaluate.ts';
import type { Prerequisite, Variant } from '../model/definitions.ts';
import { checkKey } from './validate-flag.ts';

/**
 * Write-time checks of a flag's prerequisites in one environment (docs/contract.md
 * "Prerequisites"). The shape is checked by checkPrerequisites (no store needed); the references
 * (each names an existing, non-archived flag of the project and variants it has), cycles and the
 * chain length by checkPrerequisiteGraph, which the repositories run under the environment's
 * prerequisite lock so that two concurrent writes cannot close a cycle between them.
 */

/** At most this many prerequisites per flag and environment. */
export const MAX_PREREQUISITES = 50;

/** Shape: an array of at most MAX_PREREQUISITES `{flag_key, variant_keys}`, no flag twice, not the flag itself. */
export function checkPrerequisites(flagKey: string, value: unknown, field = 'prerequisites'): Prerequisite[] {
  if (!Array.isArray(value)) throw invalidArgument(`${field} must be an array of {flag_key, variant_keys}`, field);
  if (value.length > MAX_PREREQUISITES) throw invalidArgument(`${field} holds at most ${MAX_PREREQUISITES} prerequisites`, field);
  const seen = new Set<string>();
  return value.map((entry: unknown, i) => {
    const path = `${field}[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw invalidArgument(`${path} must be an object {flag_key, variant_keys}`, path);
    const raw = entry as { flag_key?: unknown; variant_keys?: unknown };
    const key = checkKey(raw.flag_key, `${path}.flag_key`);
    if (key === flagKey) throw invalidArgument(`${path}.flag_key: a flag cannot be its own prerequisite`, `${path}.flag_key`);
    if (seen.has(key)) throw invalidArgument(`${path}.flag_key '${key}' is named twice`, `${path}.flag_key`);
    seen.add(key);
    const variants = raw.variant_keys;
    if (!Array.isArray(variants) || variants.length === 0) {
      throw invalidArgument(`${path}.variant_keys must be a non-empty array of the prerequisite's variant keys`, `${path}.variant_keys`);
    }
    const variantKeys = variants.map((variant: unknown, j) => {
      const variantField = `${path}.variant_keys[${j}]`;
      const checked = checkKey(variant, variantField);
      if (variants.indexOf(variant) !== j) throw invalidArgument(`${variantField} '${checked}' is named twice`, variantField);
      return checked;
    });
    return { flag_key: key, variant_keys: variantKeys };
  });
}

/** What checkPrerequisiteGraph needs to know of one flag of the project in the environment. */
export interface PrerequisiteNode {
  variants: readonly Pick<Variant, 'key'>[];
  archived: boolean;
  prerequisites: readonly Prerequisite[];
}

/**
 * The references, cycles and chain length of `prerequisites` as `flagKey`'s new list, given every
 * flag of the project in the environment (`flags`, keyed by flag key; the entry of `flagKey`
 * itself is ignored and replaced by the new list). A cycle is looked for along the chain of each
 * prerequisite's own prerequisites (and theirs, ...): it is one when that chain reaches `flagKey`.
 * A flag reached twice by different paths (a shared prerequisite) is not a cycle. The longest
 * chain through `flagKey` afterwards — the flags that depend on it, it, and its prerequisites' longest
 * chain — may hold at most MAX_PREREQUISITE_DEPTH flags (evaluation stops there).
 * @throws INVALID_ARGUMENT naming the offending entry.
 */
export function checkPrerequisiteGraph(
  flagKey: string,
  prerequisites: readonly Prerequisite[],
  flags: ReadonlyMap<string, PrerequisiteNode>,
  field = 'prerequisites',
): void {
  prerequisites.forEach((prerequisite, i) => {
    const path = `${field}[${i}]`;
    const node = flags.get(prerequisite.flag_key);
    if (node === undefined) throw invalidArgument(`${path}.flag_key: no flag '${prerequisite.flag_key}' in this project`, `${path}.flag_key`);
    if (node.archived) throw invalidArgument(`${path}.flag_key: flag '${prerequisite.flag_key}' is archived`, `${path}.flag_key`);
    const known = new Set(node.variants.map((variant) => variant.key));
    prerequisite.variant_keys.forEach((variantKey, j) => {
      if (!known.has(variantKey)) {
        throw invalidArgument(
          `${path}.variant_keys[${j}]: flag '${prerequisite.flag_key}' has no variant '${variantKey}' (it has ${[...known].join(', ') || 'none'})`,
          `${path}.variant_keys[${j}]`,
        );
      }
    });
  });

  const prerequisitesOf = (key: string): readonly Prerequisite[] => (key === flagKey ? prerequisites : (flags.get(key)?.prerequisites ?? []));

  // Longest chain (in flags) from each flag down through its prerequisites, memoized: a shared
  // prerequisite is walked once. `path` holds the chain being walked; meeting `flagKey` on it is a cycle.
  const down = new Map<string, number>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const longestDown = (key: string, entry: number): number => {
    if (key === flagKey && path.length > 0) {
      const chain = [flagKey, ...path.slice(1), flagKey].join(' → ');
      throw invalidArgument(`${field}[${entry}]: prerequisites may not form a cycle (${chain})`, `${field}[${entry}].flag_key`);
    }
    const memo = down.get(key);
    if (memo !== undefined) return memo;
    // A cycle stored before these checks existed, not through flagKey: stop walking it.
    if (onPath.has(key)) return MAX_PREREQUISITE_DEPTH + 1;
    path.push(key);
    onPath.add(key);
    let longest = 1;
    for (const prerequisite of prerequisitesOf(key)) longest = Math.max(longest, 1 + longestDown(prerequisite.flag_key, entry));
    path.pop();
    onPath.delete(key);
    down.set(key, longest);
    return longest;
  };
  path.push(flagKey);
  let below = 1;
  prerequisites.forEach((prerequisite, i) => {
    below = Math.max(below, 1 + longestDown(prerequisite.flag_key, i));
  });
  path.pop();

  // Longest chain of flags depending on flagKey (itself included), walking dependents upwards.
  const dependentsOf = new Map<string, string[]>();
  for (const [key, node] of flags) {
    if (key === flagKey) continue;
    for (const prerequisite of node.prerequisites) {
      const list = dependentsOf.get(prerequisite.flag_key) ?? [];
      list.push(key);
      dependentsOf.set(prerequisite.flag_key, list);
    }
  }
  const up = new Map<string, number>();
  const upPath = new Set<string>();
  const longestUp = (key: string): number => {
    const memo = up.get(key);
    if (memo !== undefined) return memo;
    if (upPath.has(key)) return MAX_PREREQUISITE_DEPTH + 1;
    upPath.add(key);
    let longest = 1;
    for (const dependent of dependentsOf.get(key) ?? []) if (dependent !== flagKey) longest = Math.max(longest, 1 + longestUp(dependent));
    upPath.delete(key);
    up.set(key, longest);
    return longest;
  };
  const chain = longestUp(flagKey) + below - 1;
  if (prerequisites.length > 0 && chain > MAX_PREREQUISITE_DEPTH) {
    throw invalidArgument(
      `${field}: the longest chain of prerequisites through this flag would hold ${chain} flags (at most ${MAX_PREREQUISITE_DEPTH}, the flags that depend on it and the flag included)`,
      field,
    );
  }
}

/** One flag's prerequisites in one environment, as the dependents checks read them. */
export interface PrerequisiteHolder {
  flag_key: string;
  environment: string;
  prerequisites: readonly Prerequisite[];
}

/**
 * Refuses deleting or archiving `flagKey` while another flag names it as a prerequisite (in any
 * environment of the project; `holders` are the project's written states), naming the dependents.
 * @throws FAILED_PRECONDITION
 */
export function refuseWhilePrerequisite(flagKey: string, holders: readonly PrerequisiteHolder[], action: 'deleted' | 'archived'): void {
  const dependents = holders.filter((holder) => holder.flag_key !== flagKey && holder.prerequisites.some((p) => p.flag_key === flagKey));
  if (dependents.length === 0) return;
  throw failedPrecondition(
    `flag '${flagKey}' cannot be ${action} while other flags name it as a prerequisite: ${describe(dependents)}; remove it from their prerequisites first`,
  );
}

/**
 * Refuses removing variants of `flagKey` that a dependent lists in its prerequisite's
 * variant_keys, naming the dependents. @throws FAILED_PRECONDITION
 */
export function refuseRemovingPrerequisiteVariants(flagKey: string, removed: readonly string[], holders: readonly PrerequisiteHolder[]): void {
  if (removed.length === 0) return;
  const problems: string[] = [];
  for (const variant of removed) {
    const dependents = holders.filter((holder) =>
      holder.flag_key !== flagKey && holder.prerequisites.some((p) => p.flag_key === flagKey && p.variant_keys.includes(variant)),
    );
    if (dependents.length > 0) problems.push(`'${variant}' is a prerequisite variant of ${describe(dependents)}`);
  }
  if (problems.length > 0) throw failedPrecondition(`a variant that a dependent flag's prerequisite lists cannot be removed: ${problems.join('; ')}`);
}

function describe(holders: readonly PrerequisiteHolder[]): string {
  const byFlag = new Map<string, string[]>();
  for (const holder of holders) byFlag.set(holder.flag_key, [...(byFlag.get(holder.flag_key) ?? []), holder.environment]);
  return [...byFlag].map(([key, environments]) => `'${key}' (in ${environments.join(', ')})`).join(', ');
}
