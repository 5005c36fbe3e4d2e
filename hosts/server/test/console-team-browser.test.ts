import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { chromiumExecutable, launchChromium, signInToConsole } from './support/browser.ts';
import { api, expectError, expectStatus, login, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, TEST_ADMIN, type TestServer } from './support/test-server.ts';

// Team pages of the console (docs/console.md "Team and account") in a real Chromium: an
// invitation's link opened in another browser, accepted with a new account or by signing in with
// an existing one; the header naming who is signed in and where; My account's password change and
// sessions, each checked through the REST API.
// topologies: single
// (The console only calls the REST API; rest-sessions.test.ts and rest-identity.test.ts run the
// routes it uses against a gateway too.)

const chromiumCheck = chromiumExecutable();

describe('team pages in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let other: Tenant;
  let browser: Browser;

  before(async () => {
    await buildConsole();
    ts = await startTestServer();
    client = api(ts.base);
    const root = await login(client, TEST_ADMIN.email, TEST_ADMIN.password);
    [tenant, other] = [await seedTenant(client, root.token, 'team'), await seedTenant(client, root.token, 'elsewhere')];
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  /** A new browser (its own sessionStorage) signed in (support/browser.ts signInToConsole). */
  const signedIn = (user: { email: string; password: string }): Promise<Page> => signInToConsole(browser, ts.base, user, { viewport: { width: 1280, height: 720 } });

  /** Invites `email` from the Members page and returns the link the page shows. */
  async function inviteFromMembersPage(page: Page, email: string): Promise<string> {
    await page.getByRole('link', { name: 'Members', exact: true }).click();
    await page.getByLabel('Email', { exact: true }).fill(email);
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByText(`Invitation created for ${email}`).waitFor();
    const link = await page.getByTestId('invitation-link').innerText();
    assert.match(link, new RegExp(`^${ts.base.replace(/[.]/g, '\\.')}/#/accept-invitation/inv_[\\w-]{43}$`), 'a link on the console\'s origin with the token');
    return link;
  }

  test('the header names the signed-in account and org and links to My account', async () => {
    const page = await signedIn(tenant.admin);
    await page.getByTestId('signed-in-user').getByText(`team-admin (${tenant.admin.email})`).waitFor();
    assert.equal(await page.getByTestId('signed-in-org').innerText(), tenant.orgName);
    await page.getByTestId('account-link').click();
    await page.getByRole('heading', { name: 'My account' }).waitFor();
    assert.equal(await page.getByTestId('account-email').innerText(), tenant.admin.email);
    await page.context().close();
  });

  test('an invitation link opened in another browser: a new account joins and is signed in to the org', async () => {
    const adminPage = await signedIn(tenant.admin);
    const email = `newcomer-${unique()}@example.com`;
    const link = await inviteFromMembersPage(adminPage, email);

    const page = await (await browser.newContext()).newPage();
    await page.goto(link);
    await page.getByRole('heading', { name: 'Accept your invitation' }).waitFor();
    const form = page.getByRole('form', { name: 'Create your account and accept' });
    await form.getByLabel('Your name').fill('Newcomer');
    await form.getByLabel(/Choose a password/).fill('newcomer-password-1');
    await form.getByRole('button', { name: 'Create my account and join' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    await page.getByTestId('signed-in-user').getByText(`Newcomer (${email})`).waitFor();
    assert.equal(await page.getByTestId('signed-in-org').innerText(), tenant.orgName);
    // The accept page's entry (the token in its address) was replaced, not kept for the Back button.
    await page.goBack();
    assert.doesNotMatch(page.url(), /accept-invitation|inv_/, 'going back does not show the invitation token');

    // The account exists with that password, as a member of the org; the link is spent.
    const session = await login(client, email, 'newcomer-password-1');
    assert.equal(session.userId !== '', true);
    const members = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/users`, { token: tenant.admin.token }), 200) as Array<{ email: string; org_role: string }>;
    assert.equal(members.find((m) => m.email === email)?.org_role, 'org_member');
    const token = decodeURIComponent(link.split('/').pop()!);
    expectError(await client.post('/v1/auth/invitations/accept', { body: { token, display_name: 'Again', password: 'again-password-1' } }), 404, 'NOT_FOUND');
    await page.context().close();
    await adminPage.context().close();
  });

  test('an invitation for an existing account: signing in on the accept page joins the org and opens it', async () => {
    const adminPage = await signedIn(tenant.admin);
    const invitee = other.member;
    const link = await inviteFromMembersPage(adminPage, invitee.email);

    const page = await (await browser.newContext()).newPage();
    await page.goto(link);
    // Someone else's password first: refused in place, nothing joined.
    const form = page.getByRole('form', { name: 'Sign in and accept' });
    await form.getByLabel('Email').fill(invitee.email);
    await form.getByLabel('Password').fill('not-the-password-1');
    await form.getByRole('button', { name: 'Sign in and join' }).click();
    await form.getByRole('alert').waitFor();
    await form.getByLabel('Password').fill(invitee.password);
    await form.getByRole('button', { name: 'Sign in and join' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    await page.getByTestId('signed-in-org').getByText(tenant.orgName, { exact: true }).waitFor();
    const orgs = expectStatus(await client.get('/v1/auth/orgs', { token: invitee.token }), 200).orgs as Array<{ org_id: string; role: string }>;
    assert.deepEqual(orgs.map((o) => o.org_id).sort(), [tenant.orgId, other.orgId].sort(), 'a member of both orgs now');
    await page.context().close();
    await adminPage.context().close();
  });

  test('an invitation for another address, opened while signed in: the page says who is signed in and the API\'s refusal', async () => {
    const adminPage = await signedIn(tenant.admin);
    const link = await inviteFromMembersPage(adminPage, `someone-else-${unique()}@example.com`);
    const page = await signedIn(other.admin);
    await page.goto(link);
    await page.getByTestId('accepting-as').getByText(other.admin.email).waitFor();
    await page.getByRole('button', { name: `Accept as ${other.admin.email}` }).click();
    await page.getByRole('alert').getByText(/not allowed/i).waitFor();
    const orgs = expectStatus(await client.get('/v1/auth/orgs', { token: other.admin.token }), 200).orgs as Array<{ org_id: string }>;
    assert.deepEqual(orgs.map((o) => o.org_id), [other.orgId], 'joined nothing');
    await page.context().close();
    await adminPage.context().close();
  });

  test('My account: a password change ends the other sessions and the old password is refused; "Sign out everywhere else"', async () => {
    const user = { email: tenant.member.email, password: tenant.member.password };
    const elsewhere = await login(client, user.email, user.password);
    const page = await signedIn(user);
    await page.getByTestId('account-link').click();
    await page.getByRole('heading', { name: 'My account' }).waitFor();

    // Typed twice differently: refused in the page, nothing sent.
    const form = page.getByRole('form', { name: 'Change your password' });
    await form.getByLabel('Current password').fill(user.password);
    await form.getByLabel(/^New password \(/).fill('member-new-password-1');
    await form.getByLabel('New password again').fill('member-new-password-2');
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByRole('alert').getByText(/differ/).waitFor();
    expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/projects`, { token: elsewhere.token }), 200, 'nothing changed yet');

    await form.getByLabel('New password again').fill('member-new-password-1');
    await form.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('status').getByText(/Password changed/).waitFor();
    for (const label of ['Current password', /^New password \(/, 'New password again']) {
      assert.equal(await form.getByLabel(label).inputValue(), '', 'the password fields are cleared');
    }
    expectError(await client.post('/v1/auth/login', { body: { email: user.email, password: user.password } }), 401, 'UNAUTHENTICATED');
    expectStatus(await client.post('/v1/auth/login', { body: { email: user.email, password: 'member-new-password-1' } }), 200, 'the new password signs in');
    expectError(await client.get(`/v1/management/orgs/${tenant.orgId}/projects`, { token: elsewhere.token }), 401, 'UNAUTHENTICATED');

    // The login just made is another session: listed, then ended with "Sign out everywhere else".
    const later = await login(client, user.email, 'member-new-password-1');
    await page.reload();
    await page.getByRole('heading', { name: 'My account' }).waitFor();
    // This tab's session, the API login above and `later`.
    await page.getByTestId('session-row').nth(2).waitFor();
    assert.equal(await page.getByTestId('session-row').count(), 3);
    await page.getByRole('row').filter({ hasText: 'This session' }).waitFor();
    await page.getByRole('button', { name: 'Sign out everywhere else' }).click();
    await page.getByRole('status').getByText('Signed out 2 other sessions.').waitFor();
    expectError(await client.get(`/v1/management/orgs/${tenant.orgId}/projects`, { token: later.token }), 401, 'UNAUTHENTICATED');
    await page.getByText('This is your only session.').waitFor();
    assert.equal(await page.getByTestId('session-row').count(), 1);
    await page.context().close();
    // Later tests of other files do not use this tenant; keep the seeded password for readers anyway.
    tenant.member.password = 'member-new-password-1';
  });
});
