import { DEFAULT_EVALUATION_BUDGET_MS } from '@switchyard/core';
import type { SdkLogger } from './logger.ts';
import { consoleLogger } from './logger.ts';
import type { TestData } from './testing/test-data.ts';
import type { BootstrapDefinitions } from './types.ts';

/** Options of `new SwitchyardClient(...)`; docs/sdk.md "Options" describes each. */
export interface SwitchyardOptions {
  /** The environment's SDK key (`x-sdk-key`). Required unless `testData`. */
  sdkKey?: string;
  /** The environment; omitted: the key's own, learnt from the first sync message. */
  environmentId?: string;
  /** The REST API, e.g. `http://localhost:8080` (list-checks, events, exposures). Required unless `testData`. */
  baseUrl?: string;
  /** The sync port: `host:port` (plaintext unless `tls`), or `http://host:port` / `https://host:port`. Required unless `testData`. */
  syncUrl?: string;
  /** TLS for the sync stream; `ca`: the CA certificate (PEM) to trust besides the system ones. */
  tls?: { ca?: Buffer | string };
  logger?: SdkLogger;
  /** Reconnect backoff of the sync stream (docs/sdk.md "Reconnecting"). */
  reconnect?: { baseDelayMs?: number; maxDelayMs?: number; resetAfterMs?: number };
  /** Where the last definitions are kept for a start without the server (docs/sdk.md "File cache"). */
  cacheFile?: string;
  /** How long the first connection may take before the cache file is used (default 1,500 ms). */
  cacheFallbackMs?: number;
  /** At most one cache write per this interval (default 1,000 ms). */
  cacheWriteIntervalMs?: number;
  /** Definitions to serve until the server delivers its own. */
  bootstrap?: BootstrapDefinitions;
  /** A test data source instead of a server: no key, no URLs, no network. */
  testData?: TestData;
  /** The cache of list-segment answers (docs/sdk.md "List segments"). */
  listSegmentCache?: { maxEntries?: number; ttlMs?: number };
  /** Metric events and exposures (docs/sdk.md "Event delivery"). `enabled: false` sends none. */
  events?: { enabled?: boolean; flushIntervalMs?: number; maxBatchSize?: number; maxQueueSize?: number };
  /**
   * Evaluation counts sent to the server for flag insights (docs/sdk.md "Evaluation counts"):
   * a summary every `intervalMs` (default 60,000) and on close. `enabled: false` counts and sends
   * nothing. Off by default with `testData`; `enabled: true` there counts and sends to `baseUrl`.
   */
  evaluationCounts?: { enabled?: boolean; intervalMs?: number };
  /**
   * How long one flag's evaluation may run before it answers the fallback with error GENERAL
   * (default 100 ms; 0: no limit). A bound on `matches` patterns run against long attribute
   * values (docs/sdk.md "Options").
   */
  evaluationBudgetMs?: number;
  /** The fetch used for REST calls (default: global fetch). */
  fetch?: typeof fetch;
  /** Clock and randomness, replaceable in tests. */
  now?: () => number;
  random?: () => number;
}

export interface ResolvedOptions {
  sdkKey: string;
  environmentId: string | undefined;
  baseUrl: string | undefined;
  sync: { target: string; secure: boolean; ca: Buffer | undefined } | undefined;
  logger: SdkLogger;
  reconnect: { baseDelayMs: number; maxDelayMs: number; resetAfterMs: number };
  cacheFile: string | undefined;
  cacheFallbackMs: number;
  cacheWriteIntervalMs: number;
  bootstrap: BootstrapDefinitions | undefined;
  testData: TestData | undefined;
  listSegmentCache: { maxEntries: number; ttlMs: number };
  events: { enabled: boolean; flushIntervalMs?: number; maxBatchSize?: number; maxQueueSize?: number };
  evaluationCounts: { enabled: boolean; intervalMs?: number };
  evaluationBudgetMs: number;
  fetch: typeof fetch;
  now: () => number;
  random: () => number;
}

function nonNegative(value: number | undefined, name: string, fallback: number, { positive = false } = {}): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new TypeError(`${name} must be a finite number (got ${String(value)})`);
  if (value < 0 || (positive && value === 0)) throw new RangeError(`${name} must be ${positive ? 'greater than 0' : '0 or more'} (got ${value})`);
  return value;
}

function optionalPositive(value: number | undefined, name: string): number | undefined {
  return value === undefined ? undefined : nonNegative(value, name, 0, { positive: true });
}

function parseBaseUrl(value: unknown): string {
  if (typeof value !== 'string' || value === '') throw new TypeError('baseUrl is required: the REST API, e.g. "http://localhost:8080"');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`baseUrl must be an http(s) URL such as "http://localhost:8080" (got "${value}")`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`baseUrl must be an http or https URL (got "${value}")`);
  if (url.search !== '' || url.hash !== '') throw new TypeError(`baseUrl must not have a query or fragment (got "${value}")`);
  return url.toString().replace(/\/+$/, '');
}

/** `host:port`, `http://host:port` or `https://host:port` → a grpc-js target and whether it is TLS. */
function parseSyncUrl(value: unknown, tls: SwitchyardOptions['tls']): { target: string; secure: boolean; ca: Buffer | undefined } {
  if (typeof value !== 'string' || value === '') throw new TypeError('syncUrl is required: the sync port as "host:port", e.g. "localhost:50050"');
  let rest = value;
  let secure = tls !== undefined;
  const scheme = /^([a-z]+):\/\//i.exec(value);
  if (scheme) {
    const name = scheme[1]!.toLowerCase();
    if (name !== 'http' && name !== 'https') throw new TypeError(`syncUrl must be "host:port", "http://host:port" or "https://host:port" (got "${value}")`);
    if (name === 'https') secure = true;
    rest = value.slice(scheme[0].length).replace(/\/$/, '');
  }
  const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(rest);
  const port = match ? Number(match[2]) : NaN;
  if (!match || port < 1 || port > 65535) throw new TypeError(`syncUrl must be "host:port" with a port from 1 to 65535, e.g. "localhost:50050" (got "${value}")`);
  if (tls !== undefined && (typeof tls !== 'object' || tls === null)) throw new TypeError('tls must be an object {ca?}');
  const ca = tls?.ca;
  if (ca !== undefined && typeof ca !== 'string' && !Buffer.isBuffer(ca)) throw new TypeError('tls.ca must be a PEM string or a Buffer');
  return { target: `${match[1]}:${port}`, secure, ca: ca === undefined ? undefined : Buffer.from(ca) };
}

/**
 * Checks every option and fills in the defaults. The only place the SDK throws: a TypeError or
 * RangeError whose message names the option.
 */
export function resolveOptions(options: SwitchyardOptions): ResolvedOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('options must be an object');
  const testData = options.testData;
  if (testData === undefined) {
    if (typeof options.sdkKey !== 'string' || options.sdkKey.trim() === '') throw new TypeError('sdkKey is required (the environment\'s SDK key), unless testData is given');
    // It travels as an HTTP header (x-sdk-key, X-API-Key): a control character would be dropped
    // with the request on every attempt, which would look like a server that never answers.
    if (!/^[\x20-\x7e]+$/.test(options.sdkKey)) throw new TypeError('sdkKey must be the key as the console shows it: ASCII characters, no line breaks or other control characters');
  } else if (options.sdkKey !== undefined && typeof options.sdkKey !== 'string') {
    throw new TypeError('sdkKey must be a string');
  }
  if (options.environmentId !== undefined && (typeof options.environmentId !== 'string' || options.environmentId === '')) {
    throw new TypeError('environmentId must be a non-empty string when given');
  }
  const baseUrl = testData === undefined || options.baseUrl !== undefined ? parseBaseUrl(options.baseUrl) : undefined;
  const sync = testData === undefined ? parseSyncUrl(options.syncUrl, options.tls) : undefined;
  if (options.cacheFile !== undefined && (typeof options.cacheFile !== 'string' || options.cacheFile === '')) throw new TypeError('cacheFile must be a file path');
  if (options.bootstrap !== undefined && (typeof options.bootstrap !== 'object' || options.bootstrap === null || !Array.isArray(options.bootstrap.flags))) {
    throw new TypeError('bootstrap must be {flags: Flag[], segments?: Segment[], ...}');
  }
  if (options.fetch !== undefined && typeof options.fetch !== 'function') throw new TypeError('fetch must be a function');
  const reconnect = options.reconnect ?? {};
  const baseDelayMs = nonNegative(reconnect.baseDelayMs, 'reconnect.baseDelayMs', 500, { positive: true });
  const maxDelayMs = nonNegative(reconnect.maxDelayMs, 'reconnect.maxDelayMs', 30_000, { positive: true });
  if (maxDelayMs < baseDelayMs) throw new RangeError(`reconnect.maxDelayMs (${maxDelayMs}) must not be below reconnect.baseDelayMs (${baseDelayMs})`);
  const list = options.listSegmentCache ?? {};
  const events = options.events ?? {};
  return {
    sdkKey: options.sdkKey ?? '',
    environmentId: options.environmentId,
    baseUrl,
    sync,
    logger: options.logger ?? consoleLogger,
    reconnect: { baseDelayMs, maxDelayMs, resetAfterMs: nonNegative(reconnect.resetAfterMs, 'reconnect.resetAfterMs', 60_000) },
    cacheFile: options.cacheFile,
    cacheFallbackMs: nonNegative(options.cacheFallbackMs, 'cacheFallbackMs', 1_500),
    cacheWriteIntervalMs: nonNegative(options.cacheWriteIntervalMs, 'cacheWriteIntervalMs', 1_000),
    bootstrap: options.bootstrap,
    testData,
    listSegmentCache: {
      maxEntries: Math.floor(nonNegative(list.maxEntries, 'listSegmentCache.maxEntries', 10_000, { positive: true })),
      ttlMs: nonNegative(list.ttlMs, 'listSegmentCache.ttlMs', 60_000),
    },
    events: {
      enabled: events.enabled ?? true,
      flushIntervalMs: optionalPositive(events.flushIntervalMs, 'events.flushIntervalMs'),
      maxBatchSize: optionalPositive(events.maxBatchSize, 'events.maxBatchSize'),
      maxQueueSize: optionalPositive(events.maxQueueSize, 'events.maxQueueSize'),
    },
    evaluationCounts: {
      // On by default with a server; with testData only when asked for (and sent to baseUrl).
      enabled: options.evaluationCounts?.enabled ?? testData === undefined,
      intervalMs: optionalPositive(options.evaluationCounts?.intervalMs, 'evaluationCounts.intervalMs'),
    },
    evaluationBudgetMs: nonNegative(options.evaluationBudgetMs, 'evaluationBudgetMs', DEFAULT_EVALUATION_BUDGET_MS),
    fetch: options.fetch ?? ((input, init) => fetch(input, init)),
    now: options.now ?? Date.now,
    random: options.random ?? Math.random,
  };
}
