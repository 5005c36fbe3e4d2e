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
  /**
   * An OFREP bulk answer rendered by your server for the page's initial context (the Node SDK's
   * `client.ofrepBootstrap(context)`): the provider's first request is answered from it, without
   * the network, so the page starts with its values (no flash). Later requests go to Switchyard.
   */
  bootstrap?: OfrepBulkAnswer | null | undefined;
  /** The fetch the provider uses (default the page's); the bootstrap wraps it. */
  fetchImplementation?: ProviderFetch | undefined;
}

/** An OFREP bulk evaluation answer: `{flags: [{key, value, variant, reason} | {key, errorCode}]}`. */
export interface OfrepBulkAnswer {
  flags: unknown[];
}

/**
 * The provider's `fetchImplementation` (the page's `fetch`): typed loosely on purpose, so the
 * options fit `OFREPWebProviderOptions` without this package depending on the DOM's types.
 */
export type ProviderFetch = (input: any, init?: any) => Promise<any>;

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
  fetchImplementation?: ProviderFetch;
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
  const options: SwitchyardProviderOptions = {
    baseUrl: normalizeBaseUrl(input.baseUrl),
    headers: [['X-API-Key', input.clientKey]],
    headersFactory: async () => {
      const token = await contextToken?.();
      return typeof token === 'string' && token !== '' ? [['Authorization', `Bearer ${token}`]] : [];
    },
    pollInterval: input.pollInterval ?? DEFAULT_POLL_INTERVAL_MS,
  };
  const fetchImplementation = input.bootstrap ? bootstrapFetch(input.bootstrap, input.fetchImplementation) : input.fetchImplementation;
  if (fetchImplementation !== undefined) options.fetchImplementation = fetchImplementation;
  return options;
}

const BULK_PATH = /\/ofrep\/v1\/evaluate\/flags(\?|$)/;

/**
 * A fetch that answers the first bulk evaluation from `bootstrap` (200, JSON, no ETag, so the
 * next request gets a full answer) and sends everything else to `next` (default the page's fetch).
 */
export function bootstrapFetch(bootstrap: OfrepBulkAnswer, next?: ProviderFetch): ProviderFetch {
  const globals = globalThis as unknown as { fetch?: ProviderFetch; Response?: new (body: string, init: { status: number; headers: Record<string, string> }) => unknown };
  let pending: OfrepBulkAnswer | undefined = bootstrap;
  return (input, init) => {
    const url: string = typeof input === 'string' ? input : String(input?.url ?? input);
    const method: string = String((typeof input === 'object' && input !== null && 'method' in input ? input.method : init?.method) ?? 'GET').toUpperCase();
    if (pending !== undefined && method === 'POST' && BULK_PATH.test(url) && typeof globals.Response === 'function') {
      const body = JSON.stringify(pending);
      pending = undefined;
      return Promise.resolve(new globals.Response(body, { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' } }));
    }
    const fetch = next ?? globals.fetch;
    if (fetch === undefined) return Promise.reject(new Error('no fetch'));
    return next ? next(input, init) : fetch.call(globalThis, input, init);
  };
}
