import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { chromiumExecutable, launchChromium, signInToConsole } from './support/browser.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// The console's Flags as code page (docs/console.md "Flags as code"): a preview of exactly what a
// document changes before anything is written, the import, refusals shown with their reasons, and
// the download of the project's document, in a real Chromium against the real server.
// topologies: single
// (The console only calls the REST API, which rest-flags-as-code runs against a gateway too.)

const chromiumCheck = chromiumExecutable();

const document = {
  format: 'switchyard.flags/v1',
  flags: [{ key: 'from-the-console', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] }],
  environments: { production: { flags: { 'from-the-console': { enabled: true, off_variant_key: 'off', rules: [{ id: 'all', conditions: [], variant_key: 'on' }] } } } },
};

describe('flags as code in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;

  before(async () => {
    await buildConsole();
    ts = await startTestServer();
    client = api(ts.base);
    tenant = await seedTenant(client, (await loginAdmin(client)).token, 'console-fac');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  test('preview, then apply: nothing is written before the person applies what the preview showed', async () => {
    const page = await signInToConsole(browser, ts.base, tenant.admin);
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
    await page.getByRole('link', { name: 'Import and export' }).click();
    await page.getByRole('heading', { name: 'Flags as code' }).waitFor();
    await page.getByLabel('Document', { exact: true }).fill(JSON.stringify(document));
    await page.getByRole('button', { name: 'Preview changes' }).click();
    await page.getByText('Create flag from-the-console').waitFor();
    await page.getByText(/^Change flag configuration production \/ from-the-console: .*enabled/).waitFor();
    assert.equal((expectStatus(await client.get(`/v1/projects/${tenant.projectId}/flags`, { token: tenant.admin.token }), 200) as Json[]).length, 0, 'the preview wrote nothing');

    await page.getByRole('button', { name: 'Apply these 2 changes' }).click();
    await page.getByRole('heading', { name: 'Imported' }).waitFor();
    const flag = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/from-the-console`, { token: tenant.admin.token }), 200);
    assert.equal(flag.enabled, true);

    // The same document again: nothing differs, and there is nothing to apply.
    await page.getByRole('button', { name: 'Preview changes' }).click();
    await page.getByText('The document and the project do not differ.').waitFor();
    assert.equal(await page.getByRole('button', { name: /^Apply/ }).count(), 0);
    await page.context().close();
  });

  test('a refused change is shown with its reason and nothing can be applied; the download is the API export', async () => {
    const page = await signInToConsole(browser, ts.base, tenant.admin);
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags-as-code`);
    const broken = { format: 'switchyard.flags/v1', flags: [{ key: 'broken', value_type: 'int', variants: [{ key: 'x', value: 'not a number' }] }] };
    await page.getByLabel('Document', { exact: true }).fill(JSON.stringify(broken));
    await page.getByRole('button', { name: 'Preview changes' }).click();
    await page.getByText('1 change(s) would be refused').waitFor();
    await page.getByText(/^flag broken: /).waitFor();
    assert.equal(await page.getByRole('button', { name: /^Apply/ }).count(), 0);

    await page.getByLabel('Document', { exact: true }).fill('format: yaml');
    await page.getByRole('button', { name: 'Preview changes' }).click();
    await page.getByText(/YAML documents are imported with the switchyard command/).waitFor();

    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download JSON' }).click();
    const saved = JSON.parse(await readFile((await (await download).path())!, 'utf8'));
    assert.deepEqual(saved, expectStatus(await client.get(`/v1/projects/${tenant.projectId}/export?environment_ids=${tenant.environmentId}`, { token: tenant.admin.token }), 200));
    await page.context().close();
  });
});
