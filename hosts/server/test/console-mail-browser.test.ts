import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { chromiumExecutable, launchChromium } from './support/browser.ts';
import { api, expectStatus, login, seedTenant, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startSsoTestServer } from './support/sso.ts';
import { TEST_ADMIN, type TestServer } from './support/test-server.ts';

// The console's side of mailed links (docs/console.md): "Forgot your password?" on the sign-in
// page, the local outbox on the system administrator's page (development without SMTP_URL), and
// the page a reset link lands on, in a real Chromium.
// topologies: single
// (The console only calls the REST API, which the password reset suites run against a gateway too.)

const chromiumCheck = chromiumExecutable();

describe('mailed links in the console', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer & { publicUrl: string };
  let client: ApiClient;
  let root: LoggedInUser;
  let tenant: Tenant;
  let browser: Browser;

  before(async () => {
    await buildConsole();
    ts = await startSsoTestServer({ APP_ENV: 'development' });
    client = api(ts.base);
    root = await login(client, TEST_ADMIN.email, TEST_ADMIN.password);
    tenant = await seedTenant(client, root.token, 'console-mail');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  test('forgot password → the mail in the local outbox → the link → a new password that signs in', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(ts.base + '/');
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByLabel('Email').fill(tenant.member.email);
    await page.getByRole('button', { name: 'Send me a link' }).click();
    await page.getByRole('status').filter({ hasText: 'a reset link was sent' }).waitFor();

    // The system administrator sees it in the local outbox.
    const admin = await (await browser.newContext()).newPage();
    await admin.goto(ts.base + '/');
    await admin.getByLabel('Email').fill(TEST_ADMIN.email);
    await admin.getByLabel('Password').fill(TEST_ADMIN.password);
    await admin.getByRole('button', { name: 'Sign in' }).click();
    const outbox = admin.getByRole('region', { name: 'Local outbox' });
    await outbox.getByText(`to ${tenant.member.email} · Reset your Switchyard password`).waitFor();

    const mails = expectStatus(await client.get('/v1/admin/mail-outbox', { token: root.token }), 200).mails;
    const link = /https?:\/\/\S+#\/reset-password\/\S+/.exec(mails.find((m: { to: string; kind: string }) => m.to === tenant.member.email && m.kind === 'password_reset').text)?.[0];
    assert.ok(link?.startsWith(`${ts.publicUrl}/#/reset-password/`), `the link is on PUBLIC_URL: ${link}`);

    await page.goto(link!);
    await page.getByLabel('New password').fill('chosen-in-the-browser-1');
    await page.getByLabel(/Organisations to stay in/).fill(tenant.orgId);
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('status').filter({ hasText: 'Sign in with your new password' }).waitFor();
    await page.getByRole('link', { name: 'Back to sign in' }).click();
    await page.getByLabel('Email').fill(tenant.member.email);
    await page.getByLabel('Password').fill('chosen-in-the-browser-1');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  });
});
