import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { artifactPath, chromiumExecutable, expectTexts, launchChromium, signInToConsole } from './support/browser.ts';
import { createFlag, envFlags, onOffFlag, patch } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Access pages of the console (docs/console.md "API tokens", "Member access", "Protected
// environments") in a real Chromium against the real server: a token created (shown once, with
// a curl line that works), listed and revoked; a member's role bindings edited and reset; a
// critical environment that asks for its name and a comment before a flag is turned on, and the
// history showing that comment. Each outcome is checked through the REST API.
// topologies: single
// (The console only calls the REST API; the REST suites of tokens, bindings and critical
// environments run those routes against a gateway too.)

const chromiumCheck = chromiumExecutable();

describe('access pages in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;

  before(async () => {
    await buildConsole();
    ts = await startTestServer();
    client = api(ts.base);
    const root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'access');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  const signedIn = (user: { email: string; password: string } = tenant.admin, hash?: string): Promise<Page> =>
    signInToConsole(browser, ts.base, user, { viewport: { width: 1280, height: 900 }, ...(hash ? { hash } : {}) });
  const tokensPath = () => `/v1/management/orgs/${tenant.orgId}/api-tokens`;

  test('an API token: created with a scope, shown once with a curl line that works, listed, revoked', async () => {
    const page = await signedIn();
    await page.getByRole('link', { name: 'API tokens', exact: true }).click();
    await page.getByRole('heading', { name: 'API tokens' }).waitFor();
    const form = page.getByRole('form', { name: 'New API token' });
    const name = `ci-${unique()}`;
    await form.getByLabel('Token name').fill(name);
    await form.getByLabel('Role').selectOption('editor');
    await form.getByLabel('Chosen environments').check();
    await form.getByLabel('access-project / production').check();
    const request = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(tokensPath()));
    await form.getByRole('button', { name: 'Create the token' }).click();
    assert.deepEqual((await request).postDataJSON(), { name, role: 'editor', scope: { environment_ids: [tenant.environmentId] }, expires_at_ms: null });

    const shown = await page.getByTestId('new-api-token').innerText();
    assert.match(shown, /^swy_[A-Za-z0-9_-]{43}$/, 'swy_ and 32 bytes in base64url');
    const curl = await page.getByTestId('api-token-curl').innerText();
    assert.equal(curl, `curl -H "Authorization: Bearer ${shown}" ${ts.base}/v1/environments/${tenant.environmentId}/flags`);
    await page.screenshot({ path: artifactPath('api-token-created.png'), fullPage: true });
    // The curl line's request works; the token does nothing outside its scope.
    expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags`, { token: shown }), 200, 'the curl line');
    expectError(await client.get(tokensPath(), { token: shown }), 403, 'PERMISSION_DENIED');

    // Listed: name, role, scope in words, creator, never used yet; the secret is not in the list.
    const row = page.getByTestId('api-token-row').filter({ hasText: name });
    await row.waitFor();
    const cells = await row.getByRole('cell').allInnerTexts();
    assert.equal(cells[1], 'editor');
    assert.equal(cells[2], 'environments access-project / production');
    assert.equal(cells[3], tenant.admin.email);
    assert.equal(cells[5], 'never', 'no expiry');
    assert.equal(cells[6], 'never', 'the list was read before the curl call');
    assert.ok(!cells[0]!.includes(shown), 'only the prefix is listed');
    // After the curl call, a reload lists its use (recorded in the background, at most once a minute).
    await expectLastUse(page, name);
    assert.equal(await page.getByTestId('new-api-token').count(), 0, 'a reload forgets the token shown once');

    // Revoked after a confirmation: listed no more, refused at once.
    await row.getByRole('button', { name: `Revoke ${name}` }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Yes, revoke it' }).click();
    await page.getByRole('status').getByText(`API token ${name} revoked.`).waitFor();
    await expectTexts(page.getByTestId('api-token-row').filter({ hasText: name }), []);
    expectError(await client.get(`/v1/environments/${tenant.environmentId}/flags`, { token: shown }), 401, 'UNAUTHENTICATED');
    const listed = expectStatus(await client.get(tokensPath(), { token: tenant.admin.token }), 200) as Array<{ name: string }>;
    assert.ok(!listed.some((t) => t.name === name));
    await page.context().close();
  });

  /** Reloads the tokens page until the row of `name` lists a last use (within 10 s). */
  async function expectLastUse(page: Page, name: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      await page.reload();
      const row = page.getByTestId('api-token-row').filter({ hasText: name });
      await row.waitFor();
      const lastUsed = (await row.getByRole('cell').allInnerTexts())[6];
      if (lastUsed !== 'never') return;
      assert.ok(Date.now() < deadline, 'the token\'s use was never listed');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }

  test('the API tokens link is for org admins only', async () => {
    const page = await signedIn(tenant.member);
    await page.getByRole('link', { name: 'Members', exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'API tokens', exact: true }).count(), 0);
    await page.context().close();
  });

  test("a member's access: rows saved with PUT, shown in words, reset to the org role", async () => {
    const page = await signedIn();
    await page.getByRole('link', { name: 'Members', exact: true }).click();
    const memberRow = page.getByRole('row').filter({ hasText: tenant.member.email });
    await memberRow.getByTestId('member-access').getByText('editor everywhere (default)').waitFor();
    assert.equal(await page.getByRole('row').filter({ hasText: tenant.admin.email }).getByTestId('member-access').innerText(), 'admin everywhere');
    await memberRow.getByRole('button', { name: `Access of ${tenant.member.email}` }).click();
    const editor = page.getByRole('region', { name: `Access of ${tenant.member.email}` });
    await editor.getByTestId('member-access-summary').getByText('Now: editor everywhere (default)').waitFor();

    // Viewer in the project, editor in its production environment.
    await editor.getByRole('button', { name: 'Add a row' }).click();
    await editor.getByLabel('Role of row 1').selectOption('viewer');
    await editor.getByLabel('Project of row 1').selectOption(tenant.projectId);
    await editor.getByRole('button', { name: 'Add a row' }).click();
    await editor.getByLabel('Role of row 2').selectOption('editor');
    await editor.getByLabel('Project of row 2').selectOption(tenant.projectId);
    await editor.getByLabel('Environment of row 2').selectOption(tenant.environmentId);
    const put = page.waitForRequest((r) => r.method() === 'PUT' && r.url().includes('/role-bindings'));
    await editor.getByRole('button', { name: 'Save access' }).click();
    assert.deepEqual((await put).postDataJSON(), {
      bindings: [
        { role: 'viewer', project_id: tenant.projectId },
        { role: 'editor', project_id: tenant.projectId, environment_id: tenant.environmentId },
      ],
    });
    await editor.getByRole('status').getByText(`Access of ${tenant.member.email} saved.`).waitFor();
    await editor.getByTestId('member-access-summary').getByText('Now: viewer in access-project; editor in access-project / production').waitFor();
    await memberRow.getByTestId('member-access').getByText('viewer in access-project; editor in access-project / production').waitFor();
    const bindingsPath = `/v1/management/orgs/${tenant.orgId}/members/${tenant.member.userId}/role-bindings`;
    const stored = expectStatus(await client.get(bindingsPath, { token: tenant.admin.token }), 200);
    assert.equal(stored.default, false);
    assert.deepEqual(stored.bindings, [
      { role: 'viewer', project_id: tenant.projectId },
      { role: 'editor', project_id: tenant.projectId, environment_id: tenant.environmentId },
    ]);
    await page.screenshot({ path: artifactPath('member-access.png'), fullPage: true });

    await editor.getByRole('button', { name: 'Reset to org role' }).click();
    await editor.getByTestId('member-access-summary').getByText('Now: editor everywhere (default)').waitFor();
    const reset = expectStatus(await client.get(bindingsPath, { token: tenant.admin.token }), 200);
    assert.equal(reset.default, true);
    await page.context().close();
  });

  test('a critical environment with required comments: turning a flag on asks for the name and a comment, and the history shows the comment', async () => {
    const key = `guarded-${unique()}`;
    await createFlag(client, tenant.admin.token, tenant.environmentId, { ...onOffFlag(key), enabled: false });
    const page = await signedIn();
    await page.getByRole('link', { name: 'Projects', exact: true }).click();
    const critical = page.getByRole('switch', { name: 'Critical: access-project / production' });
    assert.equal(await critical.isChecked(), false);
    await critical.click();
    await page.getByRole('status').getByText('production: changes ask to type its name.').waitFor();
    // Changing a critical environment's settings is a change in it: its name is asked for too.
    await page.getByRole('switch', { name: 'Require a comment: access-project / production' }).click();
    const settingDialog = page.getByRole('dialog', { name: /critical environment/ });
    await settingDialog.getByLabel('Type production to confirm').fill('production');
    assert.equal(await settingDialog.getByLabel(/^Comment/).count(), 0, 'no comment asked before comments are required');
    await settingDialog.getByRole('button', { name: 'Make the change' }).click();
    await page.getByRole('status').getByText('production: every change keeps a comment.').waitFor();
    const environment = expectStatus(await client.get(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token }), 200) as Array<{ environment_id: string; critical: boolean; require_comment: boolean }>;
    const production = environment.find((e) => e.environment_id === tenant.environmentId)!;
    assert.equal(production.critical, true);
    assert.equal(production.require_comment, true);

    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags/${key}`);
    const onOff = page.getByRole('switch', { name: /^(On|Off) in / });
    await onOff.waitFor();
    let sent: Record<string, string> | undefined;
    page.on('request', (r) => {
      if (r.method() === 'PUT' && r.url().endsWith(`${envFlags(tenant.environmentId)}/${key}`)) sent = r.headers();
    });

    // Cancelled: nothing sent, nothing changed.
    await onOff.click();
    const dialog = page.getByRole('dialog', { name: /critical environment/ });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('alert').getByText(/Nothing was changed/).waitFor();
    assert.equal(sent, undefined, 'no request');
    assert.equal(expectStatus(await client.get(`${envFlags(tenant.environmentId)}/${key}`, { token: tenant.admin.token }), 200).enabled, false);

    // The wrong name keeps the button disabled; the right name and a comment send the change.
    await onOff.click();
    await dialog.waitFor();
    await dialog.getByLabel('Type production to confirm').fill('producti');
    assert.equal(await dialog.getByRole('button', { name: 'Make the change' }).isDisabled(), true);
    await dialog.getByLabel('Type production to confirm').fill('production');
    await dialog.getByRole('button', { name: 'Make the change' }).click();
    await dialog.getByRole('alert').getByText(/Write a comment/).waitFor();
    await dialog.getByLabel(/^Comment/).fill('Launch for the “spring” sale');
    await page.screenshot({ path: artifactPath('critical-environment-confirm.png'), fullPage: true });
    await dialog.getByRole('button', { name: 'Make the change' }).click();
    await page.getByRole('status').getByText('Turned on.').waitFor();
    assert.equal(sent?.['x-confirm-environment'], tenant.environmentId);
    // Not ASCII: sent as RFC 8187's utf-8'' and percent-encoded UTF-8 (encoded by hand).
    assert.equal(sent?.['x-change-comment'], "utf-8''Launch%20for%20the%20%E2%80%9Cspring%E2%80%9D%20sale");
    assert.equal(expectStatus(await client.get(`${envFlags(tenant.environmentId)}/${key}`, { token: tenant.admin.token }), 200).enabled, true);

    // The same write without the console's confirmation is refused by the server.
    const flag = expectStatus(await client.get(`${envFlags(tenant.environmentId)}/${key}`, { token: tenant.admin.token }), 200);
    expectError(await client.request('PUT', `${envFlags(tenant.environmentId)}/${key}`, { token: tenant.admin.token, body: { enabled: false, version: flag.version } }), 409, 'FAILED_PRECONDITION');

    // The history names the change and its comment.
    await page.getByRole('link', { name: 'Change history', exact: true }).click();
    const entry = page.getByRole('listitem').filter({ hasText: 'Turned on' }).filter({ hasText: key });
    await entry.getByTestId('history-comment').getByText('Launch for the “spring” sale').waitFor();
    await page.screenshot({ path: artifactPath('history-comment.png'), fullPage: true });
    await page.context().close();
  });

  test('an environment protected after the console loaded it: the refusal asks for the confirmation and the write is sent again', async () => {
    const staging = expectStatus(await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name: 'staging' } }), 201);
    const key = `late-${unique()}`;
    await createFlag(client, tenant.admin.token, staging.environment_id, { ...onOffFlag(key), enabled: false });
    const page = await signedIn(tenant.admin, `#/env/${staging.environment_id}/flags/${key}`);
    const onOff = page.getByRole('switch', { name: /^(On|Off) in / });
    await onOff.waitFor();
    // Another admin makes staging critical now; this page still has it as unprotected.
    expectStatus(await patch(client, `/v1/management/environments/${staging.environment_id}`, { token: tenant.admin.token, body: { critical: true } }), 200);
    const puts: Array<Record<string, string>> = [];
    page.on('request', (r) => {
      if (r.method() === 'PUT' && r.url().endsWith(`${envFlags(staging.environment_id)}/${key}`)) puts.push(r.headers());
    });
    await onOff.click();
    const dialog = page.getByRole('dialog', { name: /critical environment/ });
    await dialog.getByLabel('Type staging to confirm').fill('staging');
    assert.equal(await dialog.getByLabel(/^Comment/).count(), 0, 'only the confirmation was asked for');
    await dialog.getByRole('button', { name: 'Make the change' }).click();
    await page.getByRole('status').getByText('Turned on.').waitFor();
    assert.equal(puts.length, 2, 'refused once, then sent again');
    assert.equal(puts[0]!['x-confirm-environment'], undefined);
    assert.equal(puts[1]!['x-confirm-environment'], staging.environment_id);
    assert.equal(expectStatus(await client.get(`${envFlags(staging.environment_id)}/${key}`, { token: tenant.admin.token }), 200).enabled, true);
    await page.context().close();
  });

  test('a CSV upload in chunks to a protected environment asks once for all its chunks', async () => {
    // production is critical and requires comments (the test above): a list segment there.
    const segments = `/v1/environments/${tenant.environmentId}/segments`;
    const intent = { 'x-confirm-environment': tenant.environmentId, 'x-change-comment': 'seed the testers' };
    expectStatus(await client.post(segments, { token: tenant.admin.token, headers: intent, body: { key: 'testers', kind: 'list', context_type: 'user' } }), 201);
    const page = await signedIn(tenant.admin, `#/env/${tenant.environmentId}/segments`);
    const card = page.getByRole('article').filter({ has: page.getByRole('heading', { name: 'testers', exact: true }) });
    const patches: Array<Record<string, string>> = [];
    page.on('request', (r) => {
      if (r.method() === 'PATCH' && r.url().endsWith(`${segments}/testers/members`)) patches.push(r.headers());
    });
    // 10,001 keys: two chunks of the console's 10,000.
    const keys = Array.from({ length: 10_001 }, (_, i) => `tester-${i}`);
    await card.getByLabel('CSV of keys for testers').setInputFiles({ name: 'testers.csv', mimeType: 'text/csv', buffer: Buffer.from(keys.join('\n')) });
    const dialog = page.getByRole('dialog', { name: /critical environment/ });
    await dialog.getByLabel('Type production to confirm').fill('production');
    await dialog.getByLabel(/^Comment/).fill('beta testers');
    await dialog.getByRole('button', { name: 'Make the change' }).click();
    await card.getByText(/10001 included/).waitFor();
    assert.equal(await dialog.count(), 0, 'asked once');
    assert.deepEqual(
      patches.map((headers) => [headers['x-confirm-environment'], headers['x-change-comment']]),
      [
        [tenant.environmentId, 'beta testers'],
        [tenant.environmentId, 'beta testers'],
      ],
    );
    await page.context().close();
  });

  test('the history names an API token actor and its comment', async () => {
    const key = `by-token-${unique()}`;
    const created = expectStatus(await client.post(tokensPath(), { token: tenant.admin.token, body: { name: 'deploy-bot', role: 'editor' } }), 201);
    // The environment requires a comment (previous test): the token sends one; it types no name (not a person).
    const withComment = (comment: string) => ({ token: created.token as string, headers: { 'x-change-comment': comment } });
    expectStatus(await client.post(envFlags(tenant.environmentId), { ...withComment('made by the bot'), body: { ...onOffFlag(key), enabled: false } }), 201);
    const flag = expectStatus(await client.get(`${envFlags(tenant.environmentId)}/${key}`, { token: created.token }), 200);
    expectStatus(await client.request('PUT', `${envFlags(tenant.environmentId)}/${key}`, { ...withComment('bot rollout'), body: { enabled: true, version: flag.version } }), 200);
    const page = await signedIn(tenant.admin, '#/history');
    const entry = page.getByRole('listitem').filter({ hasText: 'bot rollout' });
    await entry.getByText('API token deploy-bot', { exact: true }).waitFor();
    await page.context().close();
  });
});
