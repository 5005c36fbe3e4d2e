import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, test } from 'node:test';
import { connect, startEmbeddedPostgres, type EmbeddedPostgresHandle, type Sql } from '@switchyard/postgres';
import { stablePort } from '@switchyard/postgres/testing';
import { loadConfig } from '@switchyard/transport/config.ts';
import { createLogger } from '@switchyard/transport/logging.ts';
import { startServer, type RunningServer } from '../src/server.ts';
import { api, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { TEST_ADMIN, TEST_JWT_SECRET } from './support/test-server.ts';

/**
 * The database goes away while a batch is being written: the client must get a 5xx `{error, code}`,
 * none of the batch may be stored, and the same server process must serve again once PostgreSQL
 * is back. This needs a PostgreSQL of its own that can be stopped and restarted (embedded, with
 * its data kept across the restart).
 */


const runDir = mkdtempSync(path.join(tmpdir(), 'switchyard-outage-'));
// Run as root, PostgreSQL runs as the `postgres` user, which must reach the data directory.
chmodSync(runDir, 0o755);
const dataDir = path.join(runDir, 'postgres');
let port: number;
let database: EmbeddedPostgresHandle | null = null;
let server: RunningServer | null = null;
let client: ApiClient;
let tenant: Tenant;
/** The test's own connections (ended before the server stops, so a held lock cannot block shutdown). */
let observer: Sql | null = null;

const startDatabase = async () => {
  database = await startEmbeddedPostgres({ dataDir, port, persistent: true });
  return database;
};

const batchPath = () => `/v1/environments/${tenant.environmentId}/events/batch`;
const batchOf = (contextKey: string, size: number) =>
  Array.from({ length: size }, (_, i) => ({ metric_key: 'clicks', context_type: 'user', context_key: contextKey, value: i }));

async function storedFor(contextKey: string): Promise<number> {
  const sql = server?.database.sql;
  assert.ok(sql);
  const [row] = await sql<{ n: number }[]>`
    SELECT count(*)::int8 AS n FROM events
    WHERE org_id = ${tenant.orgId} AND environment_id = ${tenant.environmentId} AND context_key = ${contextKey}`;
  return row?.n ?? 0;
}

/** Waits until the server's INSERT into events sleeps in the trigger below, i.e. is provably in flight. */
async function waitUntilInsertSleeps(observer: Sql): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const [row] = await observer<{ n: number }[]>`
      SELECT count(*)::int8 AS n FROM pg_stat_activity
      WHERE application_name = 'switchyard' AND wait_event = 'PgSleep' AND query LIKE '%INSERT INTO events%'`;
    if ((row?.n ?? 0) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail('the INSERT into events never started');
}

before(async () => {
  port = await stablePort();
  const { url } = await startDatabase();
  const logging = createLogger({ filter: 'warn', json: true, destination: new Writable({ write: (_chunk, _encoding, done) => done() }) });
  server = await startServer(
    loadConfig({
      DATABASE_URL: url,
      HTTP_PORT: '0',
      GRPC_PORT: '0',
      SYNC_GRPC_PORT: '0',
      DATA_DIR: runDir,
      JWT_SECRET: TEST_JWT_SECRET,
      BOOTSTRAP_ADMIN_EMAIL: TEST_ADMIN.email,
      BOOTSTRAP_ADMIN_PASSWORD: TEST_ADMIN.password,
    }),
    logging,
  );
  client = api(`http://127.0.0.1:${server.httpPort}`);
  const admin = await loginAdmin(client);
  tenant = await seedTenant(client, admin.token, 'outage');
  expectStatus(
    await client.post(`/v1/environments/${tenant.environmentId}/event-definitions`, { token: tenant.admin.token, body: { key: 'clicks', value_type: 'int' } }),
    202,
  );
});

after(async () => {
  await observer?.end({ timeout: 0 }).catch(() => {});
  // A postgres.js connection whose statement was killed keeps that statement as current until it
  // is used again, and sql.end() would wait its full 5 s timeout for it: use every pooled
  // connection once first (the killed one answers its stale 57P01 and is then clean).
  const sql = server?.database.sql;
  if (sql && database) await Promise.allSettled(Array.from({ length: 10 }, () => sql`SELECT pg_sleep(0.05)`));
  await server?.stop().catch(() => {});
  await database?.stop().catch(() => {});
  rmSync(runDir, { recursive: true, force: true });
});

test('PostgreSQL stopped during a batch: 5xx {error, code}, nothing of the batch stored, and service resumes without a restart', { timeout: 90_000 }, async (t) => {
  const warmUp = `warm-${unique()}`;
  assert.deepEqual(expectStatus(await client.post(batchPath(), { sdkKey: tenant.rawKey, body: batchOf(warmUp, 10) }), 202), {
    accepted_count: 10,
    rejected_keys: [],
    rejected: [],
  });

  // 1. A trigger makes every INSERT into events sleep, so the server's INSERT is provably in
  //    flight when the database stops (a plain statement-level trigger: no client holds a lock).
  assert.ok(database);
  observer = connect(database.url, { poolSize: 1, applicationName: 'outage-test' });
  await observer`CREATE FUNCTION outage_test_stall() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); RETURN NULL; END $$`;
  await observer`CREATE TRIGGER outage_test_stall BEFORE INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION outage_test_stall()`;
  const lost = `lost-${unique()}`;
  const inFlight = client.post(batchPath(), { sdkKey: tenant.rawKey, body: { events: batchOf(lost, 500) } });
  await waitUntilInsertSleeps(observer);
  await observer.end({ timeout: 1 });
  observer = null;

  // 2. PostgreSQL goes away (fast shutdown: open transactions are aborted).
  await database.stop();
  database = null;
  const failed = await inFlight;
  assert.ok(failed.status === 502 || failed.status === 503, `a 5xx for the batch, got ${failed.status} ${failed.text}`);
  assert.deepEqual(Object.keys(failed.body as object).sort(), ['code', 'error']);
  assert.equal(failed.body.code, 'UNAVAILABLE');
  assert.doesNotMatch(failed.text, /INSERT|ECONNREFUSED|terminat/i, 'no SQL or driver detail in the answer');

  // 3. While it is down, new batches fail the same way.
  const down = await client.post(batchPath(), { sdkKey: tenant.rawKey, body: batchOf(`down-${unique()}`, 5) });
  assert.ok(down.status === 502 || down.status === 503, `a 5xx while down, got ${down.status} ${down.text}`);
  assert.equal(down.body.code, 'UNAVAILABLE');

  // 4. PostgreSQL is back: the same server process serves again. A client retries a 5xx as an SDK
  //    does: postgres.js may refuse the first statement of a connection that was killed mid-query
  //    once with the old session's error (porsager/postgres#1215); ingest writes retry that case
  //    themselves, other first queries (e.g. reloading a cache) can still answer 502 once.
  const restarted = await startDatabase();
  const cleanup = connect(restarted.url, { poolSize: 1, applicationName: 'outage-test' });
  await cleanup`DROP TRIGGER outage_test_stall ON events`;
  await cleanup.end({ timeout: 1 });
  const resumed = `back-${unique()}`;
  let attempts = 0;
  let answer = await client.post(batchPath(), { sdkKey: tenant.rawKey, body: batchOf(resumed, 20) });
  for (attempts = 1; answer.status !== 202 && attempts < 3; attempts += 1) {
    assert.ok(answer.status === 502 || answer.status === 503, `only a 5xx may precede recovery, got ${answer.status} ${answer.text}`);
    assert.equal(answer.body.code, 'UNAVAILABLE');
    answer = await client.post(batchPath(), { sdkKey: tenant.rawKey, body: batchOf(resumed, 20) });
  }
  t.diagnostic(`served again after ${attempts} attempt(s)`);
  assert.deepEqual(expectStatus(answer, 202, 'a batch after the restart'), { accepted_count: 20, rejected_keys: [], rejected: [] });
  assert.equal(await storedFor(resumed), 20, 'stored once: the refused attempts stored nothing');
  const next = `next-${unique()}`;
  assert.deepEqual(expectStatus(await client.post(batchPath(), { sdkKey: tenant.rawKey, body: batchOf(next, 3) }), 202), { accepted_count: 3, rejected_keys: [], rejected: [] });
  assert.equal(await storedFor(next), 3);
  assert.equal(await storedFor(lost), 0, 'none of the batch that was in flight is stored');
  assert.equal(await storedFor(warmUp), 10);
});
