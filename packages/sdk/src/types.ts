import type { Flag, FlagValue, Segment } from '@switchyard/core';

/**
 * Who or what a flag is evaluated for (as docs/sdk.md describes it): a key, a type
 * (default "user") and attributes that targeting conditions read. An array is a multi-context
 * input: conditions may name a context type, and splits hash the type their allocation names.
 */
export interface SdkContext {
  key: string;
  /** Default "user". */
  type?: string;
  attributes?: Record<string, string | number | boolean>;
}

export type SdkContextInput = SdkContext | SdkContext[];

/** Why a value was served. ERROR: the caller's fallback (see error_code). PREREQUISITE_FAILED: the flag's off variant, because a prerequisite flag did not hold. */
export type SdkEvaluationReason = 'DISABLED' | 'TARGETING_MATCH' | 'SPLIT' | 'DEFAULT' | 'PREREQUISITE_FAILED' | 'ERROR';

/**
 * Why an evaluation fell back to the caller's default:
 * - CLIENT_NOT_READY: no definitions yet (none from the server, a cache file or a bootstrap);
 * - FLAG_NOT_FOUND: no such (active) flag;
 * - TYPE_MISMATCH: the flag's value does not have the type asked for (typed helper or fallback);
 * - INVALID_CONTEXT: the context is not `{key: string, type?: string, attributes?: {...}}`;
 * - SEGMENT_NOT_FOUND: a rule names a segment the definitions lack (the value may still come from another rule);
 * - GENERAL: anything else (a malformed flag, an unexpected failure).
 */
export type SdkErrorCode = 'CLIENT_NOT_READY' | 'FLAG_NOT_FOUND' | 'TYPE_MISMATCH' | 'INVALID_CONTEXT' | 'SEGMENT_NOT_FOUND' | 'GENERAL';

/** What variationDetail answers. */
export interface EvaluationDetail<T = FlagValue> {
  value: T;
  /** The variant served; "" when the fallback was served. */
  variant_key: string;
  reason: SdkEvaluationReason;
  /** With reason PREREQUISITE_FAILED: the first prerequisite flag that did not hold. */
  prerequisite_key?: string;
  error_code?: SdkErrorCode;
  error_message?: string;
}

/**
 * - initializing: no definitions from the server yet (and none loaded from elsewhere);
 * - ready: the sync stream is connected and delivered a full snapshot;
 * - stale: serving definitions the stream has not (or no longer) confirmed: disconnected, or
 *   started from a cache file or a bootstrap; the SDK keeps reconnecting;
 * - error: the server refused the SDK key (or its environment); the SDK stopped syncing for good
 *   and serves whatever definitions it had;
 * - closed: close() was called.
 */
export type ClientState = 'initializing' | 'ready' | 'stale' | 'error' | 'closed';

/** Definitions to start from (`bootstrap` option), e.g. read from a file the deployment ships. */
export interface BootstrapDefinitions {
  flags: Flag[];
  segments?: Segment[];
  /** Needed for splits to bucket exactly as the server does (docs/contract.md "Flags and evaluation"). */
  projectId?: string;
  environmentId?: string;
  experimentFlagKeys?: string[];
}

export interface ChangeEvent {
  /** Flags whose definition changed (added, changed, removed, or a segment they name changed), sorted. */
  flag_keys: string[];
}

export interface StateEvent {
  from: ClientState;
  to: ClientState;
  /** Why, for stale and error. */
  reason?: string;
}

export interface ClientEvents {
  ready: [];
  stale: [{ reason: string }];
  error: [{ reason: string; error: Error }];
  change: [ChangeEvent];
  state: [StateEvent];
}
