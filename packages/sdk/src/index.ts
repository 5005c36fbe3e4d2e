export * from './logger.ts';
export { SwitchyardClient } from './client.ts';
export type { SwitchyardOptions } from './options.ts';
export { TestData } from './testing/test-data.ts';
export type { EventDeliveryStats } from './events/event-delivery.ts';
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
