/**
 * The real server (hosts/server) as a benchmark runs it: in the benchmark's own process, on its
 * fresh database, every port chosen by the system, the bootstrap admin the benchmark seeds
 * through, and warnings and errors only, on stderr (stdout stays the benchmark's table and JSON).
 */
import { loadConfig } from '@switchyard/transport/config.ts';
import { createLogger, type RootLogger } from '@switchyard/transport/logging.ts';
import { startServer, type RunningServer } from '../../hosts/server/src/server.ts';

/**
 * The ingest and list-check limits and the row quota at their maximum (docs/security.md "Ingest
 * rate limits, row quota and event retention"): benchmarks measure throughput, not the limits.
 */
export const UNLIMITED_INGEST: Record<string, string> = {
  INGEST_RATE_PER_KEY: '10000000',
  INGEST_BURST_PER_KEY: '100000000',
  INGEST_RATE_PER_ENVIRONMENT: '10000000',
  INGEST_BURST_PER_ENVIRONMENT: '100000000',
  LIST_CHECK_RATE_PER_KEY: '10000000',
  LIST_CHECK_BURST_PER_KEY: '100000000',
  LIST_CHECK_RATE_PER_ENVIRONMENT: '10000000',
  LIST_CHECK_BURST_PER_ENVIRONMENT: '100000000',
  EVENT_ROWS_QUOTA_PER_ENVIRONMENT: '1000000000000',
};

/**
 * Client keys' evaluation token buckets far above any benchmark's load (docs/client-side.md
 * "6. Limits"): a benchmark sends every request from one address, which the defaults (50/s per key
 * and address) would answer with 429. The buckets stay on the path, so their cost is measured.
 */
export const UNLIMITED_CLIENT_EVALUATION: Record<string, string> = {
  CLIENT_EVALUATION_RATE_PER_ADDRESS: '10000000',
  CLIENT_EVALUATION_BURST_PER_ADDRESS: '100000000',
  CLIENT_EVALUATION_RATE_PER_KEY: '10000000',
  CLIENT_EVALUATION_BURST_PER_KEY: '100000000',
};

export interface BenchServer {
  server: RunningServer;
  /** The logger the server writes to, for reference servers that should log as it does. */
  logging: RootLogger;
}

export async function startBenchServer(options: {
  databaseUrl: string;
  dataDir: string;
  admin: { email: string; password: string };
  /** At least 32 bytes; each benchmark has its own. */
  jwtSecret: string;
  /** More configuration (e.g. SSO_SECRETS_KEY), over the defaults above. */
  env?: Record<string, string>;
}): Promise<BenchServer> {
  const logging = createLogger({ filter: 'warn', json: true, destination: process.stderr });
  const server = await startServer(
    loadConfig({
      APP_ENV: 'production',
      DATABASE_URL: options.databaseUrl,
      DATA_DIR: options.dataDir,
      HTTP_PORT: '0',
      GRPC_PORT: '0',
      SYNC_GRPC_PORT: '0',
      JWT_SECRET: options.jwtSecret,
      BOOTSTRAP_ADMIN_EMAIL: options.admin.email,
      BOOTSTRAP_ADMIN_PASSWORD: options.admin.password,
      // A benchmark measures throughput, so the per-key and per-environment limits and the row
      // quota (docs/security.md "Ingest rate limits, row quota and event retention") are lifted
      // to their maximum; the token-bucket check itself still runs on every request.
      ...UNLIMITED_INGEST,
      ...UNLIMITED_CLIENT_EVALUATION,
      ...options.env,
    }),
    logging,
  );
  return { server, logging };
}
