/**
 * @switchyard/web: Switchyard in the browser on the stock OpenFeature packages
 * (`@openfeature/web-sdk` + `@openfeature/ofrep-web-provider`, and the React SDK on top). Not an
 * SDK of its own: provider options, an exposure hook, `track`, an anonymous targeting key.
 * docs/client-side.md "8. @switchyard/web, server-side bootstrap, mobile".
 */
export { createSwitchyardWeb, type EventEntry, type SwitchyardWeb, type SwitchyardWebOptions } from './switchyard-web.ts';
export {
  bootstrapFetch,
  DEFAULT_POLL_INTERVAL_MS,
  normalizeBaseUrl,
  ofrepProviderOptions,
  type OfrepBulkAnswer,
  type ProviderFetch,
  type ProviderOptionsInput,
  type SwitchyardProviderOptions,
} from './provider-options.ts';
export { contextOf, createExposureHook, type EvaluationContextLike, type EvaluationDetailsLike, type ExposureEntry, type ExposureHook, type ExposureHookOptions } from './exposure-hook.ts';
export { anonymousTargetingKey, DEFAULT_TARGETING_KEY_STORAGE_KEY, type AnonymousTargetingKeyOptions } from './targeting-key.ts';
export {
  BatchSender,
  chunkEntries,
  MAX_BODY_BYTES,
  MAX_ENTRIES_PER_REQUEST,
  retryAfterMs,
  type BatchSenderOptions,
  type ContextTokenSource,
  type ErrorListener,
  type SendError,
} from './batch-sender.ts';
export type { EventTargetLike, FetchLike, FetchResponseLike, StorageLike, TimersLike } from './platform.ts';
export { EvaluationCounts, MAX_SUMMARY_KEYS } from './evaluation-counts.ts';
export type { SummaryCountEntry } from './evaluation-counts.ts';
