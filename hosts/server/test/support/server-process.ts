import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The three hosts' entry points (`npm start`, `npm run start:gateway`, `npm run start:services`). */
const ENTRIES = {
  server: fileURLToPath(new URL('../../src/main.ts', import.meta.url)),
  gateway: fileURLToPath(new URL('../../../gateway/src/main.ts', import.meta.url)),
  services: fileURLToPath(new URL('../../../services/src/main.ts', import.meta.url)),
} as const;
const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * The JavaScript `npm test` compiled of a host's entry point (scripts/compile-tests.ts), when this
 * run has one: spawned hosts then start without tsx's second or two of loading. The same sources,
 * bundled; a test that means to run the TypeScript entry under tsx passes `main` itself.
 */
export function compiledEntry(entry: keyof typeof ENTRIES): string | undefined {
  return compiledModule(ENTRIES[entry]);
}

/** The JavaScript `npm test` compiled of a module it builds apart (a host's entry point, the in-process gateway), when this run has one. */
export function compiledModule(source: string): string | undefined {
  const dir = process.env.TEST_COMPILED_DIR;
  if (!dir) return undefined;
  const compiled = path.join(dir, path.relative(REPO_ROOT, source).replace(/\.ts$/, '.js'));
  return existsSync(compiled) ? compiled : undefined;
}

/**
 * The database connections of every server a test starts, in its process (test-server.ts) or as
 * a child: 3, not production's 10. `npm test` runs 6 files at once, some with a batch's shared
 * server beside their own, each server also with a LISTEN connection and the test its own pool,
 * on a PostgreSQL server whose max_connections is usually 100. With 10 a run peaked at 95, and a
 * slower (profiled) run used all 100 and failed "too many clients". A burst of requests queues for
 * a connection instead, as production's does past its tenth. Each connection costs PostgreSQL a
 * backend start (~15 ms of its CPU); 3 instead of 5 cost it ~3% less on the REST files. (A full
 * run with 3 once failed a services-restart test; the cause was that test's 500 ms call deadline,
 * since 5 s: bench/README.md "test suite".)
 */
export const TEST_DB_POOL_SIZE = '3';

export interface ServerProcess {
  child: ChildProcess;
  /** Every stdout/stderr line so far. */
  lines: string[];
  /** Resolves with the first line matching, or rejects after `timeoutMs`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/**
 * Runs the real server entry point (`npm start` runs the same file) as a child process, with
 * the given environment on top of a clean one. Ports default to 0 (any free port).
 * `detached`: in a process group of its own (see the spawn option below). `main`: a built
 * server (`node <main>`, no tsx) instead of the source; `cwd`: the repository root unless given;
 * `entry`: which host to run from source (the single server unless given).
 */
export function spawnServer(
  env: Record<string, string>,
  options: { detached?: boolean; main?: string; cwd?: string; entry?: keyof typeof ENTRIES; onLine?: (line: string) => void } = {},
): ServerProcess {
  const entry = options.entry ?? 'server';
  const main = options.main ?? compiledEntry(entry);
  // TEST_CPU_PROF=DIR (scripts/run-tests.ts): the spawned host writes its CPU profile there too.
  const profile = process.env.TEST_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(process.env.TEST_CPU_PROF)}`] : [];
  const args = main === undefined ? [...profile, '--import', 'tsx', ENTRIES[entry]] : [...profile, main];
  const child = spawn(process.execPath, args, {
    // A process-group leader, like a shell's foreground job: `process.kill(-pid, signal)` then
    // signals it and every child in its group, as a terminal's Ctrl-C does.
    detached: options.detached ?? false,
    cwd: options.cwd ?? REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      HTTP_PORT: '0',
      GRPC_PORT: '0',
      SYNC_GRPC_PORT: '0',
      DB_POOL_SIZE: TEST_DB_POOL_SIZE,
      // Node 22+ keeps compiled code there (scripts/run-tests.ts sets it): hosts share it with the test files.
      ...(process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (line: string) => void }> = [];
  const onData = (chunk: Buffer): void => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      lines.push(line);
      options.onLine?.(line);
      for (const waiter of [...waiters]) {
        if (waiter.pattern.test(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    // Generous: a process starting on a machine busy with other test files can take half a minute.
    waitForLine(pattern, timeoutMs = 90_000) {
      const seen = lines.find((line) => pattern.test(line));
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}; output:\n${lines.join('\n')}`)), timeoutMs);
        const waiter = {
          pattern,
          resolve: (line: string) => {
            clearTimeout(timer);
            resolve(line);
          },
        };
        waiters.push(waiter);
        void exited.then(() => {
          if (waiters.includes(waiter)) {
            clearTimeout(timer);
            reject(new Error(`server exited before ${pattern}; output:\n${lines.join('\n')}`));
          }
        });
      });
    },
  };
}

/** Stops a spawned host: SIGTERM, then SIGKILL if it has not exited within 15 s. A host already gone is left alone. */
export async function stopProcess(host: ServerProcess | undefined): Promise<void> {
  if (!host || host.child.exitCode !== null || host.child.signalCode !== null) return;
  host.child.kill('SIGTERM');
  const exited = await Promise.race([host.exited.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 15_000).unref())]);
  if (!exited) host.child.kill('SIGKILL');
}

/** The port a JSON log line `{"msg":"<name> listening","port":N}` announced. */
export function portFrom(line: string): number {
  const match = /"port":(\d+)/.exec(line);
  if (!match?.[1]) throw new Error(`no port in: ${line}`);
  return Number(match[1]);
}
