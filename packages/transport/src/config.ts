/**
 * Process configuration, from environment variables only (docs/contract.md "Processes and ports"). Every value is checked
 * here, at startup: a bad value stops the process with one clear line instead of failing later.
 * TLS files are read here too, so an unreadable or mismatched file is a configuration error.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { createSecureContext } from 'node:tls';
import { DEFAULT_EVALUATION_BUDGET_MS } from '@switchyard/core';
import { CLIENT_INGEST_MIN_BURST, CLIENT_WORKS, DEFAULT_API_TOKEN_THROTTLE, DEFAULT_CLIENT_RATE_LIMITS, type ClientRateLimits } from '@switchyard/services';

export type AppEnv = 'development' | 'production' | 'test';

export interface Config {
  appEnv: AppEnv;
  /** null: start the embedded PostgreSQL. */
  databaseUrl: string | null;
  embeddedPgPort: number;
  /** Where the embedded database and development secrets live. */
  dataDir: string;
  /** The built web console the REST host serves at `/`; undefined: where scripts/build-console.ts writes it. */
  consoleDir: string | undefined;
  httpPort: number;
  grpcPort: number;
  syncGrpcPort: number;
  /** Bind addresses: REST and the public sync port are public, the internal services loopback. */
  httpHost: string;
  grpcHost: string;
  syncGrpcHost: string;
  /** TLS of the internal gRPC port (GRPC_TLS_*); null: plaintext. */
  grpcTls: GrpcTls | null;
  /** TLS of the public sync port (SYNC_GRPC_TLS_*); null: plaintext. */
  syncGrpcTls: GrpcTls | null;
  /** Slow-client limits of the REST server (docs/security.md). */
  httpTimeouts: HttpTimeouts;
  /** Per-connection limits of both gRPC servers (docs/security.md). */
  grpcLimits: GrpcLimits;
  /** Open sync streams one SDK key may hold on this instance; the next is RESOURCE_EXHAUSTED. */
  syncMaxStreamsPerKey: number;
  /** Unknown API tokens one client address may present within the throttle's window (docs/access.md "API tokens"). */
  apiTokenFailuresPerAddress: number;
  /** The log filter, e.g. `info` or `warn,http=debug`. */
  logFilter: string;
  /** null in development: a random secret kept in the data directory. */
  jwtSecret: string | null;
  tokenTtlSeconds: number;
  /** bcrypt cost of new password hashes (PASSWORD_HASH_COST): 10 unless set; below 10 never in production. */
  passwordHashCost: number;
  dbPoolSize: number;
  bootstrapAdmin: { email: string; password: string } | null;
  /**
   * Which X-Forwarded-For entries are believed: false (none), a number of trusted proxy hops
   * (`TRUST_PROXY=true` is 1: the address the nearest proxy saw, never the client-written
   * leftmost entry), or a comma-separated list of proxy addresses/CIDRs. Login throttling by
   * client address depends on it.
   */
  trustProxy: false | number | string;
  /** ACTIVE experiments' results are recomputed this often (STATS_INTERVAL_MS, default 5 min). */
  statsIntervalMs: number;
  /** How often the stats worker looks for queued recompute jobs (STATS_POLL_MS, default 1 s). */
  statsPollMs: number;
  /** How often the scheduler looks for due scheduled changes (SCHEDULES_POLL_MS, default 5 s). */
  schedulesPollMs: number;
  /** Pause between runs of the pruner of expired rows (PRUNE_INTERVAL_MS, default 1 h). */
  pruneIntervalMs: number;
  /** Rows the pruner deletes per statement (PRUNE_BATCH_SIZE, default 1,000). */
  pruneBatchSize: number;
  /** Change history entries older than this many days are pruned (AUDIT_RETENTION_DAYS, default 365). */
  auditRetentionDays: number;
  /** An org's change history entries beyond its newest this many are pruned (AUDIT_MAX_ENTRIES_PER_ORG, default 100,000). */
  auditMaxEntriesPerOrg: number;
  /** Single sign-on (docs/sso.md "Configuration"). */
  sso: SsoConfig;
  /** How long one evaluate or OFREP request's evaluation may run (EVALUATION_BUDGET_MS, default 100). */
  evaluationBudgetMs: number;
  /** Token buckets of ingest and list-check (docs/security.md "Ingest rate limits, row quota and event retention"). */
  ingestLimits: IngestLimitsConfig;
  /** Client keys' token buckets on this instance (docs/client-side.md "6. Limits"): CLIENT_<WORK>_{RATE,BURST}_PER_{ADDRESS,KEY}. */
  clientLimits: ClientRateLimits;
  /** Event and exposure rows one environment may hold (EVENT_ROWS_QUOTA_PER_ENVIRONMENT, default 50 million). */
  eventRowsQuotaPerEnvironment: number;
  /** Partitions of events and exposures older than this many days are dropped (EVENT_RETENTION_DAYS, default 90). */
  eventRetentionDays: number;
  /** Evaluation counts (docs/insights.md). */
  insights: InsightsConfig;
  /** Email delivery (docs/security.md "Email delivery"). */
  mail: MailConfig;
  /** Browser event streams of client keys (docs/client-side.md "7. Streaming"). */
  clientStreams: ClientStreamConfig;
  /** Signed webhooks (docs/workflow.md "Webhooks"). */
  webhooks: WebhookConfig;
}

/** Evaluation counts (docs/insights.md "Counting", "Retention"). */
export interface InsightsConfig {
  /** Whether this instance counts the evaluations it answers (INSIGHTS_COUNTING, default true; docs/insights.md "Counting"). */
  counting: boolean;
  /** Pause between two flushes of this instance's counts (INSIGHTS_FLUSH_MS, default 60,000). */
  flushMs: number;
  /** Distinct (hour, environment, flag, variant, reason) keys held between two flushes (INSIGHTS_MAX_KEYS, default 50,000). */
  maxKeys: number;
  /** Hourly counts older than this many days are deleted, once rolled up into days (INSIGHTS_HOURLY_RETENTION_DAYS, default 30). */
  hourlyRetentionDays: number;
  /** Daily counts older than this many days are deleted (INSIGHTS_DAILY_RETENTION_DAYS, default 365). */
  dailyRetentionDays: number;
  /** Pause between two runs of the lifecycle job (INSIGHTS_LIFECYCLE_INTERVAL_MS, default a day; docs/insights.md "The daily job"). */
  lifecycleIntervalMs: number;
}

function insightsConfig(env: Env): InsightsConfig {
  const hourlyRetentionDays = integer(env, 'INSIGHTS_HOURLY_RETENTION_DAYS', 30, 1, 366);
  const dailyRetentionDays = integer(env, 'INSIGHTS_DAILY_RETENTION_DAYS', 365, 1, 3_650);
  if (dailyRetentionDays < hourlyRetentionDays) throw new ConfigError('INSIGHTS_DAILY_RETENTION_DAYS must be at least INSIGHTS_HOURLY_RETENTION_DAYS');
  const counting = text(env, 'INSIGHTS_COUNTING') === undefined ? true : flag(env, 'INSIGHTS_COUNTING');
  return {
    counting,
    flushMs: integer(env, 'INSIGHTS_FLUSH_MS', 60_000, 10, 3_600_000),
    maxKeys: integer(env, 'INSIGHTS_MAX_KEYS', 50_000, 1, 10_000_000),
    hourlyRetentionDays,
    dailyRetentionDays,
    lifecycleIntervalMs: integer(env, 'INSIGHTS_LIFECYCLE_INTERVAL_MS', 86_400_000, 1_000, 7 * 86_400_000),
  };
}

/** Signed webhooks (docs/workflow.md "Webhooks"). */
export interface WebhookConfig {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS=true: endpoints on loopback/private addresses (and plain http) are allowed (development, tests). */
  allowPrivateNetworks: boolean;
  /** Deliveries older than this many days are pruned (WEBHOOK_LOG_RETENTION_DAYS, default 14). */
  logRetentionDays: number;
}

/** Browser event streams (OFREP `eventStreams`) of client keys, per instance. */
export interface ClientStreamConfig {
  /** CLIENT_STREAM_HEARTBEAT_MS (default 25 s): a comment line this often keeps proxies and the idle sweep from cutting a quiet stream. */
  heartbeatMs: number;
  /** CLIENT_STREAM_TOKEN_WINDOW_MS (default 5 min): a channel token is valid for one to two windows. */
  tokenWindowMs: number;
  /** CLIENT_STREAM_MAX_PER_KEY (default 10,000): open streams of one client key on this instance. */
  maxPerKey: number;
  /** CLIENT_STREAM_MAX_PER_ADDRESS (default 50): open streams of one client key from one client address on this instance. */
  maxPerKeyAndAddress: number;
}

/** A sustained rate per second and the burst above it. */
export interface RateConfig {
  perSecond: number;
  burst: number;
}

/** Per credential (SDK key or user) and per environment, for rows written and for list-checks. */
export interface IngestLimitsConfig {
  ingest: { perKey: RateConfig; perEnvironment: RateConfig };
  list_check: { perKey: RateConfig; perEnvironment: RateConfig };
}

export interface MailConfig {
  /** SMTP_URL (`smtp://user:password@host:587` or `smtps://...`); null: no delivery (development keeps a local outbox). */
  smtpUrl: string | null;
  /** SMTP_FROM: the sender address of every mail (default `switchyard@localhost`). */
  from: string;
  /** DNS_SERVERS: resolvers of domain verification (`ip` or `ip:port`, comma-separated); null: the system's. */
  dnsServers: string[] | null;
}

export interface SsoConfig {
  /**
   * PUBLIC_URL: where browsers and identity providers reach the REST API (no trailing slash).
   * null: `http://localhost:<HTTP_PORT>`, which suits a developer's machine only.
   */
  publicUrl: string | null;
  /** SSO_SECRETS_KEY (at least 32 characters): encrypts OIDC client secrets. null in development: one kept in the data directory. */
  secretsKey: string | null;
  /** SSO_ALLOW_PRIVATE_NETWORKS=true: identity providers on loopback/private addresses (and plain http) are allowed. */
  allowPrivateNetworks: boolean;
}

/** PEM contents of a gRPC port's TLS files. */
export interface GrpcTls {
  cert: Buffer;
  key: Buffer;
  /** Set: clients must present a certificate signed by this CA (mutual TLS). */
  ca: Buffer | null;
}

export interface HttpTimeouts {
  /** Time to receive a request's headers (node's headersTimeout). */
  headersMs: number;
  /** Time to receive a whole request, headers and body (node's requestTimeout). */
  requestMs: number;
  /** An idle keep-alive connection is closed after this (node's keepAliveTimeout). */
  keepAliveMs: number;
  /** A socket with no traffic either way for this long is destroyed (Fastify's connectionTimeout). */
  idleMs: number;
}

export interface GrpcLimits {
  /** HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS: calls one connection may have open at once. */
  maxConcurrentStreams: number;
  /** A connection with no call for this long is closed (GOAWAY); open streams keep it busy. */
  maxConnectionIdleMs: number;
}

/** Defaults of the REST slow-client limits (docs/configuration.md). */
export const DEFAULT_HTTP_TIMEOUTS: Readonly<HttpTimeouts> = { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 72_000, idleMs: 120_000 };

/** Defaults of the gRPC connection limits (docs/configuration.md). */
export const DEFAULT_GRPC_LIMITS: Readonly<GrpcLimits> = { maxConcurrentStreams: 1_000, maxConnectionIdleMs: 300_000 };

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function text(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
  }
  return Number(raw);
}

const port = (env: Env, name: string, fallback: number): number => integer(env, name, fallback, 0, 65535);

const LOG_LEVELS = new Set(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent', 'off']);

/** Accepts `level` or `level,module=level,...` (the RUST_LOG style, docs/contract.md "Processes and ports"). */
function logFilter(env: Env): string {
  const raw = text(env, 'RUST_LOG') ?? text(env, 'LOG_LEVEL') ?? 'info';
  for (const directive of raw.split(',')) {
    const level = directive.includes('=') ? directive.split('=')[1] : directive;
    if (!LOG_LEVELS.has((level ?? '').trim().toLowerCase())) {
      throw new ConfigError(`RUST_LOG/LOG_LEVEL: unknown level in "${directive}" (use trace, debug, info, warn, error or off)`);
    }
  }
  return raw.toLowerCase();
}

function databaseUrl(env: Env, appEnv: AppEnv): string | null {
  const url = text(env, 'DATABASE_URL');
  if (url === undefined) {
    if (appEnv === 'production') {
      throw new ConfigError('DATABASE_URL is required when APP_ENV=production (the embedded PostgreSQL is for development only)');
    }
    return null;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError('DATABASE_URL is not a valid URL (expected postgres://user:password@host:port/database)');
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new ConfigError(`DATABASE_URL must start with postgres:// or postgresql:// (got ${parsed.protocol}//)`);
  }
  return url;
}

function jwtSecret(env: Env, appEnv: AppEnv): string | null {
  const secret = text(env, 'JWT_SECRET');
  if (secret !== undefined && Buffer.byteLength(secret) < 32) {
    throw new ConfigError('JWT_SECRET must be at least 32 bytes long');
  }
  if (secret === undefined && appEnv === 'production') {
    throw new ConfigError('JWT_SECRET is required when APP_ENV=production (at least 32 bytes)');
  }
  return secret ?? null;
}

function flag(env: Env, name: string): boolean {
  const raw = text(env, name)?.toLowerCase();
  if (raw === undefined || raw === 'false' || raw === '0') return false;
  if (raw === 'true' || raw === '1') return true;
  throw new ConfigError(`${name} must be true or false (got "${raw}")`);
}

function ssoConfig(env: Env): SsoConfig {
  const rawUrl = text(env, 'PUBLIC_URL');
  let publicUrl: string | null = null;
  if (rawUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      throw new ConfigError('PUBLIC_URL is not a valid URL (expected e.g. https://flags.example.com)');
    }
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.search !== '' || url.hash !== '' || url.username !== '') {
      throw new ConfigError('PUBLIC_URL must be an http(s) address without query, fragment or credentials');
    }
    publicUrl = url.toString().replace(/\/+$/, '');
  }
  const secretsKey = text(env, 'SSO_SECRETS_KEY') ?? null;
  if (secretsKey !== null && secretsKey.length < 32) throw new ConfigError('SSO_SECRETS_KEY must be at least 32 characters long');
  return { publicUrl, secretsKey, allowPrivateNetworks: flag(env, 'SSO_ALLOW_PRIVATE_NETWORKS') };
}

function mailConfig(env: Env): MailConfig {
  const smtpUrl = text(env, 'SMTP_URL') ?? null;
  if (smtpUrl !== null) {
    let url: URL;
    try {
      url = new URL(smtpUrl);
    } catch {
      throw new ConfigError('SMTP_URL is not a valid URL (expected e.g. smtp://user:password@mail.example.com:587)');
    }
    if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new ConfigError(`SMTP_URL must start with smtp:// or smtps:// (got ${url.protocol}//)`);
  }
  const from = text(env, 'SMTP_FROM') ?? 'switchyard@localhost';
  // An address, optionally with a display name: `Switchyard <flags@example.com>`. No line breaks (header injection).
  if (!/^([^<>\r\n]*<[^\s@<>]+@[^\s@<>]+>|[^\s@<>]+@[^\s@<>]+)$/.test(from)) {
    throw new ConfigError('SMTP_FROM must be an email address, optionally as "Name <address>"');
  }
  const rawServers = text(env, 'DNS_SERVERS');
  let dnsServers: string[] | null = null;
  if (rawServers !== undefined) {
    dnsServers = rawServers.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
    for (const server of dnsServers) {
      const match = /^(?:\[([0-9a-fA-F:]+)\]|([0-9.]+))(?::(\d{1,5}))?$/.exec(server) ?? /^([0-9a-fA-F:]+)()$/.exec(server);
      const address = match?.[1] || match?.[2] || '';
      if (!match || isIP(address) === 0 || Number(match[3] ?? 53) > 65535) {
        throw new ConfigError(`DNS_SERVERS must list IP addresses, optionally with a port (1.1.1.1, 10.0.0.2:5353, [::1]:53; got "${server}")`);
      }
    }
    if (dnsServers.length === 0) dnsServers = null;
  }
  return { smtpUrl, from, dnsServers };
}

function bootstrapAdmin(env: Env): Config['bootstrapAdmin'] {
  const email = text(env, 'BOOTSTRAP_ADMIN_EMAIL');
  const password = text(env, 'BOOTSTRAP_ADMIN_PASSWORD');
  if (email === undefined && password === undefined) return null;
  if (email === undefined || password === undefined) {
    throw new ConfigError('BOOTSTRAP_ADMIN_EMAIL and BOOTSTRAP_ADMIN_PASSWORD must be set together');
  }
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new ConfigError('BOOTSTRAP_ADMIN_EMAIL is not an email address');
  if (password.length < 8) throw new ConfigError('BOOTSTRAP_ADMIN_PASSWORD must be at least 8 characters');
  return { email, password };
}

/**
 * `true` is one trusted hop, not Fastify's "believe the leftmost entry": the client writes that
 * entry itself, so believing it would let anyone choose its address (and dodge per-address limits).
 */
function trustProxy(env: Env): Config['trustProxy'] {
  const raw = text(env, 'TRUST_PROXY');
  if (raw === undefined || raw.toLowerCase() === 'false') return false;
  if (raw.toLowerCase() === 'true') return 1;
  if (/^\d+$/.test(raw)) return Number(raw) === 0 ? false : Number(raw);
  if (/^[0-9a-fA-F.:/,\s]+$/.test(raw)) return raw;
  throw new ConfigError(`TRUST_PROXY must be true, false, a hop count or a list of addresses (got "${raw}")`);
}

function host(env: Env, name: string, fallback: string): string {
  const raw = text(env, name);
  if (raw === undefined) return fallback;
  if (isIP(raw) === 0 && !/^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(raw)) {
    throw new ConfigError(`${name} must be an IP address or a host name (got "${raw}")`);
  }
  return raw;
}

function pemFile(name: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new ConfigError(`${name}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/** `<prefix>_CERT_FILE` and `<prefix>_KEY_FILE` (both or neither), `<prefix>_CA_FILE` for mTLS. */
function grpcTls(env: Env, prefix: string): GrpcTls | null {
  const certFile = text(env, `${prefix}_CERT_FILE`);
  const keyFile = text(env, `${prefix}_KEY_FILE`);
  const caFile = text(env, `${prefix}_CA_FILE`);
  if (certFile === undefined && keyFile === undefined) {
    if (caFile !== undefined) throw new ConfigError(`${prefix}_CA_FILE needs ${prefix}_CERT_FILE and ${prefix}_KEY_FILE`);
    return null;
  }
  if (certFile === undefined || keyFile === undefined) {
    throw new ConfigError(`${prefix}_CERT_FILE and ${prefix}_KEY_FILE must be set together`);
  }
  const tls: GrpcTls = {
    cert: pemFile(`${prefix}_CERT_FILE`, certFile),
    key: pemFile(`${prefix}_KEY_FILE`, keyFile),
    ca: caFile === undefined ? null : pemFile(`${prefix}_CA_FILE`, caFile),
  };
  try {
    // Parses the PEM and checks that the key belongs to the certificate, as the server would later.
    createSecureContext({ cert: tls.cert, key: tls.key, ...(tls.ca ? { ca: tls.ca } : {}) });
  } catch (error) {
    const reason = (error as Error).message.split('\n')[0];
    throw new ConfigError(`${prefix}_CERT_FILE/${prefix}_KEY_FILE${tls.ca ? `/${prefix}_CA_FILE` : ''} are not a usable PEM certificate and key (${reason})`);
  }
  return tls;
}

function httpTimeouts(env: Env): HttpTimeouts {
  const timeouts: HttpTimeouts = {
    headersMs: integer(env, 'HTTP_HEADERS_TIMEOUT_MS', DEFAULT_HTTP_TIMEOUTS.headersMs, 100, 3_600_000),
    requestMs: integer(env, 'HTTP_REQUEST_TIMEOUT_MS', DEFAULT_HTTP_TIMEOUTS.requestMs, 100, 3_600_000),
    keepAliveMs: integer(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', DEFAULT_HTTP_TIMEOUTS.keepAliveMs, 100, 3_600_000),
    idleMs: integer(env, 'HTTP_IDLE_TIMEOUT_MS', DEFAULT_HTTP_TIMEOUTS.idleMs, 100, 3_600_000),
  };
  // node:http refuses a header limit beyond the whole-request limit.
  if (timeouts.headersMs > timeouts.requestMs) {
    throw new ConfigError(`HTTP_HEADERS_TIMEOUT_MS (${timeouts.headersMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${timeouts.requestMs})`);
  }
  return timeouts;
}

/**
 * `<PREFIX>_RATE_PER_<SCOPE>` (per second) and `<PREFIX>_BURST_PER_<SCOPE>`. A burst below the
 * largest request (`minBurst`) would refuse such a request for ever, so it is a configuration error.
 */
function rate(env: Env, prefix: string, scope: 'KEY' | 'ENVIRONMENT' | 'ADDRESS', fallback: RateConfig, minBurst: number): RateConfig {
  return {
    perSecond: integer(env, `${prefix}_RATE_PER_${scope}`, fallback.perSecond, 1, 10_000_000),
    burst: integer(env, `${prefix}_BURST_PER_${scope}`, fallback.burst, minBurst, 100_000_000),
  };
}

/**
 * The defaults are DEFAULT_INGEST_RATE_LIMITS (packages/services/src/limits/ingest-rate-limiter.ts);
 * the smallest bursts are the largest requests: 10,000 events or exposures, 1,000 list-checks.
 */
function ingestLimits(env: Env): IngestLimitsConfig {
  return {
    ingest: {
      perKey: rate(env, 'INGEST', 'KEY', { perSecond: 2_000, burst: 20_000 }, 10_000),
      perEnvironment: rate(env, 'INGEST', 'ENVIRONMENT', { perSecond: 5_000, burst: 50_000 }, 10_000),
    },
    list_check: {
      perKey: rate(env, 'LIST_CHECK', 'KEY', { perSecond: 1_000, burst: 5_000 }, 1_000),
      perEnvironment: rate(env, 'LIST_CHECK', 'ENVIRONMENT', { perSecond: 5_000, burst: 20_000 }, 1_000),
    },
  };
}

/**
 * `CLIENT_EVALUATION_*`, `CLIENT_INGEST_*` and `CLIENT_STREAM_*`, each `_RATE_PER_ADDRESS`,
 * `_BURST_PER_ADDRESS`, `_RATE_PER_KEY` and `_BURST_PER_KEY`; the defaults are
 * DEFAULT_CLIENT_RATE_LIMITS (packages/services/src/client/client-rate-limiter.ts). The smallest
 * ingest burst is a full client request's entries (100), any other's one request.
 */
function clientLimits(env: Env): ClientRateLimits {
  const limits = {} as ClientRateLimits;
  for (const work of CLIENT_WORKS) {
    const prefix = `CLIENT_${work.toUpperCase()}`;
    const minBurst = work === 'ingest' ? CLIENT_INGEST_MIN_BURST : 1;
    const defaults = DEFAULT_CLIENT_RATE_LIMITS[work];
    limits[work] = { perAddress: rate(env, prefix, 'ADDRESS', defaults.perAddress, minBurst), perKey: rate(env, prefix, 'KEY', defaults.perKey, minBurst) };
  }
  return limits;
}

/**
 * bcrypt's cost: each step doubles the work of a hash and of every login's comparison. 10 (about
 * 70 ms in pure JS here) is the OWASP minimum and the default; up to 15 for operators who want
 * more. Below 10 only outside production: the test servers use 4 (about 1 ms), since the suite
 * signs in thousands of times and only the throttling tests measure a comparison's time.
 */
function passwordHashCost(env: Env, appEnv: AppEnv): number {
  const cost = integer(env, 'PASSWORD_HASH_COST', 10, 4, 15);
  if (cost < 10 && appEnv === 'production') {
    throw new ConfigError(`PASSWORD_HASH_COST must be at least 10 when APP_ENV=production (got ${cost})`);
  }
  return cost;
}

/** Reads and checks the configuration. @throws ConfigError with a one-line message. */
export function loadConfig(env: Env = process.env, defaults: { httpPort?: number } = {}): Config {
  const rawAppEnv = (text(env, 'APP_ENV') ?? 'development').toLowerCase();
  if (rawAppEnv !== 'development' && rawAppEnv !== 'production' && rawAppEnv !== 'test') {
    throw new ConfigError(`APP_ENV must be development, production or test (got "${rawAppEnv}")`);
  }
  const appEnv: AppEnv = rawAppEnv;
  return {
    appEnv,
    databaseUrl: databaseUrl(env, appEnv),
    embeddedPgPort: port(env, 'EMBEDDED_PG_PORT', 54329),
    dataDir: text(env, 'DATA_DIR') ?? '.data',
    consoleDir: text(env, 'CONSOLE_DIR') ?? undefined,
    httpPort: port(env, 'HTTP_PORT', defaults.httpPort ?? 8080),
    grpcPort: port(env, 'GRPC_PORT', 9090),
    syncGrpcPort: port(env, 'SYNC_GRPC_PORT', 50050),
    httpHost: host(env, 'HTTP_HOST', '0.0.0.0'),
    grpcHost: host(env, 'GRPC_HOST', '127.0.0.1'),
    syncGrpcHost: host(env, 'SYNC_GRPC_HOST', '0.0.0.0'),
    grpcTls: grpcTls(env, 'GRPC_TLS'),
    syncGrpcTls: grpcTls(env, 'SYNC_GRPC_TLS'),
    httpTimeouts: httpTimeouts(env),
    grpcLimits: {
      maxConcurrentStreams: integer(env, 'GRPC_MAX_CONCURRENT_STREAMS', DEFAULT_GRPC_LIMITS.maxConcurrentStreams, 1, 1_000_000),
      maxConnectionIdleMs: integer(env, 'GRPC_MAX_CONNECTION_IDLE_MS', DEFAULT_GRPC_LIMITS.maxConnectionIdleMs, 1_000, 86_400_000),
    },
    syncMaxStreamsPerKey: integer(env, 'SYNC_MAX_STREAMS_PER_KEY', 1_000, 1, 1_000_000),
    apiTokenFailuresPerAddress: integer(env, 'API_TOKEN_FAILURES_PER_ADDRESS', DEFAULT_API_TOKEN_THROTTLE.maxFailuresPerAddress, 1, 1_000_000),
    logFilter: logFilter(env),
    jwtSecret: jwtSecret(env, appEnv),
    tokenTtlSeconds: integer(env, 'TOKEN_TTL_SECONDS', 86400, 60, 31_536_000),
    passwordHashCost: passwordHashCost(env, appEnv),
    dbPoolSize: integer(env, 'DB_POOL_SIZE', 10, 1, 1000),
    bootstrapAdmin: bootstrapAdmin(env),
    trustProxy: trustProxy(env),
    statsIntervalMs: integer(env, 'STATS_INTERVAL_MS', 300_000, 1_000, 86_400_000),
    statsPollMs: integer(env, 'STATS_POLL_MS', 1_000, 10, 3_600_000),
    schedulesPollMs: integer(env, 'SCHEDULES_POLL_MS', 5_000, 10, 3_600_000),
    pruneIntervalMs: integer(env, 'PRUNE_INTERVAL_MS', 3_600_000, 1_000, 86_400_000),
    pruneBatchSize: integer(env, 'PRUNE_BATCH_SIZE', 1_000, 1, 100_000),
    // The defaults are DEFAULT_AUDIT_RETENTION_DAYS and DEFAULT_AUDIT_MAX_ENTRIES_PER_ORG
    // (packages/services/src/audit/audit-retention.ts, which says why); up to 100 years and
    // 100 million entries, never "for ever" or "unlimited": the log must have a bound.
    auditRetentionDays: integer(env, 'AUDIT_RETENTION_DAYS', 365, 1, 36_500),
    auditMaxEntriesPerOrg: integer(env, 'AUDIT_MAX_ENTRIES_PER_ORG', 100_000, 1, 100_000_000),
    sso: ssoConfig(env),
    evaluationBudgetMs: integer(env, 'EVALUATION_BUDGET_MS', DEFAULT_EVALUATION_BUDGET_MS, 1, 60_000),
    ingestLimits: ingestLimits(env),
    clientLimits: clientLimits(env),
    // DEFAULT_ROWS_PER_ENVIRONMENT and DEFAULT_EVENT_RETENTION_DAYS (packages/services/src/limits/
    // row-quota.ts, maintenance/ingest-retention.ts); never unlimited: one tenant must not fill the disk.
    eventRowsQuotaPerEnvironment: integer(env, 'EVENT_ROWS_QUOTA_PER_ENVIRONMENT', 50_000_000, 1, 1_000_000_000_000),
    eventRetentionDays: integer(env, 'EVENT_RETENTION_DAYS', 90, 1, 3_650),
    insights: insightsConfig(env),
    mail: mailConfig(env),
    clientStreams: clientStreams(env, httpTimeouts(env)),
    // Never "for ever": the delivery log must have a bound; at least the ~3.2 days of retries.
    webhooks: { allowPrivateNetworks: flag(env, 'WEBHOOK_ALLOW_PRIVATE_NETWORKS'), logRetentionDays: integer(env, 'WEBHOOK_LOG_RETENTION_DAYS', 14, 4, 3_650) },
  };
}

/** The heartbeat must beat well inside the idle sweep's limit, or the sweep cuts quiet streams. */
function clientStreams(env: Env, timeouts: HttpTimeouts): ClientStreamConfig {
  const heartbeatMs = integer(env, 'CLIENT_STREAM_HEARTBEAT_MS', Math.min(25_000, Math.floor(timeouts.idleMs / 2)), 50, 3_600_000);
  if (heartbeatMs * 2 > timeouts.idleMs) {
    throw new ConfigError(`CLIENT_STREAM_HEARTBEAT_MS (${heartbeatMs}) must be at most half of HTTP_IDLE_TIMEOUT_MS (${timeouts.idleMs})`);
  }
  return {
    heartbeatMs,
    tokenWindowMs: integer(env, 'CLIENT_STREAM_TOKEN_WINDOW_MS', 300_000, 1_000, 86_400_000),
    maxPerKey: integer(env, 'CLIENT_STREAM_MAX_PER_KEY', 10_000, 1, 10_000_000),
    maxPerKeyAndAddress: integer(env, 'CLIENT_STREAM_MAX_PER_ADDRESS', 50, 1, 10_000_000),
  };
}

/** How a gateway reaches the services process (SERVICES_*). */
export interface ServicesConnection {
  /** `host:port` of the services' internal gRPC port. */
  url: string;
  /** null: plaintext. `ca` verifies the services' certificate; `cert`/`key` are this gateway's (mutual TLS). */
  tls: { ca: Buffer; cert: Buffer | null; key: Buffer | null } | null;
  /** A call to the services taking longer is abandoned (REST 503). */
  deadlineMs: number;
}

/** What a gateway process reads: its public ports and the services' address — no database, no signing secret. */
export interface GatewayConfig {
  appEnv: AppEnv;
  httpPort: number;
  httpHost: string;
  syncGrpcPort: number;
  syncGrpcHost: string;
  syncGrpcTls: GrpcTls | null;
  httpTimeouts: HttpTimeouts;
  grpcLimits: GrpcLimits;
  syncMaxStreamsPerKey: number;
  logFilter: string;
  trustProxy: Config['trustProxy'];
  consoleDir: string | undefined;
  evaluationBudgetMs: number;
  /** PUBLIC_URL (as the services read it): its origin may call the API with a server key (the API docs page). */
  publicUrl: string | null;
  /** Client keys' limits apply on the instance answering: here, the gateway. */
  clientLimits: ClientRateLimits;
  clientStreams: ClientStreamConfig;
  /** The gateway counts its own evaluations and sends them to the services (INSIGHTS_COUNTING, INSIGHTS_FLUSH_MS, INSIGHTS_MAX_KEYS). */
  insights: Pick<InsightsConfig, 'counting' | 'flushMs' | 'maxKeys'>;
  services: ServicesConnection;
}

function servicesConnection(env: Env): ServicesConnection {
  const url = text(env, 'SERVICES_URL') ?? '127.0.0.1:9090';
  const match = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(url);
  if (!match || Number(match[2]) > 65535) throw new ConfigError(`SERVICES_URL must be host:port (got "${url}")`);
  const caFile = text(env, 'SERVICES_TLS_CA_FILE');
  const certFile = text(env, 'SERVICES_TLS_CERT_FILE');
  const keyFile = text(env, 'SERVICES_TLS_KEY_FILE');
  if ((certFile === undefined) !== (keyFile === undefined)) throw new ConfigError('SERVICES_TLS_CERT_FILE and SERVICES_TLS_KEY_FILE must be set together');
  if (caFile === undefined && certFile !== undefined) throw new ConfigError('SERVICES_TLS_CERT_FILE needs SERVICES_TLS_CA_FILE');
  const tls =
    caFile === undefined
      ? null
      : {
          ca: pemFile('SERVICES_TLS_CA_FILE', caFile),
          cert: certFile === undefined ? null : pemFile('SERVICES_TLS_CERT_FILE', certFile),
          key: keyFile === undefined ? null : pemFile('SERVICES_TLS_KEY_FILE', keyFile),
        };
  return { url, tls, deadlineMs: integer(env, 'SERVICES_DEADLINE_MS', 10_000, 100, 600_000) };
}

/** Reads and checks a gateway's configuration. @throws ConfigError with a one-line message. */
export function loadGatewayConfig(env: Env = process.env): GatewayConfig {
  // The shared checks of every other value; production's DATABASE_URL and JWT_SECRET requirements
  // are the services' (a gateway holds neither), hence APP_ENV is not passed as production here.
  const full = loadConfig({ ...env, DATABASE_URL: undefined, JWT_SECRET: undefined, APP_ENV: env.APP_ENV === 'production' ? 'test' : env.APP_ENV });
  return {
    appEnv: (text(env, 'APP_ENV') ?? 'development').toLowerCase() as AppEnv,
    httpPort: full.httpPort,
    httpHost: full.httpHost,
    syncGrpcPort: full.syncGrpcPort,
    syncGrpcHost: full.syncGrpcHost,
    syncGrpcTls: full.syncGrpcTls,
    httpTimeouts: full.httpTimeouts,
    grpcLimits: full.grpcLimits,
    consoleDir: full.consoleDir,
    syncMaxStreamsPerKey: full.syncMaxStreamsPerKey,
    logFilter: full.logFilter,
    trustProxy: full.trustProxy,
    evaluationBudgetMs: full.evaluationBudgetMs,
    publicUrl: full.sso.publicUrl,
    clientLimits: full.clientLimits,
    clientStreams: full.clientStreams,
    insights: { counting: full.insights.counting, flushMs: full.insights.flushMs, maxKeys: full.insights.maxKeys },
    services: servicesConnection(env),
  };
}
