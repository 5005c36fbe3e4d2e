import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import { loadConfig } from '../../src/config.ts';
import { createLogger } from '../../src/logging.ts';
import { startServer, type RunningServer } from '../../src/server.ts';

export const TEST_ADMIN = { email: 'root@example.com', password: 'root-password-1' };
export const TEST_JWT_SECRET = 'integration-test-secret-of-at-least-32-bytes';

export interface TestServer {
  server: RunningServer;
  db: TestDatabase;
  /** `http://127.0.0.1:PORT` of the REST API. */
  base: string;
  /** Every log line written so far (JSON, debug level and up): assert no secret is in them. */
  logs: string[];
  /** A second server process-equivalent on the same database (another instance). */
  startAnotherInstance(): Promise<RunningServer>;
  stop(): Promise<void>;
}

/**
 * The real single-process server on ephemeral ports over a fresh database, with a system-org
 * admin (TEST_ADMIN) and every log line captured. Extra environment variables override defaults.
 */
export async function startTestServer(env: Record<string, string> = {}): Promise<TestServer> {
  const db = await createTestDatabase({ migrate: false });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(String(chunk));
      callback();
    },
  });
  const logging = createLogger({ filter: 'debug', json: true, destination: sink });
  const config = () =>
    loadConfig({
      DATABASE_URL: db.url,
      HTTP_PORT: '0',
      GRPC_PORT: '0',
      SYNC_GRPC_PORT: '0',
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'switchyard-it-')),
      JWT_SECRET: TEST_JWT_SECRET,
      BOOTSTRAP_ADMIN_EMAIL: TEST_ADMIN.email,
      BOOTSTRAP_ADMIN_PASSWORD: TEST_ADMIN.password,
      ...env,
    });
  const server = await startServer(config(), logging);
  const others: RunningServer[] = [];
  return {
    server,
    db,
    base: `http://127.0.0.1:${server.httpPort}`,
    logs,
    async startAnotherInstance() {
      const other = await startServer(config(), logging);
      others.push(other);
      return other;
    },
    async stop() {
      for (const other of others) await other.stop();
      await server.stop();
      await db.drop();
    },
  };
}
