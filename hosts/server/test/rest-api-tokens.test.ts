import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { createFlag, envFlags, onOffFlag, projectFlags, put } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/** API tokens (docs/access.md "API tokens") through the REST API, in the topology TEST_TOPOLOGY names. */

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'tokens-a');
  b = await seedTenant(client, root.token, 'tokens-b');
});
after(() => ts.stop());

const tokensOf = (orgId: string) => `/v1/management/orgs/${orgId}/api-tokens`;
const RECORD_FIELDS = ['created_at_ms', 'created_by', 'expires_at_ms', 'id', 'last_used_at_ms', 'name', 'role', 'scope', 'token_prefix'];

async function createToken(tenant: Tenant, body: Json): Promise<Json> {
  return expectStatus(await client.post(tokensOf(tenant.orgId), { token: tenant.admin.token, body }), 201, 'create API token');
}

async function secondEnvironment(tenant: Tenant): Promise<string> {
  const made = expectStatus(await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name: `staging-${Date.now()}` } }), 201);
  return made.environment_id as string;
}

describe('API tokens: create, list, revoke', () => {
  test('create answers the token once; the list never shows it; revoke removes it', async () => {
    const before = Date.now();
    const created = await createToken(a, { name: 'ci deploys', role: 'editor', scope: { environment_ids: [a.environmentId] } });
    assert.deepEqual(Object.keys(created).sort(), [...RECORD_FIELDS, 'token'].sort());
    assert.match(created.token, /^swy_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.token_prefix, created.token.slice(0, 12));
    assert.equal(created.name, 'ci deploys');
    assert.equal(created.role, 'editor');
    assert.deepEqual(created.scope, { environment_ids: [a.environmentId] });
    assert.equal(created.created_by.user_id, a.admin.userId);
    assert.equal(created.expires_at_ms, null);
    assert.equal(created.last_used_at_ms, null);
    assert.ok(created.created_at_ms >= before - 1000 && created.created_at_ms <= Date.now() + 1000);

    const listed = expectStatus(await client.get(tokensOf(a.orgId), { token: a.admin.token }), 200) as Json[];
    const mine = listed.find((token) => token.id === created.id);
    assert.ok(mine, 'the new token is listed');
    assert.deepEqual(Object.keys(mine).sort(), RECORD_FIELDS);
    assert.ok(!JSON.stringify(listed).includes(created.token), 'the list never holds a token');
    // Another org lists none of a's tokens.
    const others = expectStatus(await client.get(tokensOf(b.orgId), { token: b.admin.token }), 200) as Json[];
    assert.ok(!others.some((token) => token.id === created.id));

    expectStatus(await client.delete(`${tokensOf(a.orgId)}/${created.id}`, { token: a.admin.token }), 204);
    const after = expectStatus(await client.get(tokensOf(a.orgId), { token: a.admin.token }), 200) as Json[];
    assert.ok(!after.some((token) => token.id === created.id));
    expectError(await client.delete(`${tokensOf(a.orgId)}/${created.id}`, { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get('/v1/auth/me', { token: created.token }), 401, 'UNAUTHENTICATED');
  });

  test('bad input is 400 naming the field', async () => {
    const otherEnvironment = await secondEnvironment(a);
    const cases: Array<[Json, RegExp]> = [
      [{ role: 'editor' }, /name/],
      [{ name: '', role: 'editor' }, /name/],
      [{ name: 'x'.repeat(101), role: 'editor' }, /name/],
      [{ name: 'ok', role: 'owner' }, /role/],
      [{ name: 'ok', role: 'editor', scope: { project_ids: [b.projectId] } }, /scope\.project_ids/],
      [{ name: 'ok', role: 'editor', scope: { environment_ids: [b.environmentId] } }, /scope\.environment_ids/],
      [{ name: 'ok', role: 'editor', scope: { environment_ids: ['not-a-uuid'] } }, /scope\.environment_ids/],
      [{ name: 'ok', role: 'editor', scope: { project_ids: [], environment_ids: [otherEnvironment] } }, /project_ids/],
      [{ name: 'ok', role: 'editor', scope: { project_ids: Array.from({ length: 51 }, (_, i) => `p${i}`) } }, /project_ids/],
      [{ name: 'ok', role: 'editor', scope: { projects: [a.projectId] } }, /projects/],
      [{ name: 'ok', role: 'editor', expires_at_ms: Date.now() - 1000 }, /expires_at_ms/],
      [{ name: 'ok', role: 'editor', expires_at_ms: 'tomorrow' }, /expires_at_ms/],
      // A safe integer past JavaScript's last Date would be a database error (500) if stored;
      // like client keys, at most ten years ahead.
      [{ name: 'ok', role: 'editor', expires_at_ms: 8_700_000_000_000_000 }, /ten years/],
      [{ name: 'ok', role: 'editor', expires_at_ms: Date.now() + 11 * 365 * 24 * 3_600_000 }, /ten years/],
      [{ name: 'ok', role: 'editor', admin: true }, /admin/],
    ];
    for (const [body, field] of cases) {
      expectError(await client.post(tokensOf(a.orgId), { token: a.admin.token, body }), 400, 'INVALID_ARGUMENT', field);
    }
    // An environment outside the listed projects: a's second project.
    const project = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: a.admin.token, body: { name: `other-${Date.now()}` } }), 201);
    expectError(
      await client.post(tokensOf(a.orgId), { token: a.admin.token, body: { name: 'ok', role: 'editor', scope: { project_ids: [project.project_id], environment_ids: [a.environmentId] } } }),
      400,
      'INVALID_ARGUMENT',
      /scope\.environment_ids/,
    );
  });

  test('another org is 404, a member and a token are refused, anonymous is 401', async () => {
    const token = await createToken(a, { name: 'org-wide admin', role: 'admin' });
    expectError(await client.post(tokensOf(a.orgId), { token: b.admin.token, body: { name: 'x', role: 'viewer' } }), 404, 'NOT_FOUND');
    expectError(await client.get(tokensOf(a.orgId), { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(`${tokensOf(a.orgId)}/${token.id}`, { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(`${tokensOf(b.orgId)}/${token.id}`, { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.post(tokensOf(a.orgId), { token: a.member.token, body: { name: 'x', role: 'viewer' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(tokensOf(a.orgId), { token: a.member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.delete(`${tokensOf(a.orgId)}/${token.id}`, { token: a.member.token }), 403, 'PERMISSION_DENIED');
    // Even an org-wide admin token cannot mint, list or revoke tokens (no escalation, no self-renewal).
    expectError(await client.post(tokensOf(a.orgId), { token: token.token, body: { name: 'x', role: 'admin' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(tokensOf(a.orgId), { token: token.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.delete(`${tokensOf(a.orgId)}/${token.id}`, { token: token.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(tokensOf(a.orgId)), 401, 'UNAUTHENTICATED');
    expectError(await client.get(tokensOf(a.orgId), { token: 'swy_' + 'A'.repeat(43) }), 401, 'UNAUTHENTICATED');
    // The token still exists (nothing above revoked it).
    const listed = expectStatus(await client.get(tokensOf(a.orgId), { token: a.admin.token }), 200) as Json[];
    assert.ok(listed.some((entry) => entry.id === token.id));
  });

  test('session routes refuse a token clearly, never 500', async () => {
    const token = (await createToken(a, { name: 'sessionless', role: 'admin' })).token as string;
    const refusals: Array<[string, string, Json?]> = [
      ['GET', '/v1/auth/me'],
      ['GET', '/v1/auth/sessions'],
      ['POST', '/v1/auth/sessions/revoke-others'],
      ['DELETE', `/v1/auth/sessions/00000000-0000-4000-8000-000000000000`],
      ['POST', '/v1/auth/logout'],
      ['POST', '/v1/auth/password', { current_password: 'whatever-1', new_password: 'whatever-2' }],
      ['POST', '/v1/auth/switch-org', { org_id: b.orgId }],
      ['GET', '/v1/auth/orgs'],
    ];
    for (const [method, path, body] of refusals) {
      const response = await client.request(method, path, { token, ...(body === undefined ? {} : { body }) });
      assert.ok([401, 403].includes(response.status), `${method} ${path}: ${response.status} ${response.text}`);
      assert.equal(typeof response.body?.code, 'string', `${method} ${path}: ${response.text}`);
      assert.match(response.body.error as string, /token|session/i, `${method} ${path}`);
    }
    // A token is no refresh token either.
    expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: token } }), 401, 'UNAUTHENTICATED');
    // ... and still works where it may.
    expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token }), 200);
  });

  test('at most 100 active tokens per org; revoking one makes room', async () => {
    const tenant = await seedTenant(client, root.token, 'tokens-many');
    const existing = (expectStatus(await client.get(tokensOf(tenant.orgId), { token: tenant.admin.token }), 200) as Json[]).length;
    let last: Json = null;
    for (let i = existing; i < 100; i++) last = await createToken(tenant, { name: `bulk ${i}`, role: 'viewer' });
    expectError(await client.post(tokensOf(tenant.orgId), { token: tenant.admin.token, body: { name: 'one too many', role: 'viewer' } }), 409, 'FAILED_PRECONDITION', /100/);
    expectStatus(await client.delete(`${tokensOf(tenant.orgId)}/${last.id}`, { token: tenant.admin.token }), 204);
    await createToken(tenant, { name: 'room again', role: 'viewer' });
  });
});

describe('API tokens: using one', () => {
  test('an environment editor token turns a flag on there and nothing else; history names it', async () => {
    const elsewhere = await secondEnvironment(a);
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag('token-toggled'));
    const made = await createToken(a, { name: 'ci toggle', role: 'editor', scope: { environment_ids: [a.environmentId] } });
    const token = made.token as string;
    const flag = expectStatus(await put(client, `${envFlags(a.environmentId)}/token-toggled`, { token, body: { enabled: false } }), 200, 'token toggles in its environment');
    assert.equal(flag.enabled, false);
    expectError(await put(client, `${envFlags(elsewhere)}/token-toggled`, { token, body: { enabled: false } }), 403, 'PERMISSION_DENIED');
    const projectWrite = await put(client, `${projectFlags(a.projectId)}/token-toggled`, { token, body: { flag: { description: 'changed' } } });
    assert.equal(projectWrite.status, 403, projectWrite.text);
    expectError(await client.post(`/v1/management/orgs/${a.orgId}/users`, { token, body: { email: 'x@example.com', display_name: 'x', password: 'password-123' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(`${envFlags(b.environmentId)}`, { token }), 404, 'NOT_FOUND');

    const history = expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/audit-log?resource_type=flag`, { token: a.admin.token }), 200);
    const entry = (history.entries as Json[]).find((candidate) => candidate.actor.type === 'api_token');
    assert.ok(entry, JSON.stringify(history));
    assert.deepEqual(entry.actor, { type: 'api_token', id: made.id, name: 'ci toggle' });
  });

  test('an expired token is refused at once, cached or not', async () => {
    const made = await createToken(a, { name: 'short-lived', role: 'viewer', expires_at_ms: Date.now() + 1500 });
    assert.equal(typeof made.expires_at_ms, 'number');
    expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: made.token }), 200);
    await sleep(Math.max(0, made.expires_at_ms - Date.now()) + 50);
    expectError(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: made.token }), 401, 'UNAUTHENTICATED', /expired/);
  });

  test('a revoked token is refused at once', async () => {
    const made = await createToken(a, { name: 'to revoke', role: 'viewer' });
    expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: made.token }), 200);
    expectStatus(await client.delete(`${tokensOf(a.orgId)}/${made.id}`, { token: a.admin.token }), 204);
    expectError(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: made.token }), 401, 'UNAUTHENTICATED');
  });

  test('last use is written, at most once a minute', async () => {
    const made = await createToken(a, { name: 'used', role: 'viewer' });
    expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: made.token }), 200);
    let first: number | null = null;
    for (let i = 0; i < 40 && first === null; i++) {
      const listed = expectStatus(await client.get(tokensOf(a.orgId), { token: a.admin.token }), 200) as Json[];
      first = listed.find((token) => token.id === made.id)?.last_used_at_ms ?? null;
      if (first === null) await sleep(50);
    }
    assert.ok(first !== null, 'last_used_at_ms written');
    await sleep(20);
    expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: made.token }), 200);
    await sleep(200);
    const listed = expectStatus(await client.get(tokensOf(a.orgId), { token: a.admin.token }), 200) as Json[];
    assert.equal(listed.find((token) => token.id === made.id)?.last_used_at_ms, first, 'a second use within a minute writes nothing');
  });
});

// Last: it uses up this address's quota of failed tokens.
describe('API tokens: failed presentations are throttled per client address', () => {
  test('after 30 unknown tokens from one address the next is 429 with Retry-After', async () => {
    const from = { localAddress: '127.0.0.9' };
    const projects = `/v1/management/orgs/${a.orgId}/projects`;
    const valid = await createToken(a, { name: 'cached before the flood', role: 'viewer' });
    expectStatus(await client.get(projects, { token: valid.token, ...from }), 200);
    for (let i = 0; i < 30; i++) {
      const guess = `swy_${String(i).padStart(43, 'g')}`;
      expectError(await client.get(projects, { token: guess, ...from }), 401, 'UNAUTHENTICATED');
    }
    const refused = await client.get(projects, { token: `swy_${'h'.repeat(43)}`, ...from });
    expectError(refused, 429, 'RESOURCE_EXHAUSTED');
    assert.ok(Number(refused.headers.get('retry-after')) > 0, refused.text);
    // What the cache answers costs nothing: the token checked before still works from there.
    expectStatus(await client.get(projects, { token: valid.token, ...from }), 200);
    // Another address is not affected, and people's logins are counted apart.
    expectError(await client.get(projects, { token: `swy_${'i'.repeat(43)}`, localAddress: '127.0.0.10' }), 401, 'UNAUTHENTICATED');
    expectStatus(await client.post('/v1/auth/login', { body: { email: a.admin.email, password: a.admin.password }, ...from }), 200);
  });
});
