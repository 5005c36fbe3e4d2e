import type { FastifyInstance } from 'fastify';
import { createPostgresRepositories, isMigrated } from '@switchyard/postgres';
import type { Repositories } from '@switchyard/core';
import { bootstrap, type BootstrapResult } from './bootstrap.ts';
import type { Config } from './config.ts';
import { openDatabase, type Database } from './database.ts';
import { developmentJwtSecret } from './dev-secrets.ts';
import { startGrpcServer, type RunningGrpcServer } from './grpc/grpc-server.ts';
import { createHttpApp } from './http/app.ts';
import { registerHealthRoutes } from './http/health-routes.ts';
import { registerMetricsRoute } from './http/metrics-routes.ts';
import { BcryptPasswordHasher } from './identity/bcrypt-password-hasher.ts';
import type { RootLogger } from './logging.ts';

export interface RunningServer {
  httpPort: number;
  grpcPort: number;
  syncGrpcPort: number;
  http: FastifyInstance;
  repos: Repositories;
  database: Database;
  bootstrap: BootstrapResult;
  /** Stop accepting, drain in-flight requests, close streams and the pool. Idempotent. */
  stop(): Promise<void>;
}

/** How long in-flight gRPC calls get to finish at shutdown before they are cancelled. */
const GRPC_GRACE_MS = 5_000;

/**
 * The composition root of the single-process server: database → repositories → bootstrap →
 * REST (HTTP_PORT) + internal gRPC (GRPC_PORT) + public sync gRPC (SYNC_GRPC_PORT).
 */
export async function startServer(config: Config, logging: RootLogger): Promise<RunningServer> {
  const log = logging.forModule('server');
  const database = await openDatabase(config, logging.forModule('database'));
  const repos = createPostgresRepositories(database.sql);
  const started: Array<{ stop(): Promise<void> }> = [];

  try {
    const jwtSecret = config.jwtSecret ?? developmentJwtSecret(config.dataDir);
    void jwtSecret; // used by the auth service (issue 3)
    const bootstrapResult = await bootstrap(repos, new BcryptPasswordHasher(), {
      admin: config.bootstrapAdmin,
      generateDevAdmin: database.embedded && config.appEnv !== 'production',
    });

    const http = createHttpApp(logging.forModule('http'));
    registerHealthRoutes(http, { isReady: () => isMigrated(database.sql) });
    registerMetricsRoute(http);
    await http.listen({ host: '0.0.0.0', port: config.httpPort });
    started.push({ stop: () => http.close() });
    const httpPort = (http.server.address() as { port: number }).port;
    log.info({ port: httpPort }, 'REST listening');

    const grpcServices: RunningGrpcServer = await startGrpcServer({
      name: 'internal',
      host: '0.0.0.0',
      port: config.grpcPort,
      logger: logging.forModule('grpc'),
    });
    started.unshift({ stop: () => grpcServices.stop(GRPC_GRACE_MS) });
    const syncServer = await startGrpcServer({
      name: 'sync',
      host: '0.0.0.0',
      port: config.syncGrpcPort,
      logger: logging.forModule('sync'),
    });
    started.unshift({ stop: () => syncServer.stop(GRPC_GRACE_MS) });

    let stopping: Promise<void> | null = null;
    return {
      httpPort,
      grpcPort: grpcServices.port,
      syncGrpcPort: syncServer.port,
      http,
      repos,
      database,
      bootstrap: bootstrapResult,
      stop() {
        stopping ??= (async () => {
          // Streams first (they never end by themselves), then REST drains, then the pool closes.
          for (const part of started) await part.stop();
          await database.close();
        })();
        return stopping;
      },
    };
  } catch (error) {
    for (const part of started) await part.stop().catch(() => {});
    await database.close().catch(() => {});
    throw error;
  }
}
