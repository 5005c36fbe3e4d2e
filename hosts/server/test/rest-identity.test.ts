import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RunningServer } from '../src/server.ts';
import {
  api,
  assertNoSecrets,
  expectError,
  expectStatus,
  login,
  loginAdmin,
  seedTenant,
  seedUser,
  unique,
  type ApiClient,
  type ApiResponse,
  type LoggedInUser,
  type Tenant,
} from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Accounts join orgs only with the holder's consent, and sessions end when they should, on every
// instance (docs/decisions.md "Sessions" and "Invitations"). A second server instance on the same
// database stands for "every instance": it hears of an ended session only through PostgreSQL.

let ts: TestServer;
let client: ApiClient;
let other: ApiClient;
let second: RunningServer;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;

before(async () => {
  ts = await startTestServer();
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'id-a');
  b = await seedTenant(client, root.token, 'id-b');
  second = await ts.startAnotherInstance();
  other = api(`http://127.0.0.1:${second.httpPort}`);
});
after(() => ts.stop());

const projectsOf = (orgId: string) => `/v1/management/orgs/${orgId}/projects`;
const usersOf = (orgId: string) => `/v1/management/orgs/${orgId}/users`;
const invitationsOf = (orgId: string) => `/v1/management/orgs/${orgId}/invitations`;

/**
 * Polls `probe` until it answers `status`, for at most 10 s (generous for a busy machine; the
 * notification normally arrives in milliseconds). Returns how long it took.
 */
async function eventually(probe: () => Promise<ApiResponse>, status: number, what: string): Promise<number> {
  const started = Date.now();
  let last: ApiResponse | undefined;
  while (Date.now() - started < 10_000) {
    last = await probe();
    if (last.status === status) return Date.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`${what}: still ${last?.status} ${last?.text} after 10 s`);
}

/** A user of A's org with a session open on each instance (the same account, two sessions). */
async function userWithTwoSessions(role: 'org_admin' | 'org_member' = 'org_member'): Promise<{ here: LoggedInUser; there: LoggedInUser }> {
  const here = await seedUser(client, root.token, a.orgId, role, 'two-sessions');
  const there = await login(other, here.email, here.password);
  expectStatus(await other.get(projectsOf(a.orgId), { token: there.token }), 200, 'the second session works on the second instance');
  return { here, there };
}

describe('account pre-registration takeover is refused', () => {
  test('an org A admin creates ceo@b; a system admin seeding that email into B or the system org gets 409 and changes nothing', async () => {
    const email = `ceo-${unique()}@b.example`;
    const knownToA = `pw-known-to-a-${unique()}`;
    expectStatus(
      await client.post(usersOf(a.orgId), { token: a.admin.token, body: { email, display_name: 'CEO', password: knownToA } }),
      201,
      'org A creates the account',
    );
    const chosenByB = `pw-chosen-by-b-${unique()}`;
    for (const response of [
      await client.post(`/v1/admin/orgs/${b.orgId}/users`, { token: root.token, body: { email, display_name: 'CEO', password: chosenByB, org_role: 'org_admin' } }),
      await client.post('/v1/admin/seed-user', { token: root.token, body: { email: email.toUpperCase(), display_name: 'CEO', password: chosenByB, org_id: b.orgId } }),
      await client.post('/v1/admin/seed-user', { token: root.token, body: { email, display_name: 'CEO', password: chosenByB } }),
      await client.post(usersOf(b.orgId), { token: b.admin.token, body: { email, display_name: 'CEO', password: chosenByB } }),
    ]) {
      expectError(response, 409, 'ALREADY_EXISTS');
    }
    // A's password does not open B, and B's chosen password opens nothing.
    expectError(await client.post('/v1/auth/login', { body: { email, password: knownToA, org_id: b.orgId } }), 401, 'UNAUTHENTICATED');
    expectError(await client.post('/v1/auth/login', { body: { email, password: chosenByB } }), 401, 'UNAUTHENTICATED');
    const members = expectStatus(await client.get(usersOf(b.orgId), { token: b.admin.token }), 200) as Array<{ email: string }>;
    assert.ok(!members.some((member) => member.email.toLowerCase() === email.toLowerCase()), 'not a member of B');
  });
});

describe('invitations', () => {
  test('an org_admin invites an existing account; only its holder, signed in, can accept, once', async () => {
    const invitee = await seedUser(client, root.token, b.orgId, 'org_member', 'invitee');
    const created = expectStatus(
      await client.post(invitationsOf(a.orgId), { token: a.admin.token, body: { email: invitee.email.toUpperCase(), org_role: 'org_member' } }),
      201,
    );
    assert.match(created.invitation_id, /^[0-9a-f-]{36}$/);
    assert.equal(created.org_role, 'org_member');
    assert.match(created.token, /^inv_[\w-]{43}$/);
    const daysLeft = (Date.parse(created.expires_at) - Date.now()) / 86_400_000;
    assert.ok(daysLeft > 6.9 && daysLeft <= 7, `expires in about 7 days, got ${daysLeft}`);

    const listed = expectStatus(await client.get(invitationsOf(a.orgId), { token: a.admin.token }), 200) as Array<Record<string, unknown>>;
    const mine = listed.find((entry) => entry.invitation_id === created.invitation_id);
    assert.ok(mine, 'listed');
    assert.equal(mine.token, undefined, 'the token is shown once, at creation');

    // Someone else's bearer: refused, and the invitation is not spent.
    expectError(await client.post('/v1/auth/invitations/accept', { token: a.member.token, body: { token: created.token } }), 403, 'PERMISSION_DENIED');
    const accepted = expectStatus(await client.post('/v1/auth/invitations/accept', { token: invitee.token, body: { token: created.token } }), 200);
    assert.deepEqual(accepted, { org_id: a.orgId, org_role: 'org_member' });
    expectError(await client.post('/v1/auth/invitations/accept', { token: invitee.token, body: { token: created.token } }), 404, 'NOT_FOUND');

    // The account is now in A with its own password; its password and membership in B are unchanged.
    const inA = await login(client, invitee.email, invitee.password, a.orgId);
    expectStatus(await client.get(projectsOf(a.orgId), { token: inA.token }), 200);
    expectStatus(await client.get(projectsOf(b.orgId), { token: invitee.token }), 200);
  });

  test('without an account, accepting creates one with the invited email and signs it in (201)', async () => {
    const email = `newcomer-${unique()}@example.com`;
    const created = expectStatus(await client.post(invitationsOf(a.orgId), { token: a.admin.token, body: { email, org_role: 'org_admin' } }), 201);
    expectError(await client.post('/v1/auth/invitations/accept', { body: { token: created.token, display_name: 'New', password: 'short' } }), 400, 'INVALID_ARGUMENT');
    const password = `pw-newcomer-${unique()}`;
    const session = expectStatus(await client.post('/v1/auth/invitations/accept', { body: { token: created.token, display_name: 'New', password } }), 201);
    assert.equal(session.org_id, a.orgId);
    assert.match(session.token, /^eyJ/);
    expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token: session.token, body: { name: `by-newcomer-${unique()}` } }), 201, 'an org_admin');
    expectStatus(await client.post('/v1/auth/login', { body: { email, password } }), 200);
  });

  test('without a bearer, an invitation for an email that has an account is 409: sign in and accept', async () => {
    const created = expectStatus(await client.post(invitationsOf(a.orgId), { token: a.admin.token, body: { email: b.member.email } }), 201);
    expectError(
      await client.post('/v1/auth/invitations/accept', { body: { token: created.token, display_name: 'Hijack', password: 'pw-hijacker-1' } }),
      409,
      'ALREADY_EXISTS',
    );
    expectError(await client.post('/v1/auth/login', { body: { email: b.member.email, password: 'pw-hijacker-1' } }), 401, 'UNAUTHENTICATED');
    expectStatus(await client.post('/v1/auth/invitations/accept', { token: b.member.token, body: { token: created.token } }), 200, 'the holder still can');
  });

  test('only an org_admin of the org (or a system admin) manages invitations; a withdrawn one cannot be accepted', async () => {
    expectError(await client.post(invitationsOf(a.orgId), { token: a.member.token, body: { email: 'x@example.com' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(invitationsOf(a.orgId), { token: a.member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(invitationsOf(a.orgId), { token: b.admin.token, body: { email: 'x@example.com' } }), 404, 'NOT_FOUND');
    expectError(await client.post(invitationsOf(a.orgId), { token: a.admin.token, body: { email: 'not-an-email' } }), 400, 'INVALID_ARGUMENT');

    const bySystem = expectStatus(await client.post(invitationsOf(b.orgId), { token: root.token, body: { email: a.member.email } }), 201);
    expectError(await client.delete(`${invitationsOf(b.orgId)}/${bySystem.invitation_id}`, { token: a.admin.token }), 404, 'NOT_FOUND');
    expectStatus(await client.delete(`${invitationsOf(b.orgId)}/${bySystem.invitation_id}`, { token: b.admin.token }), 204);
    expectError(await client.post('/v1/auth/invitations/accept', { token: a.member.token, body: { token: bySystem.token } }), 404, 'NOT_FOUND');
    expectError(await client.delete(`${invitationsOf(b.orgId)}/${bySystem.invitation_id}`, { token: b.admin.token }), 404, 'NOT_FOUND');
  });
});

describe('sessions end on every instance', () => {
  test('logout: 204; the session\'s access and refresh tokens stop working here and on the other instance', async () => {
    const user = await seedUser(client, root.token, a.orgId, 'org_member', 'logout');
    const elsewhere = await login(client, user.email, user.password);
    // The other instance has seen (and cached) the session before it ends.
    expectStatus(await other.get(projectsOf(a.orgId), { token: user.token }), 200);

    expectStatus(await client.post('/v1/auth/logout', { token: user.token }), 204);
    expectError(await client.get(projectsOf(a.orgId), { token: user.token }), 401, 'UNAUTHENTICATED');
    const delay = await eventually(() => other.get(projectsOf(a.orgId), { token: user.token }), 401, 'the other instance');
    console.log(`# logout reached the other instance after ${delay} ms`);
    expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: user.refreshToken } }), 401, 'UNAUTHENTICATED');
    expectStatus(await other.get(projectsOf(a.orgId), { token: elsewhere.token }), 200, 'another session of the user goes on');
    expectError(await client.post('/v1/auth/logout', {}), 401, 'UNAUTHENTICATED');
  });

  test('password change: 204; every other session ends everywhere, the caller\'s goes on; a wrong current password is 403', async () => {
    const { here, there } = await userWithTwoSessions();
    expectError(
      await client.post('/v1/auth/password', { token: here.token, body: { current_password: 'pw-not-it-1', new_password: 'pw-brand-new-1' } }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(await client.post('/v1/auth/password', { token: here.token, body: { current_password: here.password } }), 400, 'INVALID_ARGUMENT', /new_password/);
    const newPassword = `pw-changed-${unique()}`;
    expectStatus(await client.post('/v1/auth/password', { token: here.token, body: { current_password: here.password, new_password: newPassword } }), 204);
    expectStatus(await client.get(projectsOf(a.orgId), { token: here.token }), 200, 'the caller\'s session goes on');
    await eventually(() => other.get(projectsOf(a.orgId), { token: there.token }), 401, 'the other session on the other instance');
    expectError(await other.post('/v1/auth/refresh', { body: { refresh_token: there.refreshToken } }), 401, 'UNAUTHENTICATED');
    expectError(await client.post('/v1/auth/login', { body: { email: here.email, password: here.password } }), 401, 'UNAUTHENTICATED');
    expectStatus(await client.post('/v1/auth/login', { body: { email: here.email, password: newPassword } }), 200);
  });

  test('member removal: 204; the removed member\'s tokens stop working everywhere; the last org_admin cannot be removed (409)', async () => {
    const { here, there } = await userWithTwoSessions();
    expectError(await client.delete(`${usersOf(a.orgId)}/${here.userId}`, { token: a.member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.delete(`${usersOf(a.orgId)}/${here.userId}`, { token: b.admin.token }), 404, 'NOT_FOUND');
    expectStatus(await client.delete(`${usersOf(a.orgId)}/${here.userId}`, { token: a.admin.token }), 204);
    expectError(await client.get(projectsOf(a.orgId), { token: here.token }), 401, 'UNAUTHENTICATED');
    await eventually(() => other.get(projectsOf(a.orgId), { token: there.token }), 401, 'the removed member on the other instance');
    expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: here.refreshToken } }), 401, 'UNAUTHENTICATED');
    expectError(await client.delete(`${usersOf(a.orgId)}/${here.userId}`, { token: a.admin.token }), 404, 'NOT_FOUND');

    const lone = await seedTenant(client, root.token, 'lone-admin');
    expectError(await client.delete(`${usersOf(lone.orgId)}/${lone.admin.userId}`, { token: lone.admin.token }), 409, 'FAILED_PRECONDITION');
    expectStatus(await client.get(projectsOf(lone.orgId), { token: lone.admin.token }), 200, 'nothing changed');
  });

  test('role change: 200 with the user record; tokens already issued carry the new role everywhere; the last org_admin cannot be demoted (409)', async () => {
    const { here, there } = await userWithTwoSessions('org_admin');
    const createProject = (api: ApiClient, token: string) =>
      api.post(projectsOf(a.orgId), { token, body: { name: `p-${unique()}` } });
    expectStatus(await createProject(other, there.token), 201, 'an org_admin may create projects');

    const record = expectStatus(
      await client.request('PATCH', `${usersOf(a.orgId)}/${here.userId}`, { token: a.admin.token, body: { org_role: 'org_member' } }),
      200,
    );
    assert.deepEqual(record, { user_id: here.userId, email: here.email, display_name: 'two-sessions', org_id: a.orgId, org_role: 'org_member' });
    expectError(await createProject(client, here.token), 403, 'PERMISSION_DENIED');
    await eventually(() => createProject(other, there.token), 403, 'the demoted admin on the other instance');
    expectStatus(await other.get(projectsOf(a.orgId), { token: there.token }), 200, 'still a member');
    expectError(
      await client.request('PATCH', `${usersOf(a.orgId)}/${here.userId}`, { token: a.admin.token, body: { org_role: 'owner' } }),
      400,
      'INVALID_ARGUMENT',
    );

    const lone = await seedTenant(client, root.token, 'lone-role');
    expectError(
      await client.request('PATCH', `${usersOf(lone.orgId)}/${lone.admin.userId}`, { token: lone.admin.token, body: { org_role: 'org_member' } }),
      409,
      'FAILED_PRECONDITION',
    );
  });
});

describe('secrets', () => {
  test('no password, refresh token, JWT, bcrypt hash or invitation token in the logs or in responses', () => {
    assertNoSecrets(ts.logs, client, ['password', 'token', 'refresh_token', 'invitation_token']);
  });
});
