import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { freePort } from '@switchyard/postgres/testing';
import { portFrom, spawnServer } from './support/server-process.ts';

const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-embedded-'));
// Run as root, PostgreSQL runs as the `postgres` user, which must reach the data directory.
chmodSync(dataDir, 0o755);
after(() => rmSync(dataDir, { recursive: true, force: true }));

test('without DATABASE_URL: embedded PostgreSQL, ready, SIGTERM exits 0, a restart reuses the data', { timeout: 120_000 }, async () => {
  const env = { DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(await freePort()) };

  const first = spawnServer(env);
  const embeddedLine = await first.waitForLine(/DATABASE_URL not set: using the embedded PostgreSQL/, 90_000);
  assert.match(embeddedLine, /"firstRun":true/);
  const port = portFrom(await first.waitForLine(/REST listening/));
  await first.waitForLine(/ready/);
  assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
  const banner = await first.waitForLine(/Created the first administrator: admin@localhost/);
  const password = readFileSync(path.join(dataDir, 'admin-password'), 'utf8').trim();
  assert.ok(banner.includes(password), 'the generated password is shown once');
  assert.ok(first.lines.some((line) => /Log in:/.test(line)));
  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0);
  assert.ok(existsSync(path.join(dataDir, 'postgres', 'PG_VERSION')));

  const second = spawnServer(env);
  assert.match(await second.waitForLine(/DATABASE_URL not set/, 60_000), /"firstRun":false/);
  const secondPort = portFrom(await second.waitForLine(/REST listening/));
  await second.waitForLine(/ready/);
  assert.equal((await fetch(`http://127.0.0.1:${secondPort}/readyz`)).status, 200);
  assert.ok(!second.lines.some((line) => /Created the first administrator/.test(line)), 'the admin from the first run is kept');
  assert.ok(!second.lines.some((line) => line.includes(password)), 'the password is not shown again');
  second.child.kill('SIGTERM');
  assert.equal(await second.exited, 0);
});
