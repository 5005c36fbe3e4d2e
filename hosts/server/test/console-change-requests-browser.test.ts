import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { artifactPath, chromiumExecutable, launchChromium, signInToConsole } from './support/browser.ts';
import { createFlag, envFlags } from './support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, seedUser, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Change requests in the web console (docs/workflow.md "Change requests and approvals"): the approval policy switched on
// from the Projects page, "Request change" on the flag page of the gated environment, the request
// view with its diff, an approval by a second person, and the apply — in a real Chromium against
// the real server.
// topologies: single
// (The console only calls the REST API, which the REST suites run against a gateway too.)

const chromiumCheck = chromiumExecutable();

describe('change requests in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let reviewer: LoggedInUser;
  let browser: Browser;

  before(async () => {
    await buildConsole();
    ts = await startTestServer();
    client = api(ts.base);
    const root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'crpage');
    reviewer = await seedUser(client, root.token, tenant.orgId, 'org_member', 'crpage-reviewer');
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  test('policy on the Projects page; Request change on the flag page; the request is approved by another person and applied from its view', async () => {
    await createFlag(client, tenant.admin.token, tenant.environmentId, { flag: { key: 'checkout', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off' }, enabled: false });
    const page = await signInToConsole(browser, ts.base, tenant.admin);
    await page.goto(`${ts.base}/#/projects`);
    const requireSwitch = page.getByRole('switch', { name: /^Require approval: .* \/ production$/ });
    await requireSwitch.click();
    await page.getByText('production: changes need 1 approval.').waitFor();
    const policy = expectStatus(await client.get(`/v1/management/environments/${tenant.environmentId}/approval-policy`, { token: tenant.admin.token }), 200);
    assert.equal(policy.required, true);

    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags/checkout`);
    await page.getByRole('button', { name: 'Request change: turn on' }).click();
    await page.getByRole('heading', { name: 'Turn checkout on' }).waitFor();
    await page.getByTestId('change-request-status').getByText('Waiting for review · 0 of 1 approvals').waitFor();
    // The diff: the flag's state now (enabled false) and after (enabled true).
    const diff = page.getByTestId('change-checkout');
    await diff.getByLabel('Before').getByText('"enabled": false').waitFor();
    await diff.getByLabel('After').getByText('"enabled": true').waitFor();

    // The author cannot approve their own request; a second person does (through the API).
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText(/allow_self_approval/).waitFor();
    const id = page.url().split('/').pop()!;
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/change-requests/${id}/reviews`, { token: reviewer.token, body: { verdict: 'approve' } }), 200, 'approve');

    await page.reload();
    await page.getByTestId('change-request-status').getByText('Waiting for review · 1 of 1 approvals').waitFor();
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByText(`Applied; approved by ${reviewer.email}.`).waitFor();
    assert.equal(expectStatus(await client.get(`${envFlags(tenant.environmentId)}/checkout`, { token: tenant.admin.token }), 200).enabled, true);
    await page.screenshot({ path: artifactPath('change-request.png'), fullPage: true });

    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/change-requests`);
    await page.getByRole('link', { name: 'Turn checkout on' }).waitFor();
    await page.context().close();
  });

  test('"Apply at…" on an approved request: the time in local time and UTC, then the request shows when it is scheduled', async () => {
    const created = expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/change-requests`, {
        token: tenant.admin.token,
        body: { title: 'Turn checkout off at night', changes: [{ flag_key: 'checkout', operations: [{ op: 'set_enabled', enabled: false }] }], submit: true },
      }),
      201,
      'create request',
    );
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/change-requests/${created.id}/reviews`, { token: reviewer.token, body: { verdict: 'approve' } }), 200, 'approve');
    const page = await signInToConsole(browser, ts.base, tenant.admin);
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/change-requests/${created.id}`);
    await page.getByTestId('change-request-status').getByText('Waiting for review · 1 of 1 approvals').waitFor();
    await page.getByLabel('Apply at… (your local time)').fill('2030-06-01T09:30');
    // The browser reads the input as its local time; the form shows that instant in UTC beside it.
    const at = await page.evaluate(() => new Date('2030-06-01T09:30').getTime());
    const utc = `${new Date(at).toISOString().replace('T', ' ').slice(0, 16)} UTC`;
    await page.getByRole('form', { name: 'Apply at a time' }).getByText(utc).waitFor();
    await page.getByRole('button', { name: 'Schedule' }).click();
    await page.getByTestId('change-request-status').getByText(/^Scheduled/).waitFor();
    await page.getByTestId('change-request-scheduled').getByText(utc).waitFor();
    const stored = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/change-requests/${created.id}`, { token: tenant.admin.token }), 200);
    assert.deepEqual([stored.status, stored.execute_at_ms], ['scheduled', at]);
    // Scheduled: no review or apply buttons; cancel remains.
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);
    await page.getByRole('button', { name: 'Cancel request' }).click();
    await page.getByTestId('change-request-status').getByText(/^Cancelled/).waitFor();
    await page.context().close();
  });
});
