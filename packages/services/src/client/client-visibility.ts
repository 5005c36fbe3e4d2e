import type { Flag } from '@switchyard/core';
import type { EnvironmentSnapshot } from '../evaluation/definition-snapshots.ts';

/**
 * What a client key may see of an environment (docs/client-side.md "What a client sees"): only
 * client-visible, non-archived flags exist for it. Everything else is answered exactly as a flag
 * that does not exist.
 */
export const isClientVisible = (flag: Flag | undefined): flag is Flag => flag !== undefined && flag.client_visible === true && !flag.archived;

/** The flags a client key's bulk answer evaluates, per snapshot (computed once, replaced with it). */
export interface ClientFlags {
  /** Every client-visible flag, in key order (for keys with `include_disabled`). */
  visible: readonly Flag[];
  /** The enabled ones only: a disabled flag is left out, so the app's own default applies. */
  enabled: readonly Flag[];
  /** Whether some client-visible flag's rules test a list segment (evaluation then queries members). */
  readsListSegments: boolean;
}

const bySnapshot = new WeakMap<EnvironmentSnapshot, ClientFlags>();

export function clientFlags(snapshot: EnvironmentSnapshot): ClientFlags {
  let flags = bySnapshot.get(snapshot);
  if (flags === undefined) {
    const visible = snapshot.flagList.filter(isClientVisible);
    flags = {
      visible,
      enabled: visible.filter((flag) => flag.enabled),
      readsListSegments: visible.some((flag) => snapshot.listSegmentKeysByFlag.has(flag.key)),
    };
    bySnapshot.set(snapshot, flags);
  }
  return flags;
}

/** The flags of a client bulk answer: disabled ones only when the key asks for them. */
export const clientBulkFlags = (snapshot: EnvironmentSnapshot, includeDisabled: boolean): readonly Flag[] =>
  includeDisabled ? clientFlags(snapshot).visible : clientFlags(snapshot).enabled;
