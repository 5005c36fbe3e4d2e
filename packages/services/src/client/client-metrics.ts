import type { Principal } from '@switchyard/core';
import type { ClientWork } from './client-rate-limiter.ts';

/** The kind of an SDK key, as metrics label it: `server` (`sdk_`) or `client` (`ck_`). */
export type KeyKind = 'server' | 'client';
export const KEY_KINDS: readonly KeyKind[] = ['server', 'client'];

/**
 * Why a request was refused for its origin (docs/client-side.md "CORS and origins"): a preflight no
 * active client key allows; an origin outside its client key's list; no Origin from a key without
 * allow_missing_origin; a server key used from a browser.
 */
export type OriginRefusal = 'preflight' | 'origin' | 'missing_origin' | 'server_key_in_browser';
export const ORIGIN_REFUSALS: readonly OriginRefusal[] = ['preflight', 'origin', 'missing_origin', 'server_key_in_browser'];

/** The key kind of a principal; undefined for a user (bearer token), which no key metric counts. */
export const keyKindOf = (principal: Principal): KeyKind | undefined =>
  principal.kind === 'client_key' ? 'client' : principal.kind === 'sdk_key' ? 'server' : undefined;

/**
 * What the client-facing routes report per key kind (docs/client-side.md "6. Limits"), as plain
 * callbacks like ServiceMetrics: the host backs them with Prometheus counters
 * (packages/transport/src/domains/client/client-metrics.ts), the default does nothing. Every
 * call only adds to a counter.
 */
export interface ClientMetrics {
  /** An authenticated request of `work` (OFREP evaluation, exposures/events, a stream open). */
  request(kind: KeyKind, work: ClientWork): void;
  /** A 304 Not Modified answer (OFREP bulk with a current ETag). */
  notModified(kind: KeyKind): void;
  /** A 429 answer, whichever limit refused it (the client limits, or the services' ingest limits). */
  rateLimited(kind: KeyKind, work: ClientWork): void;
  /** A request refused for its `Origin` (preflights count as `client`: only client keys have origins). */
  originRefused(kind: KeyKind, reason: OriginRefusal): void;
  /** A signed context token that was missing, expired, forged or another environment's. */
  signatureFailed(kind: KeyKind): void;
  /** A browser stream opened; pair with streamClosed. */
  streamOpened(kind: KeyKind): void;
  /** A browser stream closed (for whatever reason). */
  streamClosed(kind: KeyKind): void;
  /** A server key presented with an `Origin` header (refused or not, e.g. the server's own origin). */
  serverKeyWithOrigin(): void;
}

/** ClientMetrics that record nothing. */
export const NO_CLIENT_METRICS: ClientMetrics = {
  request: () => {},
  notModified: () => {},
  rateLimited: () => {},
  originRefused: () => {},
  signatureFailed: () => {},
  streamOpened: () => {},
  streamClosed: () => {},
  serverKeyWithOrigin: () => {},
};
