import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createTestDatabase, stablePort, type TestDatabase } from '@switchyard/postgres/testing';
import { portFrom, spawnServer } from '../hosts/server/test/support/server-process.ts';
import { buildServer, type BuiltServer } from '../scripts/build-server.ts';

/**
 * Production runs built JavaScript: the server as `npm run build` emits it starts with plain
 * `node` (no tsx, no TypeScript anywhere), from another working directory, finds its .proto files,
 * schema.sql and migrations in the build output, creates the schema of an empty database, serves
 * REST and gRPC, and stops cleanly on SIGTERM.
 */

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const ADMIN = { email: 'built@example.com', password: 'built-server-password-1' };

let built: BuiltServer;
let db: TestDatabase;
let dataDir: string;

before(async () => {
  // A directory of its own inside the checkout (node_modules is found from there, as from
  // hosts/server/dist), so this never races an `npm run build` in the working tree.
  built = await buildServer({ outDir: mkdtempSync(path.join(ROOT, 'hosts', 'server', '.build-test-')) });
  db = await createTestDatabase({ migrate: false });
  dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-built-'));
});
after(async () => {
  await db?.drop();
  if (built) rmSync(built.outDir, { recursive: true, force: true });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

/** The services the sync port lists over gRPC server reflection (which reads the .proto files). */
async function reflectedServices(port: number): Promise<string[]> {
  const require = createRequire(import.meta.url);
  const reflectionRoot = path.dirname(require.resolve('@grpc/reflection/package.json'));
  const definition = protoLoader.loadSync('grpc/reflection/v1/reflection.proto', { includeDirs: [path.join(reflectionRoot, 'build/proto')], keepCase: true });
  const Reflection = (grpc.loadPackageDefinition(definition) as any).grpc.reflection.v1.ServerReflection as grpc.ServiceClientConstructor;
  const client = new Reflection(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    const call = (client as any).ServerReflectionInfo() as grpc.ClientDuplexStream<unknown, any>;
    const answer = await new Promise<any>((resolve, reject) => {
      call.on('data', (data: unknown) => {
        resolve(data);
        call.end();
      });
      call.on('error', reject);
      call.write({ list_services: '*' });
    });
    return (answer.list_services_response.service as Array<{ name: string }>).map((service) => service.name);
  } finally {
    client.close();
  }
}

test('the built server runs on plain node: schema created, ready, login, gRPC reflection, SIGTERM exits 0', { timeout: 120_000 }, async () => {
  const source = readFileSync(built.main, 'utf8');
  assert.doesNotMatch(source, /from ["'](tsx|@switchyard\/)/, 'workspaces are bundled, nothing imports tsx');
  for (const file of ['schema.sql', 'migrations/0002_sessions-and-invitations.sql', 'proto/svc/flags/v1/flags.proto']) {
    assert.ok(readFileSync(path.join(built.outDir, file), 'utf8').length > 0, `${file} is in the build output`);
  }

  const server = spawnServer(
    {
      APP_ENV: 'production',
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      JWT_SECRET: 'built-server-test-secret-of-32-bytes-or-more',
      BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
      BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    },
    // No NODE_OPTIONS and no --import: spawnServer's environment is a clean one.
    { main: built.main, cwd: dataDir },
  );
  try {
    const port = portFrom(await server.waitForLine(/REST listening/, 60_000));
    const syncPort = portFrom(await server.waitForLine(/sync gRPC listening/));
    await server.waitForLine(/"msg":"ready"/);
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);

    const login = await fetch(`http://127.0.0.1:${port}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    assert.equal(login.status, 200);
    const { token } = (await login.json()) as { token: string };
    const orgs = await fetch(`http://127.0.0.1:${port}/v1/auth/orgs`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(orgs.status, 200, await orgs.clone().text());

    assert.ok((await reflectedServices(syncPort)).includes('svc.flags.v1.FlagSyncService'));

    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0, server.lines.join('\n'));
  } finally {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  }
});

test('the built gateway and services run on plain node: the gateway is ready behind the services and logs in through them', { timeout: 120_000 }, async () => {
  for (const entry of [built.gateway, built.services]) assert.doesNotMatch(readFileSync(entry, 'utf8'), /from ["'](tsx|@switchyard\/)/);
  const servicesGrpcPort = await stablePort();
  const env = { APP_ENV: 'production', DATABASE_URL: db.url, DATA_DIR: dataDir, JWT_SECRET: 'built-server-test-secret-of-32-bytes-or-more' };
  const services = spawnServer({ ...env, GRPC_PORT: String(servicesGrpcPort), HTTP_PORT: '0' }, { main: built.services, cwd: dataDir });
  const gateway = spawnServer({ APP_ENV: 'production', SERVICES_URL: `127.0.0.1:${servicesGrpcPort}` }, { main: built.gateway, cwd: dataDir });
  try {
    await services.waitForLine(/services are up/, 60_000);
    const port = portFrom(await gateway.waitForLine(/gateway REST listening/, 60_000));
    for (let ready = 0; ready !== 200; ) {
      ready = (await fetch(`http://127.0.0.1:${port}/readyz`)).status;
      if (ready !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // As the administrator the first test bootstrapped in this database.
    const login = await fetch(`http://127.0.0.1:${port}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    assert.equal(login.status, 200, await login.clone().text());
    gateway.child.kill('SIGTERM');
    assert.equal(await gateway.exited, 0, gateway.lines.join('\n'));
    services.child.kill('SIGTERM');
    assert.equal(await services.exited, 0, services.lines.join('\n'));
  } finally {
    for (const process of [gateway, services]) if (process.child.exitCode === null && process.child.signalCode === null) process.child.kill('SIGKILL');
  }
});
