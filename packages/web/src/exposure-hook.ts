import type { BatchSender } from './batch-sender.ts';

/** An OpenFeature evaluation context as the web SDK passes it to hooks. */
export type EvaluationContextLike = Readonly<Record<string, unknown>> & { targetingKey?: string };

/** What the hook reads of the evaluation details (a structural subset of OpenFeature's `EvaluationDetails`). */
export interface EvaluationDetailsLike {
  flagKey: string;
  value: unknown;
  variant?: string | undefined;
  reason?: string | undefined;
  errorCode?: string | undefined;
}

/**
 * An OpenFeature hook (structurally `Hook` of `@openfeature/web-sdk`): register it with
 * `OpenFeature.addHooks(hook)` or on one client.
 */
export interface ExposureHook {
  after(hookContext: { flagKey: string; context: EvaluationContextLike }, details: EvaluationDetailsLike): void;
}

/** One exposure as the exposures route takes it (docs/contract.md "Events, exposures and idempotency"). */
export interface ExposureEntry {
  flag_key: string;
  variant_key: string;
  context_type: string;
  context_key: string;
  timestamp_ms: number;
  /** The context's attributes as evaluated (scalars). */
  attributes: Record<string, string | number | boolean>;
}

/** Scalar attributes of an OpenFeature context, as the server's OFREP mapping reads them. */
export function contextOf(context: EvaluationContextLike): { contextType: string; contextKey: string | undefined; attributes: Record<string, string | number | boolean> } {
  const { targetingKey, kind, context_type: contextType, ...rest } = context as Record<string, unknown>;
  const attributes: Record<string, string | number | boolean> = {};
  for (const [name, value] of Object.entries(rest)) {
    if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) attributes[name] = value;
  }
  const type = typeof contextType === 'string' ? contextType : typeof kind === 'string' ? kind : 'user';
  return { contextType: type, contextKey: typeof targetingKey === 'string' && targetingKey !== '' ? targetingKey : undefined, attributes };
}

export interface ExposureHookOptions {
  /** Which reads to report; default every successful read that names a variant. */
  shouldReport?: (flagKey: string, details: EvaluationDetailsLike) => boolean;
  /** Exposures remembered for de-duplication (the oldest are forgotten beyond it); default 5,000. */
  maxRemembered?: number;
  now: () => number;
  /** Told of every flag read, before any filtering (evaluation counts, docs/client-side.md). */
  countRead?: ((flagKey: string, variantKey: string, reason: string) => void) | undefined;
}

/** Reasons with nothing to report: no variant was chosen for the context. */
const SILENT_REASONS = new Set(['ERROR', 'DISABLED']);

/**
 * The hook that reports exposures: after a flag is read, one exposure per (context type, context
 * key, flag, variant) for the page's life, queued on `sender` (sent in batches). Reads that failed,
 * fell back to the default (no variant) or came from a disabled flag are not exposures. The server
 * decides what counts (client-visible flags under an active experiment, the variant its own
 * evaluation gives): this hook only avoids sending the same one twice.
 */
export function createExposureHook(sender: Pick<BatchSender, 'add'>, options: ExposureHookOptions): ExposureHook {
  const maxRemembered = options.maxRemembered ?? 5000;
  const seen = new Set<string>();
  return {
    after(hookContext, details) {
      const variant = details.variant;
      options.countRead?.(details.flagKey, typeof variant === 'string' ? variant : '', details.errorCode !== undefined ? 'ERROR' : (details.reason ?? 'UNKNOWN'));
      if (typeof variant !== 'string' || variant === '' || details.errorCode !== undefined) return;
      if (details.reason !== undefined && SILENT_REASONS.has(details.reason)) return;
      if (options.shouldReport && !options.shouldReport(details.flagKey, details)) return;
      const { contextType, contextKey, attributes } = contextOf(hookContext.context ?? {});
      if (contextKey === undefined) return; // no targeting key: nobody to attribute it to
      const dedupe = JSON.stringify([contextType, contextKey, details.flagKey, variant]);
      if (seen.has(dedupe)) return;
      seen.add(dedupe);
      if (seen.size > maxRemembered) seen.delete(seen.values().next().value as string);
      const entry: ExposureEntry = { flag_key: details.flagKey, variant_key: variant, context_type: contextType, context_key: contextKey, timestamp_ms: options.now(), attributes };
      sender.add(entry);
    },
  };
}
