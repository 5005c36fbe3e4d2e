import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { api, expectError, expectStatus, login, loginAdmin, seedTenant, unique, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { linkIn, startSmtpInbox, type SmtpInbox } from './support/smtp-inbox.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Password reset by emailed link, delivered by a real SMTP server in this process (docs/security.md
// "Email delivery" and "Password reset"), and the claim of an account someone else made for an
// address ("Email addresses belong to whoever proves control of them").

const PUBLIC_URL = 'https://flags.example.test';

let inbox: SmtpInbox;
let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;

before(async () => {
  inbox = await startSmtpInbox();
  ts = await startTestServer({ SMTP_URL: inbox.url, SMTP_FROM: 'Switchyard <flags@example.test>', PUBLIC_URL });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'reset-a');
  b = await seedTenant(client, root.token, 'reset-b');
});
after(async () => {
  await ts.stop();
  await inbox.close();
});

const requestReset = (email: string, localAddress?: string) =>
  client.post('/v1/auth/password-reset', { body: { email }, ...(localAddress === undefined ? {} : { localAddress }) });

/** A fresh account made by `admin` in its org, as an admin may: with a password it knows; never verified. */
async function accountMadeBy(tenant: Tenant, label: string): Promise<{ email: string; password: string; userId: string }> {
  const email = `${label}-${unique()}@victim.example`;
  const password = `known-to-the-admin-${unique()}`;
  const user = expectStatus(
    await client.post(`/v1/management/orgs/${tenant.orgId}/users`, { token: tenant.admin.token, body: { email, display_name: label, password } }),
    201,
  );
  return { email, password, userId: user.user_id };
}

describe('password reset', () => {
  test('the link is mailed over SMTP, built on PUBLIC_URL; it sets the password once and ends every session', async () => {
    const since = inbox.mails.length;
    const user = a.member;
    const other = await login(client, user.email, user.password, a.orgId);
    const answer = expectStatus(await requestReset(user.email), 202);
    const mail = await inbox.waitFor(user.email, since, /reset/i);
    assert.equal(mail.from, 'flags@example.test');
    assert.match(mail.subject, /reset/i);
    const { token } = linkIn(mail, PUBLIC_URL, 'reset-password');
    assert.ok(token.length >= 43, 'at least 256 random bits');

    const newPassword = `new-${unique()}-password`;
    // The member was made by an admin (never verified): it keeps its org by saying so.
    const done = expectStatus(await client.post('/v1/auth/password-reset/confirm', { body: { token, new_password: newPassword, keep_org_ids: [a.orgId] } }), 200);
    assert.deepEqual(done, { org_ids: [a.orgId], account_removed: false });
    expectError(await client.post('/v1/auth/login', { body: { email: user.email, password: user.password } }), 401, 'UNAUTHENTICATED');
    await login(client, user.email, newPassword);
    for (const session of [user, other]) {
      expectError(await client.get('/v1/auth/orgs', { token: session.token }), 401, 'UNAUTHENTICATED');
    }
    // Single use.
    expectError(await client.post('/v1/auth/password-reset/confirm', { body: { token, new_password: `again-${unique()}` } }), 404, 'NOT_FOUND');
    a.member = await login(client, user.email, newPassword, a.orgId);
    // The answer said nothing about the account.
    assert.deepEqual(Object.keys(answer), ['status']);
    // Never stored in the clear: the outbox row was blanked once sent.
    const stored = (await ts.server.repos.mailOutbox.listRecent(100)).find((m) => m.to === user.email);
    assert.equal(stored?.status, 'sent');
    assert.equal(stored?.text, '');
    assert.ok(!ts.logs.join('\n').includes(token), 'the reset token is in no log line');
  });

  test('an unknown address answers exactly like a known one, and no mail is sent', async () => {
    const since = inbox.mails.length;
    const unknown = `nobody-${unique()}@example.com`;
    const known = expectStatus(await requestReset(b.member.email), 202);
    const none = expectStatus(await requestReset(unknown), 202);
    assert.deepEqual(none, known);
    await inbox.waitFor(b.member.email, since, /reset/i);
    await ts.server.mailWorker.runOnce();
    assert.ok(!inbox.mails.slice(since).some((m) => m.to.includes(unknown)), 'no mail to an address without an account');
  });

  test('a wrong, malformed or expired token is refused without a 500', async () => {
    expectError(await client.post('/v1/auth/password-reset/confirm', { body: { token: 'pr_not-a-real-token', new_password: 'long-enough-1' } }), 404, 'NOT_FOUND');
    expectError(await client.post('/v1/auth/password-reset/confirm', { body: { token: 'x' } }), 400, 'INVALID_ARGUMENT');
    expectError(await client.post('/v1/auth/password-reset', { body: { email: 'not an address' } }), 400, 'INVALID_ARGUMENT');
    expectError(await client.post('/v1/auth/password-reset/confirm', { body: { token: 'x', new_password: 'long-enough-1', keep_org_ids: ['not-a-uuid'] } }), 404, 'NOT_FOUND');
  });

  test('requests are limited per address (3 in 15 min) alike for known and unknown addresses, and per client address (20)', async () => {
    for (const email of [b.admin.email, `ghost-${unique()}@example.com`]) {
      for (let i = 0; i < 3; i += 1) expectStatus(await requestReset(email, '127.0.0.3'), 202);
      const refused = await requestReset(email, '127.0.0.3');
      expectError(refused, 429, 'RESOURCE_EXHAUSTED');
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
    }
    // Per client address: 20 requests for 20 different addresses, the 21st refused.
    for (let i = 0; i < 14; i += 1) expectStatus(await requestReset(`spray-${i}-${unique()}@example.com`, '127.0.0.3'), 202);
    expectError(await requestReset(`spray-last-${unique()}@example.com`, '127.0.0.3'), 429, 'RESOURCE_EXHAUSTED');
    expectStatus(await requestReset(`elsewhere-${unique()}@example.com`, '127.0.0.4'), 202);
  });
});

describe('claiming an address someone else made an account for', () => {
  test("the address's holder is mailed when an org makes an account for it, and confirming sets its own password and keeps the org only if asked", async () => {
    const since = inbox.mails.length;
    const made = await accountMadeBy(a, 'told');
    const mail = await inbox.waitFor(made.email, since, /confirm/i);
    assert.match(mail.text, new RegExp(a.orgId));
    const { token } = linkIn(mail, PUBLIC_URL, 'verify-email');
    const session = await login(client, made.email, made.password, a.orgId);
    const done = expectStatus(await client.post('/v1/auth/email-verification/confirm', { body: { token, new_password: 'my-own-pass-1', keep_org_ids: [a.orgId] } }), 200);
    assert.deepEqual(done, { org_ids: [a.orgId], account_removed: false });
    expectError(await client.get('/v1/auth/orgs', { token: session.token }), 401, 'UNAUTHENTICATED');
    expectError(await client.post('/v1/auth/login', { body: { email: made.email, password: made.password } }), 401, 'UNAUTHENTICATED');
    await login(client, made.email, 'my-own-pass-1', a.orgId);
    // Single use, and not a reset link.
    expectError(await client.post('/v1/auth/email-verification/confirm', { body: { token, new_password: 'again-pass-12' } }), 404, 'NOT_FOUND');
    expectError(await client.post('/v1/auth/password-reset/confirm', { body: { token, new_password: 'again-pass-12' } }), 404, 'NOT_FOUND');
  });

  test('org A made the account: its known password stops working and A loses it unless the holder keeps A', async () => {
    const squatted = await accountMadeBy(a, 'ceo');
    const squatterSession = await login(client, squatted.email, squatted.password, a.orgId);
    // Today's symptom: the real owner's own org cannot have the address.
    expectError(await client.post(`/v1/management/orgs/${b.orgId}/users`, { token: b.admin.token, body: { email: squatted.email, display_name: 'CEO', password: 'whatever-1234' } }), 409, 'ALREADY_EXISTS');

    const since = inbox.mails.length;
    expectStatus(await requestReset(squatted.email, '127.0.0.5'), 202);
    const mail = await inbox.waitFor(squatted.email, since, /reset/i);
    assert.match(mail.text, new RegExp(a.orgId), 'the mail names the org that made the account');
    const { token } = linkIn(mail, PUBLIC_URL, 'reset-password');
    const done = expectStatus(await client.post('/v1/auth/password-reset/confirm', { body: { token, new_password: 'owner-password-1' } }), 200);
    assert.deepEqual(done, { org_ids: [], account_removed: true });

    expectError(await client.get('/v1/auth/orgs', { token: squatterSession.token }), 401, 'UNAUTHENTICATED');
    expectError(await client.post('/v1/auth/login', { body: { email: squatted.email, password: squatted.password } }), 401, 'UNAUTHENTICATED');
    const members = expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/users`, { token: a.admin.token }), 200);
    assert.ok(!members.some((m: { email: string }) => m.email === squatted.email), 'A no longer has the account');
    // The address is free: the owner's own org can now create it.
    expectStatus(await client.post(`/v1/management/orgs/${b.orgId}/users`, { token: b.admin.token, body: { email: squatted.email, display_name: 'CEO', password: 'org-b-password-1' } }), 201);
    // Audited in A's history.
    const log = expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/audit-log?resource_id=${squatted.userId}`, { token: a.admin.token }), 200);
    assert.ok(log.entries.some((e: { action: string }) => e.action === 'user.claimed_and_left'), 'the claim is in the org history');
  });

  test('the holder may keep the org that made the account; a verified account keeps its orgs', async () => {
    const made = await accountMadeBy(a, 'colleague');
    let since = inbox.mails.length;
    expectStatus(await requestReset(made.email, '127.0.0.6'), 202);
    let { token } = linkIn(await inbox.waitFor(made.email, since, /reset/i), PUBLIC_URL, 'reset-password');
    const done = expectStatus(await client.post('/v1/auth/password-reset/confirm', { body: { token, new_password: 'colleague-pass-1', keep_org_ids: [a.orgId] } }), 200);
    assert.deepEqual(done, { org_ids: [a.orgId], account_removed: false });
    await login(client, made.email, 'colleague-pass-1', a.orgId);

    // Now verified: a later reset changes the password only.
    since = inbox.mails.length;
    expectStatus(await requestReset(made.email, '127.0.0.6'), 202);
    ({ token } = linkIn(await inbox.waitFor(made.email, since, /reset/i), PUBLIC_URL, 'reset-password'));
    assert.deepEqual(expectStatus(await client.post('/v1/auth/password-reset/confirm', { body: { token, new_password: 'colleague-pass-2' } }), 200), { org_ids: [a.orgId], account_removed: false });
  });
});
