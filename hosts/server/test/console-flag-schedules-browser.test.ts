import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { chromiumExecutable, launchChromium, signInToConsole } from './support/browser.ts';
import { createFlag, envFlags, put } from './support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// The flag page's Schedule tab and the History tab's Revert (docs/workflow.md "Scheduled changes",
// "Revert") in a real Chromium against the real server.
// topologies: single
// (The console only calls the REST API, which the REST suites run against a gateway too.)

const chromiumCheck = chromiumExecutable();

describe('scheduled changes and revert in the console', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;

  before(async () => {
    await buildConsole();
    ts = await startTestServer();
    client = api(ts.base);
    const root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'schedpage');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  const signedIn = (): Promise<Page> => signInToConsole(browser, ts.base, tenant.admin);
  const flagUrl = (key: string, tab: string) => `${ts.base}/#/env/${tenant.environmentId}/flags/${key}/${tab}`;
  const newFlag = async () => {
    const key = `page-${unique()}`;
    await createFlag(client, tenant.admin.token, tenant.environmentId, { flag: { key, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] }, enabled: false });
    return key;
  };

  test('schedules "turn on" at a local time (shown with UTC beside it), then cancels it', async () => {
    const key = await newFlag();
    const page = await signedIn();
    await page.goto(flagUrl(key, 'schedule'));
    await page.getByRole('heading', { name: 'Scheduled changes' }).waitFor();
    const local = '2031-03-04T05:06';
    // The instant the browser reads that local time as (its own Date, not the console's code).
    const expectedMs = await page.evaluate((value) => new Date(value).getTime(), local);
    const utcText = new Date(expectedMs).toISOString().replace('T', ' ').slice(0, 16);
    await page.getByLabel('At (your local time)').fill(local);
    const request = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(`${envFlags(tenant.environmentId)}/${key}/scheduled-changes`));
    await page.getByRole('button', { name: 'Schedule', exact: true }).click();
    const body = (await request).postDataJSON();
    assert.equal(body.execute_at_ms, expectedMs);
    assert.deepEqual(body.operations, [{ op: 'set_enabled', enabled: true }]);
    const table = page.getByRole('table', { name: 'Scheduled changes' });
    await table.getByText(`(${utcText} UTC)`).waitFor();
    await table.getByText('turn on').waitFor();
    await table.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('button', { name: 'Cancel the change' }).click();
    await table.locator('tr[data-status="cancelled"]').waitFor();
    const [stored] = expectStatus(await client.get(`${envFlags(tenant.environmentId)}/${key}/scheduled-changes`, { token: tenant.admin.token }), 200) as Json[];
    assert.equal(stored!.status, 'cancelled');
    await page.context().close();
  });

  test("History's Revert puts the state from before an entry back, after a confirmation", async () => {
    const key = await newFlag();
    expectStatus(await put(client, `${envFlags(tenant.environmentId)}/${key}`, { token: tenant.admin.token, body: { enabled: true } }), 200, 'turn on');
    const page = await signedIn();
    await page.goto(flagUrl(key, 'history'));
    await page.getByRole('heading', { name: 'History' }).waitFor();
    // The newest entry is the turning on; the creation has no earlier state to go back to.
    const newest = page.locator('ol.history > li').first();
    await newest.getByRole('button', { name: 'Revert' }).click();
    await newest.getByRole('alertdialog').getByRole('button', { name: 'Revert' }).click();
    await page.locator('ol.history > li').first().getByText('flag.revert').waitFor();
    const flag = expectStatus(await client.get(`${envFlags(tenant.environmentId)}/${key}`, { token: tenant.admin.token }), 200);
    assert.equal(flag.enabled, false);
    assert.equal(flag.version, 3);
    await page.context().close();
  });

  test("in an environment that requires approval, History's Revert opens a change request and links to it", async () => {
    const environment = expectStatus(
      await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name: `gated-${unique()}` } }),
      201,
    ).environment_id;
    const key = `gated-${unique()}`;
    await createFlag(client, tenant.admin.token, environment, { flag: { key, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] }, enabled: false });
    expectStatus(await put(client, `${envFlags(environment)}/${key}`, { token: tenant.admin.token, body: { enabled: true } }), 200, 'turn on');
    expectStatus(await put(client, `/v1/management/environments/${environment}/approval-policy`, { token: tenant.admin.token, body: { required: true } }), 200, 'policy');
    const page = await signedIn();
    await page.goto(`${ts.base}/#/env/${environment}/flags/${key}/history`);
    await page.getByRole('heading', { name: 'History' }).waitFor();
    const newest = page.locator('ol.history > li').first();
    await newest.getByRole('button', { name: 'Revert' }).click();
    await newest.getByRole('alertdialog').getByRole('button', { name: 'Revert' }).click();
    await newest.getByRole('status').getByText('a change request was opened').waitFor();
    const [request] = expectStatus(await client.get(`/v1/environments/${environment}/change-requests`, { token: tenant.admin.token }), 200).change_requests as Json[];
    assert.equal(request!.status, 'open');
    const link = newest.getByRole('link', { name: `Revert ${key} to before` });
    assert.equal(await link.getAttribute('href'), `#/env/${environment}/change-requests/${request!.id}`);
    assert.equal(expectStatus(await client.get(`${envFlags(environment)}/${key}`, { token: tenant.admin.token }), 200).enabled, true, 'nothing written');
    await link.click();
    await page.getByRole('heading', { name: request!.title }).waitFor();
    await page.context().close();
  });
});

