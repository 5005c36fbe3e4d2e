import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { SignJWT } from 'jose';
import {
  api,
  assertNoSecrets,
  expectError,
  expectStatus,
  joinOrgByInvitation,
  login,
  loginAdmin,
  seedTenant,
  unique,
  type ApiClient,
  type LoggedInUser,
  type Tenant,
} from './support/rest-client.ts';
import { TEST_JWT_SECRET, startTestServer, type TestServer } from './support/test-server.ts';

// Login throttling counts failures per client address too, and every request here comes from
// 127.0.0.1: this file makes only a handful of failed logins. Throttling has its own file.

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
/** A user who is org_member of A (joined first) and org_admin of B. */
let multi: { userId: string; email: string; password: string };

before(async () => {
  ts = await startTestServer();
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'auth-a');
  b = await seedTenant(client, root.token, 'auth-b');
  const email = `multi-${unique()}@example.com`;
  const password = `pw-multi-${unique()}-secret`;
  const first = expectStatus(
    await client.post(`/v1/admin/orgs/${a.orgId}/users`, { token: root.token, body: { email, display_name: 'Multi', password, org_role: 'org_member' } }),
    201,
  );
  // The same account joins B by invitation (a second create is refused: see rest-identity.test.ts).
  await joinOrgByInvitation(client, b.admin.token, b.orgId, 'org_admin', await login(client, email, password));
  multi = { userId: first.user_id as string, email, password };
});
after(() => ts.stop());

const projectsOf = (orgId: string) => `/v1/management/orgs/${orgId}/projects`;
const base64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
/** The session id an access token names (its `sid` claim). */
const sessionOf = (token: string): string =>
  (JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sid: string }).sid;

/** A token signed by hand; defaults are exactly what the server issues for A's org_admin. */
async function signToken(options: { secret?: string; alg?: string; iss?: string; aud?: string; expOffset?: number; claims?: Record<string, unknown> } = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const expOffset = options.expOffset ?? 3600;
  return new SignJWT({ org: a.orgId, role: 'org_admin', sys: false, sid: sessionOf(a.admin.token), ...options.claims })
    .setProtectedHeader({ alg: options.alg ?? 'HS256', typ: 'JWT' })
    .setSubject(a.admin.userId)
    .setIssuer(options.iss ?? 'switchyard')
    .setAudience(options.aud ?? 'switchyard-api')
    .setIssuedAt(expOffset < 0 ? now + expOffset - 3600 : now)
    .setExpirationTime(now + expOffset)
    .setJti(randomUUID())
    .sign(new TextEncoder().encode(options.secret ?? TEST_JWT_SECRET));
}

describe('POST /v1/auth/login', () => {
  test('200 with token, expires_at about now + 24h, refresh_token, user_id and org_id', async () => {
    const before = Date.now();
    const response = await client.post('/v1/auth/login', { body: { email: a.member.email, password: a.member.password } });
    const body = expectStatus(response, 200);
    assert.match(body.token, /^eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.equal(typeof body.expires_at, 'string');
    assert.match(body.expires_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    const expiresInMs = Date.parse(body.expires_at) - before;
    assert.ok(Math.abs(expiresInMs - 24 * 3600_000) < 120_000, `expires_at ${body.expires_at} is not about now + 24h`);
    assert.equal(typeof body.refresh_token, 'string');
    assert.ok(body.refresh_token.length >= 32);
    assert.notEqual(body.refresh_token, body.token);
    assert.equal(body.user_id, a.member.userId);
    assert.equal(body.org_id, a.orgId);
  });

  test('the token works on bearer routes', async () => {
    const projects = expectStatus(await client.get(projectsOf(a.orgId), { token: a.member.token }), 200);
    assert.ok(Array.isArray(projects));
    assert.deepEqual(projects.map((p: { project_id: string }) => p.project_id), [a.projectId]);
    const orgs = expectStatus(await client.get('/v1/auth/orgs', { token: a.member.token }), 200);
    assert.deepEqual(orgs.orgs.map((o: { org_id: string }) => o.org_id), [a.orgId]);
  });

  test('the email is matched case-insensitively', async () => {
    const body = expectStatus(await client.post('/v1/auth/login', { body: { email: a.member.email.toUpperCase(), password: a.member.password } }), 200);
    assert.equal(body.user_id, a.member.userId);
  });

  test('unknown email and wrong password: the same 401 and the same body', async () => {
    const unknown = await client.post('/v1/auth/login', { body: { email: `nobody-${unique()}@example.com`, password: `pw-guess-${unique()}` } });
    const wrong = await client.post('/v1/auth/login', { body: { email: a.member.email, password: `pw-wrong-${unique()}` } });
    expectError(unknown, 401, 'UNAUTHENTICATED');
    expectError(wrong, 401, 'UNAUTHENTICATED');
    assert.deepEqual(wrong.body, unknown.body);
    assert.equal(wrong.headers.get('content-type'), unknown.headers.get('content-type'));
  });

  test('missing email → 400 INVALID_ARGUMENT naming email', async () => {
    expectError(await client.post('/v1/auth/login', { body: { password: 'pw-whatever-1' } }), 400, 'INVALID_ARGUMENT', /email/);
  });

  test('missing password → 400 INVALID_ARGUMENT naming password', async () => {
    expectError(await client.post('/v1/auth/login', { body: { email: a.member.email } }), 400, 'INVALID_ARGUMENT', /password/);
  });

  test('empty email or a body that is not an object → 400 INVALID_ARGUMENT', async () => {
    expectError(await client.post('/v1/auth/login', { body: { email: '', password: 'pw-whatever-1' } }), 400, 'INVALID_ARGUMENT', /email/);
    expectError(await client.post('/v1/auth/login', { body: ['x'] }), 400, 'INVALID_ARGUMENT');
    expectError(await client.post('/v1/auth/login'), 400, 'INVALID_ARGUMENT');
  });

  test('org_id of an org the user is not in → 401 with the bad-login body', async () => {
    const bad = await client.post('/v1/auth/login', { body: { email: `nobody-${unique()}@example.com`, password: `pw-guess-${unique()}` } });
    for (const orgId of [b.orgId, randomUUID(), 'not-a-uuid']) {
      const response = await client.post('/v1/auth/login', { body: { email: a.member.email, password: a.member.password, org_id: orgId } });
      expectError(response, 401, 'UNAUTHENTICATED');
      assert.deepEqual(response.body, bad.body, `org_id ${orgId}`);
    }
  });

  test('a user in two orgs logs in to the first by default and to the other with org_id', async () => {
    const first = expectStatus(await client.post('/v1/auth/login', { body: { email: multi.email, password: multi.password } }), 200);
    assert.equal(first.org_id, a.orgId);
    assert.equal(first.user_id, multi.userId);
    const second = expectStatus(await client.post('/v1/auth/login', { body: { email: multi.email, password: multi.password, org_id: b.orgId } }), 200);
    assert.equal(second.org_id, b.orgId);
    assert.equal(second.user_id, multi.userId);

    // Each token acts in its own org only.
    const inB = expectStatus(await client.get(projectsOf(b.orgId), { token: second.token }), 200);
    assert.deepEqual(inB.map((p: { project_id: string }) => p.project_id), [b.projectId]);
    expectError(await client.get(projectsOf(a.orgId), { token: second.token }), 404, 'NOT_FOUND');
    expectError(await client.get(projectsOf(b.orgId), { token: first.token }), 404, 'NOT_FOUND');
    // In B the user is org_admin, in A org_member.
    expectStatus(await client.post(projectsOf(b.orgId), { token: second.token, body: { name: `multi-${unique()}` } }), 201);
    expectError(await client.post(projectsOf(a.orgId), { token: first.token, body: { name: `multi-${unique()}` } }), 403, 'PERMISSION_DENIED');
  });
});

describe('bearer tokens', () => {
  const route = () => projectsOf(a.orgId);

  test('a hand-signed token with the right secret and claims is accepted (the forgeries below differ by one thing)', async () => {
    expectStatus(await client.get(route(), { token: await signToken() }), 200);
  });

  test('missing Authorization header → 401 UNAUTHENTICATED', async () => {
    expectError(await client.get(route()), 401, 'UNAUTHENTICATED');
    expectError(await client.get('/v1/auth/orgs'), 401, 'UNAUTHENTICATED');
  });

  test('a garbage token → 401', async () => {
    expectError(await client.get(route(), { token: 'garbage' }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(route(), { token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.not-a-signature' }), 401, 'UNAUTHENTICATED');
  });

  test('"Bearer" with no token, or another scheme → 401', async () => {
    expectError(await client.get(route(), { headers: { authorization: 'Bearer' } }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(route(), { headers: { authorization: 'Bearer ' } }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(route(), { headers: { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` } }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(route(), { headers: { authorization: a.admin.token } }), 401, 'UNAUTHENTICATED');
  });

  test('a token signed with another secret → 401', async () => {
    const token = await signToken({ secret: 'another-secret-of-at-least-32-bytes-long!!' });
    expectError(await client.get(route(), { token }), 401, 'UNAUTHENTICATED');
  });

  test('an alg "none" token → 401, on management and admin routes', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: a.admin.userId, org: a.orgId, role: 'org_admin', sys: false, iss: 'switchyard', aud: 'switchyard-api', iat: now, exp: now + 3600, jti: randomUUID() };
    const none = `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url(claims)}.`;
    expectError(await client.get(route(), { token: none }), 401, 'UNAUTHENTICATED');
    const noneSystem = `${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ ...claims, sys: true })}.`;
    expectError(await client.get('/v1/admin/orgs', { token: noneSystem }), 401, 'UNAUTHENTICATED');
  });

  test('another HMAC algorithm with the right secret → 401 (algorithm allow-list)', async () => {
    expectError(await client.get(route(), { token: await signToken({ alg: 'HS512' }) }), 401, 'UNAUTHENTICATED');
  });

  test('an expired token signed with the right secret → 401', async () => {
    expectError(await client.get(route(), { token: await signToken({ expOffset: -60 }) }), 401, 'UNAUTHENTICATED');
  });

  test('wrong iss or wrong aud → 401', async () => {
    expectError(await client.get(route(), { token: await signToken({ iss: 'someone-else' }) }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(route(), { token: await signToken({ aud: 'another-api' }) }), 401, 'UNAUTHENTICATED');
  });

  test('claims of the wrong shape → 401', async () => {
    expectError(await client.get(route(), { token: await signToken({ claims: { role: 'superuser' } }) }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(route(), { token: await signToken({ claims: { sys: 'true' } }) }), 401, 'UNAUTHENTICATED');
  });
});

describe('POST /v1/auth/refresh', () => {
  test('a refresh token gives new working tokens in the same session; reusing it → 401 and ends the session', async () => {
    const session = await login(client, a.admin.email, a.admin.password);
    const refreshed = expectStatus(await client.post('/v1/auth/refresh', { body: { refresh_token: session.refreshToken } }), 200);
    assert.match(refreshed.token, /^eyJ/);
    assert.notEqual(refreshed.token, session.token);
    assert.notEqual(refreshed.refresh_token, session.refreshToken);
    assert.equal(refreshed.user_id, a.admin.userId);
    assert.equal(refreshed.org_id, a.orgId);
    assert.ok(Date.parse(refreshed.expires_at) > Date.now());
    expectStatus(await client.get(projectsOf(a.orgId), { token: refreshed.token }), 200);
    assert.equal(sessionOf(refreshed.token), sessionOf(session.token), 'the same session');
    // The new refresh token is itself good for one use.
    const again = expectStatus(await client.post('/v1/auth/refresh', { body: { refresh_token: refreshed.refresh_token } }), 200);
    expectStatus(await client.get(projectsOf(a.orgId), { token: again.token }), 200);

    // A replay of a spent token means two parties hold the session: it ends, every token of it.
    expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: session.refreshToken } }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(projectsOf(a.orgId), { token: again.token }), 401, 'UNAUTHENTICATED');
    expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: again.refresh_token } }), 401, 'UNAUTHENTICATED');
    expectStatus(await client.get(projectsOf(a.orgId), { token: a.admin.token }), 200, 'another session of the same user goes on');
  });

  test('the same refresh token sent 5 times at once: at most one answer has new tokens, and the replay ends the session', async () => {
    const session = await login(client, a.admin.email, a.admin.password);
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => client.post('/v1/auth/refresh', { body: { refresh_token: session.refreshToken } })),
    );
    const statuses = answers.map((response) => response.status).sort();
    // The token is consumed atomically: one request wins it. Whether the winner answers 200 before
    // a repeat ends the session, or finds it ended, is a race (docs/decisions.md "Sessions").
    assert.ok(JSON.stringify(statuses) === '[200,401,401,401,401]' || JSON.stringify(statuses) === '[401,401,401,401,401]', JSON.stringify(statuses));
    for (const response of answers) if (response.status === 401) expectError(response, 401, 'UNAUTHENTICATED');
    // Either way the session has ended: its access token and any refresh token it handed out are refused.
    expectError(await client.get('/v1/auth/orgs', { token: session.token }), 401, 'UNAUTHENTICATED');
    const winner = answers.find((response) => response.status === 200);
    if (winner) expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: winner.body.refresh_token } }), 401, 'UNAUTHENTICATED');
  });

  test('an unknown refresh token → 401; a missing one → 400 naming refresh_token', async () => {
    expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: `rt_${unique()}` } }), 401, 'UNAUTHENTICATED');
    expectError(await client.post('/v1/auth/refresh', { body: {} }), 400, 'INVALID_ARGUMENT', /refresh_token/);
  });

  test('refreshing a session of the second org stays in that org', async () => {
    const session = await login(client, multi.email, multi.password, b.orgId);
    const refreshed = expectStatus(await client.post('/v1/auth/refresh', { body: { refresh_token: session.refreshToken } }), 200);
    assert.equal(refreshed.org_id, b.orgId);
  });
});

describe('POST /v1/auth/switch-org', () => {
  test('to an org the user belongs to → a session for that org', async () => {
    const session = await login(client, multi.email, multi.password);
    const switched = expectStatus(await client.post('/v1/auth/switch-org', { token: session.token, body: { org_id: b.orgId } }), 200);
    assert.equal(switched.org_id, b.orgId);
    assert.equal(switched.user_id, multi.userId);
    assert.match(switched.token, /^eyJ/);
    assert.equal(typeof switched.refresh_token, 'string');
    expectStatus(await client.get(projectsOf(b.orgId), { token: switched.token }), 200);
    expectError(await client.get(projectsOf(a.orgId), { token: switched.token }), 404, 'NOT_FOUND');
  });

  test('to an org the user does not belong to → 403 PERMISSION_DENIED', async () => {
    expectError(await client.post('/v1/auth/switch-org', { token: a.admin.token, body: { org_id: b.orgId } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post('/v1/auth/switch-org', { token: a.admin.token, body: { org_id: randomUUID() } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post('/v1/auth/switch-org', { token: a.admin.token, body: { org_id: 'not-a-uuid' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post('/v1/auth/switch-org', { token: root.token, body: { org_id: a.orgId } }), 403, 'PERMISSION_DENIED');
  });

  test('without a token → 401', async () => {
    expectError(await client.post('/v1/auth/switch-org', { body: { org_id: a.orgId } }), 401, 'UNAUTHENTICATED');
    expectError(await client.post('/v1/auth/switch-org', { token: 'garbage', body: { org_id: a.orgId } }), 401, 'UNAUTHENTICATED');
  });
});

describe('GET /v1/auth/orgs', () => {
  test("lists the user's orgs with the role in each", async () => {
    const session = await login(client, multi.email, multi.password);
    const body = expectStatus(await client.get('/v1/auth/orgs', { token: session.token }), 200);
    assert.deepEqual(body, {
      orgs: [
        { org_id: a.orgId, org_name: a.orgName, role: 'org_member' },
        { org_id: b.orgId, org_name: b.orgName, role: 'org_admin' },
      ],
    });
  });

  test("a single-org user sees only its org", async () => {
    const body = expectStatus(await client.get('/v1/auth/orgs', { token: b.admin.token }), 200);
    assert.deepEqual(body, { orgs: [{ org_id: b.orgId, org_name: b.orgName, role: 'org_admin' }] });
  });

  test('never lists the system org: the system admin gets an empty list', async () => {
    assert.deepEqual(expectStatus(await client.get('/v1/auth/orgs', { token: root.token }), 200), { orgs: [] });
  });

  test('a user of the system org and of another org sees only the other org', async () => {
    const email = `sys-and-a-${unique()}@example.com`;
    const password = `pw-sys-${unique()}-secret`;
    const seeded = expectStatus(await client.post('/v1/admin/seed-user', { token: root.token, body: { email, display_name: 'Both', password, org_role: 'org_admin' } }), 201);
    await joinOrgByInvitation(client, root.token, a.orgId, 'org_member', await login(client, email, password));
    const session = await login(client, email, password);
    assert.notEqual(seeded.org_id, a.orgId);
    const body = expectStatus(await client.get('/v1/auth/orgs', { token: session.token }), 200);
    assert.deepEqual(body, { orgs: [{ org_id: a.orgId, org_name: a.orgName, role: 'org_member' }] });
  });
});

describe('secrets', () => {
  test('no password, raw SDK key, refresh token, JWT or bcrypt hash in the logs or in responses', () => {
    assertNoSecrets(ts.logs, client);
  });
});
