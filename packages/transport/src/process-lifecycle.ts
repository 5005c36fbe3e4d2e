import { isDriverWriteOnClosedSocket } from '@switchyard/postgres';
import { ConfigError } from './config.ts';
import { createLogger, type RootLogger } from './logging.ts';

/**
 * Runs one host process (single server, gateway or services): reads its configuration (a bad value
 * stops the process with one clear line and exit code 2), starts it, and stops it cleanly on
 * SIGTERM, SIGINT or SIGHUP. Shared by every host so they all stop the same way.
 */
export async function runHost<C extends { logFilter: string; appEnv: string }, R extends { stop(): Promise<void> }>(host: {
  loadConfig: () => C;
  start: (config: C, logging: RootLogger) => Promise<R>;
  started?: (config: C, running: R) => void;
}): Promise<void> {
  let config: C;
  try {
    config = host.loadConfig();
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
  let running: R | null = null;
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
    if (running === null) {
      // Still starting: nothing to drain. The exit hook stops the embedded server, if any.
      log.info({ signal }, 'stopped during startup');
      process.exit(1);
    }
    log.info({ signal }, 'shutting down: draining requests and streams');
    running.stop().then(
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
    running = await host.start(config, logging);
  } catch (error) {
    log.fatal({ err: error }, 'startup failed');
    process.exit(1);
  }
  host.started?.(config, running);
  log.info('ready');
}
