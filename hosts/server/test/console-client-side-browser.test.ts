import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page, Request } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { artifactPath, chromiumExecutable, launchChromium, signInToConsole } from './support/browser.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// The console's screens for browser and mobile apps (docs/console.md, docs/client-side.md): client
// keys with their settings, context signing secrets, per-flag visibility and the project's default,
// and client-allowed event definitions, driven in a real Chromium and checked through the REST API.
// Both topologies: the console calls only the REST API, and a gateway serves it as one process does.
//
// The screens for signing secrets, flag visibility, the project default and client-allowed events
// call routes and fields built beside this one (issue 32). Each of those tests first asks the
// server whether its route or field is there and is skipped, saying so, when it is not: once
// everything is merged, none of them may be skipped.

const chromiumCheck = chromiumExecutable();

/** The server answers with `field` in this record: the part of issue 32 that adds it is merged. */
const hasField = (record: unknown, field: string): boolean => typeof record === 'object' && record !== null && field in record;

describe('console: client keys, signing secrets, visibility and client events in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;
  /** Why the parallel parts' tests cannot run yet (undefined: they can). */
  const pending: Record<'secrets' | 'flagVisibility' | 'projectDefault' | 'eventClientAllowed', string | undefined> = {
    secrets: undefined,
    flagVisibility: undefined,
    projectDefault: undefined,
    eventClientAllowed: undefined,
  };

  const keysPath = () => `/v1/management/environments/${tenant.environmentId}/sdk-keys`;
  const secretsPath = () => `/v1/management/environments/${tenant.environmentId}/context-signing-secrets`;

  before(async () => {
    await buildConsole();
    ts = await startTestServer();
    client = api(ts.base);
    const root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'console-client');
    browser = await launchChromium();
    const token = tenant.admin.token;
    // What the parallel parts have added on this build.
    const secrets = await client.get(secretsPath(), { token });
    if (secrets.status !== 200) pending.secrets = `GET context-signing-secrets answers ${secrets.status} on this build`;
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token, body: { key: 'probe', enabled: false, flag: { value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } } }), 201);
    const probe = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/probe`, { token }), 200);
    if (!hasField(probe, 'client_visible')) pending.flagVisibility = 'flags carry no client_visible on this build';
    const projects = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/projects`, { token }), 200) as unknown[];
    const patched = await client.request('PATCH', `/v1/management/projects/${tenant.projectId}`, { token, body: { client_visible_default: false } });
    if (!hasField(projects[0], 'client_visible_default') || patched.status !== 200) pending.projectDefault = `projects carry no client_visible_default, or PATCH answers ${patched.status}, on this build`;
    const definition = await client.post(`/v1/environments/${tenant.environmentId}/event-definitions`, { token, body: { key: 'probe', value_type: 'bool' } });
    if (!hasField(definition.body, 'client_allowed')) pending.eventClientAllowed = 'event definitions carry no client_allowed on this build';
    for (const [part, reason] of Object.entries(pending)) if (reason) console.error(`# ${part}: not testable yet: ${reason}`);
  });

  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  /** A signed-in browser session in UTC (so a typed expiry has one meaning), on `hash`. */
  const signedIn = (hash: string, viewport = { width: 1280, height: 900 }): Promise<Page> => signInToConsole(browser, ts.base, tenant.admin, { hash, viewport, timezoneId: 'UTC' });

  const listedKeys = async () => expectStatus(await client.get(keysPath(), { token: tenant.admin.token }), 200) as Array<Record<string, unknown>>;

  test('a client key: created from the form with its settings, shown once, listed with its kind and settings, edited sending only what changed, revoked', async () => {
    const page = await signedIn(`#/env/${tenant.environmentId}/sdk-keys`);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ts.base });
    const form = page.getByRole('form', { name: 'New client key' });
    await form.getByLabel('Name').fill('Checkout web');
    // A repeated origin, spaces and a blank line: the key keeps each origin once.
    await form.getByLabel('Allowed origins, one per line').fill('https://shop.example.com\n\n  https://*.example.org \nhttps://shop.example.com');
    await form.getByLabel('Allow requests without an Origin (native apps)').check();
    await form.getByLabel('Context signing').selectOption('key');
    await form.getByLabel('Expires (optional, your local time)').fill('2030-01-02T03:04');
    const createRequest = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/sdk-keys'));
    await form.getByRole('button', { name: 'Create a client key' }).click();
    assert.deepEqual((await createRequest).postDataJSON(), {
      kind: 'client',
      name: 'Checkout web',
      allowed_origins: ['https://shop.example.com', 'https://*.example.org', 'https://shop.example.com'],
      allow_missing_origin: true,
      context_signing: 'key',
      include_disabled: false,
      // 2030-01-02 03:04 UTC: 60 years and 1 day of whole days from 1970 (15 leap days) plus 3 h 4 min.
      expires_at_ms: ((60 * 365 + 15 + 1) * 86_400 + 3 * 3600 + 4 * 60) * 1000,
    });
    const shown = await page.getByTestId('new-sdk-key').innerText();
    assert.match(shown, /^ck_[A-Za-z0-9_-]+$/);
    await page.getByText('New client key created. Copy it now').waitFor();
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), shown);

    const created = (await listedKeys()).find((key) => key.kind === 'client');
    assert.ok(created, 'the client key is listed');
    assert.ok(shown.startsWith(String(created.key_prefix)), `${shown} starts with its prefix ${String(created.key_prefix)}`);
    assert.equal(created.name, 'Checkout web');
    assert.deepEqual(created.allowed_origins, ['https://shop.example.com', 'https://*.example.org']);
    assert.equal(created.allow_missing_origin, true);
    assert.equal(created.context_signing, 'key');
    assert.equal(created.include_disabled, false);
    assert.equal(created.expires_at_ms, Date.UTC(2030, 0, 2, 3, 4));

    // The list shows both kinds, and the client key's settings.
    const row = page.getByTestId(`sdk-key-${String(created.key_prefix)}`);
    const rowText = await row.innerText();
    for (const expected of ['Checkout web', 'client', 'https://shop.example.com', 'https://*.example.org', 'allowed (native apps)', 'key (the targeting key is signed)', 'left out', '2030']) {
      assert.ok(rowText.includes(expected), `${JSON.stringify(expected)} in the row: ${rowText}`);
    }
    assert.match(await page.getByRole('table', { name: 'SDK keys' }).innerText(), /\bserver\b/);
    // The only server key cannot be revoked; a client key always can.
    const revokeServer = page.getByRole('button', { name: /^Revoke sdk_/ });
    assert.equal(await revokeServer.isDisabled(), true, 'the last server key cannot be revoked');
    assert.equal(await row.getByRole('button', { name: /^Revoke ck_/ }).isDisabled(), false);
    await page.screenshot({ path: artifactPath('client-keys.png'), fullPage: true });

    // Edit: a new name, signing off, no expiry. The PATCH carries those three fields and nothing else.
    const patches: Request[] = [];
    page.on('request', (r) => {
      if (r.method() === 'PATCH') patches.push(r);
    });
    await row.getByRole('button', { name: /^Edit ck_/ }).click();
    const edit = page.getByRole('form', { name: /^Settings of ck_/ });
    assert.equal(await edit.getByLabel('Allowed origins, one per line').inputValue(), 'https://shop.example.com\nhttps://*.example.org');
    assert.equal(await edit.getByLabel('Expires (optional, your local time)').inputValue(), '2030-01-02T03:04');
    // Saved untouched: nothing is sent.
    await edit.getByRole('button', { name: 'Save key settings' }).click();
    await edit.getByText('Nothing changed.').waitFor();
    assert.equal(patches.length, 0);
    await edit.getByLabel('Name').fill('Checkout web v2');
    await edit.getByLabel('Context signing').selectOption('off');
    await edit.getByRole('button', { name: 'Never expires' }).click();
    const patchRequest = page.waitForRequest((r) => r.method() === 'PATCH');
    await edit.getByRole('button', { name: 'Save key settings' }).click();
    assert.deepEqual((await patchRequest).postDataJSON(), { name: 'Checkout web v2', context_signing: 'off', expires_at_ms: null });
    await page.getByText(/^Settings of ck_.*saved\.$/).waitFor();
    assert.match(await row.innerText(), /Checkout web v2[\s\S]*never/);
    const edited = (await listedKeys()).find((key) => key.sdk_key_id === created.sdk_key_id)!;
    assert.equal(edited.name, 'Checkout web v2');
    assert.equal(edited.context_signing, 'off');
    assert.equal(edited.expires_at_ms, null);
    assert.deepEqual(edited.allowed_origins, ['https://shop.example.com', 'https://*.example.org'], 'fields not sent keep their values');
    assert.equal(edited.allow_missing_origin, true);

    // An origin with a path is refused by the API, in place; the key keeps its settings.
    await row.getByRole('button', { name: /^Edit ck_/ }).click();
    await edit.getByLabel('Allowed origins, one per line').fill('https://shop.example.com/checkout');
    await edit.getByRole('button', { name: 'Save key settings' }).click();
    const refusal = edit.getByRole('alert');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /allowed_origins/);
    assert.deepEqual((await listedKeys()).find((key) => key.sdk_key_id === created.sdk_key_id)!.allowed_origins, ['https://shop.example.com', 'https://*.example.org']);
    await edit.getByRole('button', { name: 'Cancel' }).click();

    // The key the page showed is a real client key: it authenticates, and the evaluate route,
    // which is for server keys only, refuses it as forbidden (an unknown key would be 401).
    const evaluate = () => client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: shown, body: { context_key: 'visitor-1', context_type: 'user' } });
    assert.equal((await evaluate()).status, 403);

    // Reopened, the page never shows the raw key again; revoked, the client key is gone.
    await page.reload();
    await page.getByRole('table', { name: 'SDK keys' }).waitFor();
    assert.equal(await page.getByText(shown).count(), 0);
    await page.getByRole('button', { name: /^Revoke ck_/ }).click();
    await page.getByRole('button', { name: 'Yes, revoke it' }).click();
    await page.getByRole('button', { name: /^Revoke ck_/ }).waitFor({ state: 'detached' });
    assert.equal((await listedKeys()).some((key) => key.sdk_key_id === created.sdk_key_id), false);
    assert.equal((await evaluate()).status, 401, 'revoked: no longer a key at all');
    await page.context().close();
  });

  test('a server key is still one press, and a client key for a native app needs no origin', async () => {
    const page = await signedIn(`#/env/${tenant.environmentId}/sdk-keys`);
    const serverRequest = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/sdk-keys'));
    await page.getByRole('button', { name: 'Create a server key' }).click();
    assert.equal((await serverRequest).postData(), null, 'a server key is created with no body, as before');
    assert.match(await page.getByTestId('new-sdk-key').innerText(), /^sdk_/);
    // Two server keys now: each may be revoked.
    await page.getByRole('button', { name: /^Revoke sdk_/ }).nth(1).waitFor();
    for (const button of await page.getByRole('button', { name: /^Revoke sdk_/ }).all()) assert.equal(await button.isDisabled(), false);

    const form = page.getByRole('form', { name: 'New client key' });
    await form.getByLabel('Name').fill('iOS app');
    // Both boxes ticked in one task, before the form re-renders: each change applies to the
    // current draft, so the second does not undo the first.
    assert.equal(await form.evaluate((element) => {
      const boxes = Array.from(element.querySelectorAll<HTMLInputElement>('input[type=checkbox]'));
      for (const box of boxes) box.click();
      return boxes.length;
    }), 2);
    await form.getByRole('button', { name: 'Create a client key' }).click();
    await page.getByText('New client key created.').waitFor();
    const app = (await listedKeys()).find((key) => key.name === 'iOS app')!;
    assert.deepEqual(
      { kind: app.kind, allowed_origins: app.allowed_origins, allow_missing_origin: app.allow_missing_origin, include_disabled: app.include_disabled, context_signing: app.context_signing, expires_at_ms: app.expires_at_ms },
      { kind: 'client', allowed_origins: [], allow_missing_origin: true, include_disabled: true, context_signing: 'off', expires_at_ms: null },
    );
    // Neither origins nor "without an Origin": the API's refusal is shown in the form.
    await form.getByLabel('Name').fill('nowhere');
    await form.getByRole('button', { name: 'Create a client key' }).click();
    const refusal = form.getByRole('alert');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /allowed_origins|allow_missing_origin/);
    assert.equal((await listedKeys()).some((key) => key.name === 'nowhere'), false);
    await page.context().close();

    // On a phone-sized screen the keys, with a client key's settings, fit without sideways scrolling.
    const narrow = await signedIn(`#/env/${tenant.environmentId}/sdk-keys`, { width: 390, height: 844 });
    await narrow.getByRole('button', { name: /^Edit ck_/ }).first().waitFor();
    await narrow.screenshot({ path: artifactPath('client-keys-narrow.png'), fullPage: true });
    assert.equal(await narrow.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0);
    await narrow.context().close();
  });

  test('context signing secrets: created and shown once with a copy button, listed by kid, deleted after a confirmation', async () => {
    assert.equal(pending.secrets, undefined, 'the server supports this part');
    const page = await signedIn(`#/env/${tenant.environmentId}/sdk-keys`);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ts.base });
    await page.getByText('No signing secret yet.').waitFor();
    await page.getByRole('button', { name: 'Create a signing secret' }).click();
    const secret = await page.getByTestId('new-signing-secret').innerText();
    const kid = await page.getByTestId('new-signing-secret-kid').innerText();
    assert.ok(secret.length >= 32, `a secret of at least 32 characters: ${secret.length}`);
    await page.getByRole('button', { name: 'Copy secret' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret);
    const listed = expectStatus(await client.get(secretsPath(), { token: tenant.admin.token }), 200) as Array<Record<string, unknown>>;
    assert.deepEqual(
      listed.map((s) => s.kid),
      [kid],
    );
    assert.equal(JSON.stringify(listed).includes(secret), false, 'the list never carries the secret');
    // A second one for rotation; reopened, the page lists both kids and shows no secret.
    await page.getByRole('button', { name: 'Create a signing secret' }).click();
    // The notice shows the new secret once its answer is in.
    await page.getByTestId('new-signing-secret-kid').filter({ hasNotText: kid }).waitFor();
    const second = await page.getByTestId('new-signing-secret-kid').innerText();
    assert.notEqual(second, kid);
    await page.reload();
    const table = page.getByRole('table', { name: 'Context signing secrets' });
    await table.getByText(second, { exact: true }).waitFor();
    assert.match(await table.innerText(), new RegExp(kid));
    assert.equal(await page.getByText(secret).count(), 0);
    await page.screenshot({ path: artifactPath('signing-secrets.png'), fullPage: true });
    await page.getByRole('button', { name: `Delete secret ${kid}` }).click();
    await page.getByRole('alertdialog').getByText(kid, { exact: true }).waitFor();
    await page.getByRole('button', { name: 'Yes, delete it' }).click();
    await page.getByRole('button', { name: `Delete secret ${kid}` }).waitFor({ state: 'detached' });
    assert.deepEqual(
      (expectStatus(await client.get(secretsPath(), { token: tenant.admin.token }), 200) as Array<Record<string, unknown>>).map((s) => s.kid),
      [second],
    );
    await page.context().close();
  });

  test("a flag's visibility to client keys: hidden when new, shown and toggled on the flag page", async () => {
    assert.equal(pending.flagVisibility, undefined, 'the server supports this part');
    const flagPath = `/v1/environments/${tenant.environmentId}/flags/web-banner`;
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { key: 'web-banner', enabled: false, flag: { value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } } }), 201);
    const page = await signedIn(`#/env/${tenant.environmentId}/flags/web-banner/settings`);
    const visible = page.getByRole('switch', { name: /Visible to client keys/ });
    await visible.waitFor();
    assert.equal(await visible.isChecked(), false, 'a new flag is hidden from client keys (the project default is off)');
    await visible.check();
    await page.getByText('Visible to client keys.', { exact: true }).waitFor();
    assert.equal(expectStatus(await client.get(flagPath, { token: tenant.admin.token }), 200).client_visible, true);
    // The page took the saved flag's version: the on/off switch right after is no conflict.
    await page.getByRole('switch', { name: /^(On|Off) in / }).check();
    await page.getByText('Turned on.').waitFor();
    assert.equal(await page.getByRole('alert').count(), 0);
    await visible.uncheck();
    await page.getByText('Hidden from client keys.').waitFor();
    const stored = expectStatus(await client.get(flagPath, { token: tenant.admin.token }), 200);
    assert.equal(stored.client_visible, false);
    assert.equal(stored.enabled, true);
    await page.context().close();
  });

  test("the project's default for new flags: shown and toggled on the projects page, and a flag created in the console follows it", async () => {
    assert.equal(pending.projectDefault, undefined, 'the server supports this part');
    const page = await signedIn('#/projects');
    const projectDefault = page.getByRole('switch', { name: /^New flags in .* start visible to client keys$/ });
    await projectDefault.waitFor();
    assert.equal(await projectDefault.isChecked(), false);
    const request = page.waitForRequest((r) => r.method() === 'PATCH');
    await projectDefault.check();
    assert.deepEqual((await request).postDataJSON(), { client_visible_default: true });
    await page.getByText('New flags will start visible to client keys.').waitFor();
    const projects = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/projects`, { token: tenant.admin.token }), 200) as Array<Record<string, unknown>>;
    assert.equal(projects.find((p) => p.project_id === tenant.projectId)!.client_visible_default, true);
    await page.reload();
    await projectDefault.waitFor();
    assert.equal(await projectDefault.isChecked(), true, 'read back from the server');

    {
      await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
      await page.getByLabel('Key', { exact: true }).fill('follows-default');
      await page.getByRole('button', { name: 'Create flag' }).click();
      await page.getByRole('heading', { name: 'follows-default' }).waitFor();
      await page.getByRole('tab', { name: 'Settings' }).click();
      assert.equal(await page.getByRole('switch', { name: /Visible to client keys/ }).isChecked(), true);
      assert.equal(expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/follows-default`, { token: tenant.admin.token }), 200).client_visible, true);
      await page.goto(`${ts.base}/#/projects`);
    }
    await projectDefault.uncheck();
    await page.getByText('New flags will start hidden from client keys.').waitFor();
    const after = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/projects`, { token: tenant.admin.token }), 200) as Array<Record<string, unknown>>;
    assert.equal(after.find((p) => p.project_id === tenant.projectId)!.client_visible_default, false);
    await page.context().close();
  });

  test('event definitions: "client apps may send it" set when created and toggled in the list', async () => {
    assert.equal(pending.eventClientAllowed, undefined, 'the server supports this part');
    const definitionsPath = `/v1/environments/${tenant.environmentId}/event-definitions`;
    const page = await signedIn(`#/env/${tenant.environmentId}/events`);
    const form = page.getByRole('form', { name: 'New event definition' });
    await form.getByLabel('Key').fill('add-to-cart');
    await form.getByLabel('Client apps may send it').check();
    await form.getByRole('button', { name: 'Create event definition' }).click();
    const allowed = page.getByRole('switch', { name: 'Client apps may send add-to-cart' });
    await allowed.waitFor();
    assert.equal(await allowed.isChecked(), true);
    await form.getByLabel('Key').fill('refund');
    await form.getByRole('button', { name: 'Create event definition' }).click();
    const refund = page.getByRole('switch', { name: 'Client apps may send refund' });
    await refund.waitFor();
    assert.equal(await refund.isChecked(), false, 'not allowed unless chosen');
    const stored = async () =>
      Object.fromEntries((expectStatus(await client.get(definitionsPath, { token: tenant.admin.token }), 200) as Array<Record<string, unknown>>).map((d) => [d.key, d.client_allowed]));
    assert.deepEqual(await stored(), { 'add-to-cart': true, probe: false, refund: false });
    await allowed.uncheck();
    await refund.check();
    await page.waitForFunction(() => Array.from(document.querySelectorAll('[role="switch"]')).every((s) => s.getAttribute('aria-busy') === 'false'));
    assert.deepEqual(await stored(), { 'add-to-cart': false, probe: false, refund: true });
    await page.reload();
    await refund.waitFor();
    assert.equal(await refund.isChecked(), true);
    assert.equal(await allowed.isChecked(), false);
    await page.context().close();
  });
});
