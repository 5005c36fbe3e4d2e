/**
 * A throwaway database for one bench/sync run: created on BENCH_DATABASE_URL or TEST_DATABASE_URL,
 * else on an embedded PostgreSQL started here; drop() removes it (and stops the embedded server).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect } from '../../packages/postgres/src/connect.ts';
import { startEmbeddedPostgres } from '../../packages/postgres/src/embedded.ts';
import { withDatabase } from '../../packages/postgres/src/testing/test-database.ts';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}

export async function openSyncBenchDatabase(): Promise<{ url: string; source: string; drop(): Promise<void> }> {
  let serverUrl = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL;
  const source = process.env.BENCH_DATABASE_URL ? 'BENCH_DATABASE_URL' : process.env.TEST_DATABASE_URL ? 'TEST_DATABASE_URL' : 'embedded';
  let stopEmbedded = async (): Promise<void> => {};
  if (!serverUrl) {
    const runDir = mkdtempSync(path.join(tmpdir(), 'switchyard-bench-sync-'));
    // Run as root, the embedded server runs as the `postgres` user, which must reach its directory.
    chmodSync(runDir, 0o755);
    const embedded = await startEmbeddedPostgres({ dataDir: path.join(runDir, 'postgres'), port: await freePort(), persistent: false });
    serverUrl = embedded.url;
    stopEmbedded = async () => {
      await embedded.stop();
      rmSync(runDir, { recursive: true, force: true });
    };
  }
  const admin = connect(serverUrl, { poolSize: 1, applicationName: 'switchyard-bench-sync' });
  const name = `bench_sync_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  await admin.unsafe(`CREATE DATABASE ${name}`);
  return {
    url: withDatabase(serverUrl, name),
    source,
    async drop() {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
      await stopEmbedded();
    },
  };
}
