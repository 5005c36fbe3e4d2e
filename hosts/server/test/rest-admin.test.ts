import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  api,
  assertNoSecrets,
  expectError,
  expectRefused,
  expectStatus,
  login,
  loginAdmin,
  seedTenant,
  unique,
  type ApiClient,
  type LoggedInUser,
  type Tenant,
} from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let systemOrgId: string;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const USER_FIELDS = ['display_name', 'email', 'org_id', 'org_role', 'user_id'];

before(async () => {
  ts = await startTestServer();
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'adm-a');
  const orgs = expectStatus(await client.get('/v1/admin/orgs', { token: root.token }), 200);
  const system = orgs.find((org: { org_name: string }) => org.org_name === 'system');
  assert.ok(system, 'the system org exists');
  systemOrgId = system.org_id;
});
after(() => ts.stop());

const newUser = (label: string, extra: Record<string, unknown> = {}) => ({
  email: `${label}-${unique()}@example.com`,
  display_name: `User ${label}`,
  password: `pw-${label}-${unique()}-secret`,
  ...extra,
});

test('password hashes carry the configured bcrypt cost (PASSWORD_HASH_COST; the test servers set 4)', async () => {
  const [admin] = await ts.db.sql<Array<{ password_hash: string }>>`SELECT password_hash FROM users WHERE email = 'root@example.com'`;
  assert.match(admin?.password_hash ?? '', /^\$2[aby]\$04\$/);
});

describe('POST /v1/admin/orgs', () => {
  test('201 with {org_id, org_name, created_at}', async () => {
    const name = `org-${unique()}`;
    const started = Date.now();
    const body = expectStatus(await client.post('/v1/admin/orgs', { token: root.token, body: { name } }), 201);
    assert.deepEqual(Object.keys(body).sort(), ['created_at', 'org_id', 'org_name']);
    assert.match(body.org_id, UUID);
    assert.equal(body.org_name, name);
    assert.match(body.created_at, ISO);
    assert.ok(Math.abs(Date.parse(body.created_at) - started) < 60_000);
  });

  test('a duplicate name → 409 ALREADY_EXISTS', async () => {
    expectError(await client.post('/v1/admin/orgs', { token: root.token, body: { name: a.orgName } }), 409, 'ALREADY_EXISTS');
    expectError(await client.post('/v1/admin/orgs', { token: root.token, body: { name: 'system' } }), 409, 'ALREADY_EXISTS');
  });

  test('a missing or blank name → 400 INVALID_ARGUMENT naming name', async () => {
    expectError(await client.post('/v1/admin/orgs', { token: root.token, body: {} }), 400, 'INVALID_ARGUMENT', /name/);
    expectError(await client.post('/v1/admin/orgs', { token: root.token, body: { name: '   ' } }), 400, 'INVALID_ARGUMENT', /name/);
  });

  test('without a token → 401', async () => {
    expectError(await client.post('/v1/admin/orgs', { body: { name: `org-${unique()}` } }), 401, 'UNAUTHENTICATED');
  });
});

describe('GET /v1/admin/orgs', () => {
  test('200 with every org as {org_id, org_name, created_at}', async () => {
    const body = expectStatus(await client.get('/v1/admin/orgs', { token: root.token }), 200);
    assert.ok(Array.isArray(body));
    for (const org of body) assert.deepEqual(Object.keys(org).sort(), ['created_at', 'org_id', 'org_name']);
    assert.ok(body.some((org: { org_id: string; org_name: string }) => org.org_id === a.orgId && org.org_name === a.orgName));
  });

  test('without a token → 401', async () => {
    expectError(await client.get('/v1/admin/orgs'), 401, 'UNAUTHENTICATED');
  });
});

describe('POST /v1/admin/orgs/{org_id}/users', () => {
  test('201 with the user record, and no password or hash field', async () => {
    const input = newUser('seeded', { org_role: 'org_member' });
    const response = await client.post(`/v1/admin/orgs/${a.orgId}/users`, { token: root.token, body: input });
    const body = expectStatus(response, 201);
    assert.deepEqual(Object.keys(body).sort(), USER_FIELDS);
    assert.match(body.user_id, UUID);
    assert.deepEqual(
      { email: body.email, display_name: body.display_name, org_id: body.org_id, org_role: body.org_role },
      { email: input.email, display_name: input.display_name, org_id: a.orgId, org_role: 'org_member' },
    );
    assert.ok(!response.text.includes(input.password));
    assert.doesNotMatch(response.text, /\$2[aby]\$/);

    // The user logs in to that org with that role: may read, may not create projects.
    const session = await login(client, input.email, input.password);
    expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: session.token }), 200);
    expectError(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: session.token, body: { name: `p-${unique()}` } }), 403, 'PERMISSION_DENIED');
  });

  test('an unknown org id → 404 NOT_FOUND; a non-UUID org id → 404', async () => {
    expectError(await client.post(`/v1/admin/orgs/${randomUUID()}/users`, { token: root.token, body: newUser('ghost') }), 404, 'NOT_FOUND');
    expectError(await client.post('/v1/admin/orgs/not-a-uuid/users', { token: root.token, body: newUser('ghost') }), 404, 'NOT_FOUND');
  });

  test('invalid fields → 400 INVALID_ARGUMENT naming the field', async () => {
    const path = `/v1/admin/orgs/${a.orgId}/users`;
    const { display_name: _omitted, ...noDisplayName } = newUser('bad');
    expectError(await client.post(path, { token: root.token, body: noDisplayName }), 400, 'INVALID_ARGUMENT', /display_name/);
    expectError(await client.post(path, { token: root.token, body: newUser('bad', { org_role: 'owner' }) }), 400, 'INVALID_ARGUMENT', /org_role/);
    expectError(await client.post(path, { token: root.token, body: newUser('bad', { password: 'short1' }) }), 400, 'INVALID_ARGUMENT', /password/);
    expectError(await client.post(path, { token: root.token, body: newUser('bad', { email: 'not-an-email' }) }), 400, 'INVALID_ARGUMENT', /email/);
  });

  test('the same email twice in one org → 409 ALREADY_EXISTS', async () => {
    expectError(
      await client.post(`/v1/admin/orgs/${a.orgId}/users`, { token: root.token, body: newUser('dup', { email: a.member.email }) }),
      409,
      'ALREADY_EXISTS',
    );
  });
});

describe('POST /v1/admin/seed-user', () => {
  test('without org_id: a user of the system org, who may use admin routes and not management routes', async () => {
    const input = newUser('sysadmin', { org_role: 'org_admin' });
    const body = expectStatus(await client.post('/v1/admin/seed-user', { token: root.token, body: input }), 201);
    assert.deepEqual(Object.keys(body).sort(), USER_FIELDS);
    assert.equal(body.org_id, systemOrgId);
    assert.equal(body.org_role, 'org_admin');
    assert.equal(body.email, input.email);

    const session = await login(client, input.email, input.password);
    expectStatus(await client.get('/v1/admin/orgs', { token: session.token }), 200);
    expectError(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: session.token }), 403, 'PERMISSION_DENIED');
  });

  test('with org_id: a user of that org', async () => {
    const input = newUser('orgadmin', { org_role: 'org_admin', org_id: a.orgId });
    const body = expectStatus(await client.post('/v1/admin/seed-user', { token: root.token, body: input }), 201);
    assert.deepEqual(Object.keys(body).sort(), USER_FIELDS);
    assert.equal(body.org_id, a.orgId);
    assert.equal(body.org_role, 'org_admin');

    const session = await login(client, input.email, input.password);
    expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: session.token, body: { name: `p-${unique()}` } }), 201);
    expectError(await client.get('/v1/admin/orgs', { token: session.token }), 403, 'PERMISSION_DENIED');
  });

  test('an unknown org_id → 404 NOT_FOUND', async () => {
    expectError(await client.post('/v1/admin/seed-user', { token: root.token, body: newUser('ghost', { org_id: randomUUID() }) }), 404, 'NOT_FOUND');
  });
});

describe('non-system callers on admin routes', () => {
  const adminCalls = (orgName: string) => [
    { method: 'POST', path: '/v1/admin/orgs', body: { name: orgName } },
    { method: 'GET', path: '/v1/admin/orgs' },
    { method: 'POST', path: `/v1/admin/orgs/${a.orgId}/users`, body: newUser('intruder') },
    { method: 'POST', path: `/v1/admin/orgs/${systemOrgId}/users`, body: newUser('intruder', { org_role: 'org_admin' }) },
    { method: 'POST', path: '/v1/admin/seed-user', body: newUser('intruder') },
    { method: 'POST', path: '/v1/admin/seed-user', body: newUser('intruder', { org_id: a.orgId }) },
  ];

  for (const role of ['admin', 'member'] as const) {
    test(`org_${role} → 403 PERMISSION_DENIED on every admin route, and nothing is created`, async () => {
      const orgName = `intruded-${unique()}`;
      const token = a[role].token;
      for (const call of adminCalls(orgName)) {
        const response = await client.request(call.method, call.path, { token, ...(call.body ? { body: call.body } : {}) });
        expectError(response, 403, 'PERMISSION_DENIED');
      }
      const orgs = expectStatus(await client.get('/v1/admin/orgs', { token: root.token }), 200);
      assert.ok(!orgs.some((org: { org_name: string }) => org.org_name === orgName));
      const users = expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/users`, { token: a.admin.token }), 200);
      assert.ok(!users.some((user: { email: string }) => user.email.startsWith('intruder-')));
    });
  }
});

describe('path tricks on admin routes', () => {
  const TRICKS = [
    '//v1/admin/orgs',
    '/v1/admin//orgs',
    '/v1/%61dmin/orgs',
    '/v1/admin/orgs/..%2F..%2Fmanagement%2Fprojects',
    '/v1/admin/orgs/..%2f..%2fmanagement%2fprojects',
    '/v1/ADMIN/orgs',
    '/v1/Admin/Orgs',
    '/v1/admin/orgs/',
    '/v1/admin/orgs%2F',
    '/v1/admin/orgs;x=1',
  ];

  test('without credentials: never 2xx, always an error code', async () => {
    for (const path of TRICKS) {
      expectRefused(await client.get(path), [401, 404], `GET ${path}`);
      expectRefused(await client.post(path, { body: { name: `trick-${unique()}` } }), [401, 404], `POST ${path}`);
    }
  });

  test('with an org_member token: never 2xx; any request that reaches an admin handler gets 403', async () => {
    let reachedHandler = 0;
    for (const path of TRICKS) {
      for (const method of ['GET', 'POST']) {
        const response = await client.request(method, path, { token: a.member.token, ...(method === 'POST' ? { body: { name: `trick-${unique()}` } } : {}) });
        expectRefused(response, [403, 404], `${method} ${path}`);
        if (response.status !== 404) {
          reachedHandler++;
          expectError(response, 403, 'PERMISSION_DENIED');
        }
      }
    }
    // `%61dmin` decodes to `admin`: those requests do reach the admin handlers, and are refused there.
    assert.ok(reachedHandler >= 2, `${reachedHandler} requests reached an admin handler`);
    const orgs = expectStatus(await client.get('/v1/admin/orgs', { token: root.token }), 200);
    assert.ok(!orgs.some((org: { org_name: string }) => org.org_name.startsWith('trick-')), 'no org was created by a trick');
  });
});

describe('secrets', () => {
  test('no password, raw SDK key, refresh token, JWT or bcrypt hash in the logs or in responses', () => {
    assertNoSecrets(ts.logs, client);
  });
});
