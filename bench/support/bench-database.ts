/**
 * A fresh database for one benchmark run: on BENCH_DATABASE_URL, else TEST_DATABASE_URL, else an
 * embedded PostgreSQL started here in a throwaway directory. drop() removes the database (and
 * stops the embedded server), so a run leaves nothing behind.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connect } from '../../packages/postgres/src/connect.ts';
import { startEmbeddedPostgres } from '../../packages/postgres/src/embedded.ts';
import { stablePort } from '../../packages/postgres/src/testing/free-port.ts';
import { withDatabase } from '../../packages/postgres/src/testing/test-database.ts';

export interface BenchDatabase {
  /** postgres:// URL of this run's own (empty, unmigrated) database. */
  url: string;
  /** Where the server runs: `BENCH_DATABASE_URL`, `TEST_DATABASE_URL` or `embedded`. */
  source: string;
  drop(): Promise<void>;
}

export async function openBenchDatabase(): Promise<BenchDatabase> {
  let serverUrl = process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL;
  const source = process.env.BENCH_DATABASE_URL ? 'BENCH_DATABASE_URL' : process.env.TEST_DATABASE_URL ? 'TEST_DATABASE_URL' : 'embedded';
  let stopEmbedded = async (): Promise<void> => {};
  if (!serverUrl) {
    const runDir = mkdtempSync(path.join(tmpdir(), 'switchyard-bench-'));
    // Run as root, the embedded server runs as the `postgres` user, which must reach its directory.
    chmodSync(runDir, 0o755);
    const embedded = await startEmbeddedPostgres({ dataDir: path.join(runDir, 'postgres'), port: await stablePort(), persistent: false });
    serverUrl = embedded.url;
    stopEmbedded = async () => {
      await embedded.stop();
      rmSync(runDir, { recursive: true, force: true });
    };
  }

  const admin = connect(serverUrl, { poolSize: 1, applicationName: 'switchyard-bench' });
  const name = `bench_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } catch (error) {
    await admin.end();
    await stopEmbedded();
    throw error;
  }
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
