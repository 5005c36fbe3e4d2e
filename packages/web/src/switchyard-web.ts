import { SummarySender } from './evaluation-counts.ts';
import { BatchSender, type ContextTokenSource, type ErrorListener } from './batch-sender.ts';
import { contextOf, createExposureHook, type EvaluationContextLike, type EvaluationDetailsLike, type ExposureHook } from './exposure-hook.ts';
import { globalEventTarget, globalFetch, globalTimers, pageIsHidden, type EventTargetLike, type FetchLike, type TimersLike } from './platform.ts';
import { normalizeBaseUrl, ofrepProviderOptions, type OfrepBulkAnswer, type ProviderFetch, type SwitchyardProviderOptions } from './provider-options.ts';

export interface SwitchyardWebOptions {
  /** Where Switchyard answers, e.g. `https://flags.example.com`. */
  baseUrl: string;
  /** The environment the client key belongs to (its id, as in every `/v1/environments/{env_id}` route). */
  environmentId: string;
  /** The environment's client key (`ck_...`). */
  clientKey: string;
  /** The signed context token, when the client key requires one; asked before each request. */
  contextToken?: ContextTokenSource;
  /** How often queued exposures and events are sent; default 2 s. */
  flushIntervalMs?: number;
  /** Entries kept per route while the server is unreachable or limiting; default 1,000. */
  maxQueued?: number;
  /** Which flag reads the hook reports; default every read that names a variant. */
  shouldReportExposure?: (flagKey: string, details: EvaluationDetailsLike) => boolean;
  /** Told about entries the server refused or that could not be kept (never throws into the page). */
  onError?: ErrorListener;
  /**
   * Flag reads counted per (flag, variant, reason) and sent as a summary every `intervalMs`
   * (default 60 s) and when the page is hidden or left (docs/client-side.md "Evaluation counts");
   * `false` counts and sends nothing.
   */
  evaluationCounts?: false | { intervalMs?: number };
  /** Defaults: the page's `fetch`, timers and `window`, and `Date.now`. */
  fetch?: FetchLike;
  timers?: TimersLike;
  /** Where `pagehide`/`visibilitychange` come from; `null` for none. */
  eventTarget?: EventTargetLike | null;
  now?: () => number;
}

/** One metric event as the events route takes it. */
export interface EventEntry {
  metric_key: string;
  context_type: string;
  context_key: string;
  value?: number | boolean;
  timestamp_ms: number;
}

export interface SwitchyardWeb {
  /** Options for `new OFREPWebProvider(...)` (see `ofrepProviderOptions`). */
  providerOptions(extra?: { pollInterval?: number; bootstrap?: OfrepBulkAnswer | null; fetchImplementation?: ProviderFetch }): SwitchyardProviderOptions;
  /** The exposure hook, one per instance: `OpenFeature.addHooks(web.exposureHook)`. */
  readonly exposureHook: ExposureHook;
  /**
   * Records a metric event for a context (an OpenFeature context, or `{context_type, context_key}`):
   * only events whose definition is marked client-allowed are accepted for a client key. `value`
   * for numeric metrics; a bool metric counts the event itself.
   */
  track(metricKey: string, context: EvaluationContextLike | { context_type: string; context_key: string }, value?: number | boolean): void;
  /** Sends what is queued now (e.g. before navigating away yourself). */
  flush(): Promise<void>;
  /** Sends what is queued with keepalive and stops (timers, page listeners). */
  close(): Promise<void>;
}

/**
 * Switchyard in a page, next to the stock OpenFeature web SDK: provider options, the exposure
 * hook and `track`, sharing one client key, one signed context token and one batching policy.
 * Queued entries are sent every `flushIntervalMs`, at 100 entries, and when the page is hidden
 * or left (`visibilitychange` to hidden, `pagehide`) with `fetch(..., {keepalive: true})`, which
 * outlives the page.
 */
export function createSwitchyardWeb(options: SwitchyardWebOptions): SwitchyardWeb {
  if (typeof options.environmentId !== 'string' || options.environmentId === '') throw new TypeError('environmentId is required');
  // Refuses a server key (sdk_...) before anything is sent.
  ofrepProviderOptions({ baseUrl: options.baseUrl, clientKey: options.clientKey });
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  const environment = encodeURIComponent(options.environmentId);
  const fetch = options.fetch ?? globalFetch();
  if (fetch === undefined) throw new Error('@switchyard/web needs fetch (pass options.fetch)');
  const timers = options.timers ?? globalTimers();
  const now = options.now ?? (() => Date.now());
  const common = {
    clientKey: options.clientKey,
    contextToken: options.contextToken,
    fetch,
    timers,
    flushIntervalMs: options.flushIntervalMs ?? 2000,
    maxQueued: options.maxQueued ?? 1000,
    now,
    onError: options.onError,
  };
  const exposures = new BatchSender({ ...common, url: `${baseUrl}/v1/environments/${environment}/exposures`, route: 'exposures', body: (entries) => ({ exposures: entries }) });
  const events = new BatchSender({ ...common, url: `${baseUrl}/v1/environments/${environment}/events/batch`, route: 'events', body: (entries) => ({ events: entries }) });
  const summaries =
    options.evaluationCounts === false
      ? undefined
      : new SummarySender({
          url: `${baseUrl}/v1/environments/${environment}/evaluation-summaries`,
          clientKey: options.clientKey,
          contextToken: options.contextToken,
          fetch,
          timers,
          intervalMs: options.evaluationCounts?.intervalMs ?? 60_000,
          now,
          onError: options.onError,
        });

  const target = options.eventTarget === undefined ? globalEventTarget() : (options.eventTarget ?? undefined);
  const leaving = () => {
    void exposures.flush({ keepalive: true });
    void events.flush({ keepalive: true });
    void summaries?.flush({ keepalive: true });
  };
  const hidden = () => {
    if (pageIsHidden()) leaving();
  };
  target?.addEventListener('pagehide', leaving);
  target?.addEventListener('visibilitychange', hidden);

  const countRead = summaries === undefined ? undefined : (flagKey: string, variantKey: string, reason: string) => summaries.count(flagKey, variantKey, reason);
  const exposureHook = createExposureHook(exposures, { now, countRead, ...(options.shouldReportExposure ? { shouldReport: options.shouldReportExposure } : {}) });

  return {
    providerOptions: (extra = {}) =>
      ofrepProviderOptions({ baseUrl: options.baseUrl, clientKey: options.clientKey, contextToken: options.contextToken, ...extra }),
    exposureHook,
    track(metricKey, context, value) {
      let contextType: string;
      let contextKey: string | undefined;
      if (typeof (context as { context_key?: unknown }).context_key === 'string') {
        contextType = String((context as { context_type?: unknown }).context_type ?? 'user');
        contextKey = (context as { context_key: string }).context_key;
      } else {
        ({ contextType, contextKey } = contextOf(context as EvaluationContextLike));
      }
      if (typeof metricKey !== 'string' || metricKey === '') throw new TypeError('track needs a metric key');
      if (contextKey === undefined || contextKey === '') throw new TypeError('track needs a context with a targeting key');
      const entry: EventEntry = { metric_key: metricKey, context_type: contextType, context_key: contextKey, timestamp_ms: now() };
      if (value !== undefined) entry.value = value;
      events.add(entry);
    },
    flush: async () => {
      await Promise.all([exposures.flush(), events.flush(), summaries?.flush()]);
    },
    close: async () => {
      target?.removeEventListener('pagehide', leaving);
      target?.removeEventListener('visibilitychange', hidden);
      await Promise.all([exposures.close(), events.close(), summaries?.close()]);
    },
  };
}
