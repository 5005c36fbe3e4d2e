import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { buildConsole } from '../../../scripts/build-console.ts';
import { chromiumExecutable, launchChromium, signInToConsole } from './support/browser.ts';
import { api, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';
import { startReceiver, type TestReceiver } from './support/webhook-receiver.ts';

// The console's Webhooks page (docs/workflow.md "Webhooks") in a real Chromium against the real
// server and a real receiver: created with the secret shown once (it verifies what the receiver
// gets), a test send, the delivery log, disable and enable, rotation. Checked through the REST API.
// topologies: single
// (The console only calls the REST API; webhooks.test.ts runs those routes against a gateway too.)

const chromiumCheck = chromiumExecutable();

describe('the webhooks page in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;
  let receiver: TestReceiver;

  before(async () => {
    await buildConsole();
    receiver = await startReceiver();
    ts = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' });
    client = api(ts.base);
    const root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'hooks-ui');
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await ts?.stop();
    await receiver?.close();
  });

  const signedIn = (user: { email: string; password: string } = tenant.admin): Promise<Page> => signInToConsole(browser, ts.base, user, { viewport: { width: 1400, height: 1000 } });
  const hooks = async () => expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/webhooks`, { token: tenant.admin.token }), 200);

  test('create (secret shown once), send a test, read the delivery log, disable, enable, rotate', async () => {
    const page = await signedIn();
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
    const form = page.getByRole('form', { name: 'New webhook' });
    const name = `ops-${unique()}`;
    await form.getByLabel('Name').fill(name);
    await form.getByLabel('URL').fill(receiver.url('/ui'));
    await form.getByLabel('Events (patterns, comma-separated)').fill('flag.*, segment.*');
    await form.getByRole('button', { name: 'Create the webhook' }).click();
    const secret = await page.getByTestId('new-webhook-secret').innerText();
    assert.match(secret, /^whsec_/);
    const [stored] = await hooks();
    assert.deepEqual([stored.name, stored.url, stored.event_types, stored.secret], [name, receiver.url('/ui'), ['flag.*', 'segment.*'], undefined]);

    await page.getByRole('button', { name: `Send test to ${name}` }).click();
    await page.getByText(`Test message delivered to ${name} (204).`).waitFor();
    const sent = receiver.received.at(-1)!;
    const headers = { 'webhook-id': String(sent.headers['webhook-id']), 'webhook-timestamp': String(sent.headers['webhook-timestamp']), 'webhook-signature': String(sent.headers['webhook-signature']) };
    assert.equal((new Webhook(secret).verify(sent.body, headers) as { type: string }).type, 'webhook.test');

    await page.getByRole('button', { name: `Deliveries of ${name}` }).click();
    await page.getByTestId('webhook-delivery-row').first().waitFor();
    assert.match(await page.getByTestId('webhook-delivery-row').first().innerText(), /webhook\.test[\s\S]*delivered after 1 attempt/);

    await page.getByRole('button', { name: `Disable ${name}` }).click();
    await page.getByRole('button', { name: `Enable ${name}` }).waitFor();
    assert.equal((await hooks())[0].enabled, false);
    await page.getByRole('button', { name: `Enable ${name}` }).click();
    await page.getByRole('button', { name: `Disable ${name}` }).waitFor();
    assert.equal((await hooks())[0].enabled, true);

    await page.getByRole('button', { name: `Rotate secret of ${name}` }).click();
    await page.getByText('the previous one keeps signing for 24 hours').waitFor();
    const rotated = await page.getByTestId('new-webhook-secret').innerText();
    assert.match(rotated, /^whsec_/);
    assert.notEqual(rotated, secret);
    assert.ok((await hooks())[0].previous_secret_expires_at_ms > Date.now());
    await page.context().close();
  });

  test('the Webhooks link is for org admins only', async () => {
    const page = await signedIn(tenant.member);
    await page.getByRole('link', { name: 'Members', exact: true }).waitFor();
    assert.equal(await page.getByRole('link', { name: 'Webhooks', exact: true }).count(), 0);
    await page.context().close();
  });
});
