import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { createPostgresRepositories } from '@switchyard/postgres';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import { BcryptPasswordHasher } from '@switchyard/services';
import { Writable } from 'node:stream';
import { loadConfig } from '@switchyard/transport/config.ts';
import { createLogger } from '@switchyard/transport/logging.ts';
import { bootstrap } from '../src/bootstrap.ts';
import { startServer } from '../src/server.ts';
import { TEST_JWT_SECRET } from './support/test-server.ts';
import { firstRunBanner } from '../src/first-run-banner.ts';
import { firstRun, type FirstRunResult } from '../src/first-run.ts';
import { startFirstRunServer, type FirstRunServer } from './support/first-run-server.ts';
import { main as switchyard } from '@switchyard/cli';
import { api, expectStatus, login, type ApiClient } from './support/rest-client.ts';

// The development first run (docs/first-run.md) against a fresh database.
// topologies: single
// (First run is the services process's bootstrap, the same code in both roles; what the test
// then calls are ordinary REST routes that every other suite runs through a gateway too.)

const read = (file: string): string => readFileSync(file, 'utf8').trim();

describe('first run on a fresh database', () => {
  let fr: FirstRunServer;
  let client: ApiClient;
  let created: Extract<FirstRunResult, { kind: 'created' }>;

  before(async () => {
    fr = await startFirstRunServer();
    client = api(fr.base);
    assert.equal(fr.firstRun.kind, 'created');
    created = fr.firstRun as typeof created;
  });
  after(() => fr?.stop());

  test('makes two logins whose passwords are kept in the data directory (0600), and a server key kept beside them', () => {
    const files = {
      system: path.join(fr.dataDir, 'system-admin-password'),
      admin: path.join(fr.dataDir, 'admin-password'),
      key: path.join(fr.dataDir, 'development-sdk-key'),
    };
    assert.equal(created.systemAdmin.email, 'system@localhost');
    assert.equal(created.admin.email, 'admin@localhost');
    assert.equal(created.systemAdmin.passwordFile, files.system);
    assert.equal(created.admin.passwordFile, files.admin);
    assert.equal(created.sdkKey.file, files.key);
    for (const file of Object.values(files)) assert.equal(statSync(file).mode & 0o777, 0o600, file);
    assert.equal(read(files.system), created.systemAdmin.password);
    assert.equal(read(files.admin), created.admin.password);
    assert.equal(read(files.key), created.sdkKey.rawKey);
    // 12 random bytes in base64url: 16 characters.
    assert.match(created.admin.password!, /^[A-Za-z0-9_-]{16}$/);
    assert.match(created.systemAdmin.password!, /^[A-Za-z0-9_-]{16}$/);
    assert.notEqual(created.admin.password, created.systemAdmin.password);
    assert.match(created.sdkKey.rawKey, /^sdk_[A-Za-z0-9_-]{43}$/);
    assert.ok(!existsSync(`${files.admin}.new`));
  });

  test('admin@localhost signs straight into "Default", with "My project", its development and production environments and the key', async () => {
    const response = expectStatus(await client.post('/v1/auth/login', { body: { email: 'admin@localhost', password: read(path.join(fr.dataDir, 'admin-password')) } }), 200);
    assert.equal(response.org_id, created.org.id);
    const token = response.token as string;
    assert.deepEqual(expectStatus(await client.get('/v1/auth/orgs', { token }), 200).orgs, [{ org_id: created.org.id, org_name: 'Default', role: 'org_admin' }]);
    const projects = expectStatus(await client.get(`/v1/management/orgs/${created.org.id}/projects`, { token }), 200);
    assert.deepEqual(projects.map((project: { project_name: string }) => project.project_name), ['My project']);
    assert.equal(projects[0].project_id, created.project.id);
    const environments = expectStatus(await client.get(`/v1/management/projects/${created.project.id}/environments`, { token }), 200);
    assert.deepEqual(
      environments.map((environment: { environment_id: string; environment_name: string }) => [environment.environment_name, environment.environment_id]),
      [
        ['development', created.environments[0]!.id],
        ['production', created.environments[1]!.id],
      ],
    );
    assert.deepEqual(created.environments.map((environment) => environment.name), ['development', 'production']);
    const development = created.environments[0]!.id;
    assert.equal(created.sdkKey.environmentId, development);
    const keys = expectStatus(await client.get(`/v1/management/environments/${development}/sdk-keys`, { token }), 200);
    assert.deepEqual(keys.map((key: { sdk_key_id: string; kind: string }) => [key.sdk_key_id, key.kind]), [[created.sdkKey.id, 'server']]);
    assert.ok(created.sdkKey.rawKey.startsWith(keys[0].key_prefix));
    assert.deepEqual(expectStatus(await client.get(`/v1/management/environments/${created.environments[1]!.id}/sdk-keys`, { token }), 200), []);
  });

  test('the printed key works: OFREP answers for the development environment (no flags yet)', async () => {
    const bulk = expectStatus(await client.post('/ofrep/v1/evaluate/flags', { sdkKey: created.sdkKey.rawKey, body: { context: { targetingKey: 'u-1' } } }), 200);
    assert.deepEqual(bulk.flags, []);
  });

  test('system@localhost is the system administrator: it sees the system org and Default', async () => {
    const system = await login(client, 'system@localhost', read(path.join(fr.dataDir, 'system-admin-password')));
    const orgs = expectStatus(await client.get('/v1/admin/orgs', { token: system.token }), 200);
    assert.deepEqual(orgs.map((org: { org_name: string }) => org.org_name).sort(), ['Default', 'system']);
  });

  test('the change history names the bootstrap as the actor of what it made', async () => {
    const token = (await login(client, 'admin@localhost', created.admin.password!)).token;
    const history = expectStatus(await client.get(`/v1/management/orgs/${created.org.id}/audit-log`, { token }), 200);
    const entries = (history.entries ?? history) as Array<{ action: string; actor: { type: string; id: string } }>;
    assert.deepEqual(
      entries.map((entry) => entry.action).sort(),
      ['environment.create', 'environment.create', 'org.create', 'project.create', 'sdk_key.create', 'user.create'],
    );
    for (const entry of entries) assert.deepEqual([entry.actor.type, entry.actor.id], ['system', 'bootstrap']);
  });

  test('no log line carries a password or the key', () => {
    const logs = fr.logs.join('\n');
    for (const secret of [created.admin.password!, created.systemAdmin.password!, created.sdkKey.rawKey]) assert.ok(!logs.includes(secret));
  });

  test('a second start makes nothing: no password shown, the files and the logins unchanged, still one org besides the system org', async () => {
    const before = [read(created.admin.passwordFile), read(created.systemAdmin.passwordFile), read(created.sdkKey.file)];
    fr = await fr.restart();
    client = api(fr.base);
    assert.deepEqual(fr.firstRun, {
      kind: 'existing',
      systemAdmin: { email: 'system@localhost', password: null, passwordFile: created.systemAdmin.passwordFile },
      admin: { email: 'admin@localhost', password: null, passwordFile: created.admin.passwordFile },
      sdkKeyFile: created.sdkKey.file,
    });
    assert.deepEqual([read(created.admin.passwordFile), read(created.systemAdmin.passwordFile), read(created.sdkKey.file)], before);
    const admin = expectStatus(await client.post('/v1/auth/login', { body: { email: 'admin@localhost', password: created.admin.password } }), 200);
    assert.equal(admin.org_id, created.org.id);
    const system = await login(client, 'system@localhost', created.systemAdmin.password!);
    assert.equal(expectStatus(await client.get('/v1/admin/orgs', { token: system.token }), 200).length, 2);
  });
});

describe('first run: data directories from before, BOOTSTRAP_ADMIN_*, a failed write', () => {
  let db: TestDatabase;
  const dirs: string[] = [];
  const hasher = new BcryptPasswordHasher();
  const dataDir = () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-first-run-fn-'));
    dirs.push(dir);
    return dir;
  };
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db.drop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('with BOOTSTRAP_ADMIN_* set nothing of the first run is made, even when asked for', async () => {
    const fresh = await createTestDatabase();
    try {
      const repos = createPostgresRepositories(fresh.sql);
      const dir = dataDir();
      const result = await bootstrap(repos, hasher, { admin: { email: 'ops@example.com', password: 'ops-password-1' }, firstRun: { dataDir: dir } });
      assert.equal(result.firstRun, null);
      assert.deepEqual(result.createdAdmin, { email: 'ops@example.com', generatedPassword: null });
      assert.equal(await repos.users.getByEmail('admin@localhost'), null);
      assert.equal(await repos.users.getByEmail('system@localhost'), null);
      assert.deepEqual((await repos.orgs.list()).map((org) => org.name), ['system']);
      assert.ok(!existsSync(path.join(dir, 'admin-password')));
    } finally {
      await fresh.drop();
    }
  });

  test('by default only the embedded database gets a first run: a DATABASE_URL server makes nothing', async () => {
    const fresh = await createTestDatabase({ migrate: false });
    const dir = dataDir();
    try {
      const config = loadConfig({ DATABASE_URL: fresh.url, HTTP_PORT: '0', GRPC_PORT: '0', SYNC_GRPC_PORT: '0', DATA_DIR: dir, JWT_SECRET: TEST_JWT_SECRET });
      const server = await startServer(config, createLogger({ filter: 'error', json: true, destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) }));
      try {
        assert.equal(server.bootstrap.firstRun, null);
        assert.equal(await server.repos.users.getByEmail('admin@localhost'), null);
        assert.equal(await server.repos.users.getByEmail('system@localhost'), null);
        assert.deepEqual((await server.repos.orgs.list()).map((org) => org.name), ['system']);
        assert.ok(!existsSync(path.join(dir, 'admin-password')));
      } finally {
        await server.stop();
      }
    } finally {
      await fresh.drop();
    }
  });

  test('a system org that already has administrators (BOOTSTRAP_ADMIN_* on an earlier start) gets no first run', async () => {
    const repos = createPostgresRepositories(db.sql);
    await bootstrap(repos, hasher, { admin: { email: 'ops@example.com', password: 'ops-admin-password' }, firstRun: null });
    const dir = dataDir();
    const result = await bootstrap(repos, hasher, { admin: null, firstRun: { dataDir: dir } });
    assert.deepEqual(result.firstRun, { kind: 'administered' });
    assert.deepEqual((await repos.orgs.list()).map((org) => org.name), ['system']);
    assert.equal(await repos.users.getByEmail('system@localhost'), null);
    assert.equal(await repos.users.getByEmail('admin@localhost'), null);
    assert.ok(!existsSync(path.join(dir, 'admin-password')));
    assert.deepEqual(firstRunBanner(result.firstRun!, { httpPort: 8080, syncGrpcPort: 50050 }), [
      'The system organisation already has administrators: the first run makes nothing (docs/first-run.md). Sign in with their accounts.',
    ]);
  });

  test('a data directory whose admin@localhost is the system administrator keeps working as it was', async () => {
    const repos = createPostgresRepositories(db.sql);
    // What earlier versions made on the first start: admin@localhost in the system org.
    await bootstrap(repos, hasher, { admin: { email: 'admin@localhost', password: 'old-admin-password' }, firstRun: null });
    const dir = dataDir();
    const result = await bootstrap(repos, hasher, { admin: null, firstRun: { dataDir: dir } });
    assert.deepEqual(result.firstRun, { kind: 'legacy', admin: { email: 'admin@localhost', password: null, passwordFile: path.join(dir, 'admin-password') } });
    assert.deepEqual((await repos.orgs.list()).map((org) => org.name), ['system']);
    assert.equal(await repos.users.getByEmail('system@localhost'), null);
    const admin = (await repos.users.getByEmail('admin@localhost'))!;
    assert.ok(await hasher.verify('old-admin-password', admin.passwordHash));
    assert.equal((await repos.users.listMemberships(admin.id)).length, 1);
  });

  test('a data directory that cannot be written leaves nothing behind, and the next start makes it all', async () => {
    const fresh = await createTestDatabase();
    try {
      const repos = createPostgresRepositories(fresh.sql);
      const blocked = path.join(dataDir(), 'a-file');
      writeFileSync(blocked, 'not a directory');
      await assert.rejects(bootstrap(repos, hasher, { admin: null, firstRun: { dataDir: path.join(blocked, 'data') } }));
      assert.equal(await repos.users.getByEmail('admin@localhost'), null);
      assert.equal(await repos.users.getByEmail('system@localhost'), null);
      assert.deepEqual((await repos.orgs.list()).map((org) => org.name), ['system']);
      const dir = dataDir();
      const result = await bootstrap(repos, hasher, { admin: null, firstRun: { dataDir: dir } });
      assert.equal(result.firstRun?.kind, 'created');
      assert.deepEqual((await repos.orgs.list()).map((org) => org.name).sort(), ['Default', 'system']);
    } finally {
      await fresh.drop();
    }
  });

  test('two instances starting at once on one database: one makes it all, the other reports it; the files hold the first one\'s secrets', async () => {
    const fresh = await createTestDatabase();
    try {
      const repos = createPostgresRepositories(fresh.sql);
      const { systemOrg } = await bootstrap(repos, hasher, { admin: null, firstRun: null });
      const dir = dataDir();
      const results = await Promise.all([firstRun(repos, hasher, systemOrg, { dataDir: dir }), firstRun(repos, hasher, systemOrg, { dataDir: dir })]);
      assert.deepEqual(results.map((result) => result.kind).sort(), ['created', 'existing']);
      const made = results.find((result) => result.kind === 'created') as Extract<FirstRunResult, { kind: 'created' }>;
      assert.equal(read(made.admin.passwordFile), made.admin.password);
      assert.equal(read(made.systemAdmin.passwordFile), made.systemAdmin.password);
      assert.equal(read(made.sdkKey.file), made.sdkKey.rawKey);
      assert.deepEqual((await repos.orgs.list()).map((org) => org.name).sort(), ['Default', 'system']);
    } finally {
      await fresh.drop();
    }
  });
});

test('the banner: passwords, addresses, environment ids and the key on the first start; where they are kept on later ones', () => {
  const created: FirstRunResult = {
    kind: 'created',
    systemAdmin: { email: 'system@localhost', password: 'S3', passwordFile: '/d/system-admin-password' },
    admin: { email: 'admin@localhost', password: 'A1', passwordFile: '/d/admin-password' },
    org: { id: 'o', name: 'Default' },
    project: { id: 'p', name: 'My project' },
    environments: [
      { id: 'e-dev', name: 'development' },
      { id: 'e-prod', name: 'production' },
    ],
    sdkKey: { id: 'k', environmentId: 'e-dev', environmentName: 'development', rawKey: 'sdk_K', file: '/d/development-sdk-key' },
  };
  assert.deepEqual(firstRunBanner(created, { httpPort: 8080, syncGrpcPort: 50050 }), [
    'First run: created the org "Default" with the project "My project" (environments development, production).',
    '  Sign in to the console:  admin@localhost / A1   (shown once; also kept in /d/admin-password)',
    '  System administrator:    system@localhost / S3   (creates orgs; shown once; also kept in /d/system-admin-password)',
    'SDK settings:',
    '  baseUrl (REST):          http://localhost:8080',
    '  syncUrl (gRPC sync):     localhost:50050',
    '  environmentId development  e-dev',
    '  environmentId production   e-prod',
    '  sdkKey (development, server): sdk_K   (shown once; also kept in /d/development-sdk-key)',
  ]);
  assert.deepEqual(
    firstRunBanner(
      {
        kind: 'existing',
        systemAdmin: { email: 'system@localhost', password: null, passwordFile: '/d/system-admin-password' },
        admin: { email: 'admin@localhost', password: null, passwordFile: '/d/admin-password' },
        sdkKeyFile: '/d/development-sdk-key',
      },
      { httpPort: 8080, syncGrpcPort: 50050 },
    ),
    [
      'Sign in to the console as admin@localhost (password in /d/admin-password).',
      'System administrator (creates orgs): system@localhost (password in /d/system-admin-password).',
      'The server SDK key made at the first run is in /d/development-sdk-key; SDK settings: baseUrl http://localhost:8080  syncUrl localhost:50050',
    ],
  );
});

describe('examples/flags.yaml on a fresh install', () => {
  let fr: FirstRunServer;
  before(async () => {
    fr = await startFirstRunServer();
  });
  after(() => fr?.stop());

  test('imports into "My project" with the switchyard command and serves its flags to the printed key', async () => {
    const created = fr.firstRun as Extract<FirstRunResult, { kind: 'created' }>;
    const client = api(fr.base);
    const token = (await login(client, 'admin@localhost', created.admin.password!)).token;
    let out = '';
    const code = await switchyard(['import', fileURLToPath(new URL('../../../examples/flags.yaml', import.meta.url)), '--project', created.project.id], {
      env: { SWITCHYARD_URL: fr.base, SWITCHYARD_TOKEN: token },
      stdout: { write: (text: string) => (out += text) },
      stderr: { write: (text: string) => (out += text) },
      cwd: process.cwd(),
    });
    assert.equal(code, 0, out);
    assert.match(out, /^\+ flag new-checkout$/m);
    // The development key evaluates the example's development configuration: everyone gets the new checkout.
    const answer = expectStatus(await client.post('/ofrep/v1/evaluate/flags/new-checkout', { sdkKey: created.sdkKey.rawKey, body: { context: { targetingKey: 'u-1' } } }), 200);
    assert.equal(answer.value, true);
  });
});
