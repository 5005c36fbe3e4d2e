import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { SwitchyardClient, silentLogger } from '@switchyard/sdk';
import { buildConsole } from '../../../scripts/build-console.ts';
import type { FirstRunResult } from '../src/first-run.ts';
import { artifactPath, chromiumExecutable, expectTexts, launchChromium, signInToConsole } from './support/browser.ts';
import { startFirstRunServer, type FirstRunServer } from './support/first-run-server.ts';
import { api, expectStatus, login, type ApiClient } from './support/rest-client.ts';

// The first run (docs/first-run.md) in a real Chromium: the printed login, straight into a
// project with two environments and a key, whose getting-started checklist ticks when an SDK
// started with the printed key first evaluates; the new-project form; the system administrator's
// org pages; forms that take or show secrets forget them after success.
// topologies: single
// (The console only calls the REST API, which every other suite runs against a gateway too; the
// first run is the services process's bootstrap, the same code in both topologies.)

const chromiumCheck = chromiumExecutable();

describe('first run in the console', { skip: chromiumCheck.reason ?? false }, () => {
  let fr: FirstRunServer;
  let client: ApiClient;
  let browser: Browser;
  let created: Extract<FirstRunResult, { kind: 'created' }>;

  before(async () => {
    await buildConsole();
    fr = await startFirstRunServer();
    client = api(fr.base);
    created = fr.firstRun as typeof created;
    assert.equal(created.kind, 'created');
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await fr?.stop();
  });

  const signedIn = (email: string, password: string): Promise<Page> => signInToConsole(browser, fr.base, { email, password }, { waitForPages: false });

  const environmentOptions = (page: Page) => page.getByLabel('Environment', { exact: true }).locator('option');

  test('the printed admin@localhost password signs straight into Default: My project, its two environments and the key', async () => {
    const password = readFileSync(created.admin.passwordFile, 'utf8').trim();
    assert.equal(password, created.admin.password);
    const page = await signedIn('admin@localhost', password);
    // No org to create, no sign-out: the first page is the development environment's flags.
    await page.getByRole('heading', { name: 'Flags in development' }).waitFor();
    assert.equal(await page.getByLabel('Organisation').locator('option:checked').innerText(), 'Default');
    await expectTexts(environmentOptions(page), ['My project / development', 'My project / production']);

    await page.getByRole('link', { name: 'Projects' }).click();
    const card = page.locator('article.card', { has: page.getByRole('heading', { name: 'My project' }) });
    // Each environment's link (its item also holds its protection switches).
    await expectTexts(card.getByRole('listitem').getByRole('link'), ['development', 'production']);

    await page.goto(`${fr.base}/#/env/${created.environments[0]!.id}/sdk-keys`);
    await page.getByRole('heading', { name: 'SDK keys of development' }).waitFor();
    // The key the first run printed, listed by its prefix.
    const keys = expectStatus(await client.get(`/v1/management/environments/${created.environments[0]!.id}/sdk-keys`, { token: (await login(client, 'admin@localhost', password)).token }), 200);
    assert.equal(keys.length, 1);
    assert.ok(created.sdkKey.rawKey.startsWith(keys[0].key_prefix));
    await page.getByTestId(`sdk-key-${keys[0].key_prefix}`).waitFor();
    await page.screenshot({ path: artifactPath('first-run-keys.png'), fullPage: true });
    await page.goto(`${fr.base}/#/env/${created.environments[1]!.id}/sdk-keys`);
    await page.getByRole('heading', { name: 'SDK keys of production' }).waitFor();
    await page.getByText('Loading SDK keys…').waitFor({ state: 'hidden' });
    assert.equal(await page.getByRole('table', { name: 'SDK keys' }).locator('tbody tr').count(), 0, 'the first run makes a key for development only');
    await page.context().close();
  });

  test('the getting-started checklist of development ticks when an SDK started with the printed key first evaluates', async () => {
    const page = await signedIn('admin@localhost', created.admin.password!);
    await page.getByRole('heading', { name: 'Flags in development' }).waitFor();
    const checklist = page.getByRole('region', { name: 'Getting started' });
    await checklist.waitFor();
    const step = (title: RegExp) => checklist.getByRole('listitem').filter({ hasText: title }).first();
    // The first run made the key: that step is done; nothing has evaluated yet.
    assert.equal(await step(/Create an SDK key/).getAttribute('data-done'), 'true');
    assert.equal(await step(/Waiting for your first evaluation/).getAttribute('data-done'), 'false');
    assert.equal(await checklist.getByTestId('environment-id').innerText(), created.environments[0]!.id);

    const sdk = new SwitchyardClient({
      sdkKey: readFileSync(created.sdkKey.file, 'utf8').trim(),
      environmentId: created.environments[0]!.id,
      baseUrl: fr.base,
      syncUrl: `127.0.0.1:${fr.server.syncGrpcPort}`,
      logger: silentLogger,
    });
    try {
      await sdk.waitForReady({ timeoutMs: 10_000 });
      assert.equal(sdk.variation('no-such-flag', { key: 'user-1' }, 'fallback'), 'fallback');
      await checklist.getByText('First evaluation received').waitFor({ timeout: 20_000 });
    } finally {
      await sdk.close();
    }
    await page.context().close();
  });

  test('a key shown once is not carried to another environment\'s page, and "Done" takes it off the page', async () => {
    const page = await signedIn('admin@localhost', created.admin.password!);
    await page.getByRole('heading', { name: 'Flags in development' }).waitFor();
    await page.goto(`${fr.base}/#/env/${created.environments[1]!.id}/sdk-keys`);
    await page.getByRole('button', { name: 'Create a server key' }).click();
    const shown = await page.getByTestId('new-sdk-key').innerText();
    assert.match(shown, /^sdk_/);
    // The environment switcher keeps the page: development's keys, without production's new key.
    await page.getByLabel('Environment', { exact: true }).selectOption({ label: 'My project / development' });
    await page.getByRole('heading', { name: 'SDK keys of development' }).waitFor();
    await page.getByText('Loading SDK keys…').waitFor({ state: 'hidden' });
    await page.getByRole('table', { name: 'SDK keys' }).locator('tbody tr').first().waitFor();
    assert.equal(await page.getByTestId('new-sdk-key').count(), 0);
    assert.equal(await page.getByText(shown).count(), 0);

    await page.getByRole('button', { name: 'Create a server key' }).click();
    const second = await page.getByTestId('new-sdk-key').innerText();
    await page.getByRole('button', { name: 'Done, hide it' }).click();
    assert.equal(await page.getByText(second).count(), 0);
    await page.context().close();
  });

  test('the new-project form creates development and production with the project', async () => {
    const page = await signedIn('admin@localhost', created.admin.password!);
    await page.getByRole('heading', { name: 'Flags in development' }).waitFor();
    await page.getByRole('link', { name: 'Projects' }).click();
    await page.getByLabel('Project name').fill('Shop');
    assert.equal(await page.getByLabel('Environment 1').inputValue(), 'development');
    assert.equal(await page.getByLabel('Environment 2').inputValue(), 'production');
    await page.getByLabel('Environment 2').fill('live');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('heading', { name: 'Flags in development' }).waitFor();
    await page.waitForURL(/#\/env\/[^/]+\/flags$/);
    const envId = /#\/env\/([^/]+)\//.exec(page.url())![1]!;
    assert.notEqual(envId, created.environments[0]!.id, 'the new project\'s development, not My project\'s');
    const token = (await login(client, 'admin@localhost', created.admin.password!)).token;
    const projects = expectStatus(await client.get(`/v1/management/orgs/${created.org.id}/projects`, { token }), 200) as Array<{ project_id: string; project_name: string }>;
    const shop = projects.find((project) => project.project_name === 'Shop')!;
    const environments = expectStatus(await client.get(`/v1/management/projects/${shop.project_id}/environments`, { token }), 200) as Array<{ environment_id: string; environment_name: string }>;
    assert.deepEqual(environments.map((environment) => environment.environment_name), ['development', 'live']);
    assert.equal(environments[0]!.environment_id, envId);
    // Back on the form, the names are the defaults again and the project name is empty.
    await page.getByRole('link', { name: 'Projects' }).click();
    assert.equal(await page.getByLabel('Project name').inputValue(), '');
    assert.equal(await page.getByLabel('Environment 2').inputValue(), 'production');
    await page.context().close();
  });

  test('system@localhost lists organisations as links; an org\'s page gives its sign-in link and adds an administrator; password fields are emptied', async () => {
    const page = await signedIn('system@localhost', readFileSync(created.systemAdmin.passwordFile, 'utf8').trim());
    await page.getByRole('heading', { name: 'Administration' }).waitFor();
    const orgs = page.getByRole('navigation', { name: 'Organisations' });
    await expectTexts(orgs.getByRole('link'), ['Default', 'system'], { sorted: true });
    await orgs.getByRole('link', { name: 'Default' }).click();
    const panel = page.getByRole('region', { name: 'Default' });
    await panel.waitFor();
    assert.match(page.url(), new RegExp(`#/orgs/${created.org.id}$`));
    await panel.getByRole('link', { name: new RegExp(`#/sign-in/${created.org.id}$`) }).waitFor();

    const form = page.getByRole('form', { name: 'New administrator of Default' });
    await form.getByLabel("Administrator's email").fill('second-admin@example.com');
    await form.getByLabel("Administrator's password").fill('second-admin-password');
    await form.getByRole('button', { name: 'Add administrator' }).click();
    await panel.getByText('second-admin@example.com is an administrator of Default.').waitFor();
    assert.equal(await form.getByLabel("Administrator's password").inputValue(), '');
    assert.equal(await form.getByLabel("Administrator's email").inputValue(), '');
    // The new administrator signs in to Default.
    const second = expectStatus(await client.post('/v1/auth/login', { body: { email: 'second-admin@example.com', password: 'second-admin-password' } }), 200);
    assert.equal(second.org_id, created.org.id);

    const newOrg = page.getByRole('form', { name: 'New organisation' });
    await newOrg.getByLabel('Organisation name').fill('Acme');
    await newOrg.getByLabel("Administrator's email").fill('acme-admin@example.com');
    await newOrg.getByLabel("Administrator's password").fill('acme-admin-password');
    await newOrg.getByRole('button', { name: 'Create organisation' }).click();
    await page.getByText('Created Acme with acme-admin@example.com as its administrator.').waitFor();
    for (const field of ['Organisation name', "Administrator's email", "Administrator's password"]) assert.equal(await newOrg.getByLabel(field).inputValue(), '', field);
    await orgs.getByRole('link', { name: 'Acme' }).waitFor();
    await page.screenshot({ path: artifactPath('first-run-admin.png'), fullPage: true });
    await page.context().close();
  });
});
