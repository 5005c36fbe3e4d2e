import type { EnvironmentScope } from '@switchyard/core';
import type { DefinitionSnapshots, EnvironmentSnapshot } from '../evaluation/definition-snapshots.ts';
import type { FlagVariants } from './event-validation.ts';

/**
 * The variant keys of every active flag of an environment, read from the evaluation snapshots
 * (no database round trip) and computed once per snapshot: a definition change replaces the
 * snapshot, and with it this map.
 */
export function flagVariantsFrom(snapshots: Pick<DefinitionSnapshots, 'get'>): (scope: EnvironmentScope) => Promise<FlagVariants> {
  const computed = new WeakMap<EnvironmentSnapshot, FlagVariants>();
  return async (scope) => {
    const snapshot = await snapshots.get(scope);
    let variants = computed.get(snapshot);
    if (!variants) {
      variants = new Map([...snapshot.flags].map(([key, flag]) => [key, new Set(flag.variants.map((variant) => variant.key))]));
      computed.set(snapshot, variants);
    }
    return variants;
  };
}
