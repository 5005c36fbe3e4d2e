import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import { loadConfig } from '@switchyard/transport/config.ts';
import { createLogger } from '@switchyard/transport/logging.ts';
import type { FirstRunResult } from '../../src/first-run.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { TEST_JWT_SECRET } from './test-server.ts';

export interface FirstRunServer {
  server: RunningServer;
  db: TestDatabase;
  /** `http://127.0.0.1:PORT` of the REST API. */
  base: string;
  /** The data directory the first run writes its password and key files to. */
  dataDir: string;
  /** What this start's first run made (`created` on a fresh database) or found. */
  firstRun: FirstRunResult;
  logs: string[];
  /** Another start on the same database and data directory (the server is stopped first). */
  restart(): Promise<FirstRunServer>;
  /** Stops the server and drops the database and the data directory. */
  stop(): Promise<void>;
}

/**
 * The single-process server in first-run mode (docs/first-run.md) on a fresh database: what
 * `npm start` does on an empty DATA_DIR with the embedded database, without starting one
 * (startServer's `firstRun` option). No BOOTSTRAP_ADMIN_*: that would turn first run off.
 */
export async function startFirstRunServer(env: Record<string, string> = {}, reuse?: { db: TestDatabase; dataDir: string }): Promise<FirstRunServer> {
  const db = reuse?.db ?? (await createTestDatabase());
  const dataDir = reuse?.dataDir ?? mkdtempSync(path.join(tmpdir(), 'switchyard-first-run-'));
  chmodSync(dataDir, 0o755);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(String(chunk));
      callback();
    },
  });
  const config = loadConfig({ DATABASE_URL: db.url, HTTP_PORT: '0', GRPC_PORT: '0', SYNC_GRPC_PORT: '0', DATA_DIR: dataDir, JWT_SECRET: TEST_JWT_SECRET, PASSWORD_HASH_COST: '4', ...env });
  let server: RunningServer;
  try {
    server = await startServer(config, createLogger({ filter: 'debug', json: true, destination: sink }), 'all', { firstRun: true });
  } catch (error) {
    if (!reuse) {
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    }
    throw error;
  }
  const firstRun = server.bootstrap.firstRun;
  if (!firstRun) throw new Error('first run did not run (is BOOTSTRAP_ADMIN_* set?)');
  return {
    server,
    db,
    base: `http://127.0.0.1:${server.httpPort}`,
    dataDir,
    firstRun,
    logs,
    async restart() {
      await server.stop();
      return startFirstRunServer(env, { db, dataDir });
    },
    async stop() {
      await server.stop();
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
