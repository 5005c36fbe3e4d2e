import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { SwitchyardClient, silentLogger } from '@switchyard/sdk';
import { buildConsole } from '../../../scripts/build-console.ts';
import { artifactPath, chromiumExecutable, launchChromium, signInToConsole } from './support/browser.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// The getting-started checklist (docs/console.md "Getting started checklist", issue 33) in a real
// Chromium: an empty environment's flag list shows it; a flag made in the form and a key made in
// the checklist tick it; the snippets carry that key, the environment id and this server's REST and
// sync addresses; a real SDK (packages/sdk) run with the key from the page ticks "first evaluation".
// topologies: single
// (The console only calls the REST API; sdk-key-last-use.test.ts checks in both topologies that an
// evaluation or a sync stream through a gateway marks the key, which is all the checklist reads.)

const chromiumCheck = chromiumExecutable();

describe('console: getting-started checklist in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;

  before(async () => {
    await buildConsole();
    ts = await startTestServer();
    client = api(ts.base);
    const root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'getting-started');
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  const signedIn = (hash: string): Promise<Page> => signInToConsole(browser, ts.base, tenant.admin, { hash });

  const step = (page: Page, title: RegExp) => page.getByRole('region', { name: 'Getting started' }).getByRole('listitem').filter({ hasText: title }).first();
  const isDone = async (page: Page, title: RegExp) => (await step(page, title).getAttribute('data-done')) === 'true';

  test('flag, key, snippet with this environment filled in, then a real SDK ticks the first evaluation; afterwards the list has no checklist', async () => {
    const page = await signedIn(`#/env/${tenant.environmentId}/flags`);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ts.base });
    const checklist = page.getByRole('region', { name: 'Getting started' });
    await checklist.waitFor();
    // The environment id, shown and copyable.
    assert.equal(await checklist.getByTestId('environment-id').innerText(), tenant.environmentId);
    await checklist.getByRole('button', { name: 'Copy environment id' }).click();
    await checklist.getByText('Copied.').first().waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), tenant.environmentId);
    // An environment with a key (seedTenant made one) and no flag: the flag step is to do, the key step done.
    assert.equal(await isDone(page, /^. ?Create a flag/), false);
    assert.equal(await isDone(page, /Create an SDK key/), true);
    assert.equal(await isDone(page, /Waiting for your first evaluation/), false);

    // 1. A flag from the list's own form; back on the list, its step is ticked (polled).
    const form = page.getByRole('form', { name: 'New flag' });
    await form.getByLabel('Key').fill('welcome-banner');
    await form.getByRole('button', { name: 'Create flag' }).click();
    await page.waitForURL(/\/flags\/welcome-banner$/);
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
    await page.locator('li[data-done="true"]', { hasText: 'Create a flag' }).waitFor();

    // 2. A server key made in the checklist: shown once, and filled into the snippets.
    await checklist.getByRole('button', { name: 'Create a server key' }).click();
    const rawKey = await checklist.getByTestId('checklist-sdk-key').innerText();
    assert.match(rawKey, /^sdk_[A-Za-z0-9_-]{43}$/);
    const syncAddress = `127.0.0.1:${ts.server.syncGrpcPort}`;
    assert.equal(await checklist.getByTestId('rest-base').innerText(), ts.base, 'no PUBLIC_URL: the page\'s origin');
    assert.equal(await checklist.getByTestId('sync-address').innerText(), syncAddress);
    const node = await checklist.getByTestId('snippet').innerText();
    for (const line of [`sdkKey: '${rawKey}',`, `environmentId: '${tenant.environmentId}',`, `baseUrl: '${ts.base}',`, `syncUrl: '${syncAddress}',`, `client.variation('welcome-banner',`]) {
      assert.ok(node.includes(line), `the Node snippet has ${line}:\n${node}`);
    }
    await checklist.getByRole('button', { name: 'OFREP with curl' }).click();
    assert.equal(
      await checklist.getByTestId('snippet').innerText(),
      `curl -s -X POST '${ts.base}/ofrep/v1/evaluate/flags/welcome-banner' \\\n  -H 'Authorization: Bearer ${rawKey}' \\\n  -H 'Content-Type: application/json' \\\n  -d '{"context":{"targetingKey":"user-1"}}'`,
    );
    await checklist.getByRole('button', { name: 'Browser (@switchyard/web)' }).click();
    const browserSnippet = await checklist.getByTestId('snippet').innerText();
    assert.ok(browserSnippet.includes(`clientKey: 'YOUR_CLIENT_KEY',`) && browserSnippet.includes(`environmentId: '${tenant.environmentId}',`), browserSnippet);
    await checklist.getByRole('button', { name: 'Copy snippet' }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), browserSnippet);
    await page.screenshot({ path: artifactPath('getting-started-waiting.png'), fullPage: true });
    // On a phone-sized screen the snippet scrolls in its box; the page does not scroll sideways.
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `the page scrolls sideways by ${overflow}px`);
    await page.screenshot({ path: artifactPath('getting-started-narrow.png'), fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    assert.equal(await checklist.getByTestId('first-evaluation').innerText(), 'Run the snippet: this ticks when a key of this environment opens a sync stream or evaluates.');

    // 3. The Node SDK of this repository, with what the page showed: its sync stream and evaluation tick the last step.
    const sdk = new SwitchyardClient({ sdkKey: rawKey, environmentId: tenant.environmentId, baseUrl: ts.base, syncUrl: syncAddress, logger: silentLogger });
    try {
      await sdk.waitForReady({ timeoutMs: 10_000 });
      // Off, with no rules: the flag serves its off variant (false) — the value is the SDK's, the tick the server's.
      assert.equal(sdk.variation('welcome-banner', { key: 'user-1' }, true), false);
      await checklist.getByText('First evaluation received').waitFor({ timeout: 20_000 });
      assert.equal(await checklist.getByTestId('first-evaluation').innerText(), 'Your app is talking to Switchyard. You are set up.');
      assert.equal(await isDone(page, /First evaluation received/), true);
      await page.screenshot({ path: artifactPath('getting-started-done.png'), fullPage: true });
    } finally {
      await sdk.close();
    }
    const keys = expectStatus(await client.get(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token }), 200) as Array<{ key_prefix: string; last_used_at_ms: number | null }>;
    assert.notEqual(keys.find((key) => rawKey.startsWith(key.key_prefix))?.last_used_at_ms ?? null, null, 'the key the page made is the one marked');

    // A flag and a used key: the list opens without the checklist.
    await page.reload();
    await page.getByRole('table').first().waitFor();
    await page.getByText('welcome-banner').first().waitFor();
    assert.equal(await page.getByRole('region', { name: 'Getting started' }).count(), 0);

    // The SDK keys page: the environment id, and each key's last use (the page's key used, the seeded one never).
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/sdk-keys`);
    assert.equal(await page.getByTestId('sdk-keys-environment-id').innerText(), tenant.environmentId);
    const table = page.getByRole('table', { name: 'SDK keys' });
    const rowOf = (prefix: string) => table.getByTestId(`sdk-key-${prefix}`);
    const used = keys.find((key) => rawKey.startsWith(key.key_prefix))!;
    const seeded = keys.find((key) => tenant.rawKey.startsWith(key.key_prefix))!;
    await rowOf(used.key_prefix).waitFor();
    const usedCells = await rowOf(used.key_prefix).getByRole('cell').allInnerTexts();
    assert.notEqual(usedCells[4], 'never', `the used key has a last use: ${usedCells.join(' | ')}`);
    assert.match(usedCells[4] ?? '', /\d/);
    assert.equal((await rowOf(seeded.key_prefix).getByRole('cell').allInnerTexts())[4], 'never');
    await page.context().close();
  });
});
