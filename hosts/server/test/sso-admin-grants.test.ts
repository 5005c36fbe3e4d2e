import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { after, before, describe, test } from 'node:test';
import { signInThroughBrowser, startTestOidcProvider, type TestOidcProvider } from '../../../packages/services/test/support/oidc-identity-provider.ts';
import { auditLogPath, only, readAll } from './support/audit-log.ts';
import { bearer, rejectsWithStatus, ssoClients, type SsoClients } from './support/grpc-clients.ts';
import {
  api,
  expectError,
  expectStatus,
  loginAdmin,
  seedTenant,
  seedUser,
  unique,
  type ApiClient,
  type Json,
  type LoggedInUser,
  type Tenant,
} from './support/rest-client.ts';
import { CookieJar, browserGet, eventuallyStatus, startSsoTestServer } from './support/sso.ts';
import type { TestServer } from './support/test-server.ts';

// What a removed or demoted admin (or whoever stole its token) leaves behind, and the identity
// provider rules that keep it from lasting (docs/security.md "Removed and demoted admins",
// docs/sso.md "Confirmation"): invitations and providers name their authors; removal and
// demotion withdraw the invitations and disable the providers; enabling a provider that makes
// admins or links existing accounts takes a second admin; a provider that is disabled or deleted
// ends the sessions it opened; repointing an OIDC provider needs its secret again. Against a real
// OpenID Provider (oidc-provider on 127.0.0.1), as sso-oidc.test.ts does.

const APP = 'http://127.0.0.1:9/app/signed-in';
const CLIENT_ID = 'switchyard-grants';
const CLIENT_SECRET = `op-secret-${unique()}`;

let ts: TestServer & { publicUrl: string };
let client: ApiClient;
let root: LoggedInUser;
let op: TestOidcProvider;
let grpcSso: SsoClients;
/** An org with two admins (its own `admin`, and `second`): confirmations apply. */
let org: Tenant;
let second: LoggedInUser;

const providersOf = (orgId: string) => `/v1/management/orgs/${orgId}/auth-providers`;
const invitationsOf = (orgId: string) => `/v1/management/orgs/${orgId}/invitations`;
const usersOf = (orgId: string) => `/v1/management/orgs/${orgId}/users`;
const projectsOf = (orgId: string) => `/v1/management/orgs/${orgId}/projects`;

/** A provider for the test OP. Unless told, one that needs no confirmation: members only, no linking. */
const oidcBody = (extra: Record<string, unknown> = {}) => ({
  provider_type: 'oidc',
  display_name: `IdP ${unique()}`,
  redirect_uris: [APP],
  default_role: 'org_member',
  link_existing_accounts: false,
  oidc: { issuer_url: op.issuer, client_id: CLIENT_ID, client_secret: CLIENT_SECRET },
  ...extra,
});

async function createProvider(token: string, extra: Record<string, unknown> = {}, orgId = org.orgId): Promise<Json> {
  return expectStatus(await client.post(providersOf(orgId), { token, body: oidcBody(extra) }), 201, 'create provider');
}

const getProvider = async (id: string, token = org.admin.token): Promise<Json> =>
  expectStatus(await client.get(`${providersOf(org.orgId)}/${id}`, { token }), 200, 'get provider');

/** A person at the identity provider (a login for its form) asserting these claims. */
function person(claims: { email?: string } = {}): { login: string; email: string } {
  const id = unique();
  const login = `user-${id}`;
  const email = claims.email ?? `${login}@corp.example`;
  op.addAccount(login, { sub: `sub-${id}`, email, email_verified: true, name: `Person ${id}` });
  return { login, email };
}

/** Start → the provider's form → our callback → the app's address; the code or error it carries. One browser throughout: the callback needs the login cookie the start set. */
async function signIn(providerId: string, login: string): Promise<URL> {
  const browser = new CookieJar();
  const start = await browserGet(`${ts.base}/v1/auth/sso/${providerId}/start?redirect_uri=${encodeURIComponent(APP)}`, browser);
  assert.equal(start.status, 302, `start: ${start.text}`);
  const callback = await signInThroughBrowser(start.location!.href, login, `${ts.publicUrl}/v1/auth/oidc/callback`);
  const back = await browserGet(callback, browser);
  assert.equal(back.status, 302, `callback: ${back.text}`);
  return back.location!;
}

async function signInSession(providerId: string, login: string): Promise<Json> {
  const returned = await signIn(providerId, login);
  const code = returned.searchParams.get('code');
  assert.ok(code, `a code, not ${returned.href}`);
  return expectStatus(await client.post('/v1/auth/sso/exchange', { body: { code } }), 200, 'exchange');
}

/** Where a sign-in through a provider that cannot be used stops: its start. */
async function startStatus(providerId: string): Promise<number> {
  return (await browserGet(`${ts.base}/v1/auth/sso/${providerId}/start?redirect_uri=${encodeURIComponent(APP)}`)).status;
}

/** The session's access token stops working (everywhere: the split topology's gateway hears of it later), and so does its refresh token. */
async function assertEnded(session: Json, what: string): Promise<void> {
  await eventuallyStatus(() => client.get(projectsOf(session.org_id), { token: session.token }), 401, `${what}: the access token`);
  expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: session.refresh_token } }), 401, 'UNAUTHENTICATED');
}

/** A fresh admin of the org (the org keeps two others). */
const extraAdmin = (label: string) => seedUser(client, root.token, org.orgId, 'org_admin', label);

before(async () => {
  [ts, op] = await Promise.all([startSsoTestServer(), startTestOidcProvider()]);
  client = api(ts.base);
  root = await loginAdmin(client);
  org = await seedTenant(client, root.token, 'grants');
  second = await seedUser(client, root.token, org.orgId, 'org_admin', 'second-admin');
  op.addClient({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${ts.publicUrl}/v1/auth/oidc/callback`] });
  grpcSso = ssoClients(ts.server.grpcPort);
});
after(async () => {
  grpcSso?.close();
  await op?.close();
  await ts?.stop();
});

describe('a removed or demoted admin leaves nothing that keeps working', () => {
  test('removal withdraws its pending invitations: an org_admin invitation it made is no longer accepted; others stay', async () => {
    const leaving = await extraAdmin('leaving');
    const planted = expectStatus(await client.post(invitationsOf(org.orgId), { token: leaving.token, body: { email: `mine-${unique()}@evil.example`, org_role: 'org_admin' } }), 201);
    const kept = expectStatus(await client.post(invitationsOf(org.orgId), { token: org.admin.token, body: { email: `kept-${unique()}@example.com` } }), 201);
    const listed = expectStatus(await client.get(invitationsOf(org.orgId), { token: org.admin.token }), 200) as Json[];
    assert.deepEqual(listed.find((i) => i.invitation_id === planted.invitation_id)?.created_by, { user_id: leaving.userId, email: leaving.email });
    assert.deepEqual(listed.find((i) => i.invitation_id === kept.invitation_id)?.created_by, { user_id: org.admin.userId, email: org.admin.email });

    expectStatus(await client.delete(`${usersOf(org.orgId)}/${leaving.userId}`, { token: org.admin.token }), 204, 'remove the admin');
    const after = (expectStatus(await client.get(invitationsOf(org.orgId), { token: org.admin.token }), 200) as Json[]).map((i) => i.invitation_id);
    assert.ok(!after.includes(planted.invitation_id), 'its invitation is withdrawn');
    assert.ok(after.includes(kept.invitation_id), "another admin's invitation stays");
    expectError(await client.post('/v1/auth/invitations/accept', { body: { token: planted.token, display_name: 'Back door', password: `pw-${unique()}-long` } }), 404, 'NOT_FOUND');
    const entry = only(await readAll(client, org.admin.token, (q) => auditLogPath(org.orgId, q), { resource_type: 'invitation' }), 'invitation.delete', planted.invitation_id);
    assert.deepEqual(entry.details, { reason: 'member_removed', member_user_id: leaving.userId });
    assert.equal(entry.actor.id, org.admin.userId, 'done by the admin who removed it');
  });

  test('demotion withdraws its invitations and disables its providers; they stay off until another admin enables them', async () => {
    const demoted = await extraAdmin('demoted');
    const planted = expectStatus(await client.post(invitationsOf(org.orgId), { token: demoted.token, body: { email: `alt-${unique()}@evil.example`, org_role: 'org_admin' } }), 201);
    const provider = await createProvider(demoted.token);
    assert.equal(provider.status, 'enabled', 'members only, no linking: no confirmation needed');
    assert.deepEqual(provider.created_by, { user_id: demoted.userId, email: demoted.email });
    const session = await signInSession(provider.id, person().login);

    expectStatus(await client.request('PATCH', `${usersOf(org.orgId)}/${demoted.userId}`, { token: org.admin.token, body: { org_role: 'org_member' } }), 200, 'demote');
    expectError(await client.post('/v1/auth/invitations/accept', { body: { token: planted.token, display_name: 'Back door', password: `pw-${unique()}-long` } }), 404, 'NOT_FOUND');
    const disabled = await getProvider(provider.id);
    assert.deepEqual([disabled.enabled, disabled.status], [false, 'disabled']);
    assert.equal(await startStatus(provider.id), 409, 'it starts no sign-in');
    await assertEnded(session, 'the session the provider opened');
    const entry = only(await readAll(client, org.admin.token, (q) => auditLogPath(org.orgId, q), { resource_type: 'auth_provider' }), 'auth_provider.disable', provider.id);
    assert.deepEqual(entry.details, { reason: 'member_demoted', member_user_id: demoted.userId });
    assert.deepEqual([entry.before.enabled, entry.after.enabled], [true, false]);

    // Another admin looks at it and enables it again (it needs no confirmation: members only, no linking).
    const body = oidcBody({ display_name: disabled.display_name });
    const again = expectStatus(await client.request('PUT', `${providersOf(org.orgId)}/${provider.id}`, { token: org.admin.token, body }), 200);
    assert.equal(again.status, 'enabled');
    assert.deepEqual(again.updated_by, { user_id: org.admin.userId, email: org.admin.email });
    await signInSession(provider.id, person().login);
  });

  test("removal disables the providers it created or changed, ends their sessions, and leaves other admins' alone", async () => {
    const leaving = await extraAdmin('leaving-idp');
    const created = await createProvider(leaving.token);
    const others = await createProvider(org.admin.token);
    const changed = await createProvider(org.admin.token);
    expectStatus(await client.request('PUT', `${providersOf(org.orgId)}/${changed.id}`, { token: leaving.token, body: oidcBody({ display_name: 'touched' }) }), 200, 'the leaving admin changes it');
    expectStatus(await client.request('PUT', `${providersOf(org.orgId)}/${changed.id}`, { token: org.admin.token, body: oidcBody({ display_name: 'touched again' }) }), 200, 'then another admin does');
    const sessions = [await signInSession(created.id, person().login), await signInSession(changed.id, person().login)];
    const untouched = await signInSession(others.id, person().login);

    expectStatus(await client.delete(`${usersOf(org.orgId)}/${leaving.userId}`, { token: org.admin.token }), 204, 'remove');
    for (const id of [created.id, changed.id]) assert.equal((await getProvider(id)).status, 'disabled', `${id}: disabled`);
    assert.equal((await getProvider(others.id)).status, 'enabled');
    for (const session of sessions) await assertEnded(session, 'a session of a disabled provider');
    expectStatus(await client.get(projectsOf(org.orgId), { token: untouched.token }), 200, "another provider's session goes on");
  });
});

describe('a second admin confirms providers that make admins or link existing accounts', () => {
  test('org_admin by default: pending until another admin confirms; the one who asked cannot; a stale review is refused', async () => {
    const pending = await createProvider(org.admin.token, { default_role: 'org_admin' });
    assert.deepEqual([pending.enabled, pending.status], [false, 'pending_confirmation']);
    assert.deepEqual(pending.enable_requested_by, { user_id: org.admin.userId, email: org.admin.email });
    assert.equal(await startStatus(pending.id), 409, 'no sign-in while it waits');
    const confirmPath = `${providersOf(org.orgId)}/${pending.id}/confirm`;
    expectError(await client.post(confirmPath, { token: org.admin.token, body: {} }), 403, 'PERMISSION_DENIED', /another org admin/);
    expectError(await client.post(confirmPath, { token: org.member.token, body: {} }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(confirmPath, { token: second.token, body: { updated_at: '2001-01-01T00:00:00.000Z' } }), 409, 'FAILED_PRECONDITION', /changed since/);
    expectError(await client.post(confirmPath, { token: second.token, body: { updated_at: 'yesterday' } }), 400, 'INVALID_ARGUMENT');
    const confirmed = expectStatus(await client.post(confirmPath, { token: second.token, body: { updated_at: pending.updated_at } }), 200);
    assert.deepEqual([confirmed.enabled, confirmed.status, confirmed.enable_requested_by], [true, 'enabled', null]);
    expectError(await client.post(confirmPath, { token: second.token }), 409, 'FAILED_PRECONDITION', /not waiting/);
    const session = await signInSession(pending.id, person().login);
    const joined = (expectStatus(await client.get(usersOf(org.orgId), { token: org.admin.token }), 200) as Json[]).find((u) => u.user_id === session.user_id);
    assert.equal(joined?.org_role, 'org_admin');
    assert.equal(only(await readAll(client, org.admin.token, (q) => auditLogPath(org.orgId, q), { resource_type: 'auth_provider' }), 'auth_provider.confirm', pending.id).actor.id, second.userId);
  });

  test('linking existing accounts (the default) waits too; a live provider changed to link goes back to waiting; a rename does not', async () => {
    const { link_existing_accounts: _omitted, ...linkingByDefault } = oidcBody();
    const linking = expectStatus(await client.post(providersOf(org.orgId), { token: org.admin.token, body: linkingByDefault }), 201);
    assert.deepEqual([linking.link_existing_accounts, linking.status], [true, 'pending_confirmation']);

    const live = await createProvider(org.admin.token);
    const renamed = expectStatus(await client.request('PUT', `${providersOf(org.orgId)}/${live.id}`, { token: second.token, body: oidcBody({ display_name: 'renamed' }) }), 200);
    assert.equal(renamed.status, 'enabled', 'a rename of a provider that needs no confirmation');
    const session = await signInSession(live.id, person().login);
    const relinked = expectStatus(
      await client.request('PUT', `${providersOf(org.orgId)}/${live.id}`, { token: second.token, body: oidcBody({ display_name: 'renamed', link_existing_accounts: true }) }),
      200,
    );
    assert.deepEqual([relinked.status, relinked.enable_requested_by?.user_id], ['pending_confirmation', second.userId]);
    await assertEnded(session, 'a session of a provider waiting for confirmation');
    const confirmed = expectStatus(await client.post(`${providersOf(org.orgId)}/${live.id}/confirm`, { token: org.admin.token }), 200);
    assert.equal(confirmed.status, 'enabled');
    const renamedAgain = expectStatus(
      await client.request('PUT', `${providersOf(org.orgId)}/${live.id}`, {
        token: second.token,
        // Without the secret: one sent again is sealed afresh and counts as a change.
        body: oidcBody({ display_name: 'renamed twice', link_existing_accounts: true, oidc: { issuer_url: op.issuer, client_id: CLIENT_ID } }),
      }),
      200,
    );
    assert.equal(renamedAgain.status, 'enabled', 'a confirmed provider stays enabled through a rename');
  });

  test('an org with a single admin enables at once (nobody could confirm)', async () => {
    const lone = await seedTenant(client, root.token, 'lone');
    const provider = await createProvider(lone.admin.token, { default_role: 'org_admin', link_existing_accounts: true }, lone.orgId);
    assert.equal(provider.status, 'enabled');
  });

  test('gRPC: the record has status, authors and last use; ConfirmAuthProvider by another admin enables it', async () => {
    const created = await grpcSso.providers.createAuthProvider(
      {
        org_id: org.orgId,
        provider: { provider_type: 'oidc', display_name: 'over gRPC', redirect_uris: [APP], default_role: 'org_admin', oidc: { issuer_url: op.issuer, client_id: CLIENT_ID, client_secret: CLIENT_SECRET } },
      },
      bearer(org.admin.token),
    );
    assert.deepEqual([created.status, created.enabled, created.link_existing_accounts], ['pending_confirmation', false, true]);
    assert.deepEqual(created.created_by, { user_id: org.admin.userId, email: org.admin.email });
    assert.deepEqual(created.enable_requested_by, created.created_by);
    assert.equal(created.last_used_at, '');
    await rejectsWithStatus(grpcSso.providers.confirmAuthProvider({ org_id: org.orgId, provider_id: created.id }, bearer(org.admin.token)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(
      grpcSso.providers.confirmAuthProvider({ org_id: org.orgId, provider_id: created.id, updated_at: 'not a date' }, bearer(second.token)),
      grpc.status.INVALID_ARGUMENT,
    );
    const confirmed = await grpcSso.providers.confirmAuthProvider({ org_id: org.orgId, provider_id: created.id, updated_at: created.updated_at }, bearer(second.token));
    assert.equal(confirmed.status, 'enabled');
    const before = Date.now();
    await signInSession(created.id, person().login);
    const listed = (await grpcSso.providers.listAuthProviders({ org_id: org.orgId }, bearer(second.token))).providers.find((p) => p.id === created.id);
    assert.ok(listed && Date.parse(listed.last_used_at) >= before - 1_000 && Date.parse(listed.last_used_at) <= Date.now(), `last use recorded: ${listed?.last_used_at}`);
    const noLinking = await grpcSso.providers.updateAuthProvider(
      { org_id: org.orgId, provider_id: created.id, provider: { display_name: 'over gRPC', redirect_uris: [APP], no_account_linking: true, oidc: { issuer_url: op.issuer, client_id: CLIENT_ID } } },
      bearer(second.token),
    );
    assert.deepEqual([noLinking.link_existing_accounts, noLinking.status], [false, 'enabled'], 'members only, no linking: enabled by one admin');
  });
});

describe('provider sessions and settings', () => {
  test('disabling a provider ends the sessions it opened (access and refresh); a password session of the same account goes on', async () => {
    const provider = await createProvider(org.admin.token);
    const first = await signInSession(provider.id, person().login);
    // A sign-in finished at the provider but not yet exchanged: its code opens no session once the
    // provider is disabled (the exchange checks; the session's insert checks again under the row lock,
    // which the repository contracts test, for an exchange racing the disable).
    const unexchanged = (await signIn(provider.id, person().login)).searchParams.get('code');
    assert.ok(unexchanged);
    const listed = (expectStatus(await client.get(providersOf(org.orgId), { token: org.admin.token }), 200) as Json[]).find((p) => p.id === provider.id);
    assert.ok(listed?.last_used_at, 'the list shows its last use');
    expectStatus(await client.request('PUT', `${providersOf(org.orgId)}/${provider.id}`, { token: org.admin.token, body: oidcBody({ enabled: false }) }), 200, 'disable');
    await assertEnded(first, 'after disabling');
    expectError(await client.post('/v1/auth/sso/exchange', { body: { code: unexchanged } }), 409, 'FAILED_PRECONDITION', /disabled/);
    expectStatus(await client.get(projectsOf(org.orgId), { token: org.member.token }), 200, 'password sessions are not touched');
  });

  test('deleting a provider ends the sessions it opened', async () => {
    const provider = await createProvider(org.admin.token);
    const session = await signInSession(provider.id, person().login);
    expectStatus(await client.delete(`${providersOf(org.orgId)}/${provider.id}`, { token: org.admin.token }), 204, 'delete');
    await assertEnded(session, 'after deleting');
  });

  test('a provider that does not link accounts refuses a sign-in asserting an existing member\'s email', async () => {
    const provider = await createProvider(org.admin.token);
    const returned = await signIn(provider.id, person({ email: org.member.email }).login);
    assert.equal(returned.searchParams.get('code'), null);
    assert.match(returned.searchParams.get('error_description') ?? '', /does not link existing accounts/);
  });

  test('repointing issuer_url or client_id without the secret is 400 and changes nothing; with the secret it is saved', async () => {
    const provider = await createProvider(org.admin.token);
    const path = `${providersOf(org.orgId)}/${provider.id}`;
    for (const oidc of [
      { issuer_url: `http://127.0.0.1:9/elsewhere`, client_id: CLIENT_ID },
      { issuer_url: op.issuer, client_id: 'another-client' },
    ]) {
      expectError(await client.request('PUT', path, { token: org.admin.token, body: { ...oidcBody(), oidc } }), 400, 'INVALID_ARGUMENT', /client_secret is required when oidc.issuer_url or oidc.client_id changes/);
    }
    await rejectsWithStatus(
      grpcSso.providers.updateAuthProvider(
        { org_id: org.orgId, provider_id: provider.id, provider: { display_name: 'x', redirect_uris: [APP], oidc: { issuer_url: op.issuer, client_id: 'another-client' } } },
        bearer(org.admin.token),
      ),
      grpc.status.INVALID_ARGUMENT,
    );
    const unchanged = await getProvider(provider.id);
    assert.deepEqual([unchanged.oidc.issuer_url, unchanged.oidc.client_id, unchanged.updated_at], [op.issuer, CLIENT_ID, provider.updated_at]);
    const saved = expectStatus(
      await client.request('PUT', path, { token: org.admin.token, body: { ...oidcBody(), oidc: { issuer_url: op.issuer, client_id: 'another-client', client_secret: 'new-secret' } } }),
      200,
    );
    assert.equal(saved.oidc.client_id, 'another-client');
    // Same issuer and client, no secret: the stored one is kept, as before.
    expectStatus(await client.request('PUT', path, { token: org.admin.token, body: { ...oidcBody(), oidc: { issuer_url: op.issuer, client_id: 'another-client' } } }), 200);
  });
});
