import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { connect, isMigrated } from '@switchyard/postgres';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import { loadConfig } from '@switchyard/transport/config.ts';
import { registerHealthRoutes } from '@switchyard/transport/http/health-routes.ts';
import { BcryptPasswordHasher } from '@switchyard/services';
import { createLogger } from '@switchyard/transport/logging.ts';
import { startServer, type RunningServer } from '../src/server.ts';
import { checkHealth } from './support/grpc-health-client.ts';

const logged: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, callback) {
    logged.push(String(chunk));
    callback();
  },
});
const logging = createLogger({ filter: 'debug', json: true, destination: sink });

let db: TestDatabase;
let server: RunningServer;
let base: string;
const ADMIN = { email: 'root@example.com', password: 'a very good password' };

function configFor(url: string) {
  return loadConfig({
    DATABASE_URL: url,
    HTTP_PORT: '0',
    GRPC_PORT: '0',
    SYNC_GRPC_PORT: '0',
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'switchyard-server-')),
    JWT_SECRET: 'test-secret-that-is-at-least-32-bytes-long',
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
  });
}

before(async () => {
  db = await createTestDatabase({ migrate: false });
  server = await startServer(configFor(db.url), logging);
  base = `http://127.0.0.1:${server.httpPort}`;
});
after(async () => {
  await server.stop();
  await db.drop();
});

describe('single-process server', () => {
  test('/healthz answers 200 while the process is up', async () => {
    const response = await fetch(`${base}/healthz`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { status: 'ok' });
  });

  test('/readyz answers 200 once the database is reachable and migrated', async () => {
    assert.equal(await isMigrated(db.sql), true, 'startup applied the schema');
    const response = await fetch(`${base}/readyz`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { status: 'ready' });
  });

  test('/metrics serves Prometheus text', async () => {
    const response = await fetch(`${base}/metrics`);
    assert.equal(response.status, 200);
    assert.match(await response.text(), /process_cpu_user_seconds_total/);
  });

  test('the internal and the sync gRPC ports answer the health service', async () => {
    assert.equal(await checkHealth(server.grpcPort), 'SERVING');
    assert.equal(await checkHealth(server.syncGrpcPort), 'SERVING');
    await assert.rejects(checkHealth(server.grpcPort, 'no.such.Service'), /unknown service/);
  });

  test('bootstrap creates the system org and the configured admin, password hashed', async () => {
    const org = await server.repos.orgs.findSystemOrg();
    assert.ok(org);
    assert.equal(org.name, 'system');
    assert.equal(org.isSystem, true);
    const user = await server.repos.users.getByEmail(ADMIN.email);
    assert.ok(user);
    assert.notEqual(user.passwordHash, ADMIN.password);
    assert.equal(await new BcryptPasswordHasher().verify(ADMIN.password, user.passwordHash), true);
    const membership = await server.repos.users.getMembership(org.id, user.id);
    assert.equal(membership?.role, 'org_admin');
    assert.deepEqual(server.bootstrap.createdAdmin, { email: ADMIN.email, generatedPassword: null });
  });

  test('more instances on the same database start together: one system org, one admin', async () => {
    const others = await Promise.all([startServer(configFor(db.url), logging), startServer(configFor(db.url), logging)]);
    try {
      for (const other of others) {
        const response = await fetch(`http://127.0.0.1:${other.httpPort}/readyz`);
        assert.equal(response.status, 200);
        assert.equal(other.bootstrap.createdAdmin, null, 'the admin already existed');
      }
      const [row] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM orgs WHERE is_system`;
      assert.equal(row?.n, 1);
    } finally {
      await Promise.all(others.map((other) => other.stop()));
    }
  });

  test('no secret reaches the log', () => {
    const all = logged.join('');
    assert.ok(all.length > 0);
    assert.ok(!all.includes(ADMIN.password));
    assert.ok(!all.includes('test-secret-that-is-at-least-32-bytes-long'));
  });
});

describe('readiness', () => {
  test('/readyz answers 503 UNAVAILABLE when the database cannot be reached', async () => {
    const unreachable = connect('postgres://nobody@127.0.0.1:1/none', { poolSize: 1 });
    const app = Fastify();
    registerHealthRoutes(app, { isReady: () => isMigrated(unreachable) });
    try {
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      assert.equal(response.statusCode, 503);
      assert.equal(response.json().code, 'UNAVAILABLE');
      const live = await app.inject({ method: 'GET', url: '/healthz' });
      assert.equal(live.statusCode, 200);
    } finally {
      await app.close();
      await unreachable.end({ timeout: 1 });
    }
  });
});
