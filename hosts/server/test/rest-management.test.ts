import assert from 'node:assert/strict';
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
  type RequestOptions,
  type Tenant,
} from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const USER_FIELDS = ['display_name', 'email', 'org_id', 'org_role', 'user_id'];
const KEY_LIST_FIELDS = [
  'allow_missing_origin',
  'allowed_origins',
  'context_signing',
  'created_at',
  'environment_id',
  'expires_at_ms',
  'include_disabled',
  'key_prefix',
  'kind',
  'last_used_at_ms',
  'name',
  'sdk_key_id',
];

const M = '/v1/management';
const orgProjects = (orgId: string) => `${M}/orgs/${orgId}/projects`;
const orgUsers = (orgId: string) => `${M}/orgs/${orgId}/users`;
const environments = (projectId: string) => `${M}/projects/${projectId}/environments`;
const sdkKeys = (environmentId: string) => `${M}/environments/${environmentId}/sdk-keys`;

const newUser = (label: string, extra: Record<string, unknown> = {}) => ({
  email: `${label}-${unique()}@example.com`,
  display_name: `User ${label}`,
  password: `pw-${label}-${unique()}-secret`,
  ...extra,
});

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'mgmt-a');
  b = await seedTenant(client, root.token, 'mgmt-b');
});
after(() => ts.stop());

/** Everything B holds, as its own org_admin sees it: compared before and after A's attempts. */
async function snapshotOf(tenant: Tenant): Promise<unknown> {
  const token = tenant.admin.token;
  return {
    projects: expectStatus(await client.get(orgProjects(tenant.orgId), { token }), 200),
    environments: expectStatus(await client.get(environments(tenant.projectId), { token }), 200),
    keys: expectStatus(await client.get(sdkKeys(tenant.environmentId), { token }), 200),
    users: expectStatus(await client.get(orgUsers(tenant.orgId), { token }), 200),
  };
}

describe('system-org caller on management routes', () => {
  test('403 PERMISSION_DENIED on every management route', async () => {
    const calls: Array<[string, string, RequestOptions['body']?]> = [
      ['POST', orgProjects(a.orgId), { name: `sys-${unique()}` }],
      ['GET', orgProjects(a.orgId)],
      ['POST', `${M}/projects`, { name: `sys-${unique()}` }],
      ['POST', `${M}/projects`, { name: `sys-${unique()}`, org_id: a.orgId }],
      ['POST', environments(a.projectId), { name: `sys-${unique()}` }],
      ['GET', environments(a.projectId)],
      ['POST', sdkKeys(a.environmentId)],
      ['GET', sdkKeys(a.environmentId)],
      ['DELETE', `${sdkKeys(a.environmentId)}/${a.sdkKeyId}`],
      ['POST', orgUsers(a.orgId), newUser('sys')],
      ['GET', orgUsers(a.orgId)],
      ['POST', `${M}/users`, newUser('sys', { org_id: a.orgId })],
    ];
    for (const [method, path, body] of calls) {
      const response = await client.request(method, path, { token: root.token, ...(body === undefined ? {} : { body }) });
      assert.equal(response.status, 403, `${method} ${path}: ${response.text}`);
      expectError(response, 403, 'PERMISSION_DENIED');
    }
  });
});

describe('org_admin creates', () => {
  test('a project on /orgs/{org_id}/projects → 201 {project_id, project_name, org_id}', async () => {
    const name = `p-${unique()}`;
    const body = expectStatus(await client.post(orgProjects(a.orgId), { token: a.admin.token, body: { name } }), 201);
    assert.deepEqual(Object.keys(body).sort(), ['client_visible_default', 'lifecycle', 'org_id', 'project_id', 'project_name']);
    assert.match(body.project_id, UUID);
    assert.deepEqual({ project_name: body.project_name, org_id: body.org_id }, { project_name: name, org_id: a.orgId });
  });

  test('a project on /projects, without org_id (the caller’s org) and with it', async () => {
    const without = expectStatus(await client.post(`${M}/projects`, { token: a.admin.token, body: { name: `p-${unique()}` } }), 201);
    assert.equal(without.org_id, a.orgId);
    assert.deepEqual(Object.keys(without).sort(), ['client_visible_default', 'lifecycle', 'org_id', 'project_id', 'project_name']);
    const withOrg = expectStatus(await client.post(`${M}/projects`, { token: a.admin.token, body: { name: `p-${unique()}`, org_id: a.orgId } }), 201);
    assert.equal(withOrg.org_id, a.orgId);
  });

  test('an environment → 201 {environment_id, environment_name, project_id, critical, require_comment}', async () => {
    const body = expectStatus(await client.post(environments(a.projectId), { token: a.admin.token, body: { name: 'staging' } }), 201);
    assert.deepEqual(Object.keys(body).sort(), ['critical', 'environment_id', 'environment_name', 'project_id', 'require_comment']);
    assert.deepEqual([body.critical, body.require_comment], [false, false]);
    assert.match(body.environment_id, UUID);
    assert.deepEqual({ environment_name: body.environment_name, project_id: body.project_id }, { environment_name: 'staging', project_id: a.projectId });
  });

  test('a user on /orgs/{org_id}/users → 201 user record (org_member unless org_role says otherwise) who can log in', async () => {
    const input = newUser('created');
    const body = expectStatus(await client.post(orgUsers(a.orgId), { token: a.admin.token, body: input }), 201);
    assert.deepEqual(Object.keys(body).sort(), USER_FIELDS);
    assert.deepEqual(
      { email: body.email, display_name: body.display_name, org_id: body.org_id, org_role: body.org_role },
      { email: input.email, display_name: input.display_name, org_id: a.orgId, org_role: 'org_member' },
    );
    const session = await login(client, input.email, input.password);
    assert.equal(session.userId, body.user_id);
    const admin = expectStatus(await client.post(orgUsers(a.orgId), { token: a.admin.token, body: newUser('created', { org_role: 'org_admin' }) }), 201);
    assert.equal(admin.org_role, 'org_admin');
  });

  test('a user on /users, without org_id (the caller’s org) and with it', async () => {
    const without = expectStatus(await client.post(`${M}/users`, { token: a.admin.token, body: newUser('u') }), 201);
    assert.equal(without.org_id, a.orgId);
    assert.deepEqual(Object.keys(without).sort(), USER_FIELDS);
    const withOrg = expectStatus(await client.post(`${M}/users`, { token: a.admin.token, body: newUser('u', { org_id: a.orgId }) }), 201);
    assert.equal(withOrg.org_id, a.orgId);
  });

  test('an SDK key → 201 with the key record (kind server) and raw_key', async () => {
    const body = expectStatus(await client.post(sdkKeys(a.environmentId), { token: a.admin.token }), 201);
    assert.deepEqual(Object.keys(body).sort(), [...KEY_LIST_FIELDS, 'raw_key'].sort());
    assert.equal(body.kind, 'server');
    assert.match(body.sdk_key_id, UUID);
    assert.equal(body.environment_id, a.environmentId);
    assert.match(body.created_at, ISO);
    assert.ok(body.raw_key.length >= 32, 'the raw key is long enough to be unguessable');
    assert.ok(body.raw_key.startsWith(body.key_prefix));
    assert.ok(body.key_prefix.length < body.raw_key.length / 2, 'the prefix shows only a small part of the key');
  });
});

describe('list routes', () => {
  test('projects, environments, users and SDK keys: 200 for org_admin and org_member alike', async () => {
    const admin = await snapshotOf(a);
    const member = {
      projects: expectStatus(await client.get(orgProjects(a.orgId), { token: a.member.token }), 200),
      environments: expectStatus(await client.get(environments(a.projectId), { token: a.member.token }), 200),
      keys: expectStatus(await client.get(sdkKeys(a.environmentId), { token: a.member.token }), 200),
      users: expectStatus(await client.get(orgUsers(a.orgId), { token: a.member.token }), 200),
    };
    assert.deepEqual(member, admin);
  });

  test('records have their documented fields; users carry no password, keys no raw_key', async () => {
    const { projects, environments: envs, keys, users } = (await snapshotOf(a)) as Record<string, Array<Record<string, unknown>>>;
    assert.ok(projects?.some((p) => p.project_id === a.projectId));
    for (const p of projects ?? []) assert.deepEqual(Object.keys(p).sort(), ['client_visible_default', 'lifecycle', 'org_id', 'project_id', 'project_name']);
    assert.ok(envs?.some((e) => e.environment_id === a.environmentId));
    for (const e of envs ?? []) assert.deepEqual(Object.keys(e).sort(), ['critical', 'environment_id', 'environment_name', 'project_id', 'require_comment']);
    assert.ok(keys?.some((k) => k.sdk_key_id === a.sdkKeyId));
    for (const k of keys ?? []) {
      assert.deepEqual(Object.keys(k).sort(), KEY_LIST_FIELDS);
      assert.equal(k.environment_id, a.environmentId);
    }
    assert.ok(users?.some((u) => u.user_id === a.admin.userId && u.org_role === 'org_admin'));
    assert.ok(users?.some((u) => u.user_id === a.member.userId && u.org_role === 'org_member'));
    for (const u of users ?? []) assert.deepEqual(Object.keys(u).sort(), [...USER_FIELDS, 'bindings'].sort());
    for (const u of users ?? []) assert.equal(u.bindings, null, 'no bindings stored: the org role default');
    const keysText = (await client.get(sdkKeys(a.environmentId), { token: a.admin.token })).text;
    assert.ok(!keysText.includes(a.rawKey), 'the key listing never contains the raw key');
  });
});

describe('duplicates', () => {
  test('a duplicate project name in the same org → 409 ALREADY_EXISTS; the same name in another org → 201', async () => {
    const name = `dup-${unique()}`;
    expectStatus(await client.post(orgProjects(a.orgId), { token: a.admin.token, body: { name } }), 201);
    expectError(await client.post(orgProjects(a.orgId), { token: a.admin.token, body: { name } }), 409, 'ALREADY_EXISTS');
    expectError(await client.post(`${M}/projects`, { token: a.admin.token, body: { name } }), 409, 'ALREADY_EXISTS');
    const other = expectStatus(await client.post(orgProjects(b.orgId), { token: b.admin.token, body: { name } }), 201);
    assert.equal(other.org_id, b.orgId);
  });

  test('a duplicate environment name in the same project → 409; the same name in another project → 201', async () => {
    expectError(await client.post(environments(a.projectId), { token: a.admin.token, body: { name: 'production' } }), 409, 'ALREADY_EXISTS');
    const project = expectStatus(await client.post(orgProjects(a.orgId), { token: a.admin.token, body: { name: `p-${unique()}` } }), 201);
    expectStatus(await client.post(environments(project.project_id), { token: a.admin.token, body: { name: 'production' } }), 201);
  });
});

describe('validation', () => {
  test('a missing or blank name → 400 INVALID_ARGUMENT naming name', async () => {
    for (const path of [orgProjects(a.orgId), `${M}/projects`, environments(a.projectId)]) {
      expectError(await client.post(path, { token: a.admin.token, body: {} }), 400, 'INVALID_ARGUMENT', /name/);
      expectError(await client.post(path, { token: a.admin.token, body: { name: ' ' } }), 400, 'INVALID_ARGUMENT', /name/);
    }
  });

  test('a user without email, display_name or password → 400 naming the field', async () => {
    for (const field of ['email', 'display_name', 'password']) {
      const body: Record<string, unknown> = newUser('invalid');
      delete body[field];
      expectError(await client.post(orgUsers(a.orgId), { token: a.admin.token, body }), 400, 'INVALID_ARGUMENT', new RegExp(field));
    }
  });
});

describe('org_member', () => {
  test('403 on creating projects, environments, SDK keys and users, and on deleting keys; nothing changes', async () => {
    const before = await snapshotOf(a);
    const token = a.member.token;
    expectError(await client.post(orgProjects(a.orgId), { token, body: { name: `m-${unique()}` } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(`${M}/projects`, { token, body: { name: `m-${unique()}` } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(environments(a.projectId), { token, body: { name: `m-${unique()}` } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(sdkKeys(a.environmentId), { token }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(orgUsers(a.orgId), { token, body: newUser('m') }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(`${M}/users`, { token, body: newUser('m') }), 403, 'PERMISSION_DENIED');
    expectError(await client.delete(`${sdkKeys(a.environmentId)}/${a.sdkKeyId}`, { token }), 403, 'PERMISSION_DENIED');
    assert.deepEqual(await snapshotOf(a), before);
  });
});

describe('tenancy', () => {
  /** Every route with an id of B's, and the bodies that name B's org. */
  const crossTenantCalls = (): Array<[string, string, RequestOptions['body']?]> => [
    ['GET', orgProjects(b.orgId)],
    ['POST', orgProjects(b.orgId), { name: `x-${unique()}` }],
    ['GET', orgUsers(b.orgId)],
    ['POST', orgUsers(b.orgId), newUser('x')],
    ['GET', environments(b.projectId)],
    ['POST', environments(b.projectId), { name: `x-${unique()}` }],
    ['GET', sdkKeys(b.environmentId)],
    ['POST', sdkKeys(b.environmentId)],
    ['DELETE', `${sdkKeys(b.environmentId)}/${b.sdkKeyId}`],
    ['DELETE', `${sdkKeys(a.environmentId)}/${b.sdkKeyId}`],
    ['POST', `${M}/projects`, { name: `x-${unique()}`, org_id: b.orgId }],
    ['POST', `${M}/users`, newUser('x', { org_id: b.orgId })],
  ];

  test("org A's admin token on org B's ids → 404 NOT_FOUND, and B is unchanged", async () => {
    const before = await snapshotOf(b);
    for (const [method, path, body] of crossTenantCalls()) {
      const response = await client.request(method, path, { token: a.admin.token, ...(body === undefined ? {} : { body }) });
      assert.equal(response.status, 404, `${method} ${path}: ${response.text}`);
      expectError(response, 404, 'NOT_FOUND');
    }
    assert.deepEqual(await snapshotOf(b), before);
  });

  test("org A's member token on org B's ids → 404 or 403, never 2xx", async () => {
    const before = await snapshotOf(b);
    for (const [method, path, body] of crossTenantCalls()) {
      const response = await client.request(method, path, { token: a.member.token, ...(body === undefined ? {} : { body }) });
      expectRefused(response, [403, 404], `${method} ${path}`);
    }
    assert.deepEqual(await snapshotOf(b), before);
  });

  test("creating a user with the email of another org's user neither reveals that user nor enrols it in our org", async () => {
    const before = expectStatus(await client.get('/v1/auth/orgs', { token: b.admin.token }), 200);
    const bUsers = expectStatus(await client.get(orgUsers(b.orgId), { token: b.admin.token }), 200);
    const bAdminRecord = bUsers.find((user: { user_id: string }) => user.user_id === b.admin.userId);
    const input = { email: b.admin.email, display_name: 'Chosen by A', password: `pw-chosen-by-a-${unique()}`, org_role: 'org_admin' };
    const response = await client.post(orgUsers(a.orgId), { token: a.admin.token, body: input });
    // Whatever the answer, it must not carry B's data about its user...
    assert.ok(!(response.status === 201 && response.body.display_name === bAdminRecord.display_name), `A's admin read B's user: ${response.text}`);
    assert.notEqual(response.body?.user_id, b.admin.userId, `A's admin learnt the id of B's user: ${response.text}`);
    // ...and B's user must not find itself in org A without having agreed to anything.
    assert.deepEqual(expectStatus(await client.get('/v1/auth/orgs', { token: b.admin.token }), 200), before);
  });

  test('a non-UUID id in a path → 404 NOT_FOUND, not 500', async () => {
    const calls: Array<[string, string, RequestOptions['body']?]> = [
      ['GET', orgProjects('not-a-uuid')],
      ['POST', orgProjects('not-a-uuid'), { name: `x-${unique()}` }],
      ['GET', orgUsers('not-a-uuid')],
      ['POST', orgUsers('not-a-uuid'), newUser('x')],
      ['GET', environments('not-a-uuid')],
      ['POST', environments('not-a-uuid'), { name: 'x' }],
      ['GET', sdkKeys('not-a-uuid')],
      ['POST', sdkKeys('not-a-uuid')],
      ['DELETE', `${sdkKeys('not-a-uuid')}/${a.sdkKeyId}`],
      ['DELETE', `${sdkKeys(a.environmentId)}/not-a-uuid`],
      ['GET', environments("1'%20OR%20'1'='1")],
      ['POST', `${M}/projects`, { name: `x-${unique()}`, org_id: 'not-a-uuid' }],
      ['POST', `${M}/users`, newUser('x', { org_id: 'not-a-uuid' })],
    ];
    for (const [method, path, body] of calls) {
      const response = await client.request(method, path, { token: a.admin.token, ...(body === undefined ? {} : { body }) });
      assert.equal(response.status, 404, `${method} ${path}: ${response.text}`);
      expectError(response, 404, 'NOT_FOUND');
    }
  });
});

describe('secrets', () => {
  test('no password, raw SDK key, refresh token, JWT or bcrypt hash in the logs or in responses', () => {
    assertNoSecrets(ts.logs, client);
  });
});
