/**
 * Process configuration, from environment variables only (DECISIONS §1). Every value is checked
 * here, at startup: a bad value stops the process with one clear line instead of failing later.
 */

export type AppEnv = 'development' | 'production' | 'test';

export interface Config {
  appEnv: AppEnv;
  /** null: start the embedded PostgreSQL. */
  databaseUrl: string | null;
  embeddedPgPort: number;
  /** Where the embedded database and development secrets live. */
  dataDir: string;
  httpPort: number;
  grpcPort: number;
  syncGrpcPort: number;
  /** The log filter, e.g. `info` or `warn,http=debug`. */
  logFilter: string;
  /** null in development: a random secret kept in the data directory. */
  jwtSecret: string | null;
  tokenTtlSeconds: number;
  dbPoolSize: number;
  bootstrapAdmin: { email: string; password: string } | null;
  /**
   * Whether X-Forwarded-For is believed (Fastify's trustProxy): false, true, a hop count, or a
   * comma-separated list of proxy addresses/CIDRs. Login throttling by client address depends on it.
   */
  trustProxy: boolean | number | string;
  /** ACTIVE experiments' results are recomputed this often (STATS_INTERVAL_MS, default 5 min). */
  statsIntervalMs: number;
  /** How often the stats worker looks for queued recompute jobs (STATS_POLL_MS, default 1 s). */
  statsPollMs: number;
  /** Pause between runs of the pruner of expired rows (PRUNE_INTERVAL_MS, default 1 h). */
  pruneIntervalMs: number;
  /** Rows the pruner deletes per statement (PRUNE_BATCH_SIZE, default 1,000). */
  pruneBatchSize: number;
}

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

/** Accepts `level` or `level,module=level,...` (the RUST_LOG style the spec names). */
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

function trustProxy(env: Env): Config['trustProxy'] {
  const raw = text(env, 'TRUST_PROXY');
  if (raw === undefined || raw.toLowerCase() === 'false') return false;
  if (raw.toLowerCase() === 'true') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  if (/^[0-9a-fA-F.:/,\s]+$/.test(raw)) return raw;
  throw new ConfigError(`TRUST_PROXY must be true, false, a hop count or a list of addresses (got "${raw}")`);
}

/** Reads and checks the configuration. @throws ConfigError with a one-line message. */
export function loadConfig(env: Env = process.env): Config {
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
    httpPort: port(env, 'HTTP_PORT', 8080),
    grpcPort: port(env, 'GRPC_PORT', 9090),
    syncGrpcPort: port(env, 'SYNC_GRPC_PORT', 50050),
    logFilter: logFilter(env),
    jwtSecret: jwtSecret(env, appEnv),
    tokenTtlSeconds: integer(env, 'TOKEN_TTL_SECONDS', 86400, 60, 31_536_000),
    dbPoolSize: integer(env, 'DB_POOL_SIZE', 10, 1, 1000),
    bootstrapAdmin: bootstrapAdmin(env),
    trustProxy: trustProxy(env),
    statsIntervalMs: integer(env, 'STATS_INTERVAL_MS', 300_000, 1_000, 86_400_000),
    statsPollMs: integer(env, 'STATS_POLL_MS', 1_000, 10, 3_600_000),
    pruneIntervalMs: integer(env, 'PRUNE_INTERVAL_MS', 3_600_000, 1_000, 86_400_000),
    pruneBatchSize: integer(env, 'PRUNE_BATCH_SIZE', 1_000, 1, 100_000),
  };
}
