import {
  ErrorCode,
  OpenFeatureEventEmitter,
  ProviderEvents,
  type EvaluationContext,
  type JsonValue,
  type Provider,
  type ResolutionDetails,
  type TrackingEventDetails,
} from '@openfeature/server-sdk';
import { SwitchyardClient } from '../client.ts';
import type { SwitchyardOptions } from '../options.ts';
import type { EvaluationDetail, SdkContext, SdkErrorCode } from '../types.ts';

/** Options of the provider: the client's (docs/sdk.md "Options") and how long initialize waits. */
export interface SwitchyardProviderOptions extends SwitchyardOptions {
  /** How long OpenFeature's initialize waits for definitions (default 10 s). */
  readyTimeoutMs?: number;
}

/** SDK error codes → OpenFeature's. */
const ERROR_CODES: Record<SdkErrorCode, ErrorCode> = {
  CLIENT_NOT_READY: ErrorCode.PROVIDER_NOT_READY,
  FLAG_NOT_FOUND: ErrorCode.FLAG_NOT_FOUND,
  TYPE_MISMATCH: ErrorCode.TYPE_MISMATCH,
  INVALID_CONTEXT: ErrorCode.INVALID_CONTEXT,
  SEGMENT_NOT_FOUND: ErrorCode.GENERAL,
  GENERAL: ErrorCode.GENERAL,
};

/** The attribute that names the context's type (docs/sdk.md "OpenFeature"). */
const CONTEXT_TYPE_ATTRIBUTE = 'context_type';

/**
 * An OpenFeature server provider evaluating in-process with a SwitchyardClient (docs/sdk.md
 * "OpenFeature"): `targetingKey` is the context key, the attribute `context_type` (default "user")
 * its type; other string, number and boolean attributes are the context's attributes (other
 * values are ignored). The client's states become provider events: ready → READY, stale → STALE,
 * error → ERROR, change → CONFIGURATION_CHANGED with the flag keys. `track` sends a metric event.
 */
export class SwitchyardProvider implements Provider {
  readonly metadata = { name: 'switchyard' } as const;
  readonly runsOn = 'server' as const;
  readonly events = new OpenFeatureEventEmitter();
  /** The client behind the provider (its state, diagnostics, flush). */
  readonly client: SwitchyardClient;
  private readonly readyTimeoutMs: number;

  constructor(options: SwitchyardProviderOptions) {
    const { readyTimeoutMs, ...clientOptions } = options;
    if (readyTimeoutMs !== undefined && (typeof readyTimeoutMs !== 'number' || !Number.isFinite(readyTimeoutMs) || readyTimeoutMs < 0)) {
      throw new RangeError(`readyTimeoutMs must be a number of 0 or more (got ${String(readyTimeoutMs)})`);
    }
    this.readyTimeoutMs = readyTimeoutMs ?? 10_000;
    this.client = new SwitchyardClient(clientOptions);
    // READY after initialize is emitted by OpenFeature itself; these report what happens later.
    this.client.on('ready', () => this.events.emit(ProviderEvents.Ready));
    this.client.on('stale', ({ reason }) => this.events.emit(ProviderEvents.Stale, { message: reason }));
    this.client.on('error', ({ reason }) => this.events.emit(ProviderEvents.Error, { message: reason, errorCode: ErrorCode.PROVIDER_FATAL }));
    this.client.on('change', ({ flag_keys }) => this.events.emit(ProviderEvents.ConfigurationChanged, { flagsChanged: flag_keys }));
  }

  /** Resolves once definitions are available; rejects on a refused key or after readyTimeoutMs. */
  async initialize(): Promise<void> {
    await this.client.waitForReady({ timeoutMs: this.readyTimeoutMs });
  }

  async onClose(): Promise<void> {
    await this.client.close();
  }

  resolveBooleanEvaluation(flagKey: string, defaultValue: boolean, context: EvaluationContext): Promise<ResolutionDetails<boolean>> {
    return this.resolve(flagKey, defaultValue, context);
  }

  resolveStringEvaluation(flagKey: string, defaultValue: string, context: EvaluationContext): Promise<ResolutionDetails<string>> {
    return this.resolve(flagKey, defaultValue, context);
  }

  resolveNumberEvaluation(flagKey: string, defaultValue: number, context: EvaluationContext): Promise<ResolutionDetails<number>> {
    return this.resolve(flagKey, defaultValue, context);
  }

  resolveObjectEvaluation<T extends JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>> {
    return this.resolve(flagKey, defaultValue, context);
  }

  /** OpenFeature's tracking API: a metric event named `trackingEventName`, with `details.value`. */
  track(trackingEventName: string, context: EvaluationContext, details: TrackingEventDetails): void {
    const sdkContext = toSdkContext(context);
    if (sdkContext) this.client.track(trackingEventName, sdkContext, details?.value);
  }

  /**
   * One resolution. The async variation resolves list-segment memberships first, so a rule naming a
   * list segment is decided by the server's answer, not by an empty cache.
   */
  private async resolve<T extends boolean | string | number | JsonValue>(flagKey: string, defaultValue: T, context: EvaluationContext): Promise<ResolutionDetails<T>> {
    const sdkContext = toSdkContext(context);
    if (!sdkContext) {
      return { value: defaultValue, reason: 'ERROR', errorCode: ErrorCode.TARGETING_KEY_MISSING, errorMessage: 'the evaluation context has no targetingKey' };
    }
    const detail = (await this.client.variationDetailAsync(flagKey, sdkContext, defaultValue as never)) as EvaluationDetail<T>;
    const resolution: ResolutionDetails<T> = { value: detail.value, reason: detail.reason };
    if (detail.variant_key !== '') resolution.variant = detail.variant_key;
    // PREREQUISITE_FAILED is passed on as it is (OpenFeature's reasons are open strings), naming the prerequisite.
    if (detail.prerequisite_key !== undefined) resolution.flagMetadata = { prerequisite_key: detail.prerequisite_key };
    if (detail.reason === 'ERROR' && detail.error_code !== undefined) {
      resolution.errorCode = ERROR_CODES[detail.error_code];
      if (detail.error_message !== undefined) resolution.errorMessage = detail.error_message;
    }
    return resolution;
  }
}

/** OpenFeature's context → the SDK's; undefined without a usable targetingKey. */
export function toSdkContext(context: EvaluationContext): SdkContext | undefined {
  const { targetingKey, [CONTEXT_TYPE_ATTRIBUTE]: contextType, ...rest } = context ?? {};
  if (typeof targetingKey !== 'string' || targetingKey === '') return undefined;
  const attributes: Record<string, string | number | boolean> = {};
  for (const [name, value] of Object.entries(rest)) {
    if (typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) attributes[name] = value;
  }
  const sdkContext: SdkContext = { key: targetingKey, attributes };
  if (typeof contextType === 'string' && contextType !== '') sdkContext.type = contextType;
  return sdkContext;
}
