import type { ContextTokenSource } from './batch-sender.ts';

/** The default poll interval: the fallback when the server names no event stream or it fails. */
export const DEFAULT_POLL_INTERVAL_MS = 30_000;

export interface ProviderOptionsInput {
  /** Where Switchyard answers, e.g. `https://flags.example.com` (no `/ofrep/v1`). */
  baseUrl: string;
  /** The environment's client key (`ck_...`): public by design, safe to ship in a page. */
  clientKey: string;
  /** The signed context token, when the client key requires one (docs/client-side.md "4. Signed contexts"). */
  contextToken?: ContextTokenSource | undefined;
  /** Milliseconds between polls when there is no event stream; default 30 s. 0 turns polling off. */
  pollInterval?: number;
}

/**
 * The options of the stock `@openfeature/ofrep-web-provider`'s constructor that Switchyard needs
 * (a structural subset of its `OFREPWebProviderOptions`: pass the result straight to it, or
 * spread it and add your own).
 */
export interface SwitchyardProviderOptions {
  baseUrl: string;
  headers: [string, string][];
  headersFactory: () => Promise<[string, string][]>;
  pollInterval: number;
}

/** `https://flags.example.com/` → `https://flags.example.com` (the provider appends `/ofrep/v1/...`). */
export function normalizeBaseUrl(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

/**
 * The recommended options for `new OFREPWebProvider(...)`: the client key as `X-API-Key` (OFREP's
 * own scheme, allowed by Switchyard's CORS answers), the signed context token as
 * `Authorization: Bearer` through `headersFactory` (asked before every request, so a renewed
 * token is used at once), and polling as the fallback for the event stream. The provider's own
 * defaults stand for everything else: the event stream the bulk answer names (SSE) is used when
 * the browser has `EventSource`; ETags make unchanged polls a 304; a 429's `Retry-After` pauses it.
 */
export function ofrepProviderOptions(input: ProviderOptionsInput): SwitchyardProviderOptions {
  if (typeof input.clientKey !== 'string' || input.clientKey === '') throw new TypeError('clientKey is required');
  if (input.clientKey.startsWith('sdk_')) {
    throw new TypeError('this is a server key (sdk_...): it must never ship to a browser; create a client key (ck_...) for the environment');
  }
  const contextToken = input.contextToken;
  return {
    baseUrl: normalizeBaseUrl(input.baseUrl),
    headers: [['X-API-Key', input.clientKey]],
    headersFactory: async () => {
      const token = await contextToken?.();
      return typeof token === 'string' && token !== '' ? [['Authorization', `Bearer ${token}`]] : [];
    },
    pollInterval: input.pollInterval ?? DEFAULT_POLL_INTERVAL_MS,
  };
}
