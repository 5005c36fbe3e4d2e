import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { signInThroughBrowser, startTestOidcProvider, type TestOidcProvider } from '../../../packages/services/test/support/oidc-identity-provider.ts';
import { auditLogPath, only, readAll } from './support/audit-log.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { linkIn, startSmtpInbox, type SmtpInbox } from './support/smtp-inbox.ts';
import { CookieJar, browserGet, eventuallyStatus, startSsoTestServer } from './support/sso.ts';
import type { TestServer } from './support/test-server.ts';

// A claim is one more way an admin's membership ends (docs/security.md "Removed and demoted admins"
// and "Email addresses belong to whoever proves control of them"): when the holder of a
// never-verified admin account's address proves it (here by a password reset mailed over a real
// SMTP server) and the account leaves the org, what the admin left behind there is withdrawn as a
// removal withdraws it: its pending invitations, the providers it wrote, the sessions those opened.
// Against a real OpenID Provider (oidc-provider on 127.0.0.1), as sso-admin-grants.test.ts does.

const APP = 'http://127.0.0.1:9/app/signed-in';
const CLIENT_ID = 'switchyard-claim-grants';
const CLIENT_SECRET = `op-secret-${unique()}`;

let ts: TestServer & { publicUrl: string };
let inbox: SmtpInbox;
let client: ApiClient;
let root: LoggedInUser;
let op: TestOidcProvider;
let org: Tenant;

const providersOf = (orgId: string) => `/v1/management/orgs/${orgId}/auth-providers`;
const invitationsOf = (orgId: string) => `/v1/management/orgs/${orgId}/invitations`;
const projectsOf = (orgId: string) => `/v1/management/orgs/${orgId}/projects`;

/** Start → the provider's form → our callback → the app's address → exchange: a session the provider opened. */
async function signInSession(providerId: string): Promise<Json> {
  const id = unique();
  const login = `user-${id}`;
  op.addAccount(login, { sub: `sub-${id}`, email: `${login}@corp.example`, email_verified: true, name: `Person ${id}` });
  const browser = new CookieJar();
  const start = await browserGet(`${ts.base}/v1/auth/sso/${providerId}/start?redirect_uri=${encodeURIComponent(APP)}`, browser);
  assert.equal(start.status, 302, `start: ${start.text}`);
  const callback = await signInThroughBrowser(start.location!.href, login, `${ts.publicUrl}/v1/auth/oidc/callback`);
  const back = await browserGet(callback, browser);
  assert.equal(back.status, 302, `callback: ${back.text}`);
  const code = back.location!.searchParams.get('code');
  assert.ok(code, `a code, not ${back.location!.href}`);
  return expectStatus(await client.post('/v1/auth/sso/exchange', { body: { code } }), 200, 'exchange');
}

before(async () => {
  inbox = await startSmtpInbox();
  [ts, op] = await Promise.all([startSsoTestServer({ SMTP_URL: inbox.url, SMTP_FROM: 'Switchyard <flags@example.test>' }), startTestOidcProvider()]);
  client = api(ts.base);
  root = await loginAdmin(client);
  org = await seedTenant(client, root.token, 'claim-grants');
  op.addClient({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUris: [`${ts.publicUrl}/v1/auth/oidc/callback`] });
});
after(async () => {
  await op?.close();
  await ts?.stop();
  await inbox?.close();
});

describe('a claimed admin leaves nothing that keeps working', () => {
  test("the holder's password reset claims the admin account: its invitations are withdrawn, its providers disabled, their sessions ended", async () => {
    // An admin account someone made for an address it does not hold (never verified).
    const claimed = await seedUser(client, root.token, org.orgId, 'org_admin', 'claimed-admin');
    const since = inbox.mails.length;
    const plantedEmail = `mine-${unique()}@evil.example`;
    const planted = expectStatus(await client.post(invitationsOf(org.orgId), { token: claimed.token, body: { email: plantedEmail, org_role: 'org_admin' } }), 201);
    const kept = expectStatus(await client.post(invitationsOf(org.orgId), { token: org.admin.token, body: { email: `kept-${unique()}@example.com` } }), 201);
    const plantedToken = linkIn(await inbox.waitFor(plantedEmail, since, /invit/i), ts.publicUrl, 'accept-invitation').token;
    const body = { provider_type: 'oidc', display_name: `IdP ${unique()}`, redirect_uris: [APP], default_role: 'org_member', link_existing_accounts: false, oidc: { issuer_url: op.issuer, client_id: CLIENT_ID, client_secret: CLIENT_SECRET } };
    const provider = expectStatus(await client.post(providersOf(org.orgId), { token: claimed.token, body }), 201, 'create provider');
    assert.equal(provider.status, 'enabled', 'members only, no linking: no confirmation needed');
    const session = await signInSession(provider.id);
    expectStatus(await client.get(projectsOf(org.orgId), { token: session.token }), 200, 'the provider opened a session');

    // The address's holder proves it: a reset link, confirmed keeping no org.
    const resetSince = inbox.mails.length;
    expectStatus(await client.post('/v1/auth/password-reset', { body: { email: claimed.email } }), 202);
    const { token } = linkIn(await inbox.waitFor(claimed.email, resetSince, /reset/i), ts.publicUrl, 'reset-password');
    const done = expectStatus(await client.post('/v1/auth/password-reset/confirm', { body: { token, new_password: `holder-${unique()}-pw`, keep_org_ids: [] } }), 200);
    assert.deepEqual(done, { org_ids: [], account_removed: true });

    const pending = (expectStatus(await client.get(invitationsOf(org.orgId), { token: org.admin.token }), 200) as Json[]).map((i) => i.invitation_id);
    assert.ok(!pending.includes(planted.invitation_id), 'its invitation is withdrawn');
    assert.ok(pending.includes(kept.invitation_id), "another admin's invitation stays");
    expectError(await client.post('/v1/auth/invitations/accept', { body: { token: plantedToken, display_name: 'Back door', password: `pw-${unique()}-long` } }), 404, 'NOT_FOUND');
    const disabled = expectStatus(await client.get(`${providersOf(org.orgId)}/${provider.id}`, { token: org.admin.token }), 200);
    assert.deepEqual([disabled.enabled, disabled.status], [false, 'disabled']);
    // Ended on every instance (the split topology's gateway hears of it through WatchCredentials), refresh included.
    await eventuallyStatus(() => client.get(projectsOf(org.orgId), { token: session.token }), 401, "the provider's session");
    expectError(await client.post('/v1/auth/refresh', { body: { refresh_token: session.refresh_token } }), 401, 'UNAUTHENTICATED');

    const invitationEntry = only(await readAll(client, org.admin.token, (q) => auditLogPath(org.orgId, q), { resource_type: 'invitation' }), 'invitation.delete', planted.invitation_id);
    assert.deepEqual(invitationEntry.details, { reason: 'member_claimed', member_user_id: claimed.userId });
    const providerEntry = only(await readAll(client, org.admin.token, (q) => auditLogPath(org.orgId, q), { resource_type: 'auth_provider' }), 'auth_provider.disable', provider.id);
    assert.deepEqual(providerEntry.details, { reason: 'member_claimed', member_user_id: claimed.userId });
    assert.equal(providerEntry.actor.id, claimed.userId, 'done by the claim (the account acting on itself)');
  });
});
