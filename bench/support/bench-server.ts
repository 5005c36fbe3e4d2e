/**
 * The real server (hosts/server) as a benchmark runs it: in the benchmark's own process, on its
 * fresh database, every port chosen by the system, the bootstrap admin the benchmark seeds
 * through, and warnings and errors only, on stderr (stdout stays the benchmark's table and JSON).
 */
import { loadConfig } from '@switchyard/transport/config.ts';
import { createLogger, type RootLogger } from '@switchyard/transport/logging.ts';
import { startServer, type RunningServer } from '../../hosts/server/src/server.ts';

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
    }),
    logging,
  );
  return { server, logging };
}
