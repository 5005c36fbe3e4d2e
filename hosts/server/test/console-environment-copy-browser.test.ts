import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { artifactPath, chromiumExecutable, launchChromium, signInToConsole } from './support/browser.ts';
import { createFlag, envFlags, patch } from './support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// The console's compare and copy page (docs/console.md "Compare and copy environments") in a real
// Chromium against the real server: the differences shown, the confirmation listing the changes
// and warning about a rollout, the critical target's own dialog, and what the API then holds.
// topologies: single
// (The page only calls the REST API, which rest-environment-copy.test.ts runs against a gateway too.)

const chromiumCheck = chromiumExecutable();

describe('compare and copy in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;
  let staging: string;

  before(async () => {
    await buildConsole();
    ts = await startTestServer();
    client = api(ts.base);
    const root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'copypage');
    staging = expectStatus(await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name: 'staging' } }), 201).environment_id;
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  test('a flag differing in staging is listed, reviewed, confirmed for the critical production and copied', async () => {
    const rules = [
      {
        id: 'half',
        conditions: [],
        allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] },
      },
    ];
    await createFlag(client, tenant.admin.token, staging, {
      flag: { key: 'new-checkout', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules },
      enabled: true,
    });
    expectStatus(await patch(client, `/v1/management/environments/${tenant.environmentId}`, { token: tenant.admin.token, body: { critical: true } }), 200, 'critical');

    const page = await signInToConsole(browser, ts.base, tenant.admin, { hash: `#/env/${tenant.environmentId}/compare/${staging}` });
    await page.getByRole('heading', { name: 'Compare production with staging' }).waitFor();
    const row = page.getByTestId('difference-new-checkout');
    await row.waitFor();
    // By hand: production never wrote the flag (off; its default rule serves "on", the first
    // variant that is not the off variant); staging has it on with one rollout rule.
    const rowText = await row.innerText();
    assert.match(rowText, /On\/off: off → on/);
    assert.match(rowText, /Rules: 1 rule → 1 rule \(1 rollout\)/);
    assert.match(rowText, /never changed in production/);
    // The rules in both, line by line: staging's rollout bucket is a new line.
    await row.getByText('Rules in production (before) and staging (after)').click();
    assert.match(await row.getByLabel('After').innerText(), /\+ .*"weight_milli": 500/);

    await row.getByRole('checkbox', { name: 'Copy new-checkout' }).check();
    await page.getByRole('button', { name: 'Review the copy into production' }).click();
    const review = page.getByRole('dialog', { name: /Copy 1 flag from staging into production/ });
    await review.waitFor();
    const changes = await review.getByTestId('copy-changes').innerText();
    assert.match(changes, /On\/off: off → on/);
    assert.match(changes, /Rules: 1 rule → 1 rule \(1 rollout\)/);
    await review.getByRole('note').getByText(/picks other users in production/).waitFor();
    await page.screenshot({ path: artifactPath('environment-copy-review.png'), fullPage: true });

    let sent: Record<string, string> | undefined;
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith(`/v1/environments/${tenant.environmentId}/copy`)) sent = request.headers();
    });
    await review.getByRole('button', { name: 'Copy into production' }).click();
    const protectedDialog = page.getByRole('dialog', { name: /critical environment/ });
    await protectedDialog.waitFor();
    await protectedDialog.getByLabel('Type production to confirm').fill('production');
    await protectedDialog.getByRole('button', { name: 'Make the change' }).click();
    await page.getByRole('status').getByText('Copied 1 flag from staging into production.').waitFor();
    assert.equal(sent?.['x-confirm-environment'], tenant.environmentId);

    const copied: Json = expectStatus(await client.get(`${envFlags(tenant.environmentId)}/new-checkout`, { token: tenant.admin.token }), 200);
    assert.equal(copied.enabled, true);
    assert.deepEqual(copied.rules, rules);
    await page.getByText(/No flag differs between production and staging/).waitFor();
    // The flag's history in production names the copy's source.
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags/new-checkout/history`);
    await page.getByText('Copied from staging').first().waitFor();
    await page.context().close();
  });
});
