export * from './logger.ts';
export { SwitchyardClient } from './client.ts';
export type { SwitchyardOptions } from './options.ts';
export { TestData } from './testing/test-data.ts';
export type { EventDeliveryStats } from './events/event-delivery.ts';
export type { EvaluationSummaryStats } from './events/evaluation-summaries.ts';
export type { OfrepBootstrap, OfrepBootstrapFlag, OfrepBootstrapOptions } from './evaluation/ofrep-bootstrap.ts';
export { ClientClosedError, ReadyTimeoutError, SdkKeyRefusedError } from './errors.ts';
export type {
  BootstrapDefinitions,
  ChangeEvent,
  ClientEvents,
  ClientState,
  EvaluationDetail,
  SdkContext,
  SdkContextInput,
  SdkErrorCode,
  SdkEvaluationReason,
  StateEvent,
} from './types.ts';
export type { Flag, Segment, FlagValue } from '@switchyard/core';
export { signContext, DEFAULT_CONTEXT_TOKEN_TTL_MS, MAX_CONTEXT_TOKEN_TTL_MS, type ContextSigner, type SignableContext } from './client-side/sign-context.ts';
/**
 * The evaluation features this SDK knows (docs/sdk.md "Evaluation features"): when the sync
 * stream names one that is not in this list, the SDK refuses to evaluate (callers get their
 * defaults with an error) instead of ignoring what it cannot read.
 */
export { KNOWN_EVALUATION_FEATURES } from '@switchyard/core';
