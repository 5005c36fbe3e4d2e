import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { api, expectError, expectStatus, login, loginAdmin, seedTenant, unique, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { linkIn, startSmtpInbox, type SmtpInbox } from './support/smtp-inbox.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// With SMTP an invitation's link is mailed to the invitee and handed to no one else, so accepting
// it as a new account proves the address (docs/security.md "Invitations prove the address"): the
// account is verified, and an account someone else made for the address is claimed, not a 409.

const PUBLIC_URL = 'https://flags.example.test';

let inbox: SmtpInbox;
let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let squatter: Tenant;
let owner: Tenant;

before(async () => {
  inbox = await startSmtpInbox();
  ts = await startTestServer({ SMTP_URL: inbox.url, PUBLIC_URL });
  client = api(ts.base);
  root = await loginAdmin(client);
  squatter = await seedTenant(client, root.token, 'squatter');
  owner = await seedTenant(client, root.token, 'owner');
});
after(async () => {
  await ts.stop();
  await inbox.close();
});

async function invite(tenant: Tenant, email: string): Promise<string> {
  const since = inbox.mails.length;
  const created = expectStatus(await client.post(`/v1/management/orgs/${tenant.orgId}/invitations`, { token: tenant.admin.token, body: { email } }), 201);
  assert.equal(created.mailed, true);
  assert.equal(created.token, undefined, 'the inviter never holds the link');
  const mail = await inbox.waitFor(email, since, /invitation/i);
  assert.match(mail.text, new RegExp(tenant.orgName));
  return linkIn(mail, PUBLIC_URL, 'accept-invitation').token;
}

test('the link is mailed, not answered; accepting it makes a verified account', async () => {
  const email = `new-${unique()}@example.com`;
  const token = await invite(owner, email);
  const accepted = expectStatus(await client.post('/v1/auth/invitations/accept', { body: { token, display_name: 'New', password: 'new-person-pw-1' } }), 201);
  assert.equal(accepted.org_id, owner.orgId);
  const user = await ts.server.repos.users.getByEmail(email);
  assert.ok(user?.emailVerifiedAtMs, 'the address is verified');
});

test("an account another org made for the address is claimed through the owner's own org's invitation", async () => {
  const email = `ceo-${unique()}@victim.example`;
  const squatterPassword = `squatter-knows-${unique()}`;
  expectStatus(await client.post(`/v1/management/orgs/${squatter.orgId}/users`, { token: squatter.admin.token, body: { email, display_name: 'CEO', password: squatterPassword } }), 201);
  const squatterSession = await login(client, email, squatterPassword, squatter.orgId);

  const token = await invite(owner, email);
  const accepted = expectStatus(await client.post('/v1/auth/invitations/accept', { body: { token, display_name: 'CEO', password: 'the-real-ceo-pw-1' } }), 201);
  assert.equal(accepted.org_id, owner.orgId);
  // The squatter's password and session are gone; so is its org's membership.
  expectError(await client.get('/v1/auth/orgs', { token: squatterSession.token }), 401, 'UNAUTHENTICATED');
  expectError(await client.post('/v1/auth/login', { body: { email, password: squatterPassword } }), 401, 'UNAUTHENTICATED');
  const ceo = await login(client, email, 'the-real-ceo-pw-1');
  const orgs = expectStatus(await client.get('/v1/auth/orgs', { token: ceo.token }), 200);
  assert.deepEqual(orgs.orgs.map((o: { org_id: string }) => o.org_id), [owner.orgId]);
  const history = expectStatus(await client.get(`/v1/management/orgs/${squatter.orgId}/audit-log`, { token: squatter.admin.token }), 200);
  assert.ok(history.entries.some((e: { action: string; details: { proof?: string } }) => e.action === 'user.claimed_and_left' && e.details.proof === 'invitation'));
});

test('a verified account is not claimed by an invitation: it signs in and accepts with its bearer (409 as before)', async () => {
  const email = `verified-${unique()}@example.com`;
  const first = await invite(owner, email);
  expectStatus(await client.post('/v1/auth/invitations/accept', { body: { token: first, display_name: 'V', password: 'verified-pw-123' } }), 201);
  const second = await invite(squatter, email);
  expectError(await client.post('/v1/auth/invitations/accept', { body: { token: second, display_name: 'X', password: 'attacker-pw-123' } }), 409, 'ALREADY_EXISTS');
  await login(client, email, 'verified-pw-123');
});
