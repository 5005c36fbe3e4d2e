import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  api,
  expectError,
  expectStatus,
  joinOrgByInvitation,
  login,
  loginAdmin,
  seedTenant,
  seedUser,
  type ApiClient,
  type ApiResponse,
  type LoggedInUser,
  type Tenant,
} from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// "My account" (docs/console.md "Team and account"): who am I, my sessions, ending one or all the
// others (docs/contract.md "Authentication and sessions"). An account sees and ends only its own
// sessions; any other id is 404, whoever's it is. Both topologies: through a gateway these are
// AuthGatewayService calls.

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'sess-a');
  b = await seedTenant(client, root.token, 'sess-b');
});
after(() => ts.stop());

const projectsOf = (orgId: string) => `/v1/management/orgs/${orgId}/projects`;

/** Polls until `probe` answers `status` (an ended session reaches a gateway's cache by notification), for at most 10 s. */
async function eventually(probe: () => Promise<ApiResponse>, status: number, what: string): Promise<void> {
  const started = Date.now();
  let last: ApiResponse | undefined;
  while (Date.now() - started < 10_000) {
    last = await probe();
    if (last.status === status) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`${what}: still ${last?.status} ${last?.text} after 10 s`);
}

interface ListedSession {
  session_id: string;
  org_id: string;
  org_name: string;
  created_at: string;
  expires_at: string;
  single_sign_on: boolean;
  current: boolean;
}

const sessionsOf = async (token: string): Promise<ListedSession[]> => expectStatus(await client.get('/v1/auth/sessions', { token }), 200, 'list sessions').sessions;

/** The session id of a token, read from its JWT's `sid` claim (the tests' own decoding, not the server's). */
const sidOf = (token: string): string => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')).sid as string;

describe('GET /v1/auth/me', () => {
  test('names the account, the session\'s org and the role now; anonymous is 401', async () => {
    const me = expectStatus(await client.get('/v1/auth/me', { token: a.member.token }), 200);
    assert.deepEqual(me, {
      user_id: a.member.userId,
      email: a.member.email,
      display_name: 'sess-a-member',
      org_id: a.orgId,
      org_name: a.orgName,
      org_role: 'org_member',
      system_org: false,
      single_sign_on: false,
    });
    const system = expectStatus(await client.get('/v1/auth/me', { token: root.token }), 200);
    assert.equal(system.system_org, true);
    assert.equal(system.email, root.email);
    expectError(await client.get('/v1/auth/me'), 401, 'UNAUTHENTICATED');
    expectError(await client.get('/v1/auth/me', { token: 'not-a-token' }), 401, 'UNAUTHENTICATED');
  });
});

describe('the sessions of an account', () => {
  test('lists the account\'s live sessions only, oldest first, with the caller\'s marked; a switch of org is another session', async () => {
    const first = await seedUser(client, root.token, a.orgId, 'org_member', 'lister');
    const second = await login(client, first.email, first.password);
    await joinOrgByInvitation(client, b.admin.token, b.orgId, 'org_member', first);
    const switched = expectStatus(await client.post('/v1/auth/switch-org', { token: first.token, body: { org_id: b.orgId } }), 200);
    const loggedOut = await login(client, first.email, first.password);
    expectStatus(await client.post('/v1/auth/logout', { token: loggedOut.token }), 204);

    const listed = await sessionsOf(second.token);
    assert.deepEqual(
      listed.map((s) => [s.session_id, s.org_id, s.org_name, s.current, s.single_sign_on]),
      [
        [sidOf(first.token), a.orgId, a.orgName, false, false],
        [sidOf(second.token), a.orgId, a.orgName, true, false],
        [sidOf(switched.token), b.orgId, b.orgName, false, false],
      ],
    );
    for (const session of listed) {
      // Expiry is the service's clock at sign-in + 30 days; creation is the database's clock at the insert.
      const lifetimeMs = Date.parse(session.expires_at) - Date.parse(session.created_at);
      assert.ok(Math.abs(lifetimeMs - 30 * 86_400_000) < 60_000, `a session lasts 30 days from sign-in, got ${lifetimeMs} ms`);
      assert.ok(Math.abs(Date.parse(session.created_at) - Date.now()) < 120_000, 'created a moment ago');
    }
    // Another account sees only its own.
    assert.deepEqual((await sessionsOf(b.member.token)).filter((s) => s.current).map((s) => s.session_id), [sidOf(b.member.token)]);
    assert.ok(!(await sessionsOf(b.member.token)).some((s) => listed.some((mine) => mine.session_id === s.session_id)), 'none of the lister\'s sessions');
    expectError(await client.get('/v1/auth/sessions'), 401, 'UNAUTHENTICATED');
  });

  test('DELETE ends one of the account\'s sessions; another account\'s session id, an ended or unknown one is 404 and ends nothing', async () => {
    const mine = await seedUser(client, root.token, a.orgId, 'org_member', 'ender');
    const elsewhere = await login(client, mine.email, mine.password);
    const victim = await seedUser(client, root.token, b.orgId, 'org_admin', 'victim');

    // Another tenant's member tries to end the victim's session: not found, and it goes on.
    expectError(await client.delete(`/v1/auth/sessions/${sidOf(victim.token)}`, { token: mine.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(`/v1/auth/sessions/${sidOf(victim.token)}`, { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(`/v1/auth/sessions/${randomUUID()}`, { token: mine.token }), 404, 'NOT_FOUND');
    expectError(await client.delete('/v1/auth/sessions/not-a-uuid', { token: mine.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(`/v1/auth/sessions/${sidOf(elsewhere.token)}`), 401, 'UNAUTHENTICATED');
    expectStatus(await client.get(projectsOf(b.orgId), { token: victim.token }), 200, 'the victim\'s session goes on');
    expectStatus(await client.post('/v1/auth/refresh', { body: { refresh_token: victim.refreshToken } }), 200, 'and its refresh token works');

    expectStatus(await client.delete(`/v1/auth/sessions/${sidOf(elsewhere.token)}`, { token: mine.token }), 204);
    await eventually(() => client.get(projectsOf(a.orgId), { token: elsewhere.token }), 401, 'the ended session');
    expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: elsewhere.refreshToken } }), 401, 'UNAUTHENTICATED');
    expectStatus(await client.get(projectsOf(a.orgId), { token: mine.token }), 200, 'the caller\'s session goes on');
    expectError(await client.delete(`/v1/auth/sessions/${sidOf(elsewhere.token)}`, { token: mine.token }), 404, 'NOT_FOUND');
    assert.deepEqual((await sessionsOf(mine.token)).map((s) => s.session_id), [sidOf(mine.token)]);
  });

  test('revoke-others ends every other session of the account, in every org, and keeps the caller\'s and other accounts\'', async () => {
    const mine = await seedUser(client, root.token, a.orgId, 'org_admin', 'revoker');
    const second = await login(client, mine.email, mine.password);
    await joinOrgByInvitation(client, b.admin.token, b.orgId, 'org_member', mine);
    const inB = await login(client, mine.email, mine.password, b.orgId);
    const bystander = await seedUser(client, root.token, a.orgId, 'org_member', 'bystander');

    expectError(await client.post('/v1/auth/sessions/revoke-others'), 401, 'UNAUTHENTICATED');
    assert.deepEqual(expectStatus(await client.post('/v1/auth/sessions/revoke-others', { token: mine.token }), 200), { ended: 2 });
    await eventually(() => client.get(projectsOf(a.orgId), { token: second.token }), 401, 'the second session');
    await eventually(() => client.get(projectsOf(b.orgId), { token: inB.token }), 401, 'the session in B');
    expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: inB.refreshToken } }), 401, 'UNAUTHENTICATED');
    expectStatus(await client.get(projectsOf(a.orgId), { token: mine.token }), 200, 'the caller\'s session goes on');
    expectStatus(await client.get(projectsOf(a.orgId), { token: bystander.token }), 200, 'another account\'s session goes on');
    assert.deepEqual((await sessionsOf(mine.token)).map((s) => s.session_id), [sidOf(mine.token)]);
    assert.deepEqual(expectStatus(await client.post('/v1/auth/sessions/revoke-others', { token: mine.token }), 200), { ended: 0 });
  });

  test('a removed member\'s token no longer lists or ends sessions (401)', async () => {
    const removed = await seedUser(client, root.token, a.orgId, 'org_member', 'removed');
    expectStatus(await client.delete(`/v1/management/orgs/${a.orgId}/users/${removed.userId}`, { token: a.admin.token }), 204);
    await eventually(() => client.get('/v1/auth/sessions', { token: removed.token }), 401, 'the removed member');
    expectError(await client.post('/v1/auth/sessions/revoke-others', { token: removed.token }), 401, 'UNAUTHENTICATED');
    expectError(await client.delete(`/v1/auth/sessions/${sidOf(removed.token)}`, { token: removed.token }), 401, 'UNAUTHENTICATED');
    expectError(await client.get('/v1/auth/me', { token: removed.token }), 401, 'UNAUTHENTICATED');
  });
});
