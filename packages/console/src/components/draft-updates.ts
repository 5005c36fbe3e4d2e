/**
 * Pure updaters for the rule, prerequisite and client-key forms (see `DraftUpdate` in experiment-setup.ts): each
 * change is a function of the CURRENT draft, so two input events before a re-render both apply.
 */
import type { Prerequisite, Rule } from '../records.ts';

/** Replaces the fields `change` names, keeping the current draft's others. */
export const withChange = <T>(change: Partial<T>) => (current: T): T => ({ ...current, ...change });

/** Applies `update` to the item at index `i` of the current list. */
export const atIndex = <T>(i: number, update: (current: T) => T) => (list: T[]): T[] => list.map((item, j) => (j === i ? update(item) : item));

/** The rule's split with `variantKey` at `percent` (0.1 % steps), the other variants' weights kept; buckets in the flag's variant order. */
export const withWeight = (flagVariantKeys: readonly string[], variantKey: string, percent: number) => (rule: Rule): Rule => {
  if (!rule.allocation) return rule;
  const others = rule.allocation.buckets.filter((b) => b.variant_key !== variantKey);
  const buckets = flagVariantKeys.map((key) =>
    key === variantKey ? { variant_key: key, weight_milli: Math.round(percent * 10) } : (others.find((b) => b.variant_key === key) ?? { variant_key: key, weight_milli: 0 }),
  );
  return { ...rule, allocation: { ...rule.allocation, buckets } };
};

/** Ticks or unticks `variantKey` in the prerequisite's variant list, in the prerequisite flag's variant order. */
export const withVariant = (order: readonly string[], variantKey: string, on: boolean) => (current: Prerequisite): Prerequisite => {
  const chosen = new Set(current.variant_keys);
  if (on) chosen.add(variantKey);
  else chosen.delete(variantKey);
  return { ...current, variant_keys: [...order.filter((key) => chosen.has(key)), ...[...chosen].filter((key) => !order.includes(key))] };
};

/**
 * The tags typed into the flag settings' field: separated by commas or white space, empty parts
 * dropped, each once, in code-point order (the order the API stores them in; docs/contract.md
 * "Flag metadata"). Invalid tags are kept for the API to refuse by name.
 */
export const parseTags = (text: string): string[] => [...new Set(text.split(/[\s,]+/).filter((part) => part !== ''))].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

/** The tags as the field shows them: comma-separated. */
export const tagsText = (tags: readonly string[] | undefined): string => (tags ?? []).join(', ');

/** The flag settings' metadata draft (tags as typed). */
export interface MetadataDraft {
  tags: string;
  lifetime: 'temporary' | 'permanent';
  maintainer: string;
  bucketBy: 'environment' | 'project';
}

/** The `flag` object of the `PUT` that saves the draft: an empty maintainer removes it. */
export const metadataBody = (draft: MetadataDraft) => ({
  tags: parseTags(draft.tags),
  lifetime: draft.lifetime,
  maintainer: draft.maintainer.trim() === '' ? null : draft.maintainer.trim(),
  bucket_by: draft.bucketBy,
});

/** The flags carrying every tag in `wanted` (none wanted: all), for the flags list's tag filter. */
export const withEveryTag = <F extends { tags?: string[] }>(flags: readonly F[], wanted: readonly string[]): F[] =>
  wanted.length === 0 ? [...flags] : flags.filter((flag) => wanted.every((tag) => (flag.tags ?? []).includes(tag)));

/** Every tag the flags carry, once each, in code-point order (the filter's choices). */
export const allTags = (flags: ReadonlyArray<{ tags?: string[] }>): string[] => parseTags(flags.flatMap((flag) => flag.tags ?? []).join(' '));
