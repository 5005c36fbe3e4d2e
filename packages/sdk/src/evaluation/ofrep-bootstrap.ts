import { evaluate, type EvaluationContext, type EvaluationEnvironment, type Flag, type FlagValue } from '@switchyard/core';

/** One flag of an OFREP bulk answer as a client key gets it: no metadata, no error details. */
export type OfrepBootstrapFlag =
  | { key: string; value?: FlagValue; variant?: string; reason: string }
  | { key: string; errorCode: 'GENERAL' | 'INVALID_CONTEXT' };

/** An OFREP bulk evaluation answer (`POST /ofrep/v1/evaluate/flags`) for one context. */
export interface OfrepBootstrap {
  flags: OfrepBootstrapFlag[];
}

export interface OfrepBootstrapOptions {
  /** Include disabled flags (their off variant), as a client key with `include_disabled` does. Default false. */
  includeDisabled?: boolean;
}

/** Code-point order, as the server's (`ORDER BY key COLLATE "C"`). */
const byKey = (a: Flag, b: Flag): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/**
 * What the server answers a client key's OFREP bulk request for these contexts (docs/client-side.md
 * "What a client sees"), computed from the definitions in memory: client-visible, non-archived
 * flags only, disabled ones left out unless asked for, each as key/value/variant/reason.
 * `environment` carries every flag of the environment (`flags`), where prerequisites are found:
 * a client-visible flag's prerequisite may be hidden from clients; only its result is used.
 */
export function ofrepBootstrapOf(
  flags: Iterable<Flag>,
  contexts: EvaluationContext[],
  environment: EvaluationEnvironment,
  options: OfrepBootstrapOptions = {},
  refuse = false,
): OfrepBootstrap {
  const visible = [...flags].filter((flag) => flag.client_visible && !flag.archived && (flag.enabled || options.includeDisabled === true)).sort(byKey);
  const out: OfrepBootstrapFlag[] = [];
  for (const flag of visible) {
    // `refuse`: the definitions use an evaluation feature this SDK does not know (fail closed).
    if (refuse) {
      out.push({ key: flag.key, errorCode: 'GENERAL' });
      continue;
    }
    const result = evaluate(flag, contexts, environment);
    if (result.error_code === 'GENERAL' || result.error_code === 'INVALID_CONTEXT') {
      out.push({ key: flag.key, errorCode: result.error_code });
      continue;
    }
    const entry: { key: string; value?: FlagValue; variant?: string; reason: string } = { key: flag.key } as { key: string; reason: string };
    if (result.value !== null) entry.value = result.value as FlagValue;
    if (result.variant_key !== '') entry.variant = result.variant_key;
    entry.reason = result.reason;
    out.push(entry);
  }
  return { flags: out };
}
