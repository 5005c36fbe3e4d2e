/**
 * `npm start`: the whole platform in one process. Configuration from environment variables only
 * (see README); a bad value stops the process with one clear line and exit code 2.
 */
import { ConfigError, loadConfig, type Config } from './config.ts';
import { DEV_ADMIN_EMAIL } from './bootstrap.ts';
import { writeDevAdminPassword } from './dev-secrets.ts';
import { createLogger } from './logging.ts';
import { startServer, type RunningServer } from './server.ts';
import { isDriverWriteOnClosedSocket } from '@switchyard/postgres';

function printLoginHelp(config: Config, server: RunningServer): void {
  const admin = server.bootstrap.createdAdmin;
  const lines = [
    '',
    `Switchyard is up: REST http://localhost:${server.httpPort}  gRPC sync :${server.syncGrpcPort}  internal gRPC :${server.grpcPort}`,
  ];
  if (admin?.generatedPassword) {
    const file = writeDevAdminPassword(config.dataDir, admin.generatedPassword);
    lines.push(
      `Created the first administrator: ${admin.email} / ${admin.generatedPassword}  (shown once; also kept in ${file})`,
    );
  }
  if (server.database.embedded && !config.bootstrapAdmin) {
    lines.push(
      `Log in:  curl -s -X POST localhost:${server.httpPort}/v1/auth/login -H 'content-type: application/json' \\`,
      `           -d '{"email":"${DEV_ADMIN_EMAIL}","password":"'"$(cat ${config.dataDir}/admin-password)"'"}'`,
    );
  } else if (config.bootstrapAdmin) {
    lines.push(`Log in with POST /v1/auth/login as ${config.bootstrapAdmin.email} (BOOTSTRAP_ADMIN_PASSWORD).`);
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`configuration error: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }

  const logging = createLogger({ filter: config.logFilter, json: config.appEnv === 'production' });
  const log = logging.forModule('server');
  // A known driver bug throws from a timer when the database drops a transaction's connection
  // (see isDriverWriteOnClosedSocket): survive that one; anything else uncaught ends the process.
  const onUncaught = (error: unknown): void => {
    if (isDriverWriteOnClosedSocket(error)) {
      log.warn({ err: { message: (error as Error).message } }, 'database connection lost inside a transaction (driver bug ignored)');
      return;
    }
    log.fatal({ err: error }, 'uncaught exception');
    process.exit(1);
  };
  process.on('uncaughtException', onUncaught);
  process.on('unhandledRejection', onUncaught);
  // Signals are taken from the start: killed by a signal without a handler, node skips its exit
  // hooks, and the embedded PostgreSQL (in a process group of its own) would be left running.
  let server: RunningServer | null = null;
  let firstSignalAt = 0;
  const shutdown = (signal: string): void => {
    if (firstSignalAt > 0) {
      // npm and tsx relay the terminal's signal, so one Ctrl-C can arrive twice at once: only a
      // signal sent a second or more later means "stop waiting".
      if (Date.now() - firstSignalAt < 1000) return;
      log.warn('second signal: exiting now');
      process.exit(1);
    }
    firstSignalAt = Date.now();
    if (server === null) {
      // Still starting: nothing to drain. The exit hook stops the embedded server, if any.
      log.info({ signal }, 'stopped during startup');
      process.exit(1);
    }
    log.info({ signal }, 'shutting down: draining requests and streams');
    server.stop().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  // The terminal went away (its default action would also skip the exit hooks).
  process.on('SIGHUP', () => shutdown('SIGHUP'));

  try {
    server = await startServer(config, logging);
  } catch (error) {
    log.fatal({ err: error }, 'startup failed');
    process.exit(1);
  }
  printLoginHelp(config, server);
  log.info('ready');
}

void main();
