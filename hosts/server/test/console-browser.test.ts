import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { artifactPath, chromiumExecutable, launchChromium, signInToConsole } from './support/browser.ts';
import { eventually } from './support/flag-fixtures.ts';
import { prepareEnvironment } from './support/experiment-fixtures.ts';
import { api, expectStatus, login, seedTenant, seedUser, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startSsoTestServer } from './support/sso.ts';
import { TEST_ADMIN, type TestServer } from './support/test-server.ts';
import { startTestOidcProvider, type TestOidcProvider } from '../../../packages/services/test/support/oidc-identity-provider.ts';
import { createTestSamlIdp } from '../../../packages/services/test/support/saml-identity-provider.ts';

// The web console (docs/console.md) driven in a real Chromium against the real server: what a
// person does in the browser, checked through the same REST API an SDK uses.
// topologies: single
// (The console only calls the REST API, which every other suite runs against a gateway too, and
// console-routes.test.ts checks a gateway serves the console; a browser pass per topology would
// double the suite's slowest file for nothing new.)

const chromiumCheck = chromiumExecutable();
/** The flag page's on/off switch (its other switch is "Visible to client keys"). */
const ON_OFF = /^(On|Off) in /;

describe('web console in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;
  let op: TestOidcProvider;

  before(async () => {
    await buildConsole();
    // The stats worker polls often, so a recompute pressed in the page finishes quickly.
    // Single sign-on is set up as in production, against an OpenID Provider on loopback.
    [ts, op] = await Promise.all([startSsoTestServer({ STATS_POLL_MS: '50' }), startTestOidcProvider()]);
    client = api(ts.base);
    const root = await login(client, TEST_ADMIN.email, TEST_ADMIN.password);
    tenant = await seedTenant(client, root.token, 'console');
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await op?.close();
    await ts?.stop();
  });

  /** A new browser session (its own sessionStorage) signed in as `user` (support/browser.ts signInToConsole). */
  const signedIn = (user: { email: string; password: string }, viewport = { width: 1280, height: 900 }): Promise<Page> => signInToConsole(browser, ts.base, user, { viewport });

  /** A flag's page; `tab` one of its tabs (targeting when absent). */
  const flagUrl = (key: string, tab?: string) => `${ts.base}/#/env/${tenant.environmentId}/flags/${key}${tab ? `/${tab}` : ''}`;

  test('serves the console with a strict content security policy, and the API docs at /docs', async () => {
    const index = await fetch(ts.base + '/');
    assert.equal(index.status, 200);
    assert.match(index.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    assert.match(await index.text(), /<div id="app">/);
    const page = await (await browser.newContext()).newPage();
    await page.goto(ts.base + '/docs');
    // swagger-ui renders the operations of /v1/openapi.json, from this server only.
    await page.getByText('/v1/auth/login').first().waitFor();
    await page.screenshot({ path: artifactPath('api-docs.png') });
    await page.context().close();
  });

  test('a wrong password is answered in place, in plain words', async () => {
    const page = await (await browser.newContext()).newPage();
    await page.goto(ts.base + '/');
    await page.getByLabel('Email').fill(tenant.admin.email);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /invalid|password|credentials/i);
    await page.context().close();
  });

  test('create a flag, turn it on, roll it out to 30 %, and an SDK gets it through the evaluate route', async () => {
    const page = await signedIn(tenant.admin);
    await page.getByRole('link', { name: 'Flags' }).click();
    await page.getByLabel('Key', { exact: true }).fill('new-checkout');
    await page.getByLabel('Type').selectOption('string');
    await page.getByRole('button', { name: 'Create flag' }).click();
    await page.getByRole('heading', { name: 'new-checkout' }).waitFor();

    // A rule serving a percentage rollout: 30 % treatment, 70 % control. The added rule is the
    // first one, above the default rule when the flag has one.
    await page.getByRole('button', { name: 'Add rule' }).click();
    const rule = page.locator('fieldset.rule').first();
    await rule.getByRole('radio', { name: 'A percentage rollout' }).check();
    await rule.getByLabel('control %').fill('70');
    await rule.getByLabel('treatment %').fill('20');
    const sum = page.getByText(/The weights sum to 90 %/);
    await sum.waitFor();
    assert.equal(await page.getByRole('button', { name: 'Save rules' }).isDisabled(), true, 'weights not summing to 100 cannot be saved');
    await rule.getByLabel('treatment %').fill('30');
    await page.getByRole('button', { name: 'Save rules' }).click();
    await page.getByText('Rules saved.').waitFor();
    await page.getByRole('switch', { name: ON_OFF }).check();
    await page.getByText('Turned on.').waitFor();
    await page.screenshot({ path: artifactPath('flag-page.png'), fullPage: true });

    // The change is in the flag's history on the page, with the rules before and after.
    await page.reload();
    await page.getByRole('tab', { name: 'History' }).click();
    const rulesChange = page.getByRole('listitem').filter({ hasText: 'flag.rules' }).first();
    await rulesChange.waitFor();
    assert.match(await rulesChange.innerText(), new RegExp(`${tenant.admin.email}[\\s\\S]*Changed: rules`));
    await rulesChange.getByText('Before and after').click();
    assert.match(await rulesChange.getByLabel('After').innerText(), /"weight_milli": 300/);
    assert.doesNotMatch(await rulesChange.getByLabel('Before').innerText(), /weight_milli/);

    const flag = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/new-checkout`, { token: tenant.admin.token }), 200);
    assert.equal(flag.enabled, true);
    assert.deepEqual(flag.rules[0].allocation.buckets, [
      { variant_key: 'control', weight_milli: 700 },
      { variant_key: 'treatment', weight_milli: 300 },
    ]);
    // About 30 % of 400 users get the treatment (binomial sd ≈ 9: 120 ± 45 is > 5 sd wide).
    let treated = 0;
    for (let i = 0; i < 400; i++) {
      const answer = expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_key: `user-${i}`, context_type: 'user', flag_key: 'new-checkout' } }), 200);
      assert.equal(answer.reason, 'SPLIT');
      if (answer.variant_key === 'treatment') treated++;
    }
    assert.ok(treated > 75 && treated < 165, `${treated} of 400 treated`);

    await page.goto(ts.base + `/#/env/${tenant.environmentId}/flags`);
    await page.getByRole('link', { name: 'new-checkout' }).waitFor();
    await page.screenshot({ path: artifactPath('flags-page.png'), fullPage: true });
    await page.context().close();
  });

  test('a conflicting edit from a second session is shown as "changed by someone else", and the first edit is kept', async () => {
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { key: 'contested', enabled: false, flag: { value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } } }),
      201,
    );
    const first = await signedIn(tenant.admin);
    const second = await signedIn(tenant.member);
    for (const page of [first, second]) {
      await page.goto(flagUrl('contested'));
      await page.getByRole('heading', { name: 'contested' }).waitFor();
      await page.getByRole('button', { name: 'Add rule' }).click();
    }
    await first.getByRole('button', { name: 'Save rules' }).click();
    await first.getByText('Rules saved.').waitFor();
    await second.getByRole('combobox', { name: 'Variant' }).selectOption('off');
    await second.getByRole('button', { name: 'Save rules' }).click();
    const alert = second.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /changed by someone else/);
    await second.screenshot({ path: artifactPath('conflict.png'), fullPage: true });
    const stored = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/contested`, { token: tenant.admin.token }), 200);
    assert.equal(stored.rules.length, 1);
    assert.equal(stored.rules[0].variant_key, 'on', 'the first session\'s save stands; the second did not overwrite it');
    // Reloading shows the other person's change: wait for the page to show the stored version
    // (the reloaded flag), not merely for a Variant box, which the draft had too.
    await second.getByRole('button', { name: 'Reload the flag' }).click();
    await second.getByText(new RegExp(`· version ${stored.version} in `)).waitFor();
    assert.equal(await second.getByRole('combobox', { name: 'Variant' }).inputValue(), 'on');
    await first.context().close();
    await second.context().close();
  });

  test('create an SDK key, see it once, copy it, and it evaluates', async () => {
    const page = await signedIn(tenant.admin);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: ts.base });
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/sdk-keys`);
    await page.getByRole('button', { name: 'Create a server key' }).click();
    const shown = await page.getByTestId('new-sdk-key').innerText();
    assert.match(shown, /^sdk_[A-Za-z0-9_-]{43}$/);
    await page.getByRole('button', { name: 'Copy key' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), shown);
    const answer = await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: shown, body: { context_key: 'u1', context_type: 'user' } });
    assert.equal(answer.status, 200);
    // Reopened, the page lists the key by its prefix only.
    await page.reload();
    await page.getByRole('table', { name: 'SDK keys' }).waitFor();
    assert.equal(await page.getByText(shown).count(), 0);
    await page.context().close();
  });

  test('the flag page can be used with the keyboard alone', async () => {
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { key: 'keyboard', enabled: false, flag: { value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } } }),
      201,
    );
    const page = await signedIn(tenant.admin);
    await page.goto(flagUrl('keyboard'));
    await page.getByRole('heading', { name: 'keyboard' }).waitFor();
    /** Presses Tab until the focused element has this accessible name (at most 80 presses). */
    const tabTo = async (name: RegExp) => {
      for (let i = 0; i < 80; i++) {
        await page.keyboard.press('Tab');
        const focused = await page.evaluate(() => {
          const el = document.activeElement as HTMLElement | null;
          return el ? (el.getAttribute('aria-label') ?? el.textContent ?? '') + ' ' + (el.closest('label')?.textContent ?? '') : '';
        });
        if (name.test(focused)) return;
      }
      assert.fail(`never reached ${name} with Tab`);
    };
    await tabTo(/On in|Off in/);
    await page.keyboard.press('Space');
    await page.getByText('Turned on.').waitFor();
    // Saved: the switch is no longer busy, and the page holds the flag's new version (the next save needs it).
    await page.waitForFunction(() => document.querySelector('[role="switch"]')?.getAttribute('aria-busy') === 'false');
    await tabTo(/^Add rule/);
    await page.keyboard.press('Enter');
    await tabTo(/^Save rules/);
    await page.keyboard.press('Enter');
    await page.getByText('Rules saved.').waitFor();
    const stored = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/keyboard`, { token: tenant.admin.token }), 200);
    assert.equal(stored.enabled, true);
    assert.equal(stored.rules.length, 1);
    await page.context().close();
  });

  test('saving rules, then the switch at once while the page\'s reload of the flag is slow: turned on, not a conflict', async () => {
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { key: 'quick-switch', enabled: false, flag: { value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } } }),
      201,
    );
    const page = await signedIn(tenant.admin);
    await page.goto(flagUrl('quick-switch'));
    await page.getByRole('heading', { name: 'quick-switch' }).waitFor();
    // From here every read of the flag takes 1.5 s (a busy server or a slow network): the window
    // in which the page once still held the flag from before its last save.
    await page.route(`**/v1/environments/${tenant.environmentId}/flags/quick-switch`, async (route) => {
      if (route.request().method() === 'GET') await new Promise((resolve) => setTimeout(resolve, 1_500));
      await route.continue();
    });
    await page.getByRole('button', { name: 'Add rule' }).click();
    await page.getByRole('button', { name: 'Save rules' }).click();
    await page.getByText('Rules saved.').waitFor();
    // The saved rule stays on screen (it used to vanish until the reload came back).
    assert.equal(await page.getByRole('combobox', { name: 'Variant' }).count(), 1);
    await page.getByRole('switch', { name: ON_OFF }).check();
    await page.getByText('Turned on.').waitFor();
    assert.equal(await page.getByRole('alert').count(), 0, 'no "changed by someone else"');
    assert.equal(await page.getByRole('switch', { name: ON_OFF }).isChecked(), true);
    const stored = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/quick-switch`, { token: tenant.admin.token }), 200);
    assert.equal(stored.enabled, true);
    assert.equal(stored.rules.length, 1);
    await page.context().close();
  });

  test('an experiment: created and started in the page, its results computed on request, with a chart per metric', async () => {
    await prepareEnvironment(client, tenant, 'checkout');
    const page = await signedIn(tenant.admin);
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/experiments`);
    await page.getByLabel('Name').fill('Checkout button');
    await page.getByLabel('Flag').selectOption('checkout');
    await page.getByRole('button', { name: 'Add a metric' }).click();
    await page.getByRole('group', { name: 'Metric 1' }).getByRole('combobox', { name: 'Event', exact: true }).selectOption('purchase');
    await page.getByRole('button', { name: 'Create experiment' }).click();
    await page.getByRole('heading', { name: 'Checkout button' }).waitFor();
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    const [experiment] = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/experiments`, { token: tenant.admin.token }), 200).filter((x: { name: string }) => x.name === 'Checkout button');
    const [iteration] = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/experiments/${experiment.id}/iterations`, { token: tenant.admin.token }), 200);
    const t = iteration.started_at_ms as number;

    // 40 participants per variant; 10 of the control and 20 of the treatment convert.
    const exposures = [];
    const events = [];
    for (let i = 0; i < 40; i++) {
      exposures.push({ flag_key: 'checkout', variant_key: 'control', context_type: 'user', context_key: `c${i}`, timestamp_ms: t + 1 });
      exposures.push({ flag_key: 'checkout', variant_key: 'treatment', context_type: 'user', context_key: `t${i}`, timestamp_ms: t + 1 });
      if (i < 10) events.push({ metric_key: 'purchase', context_type: 'user', context_key: `c${i}`, value: true, timestamp_ms: t + 2 });
      if (i < 20) events.push({ metric_key: 'purchase', context_type: 'user', context_key: `t${i}`, value: true, timestamp_ms: t + 2 });
    }
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/exposures`, { sdkKey: tenant.rawKey, body: { exposures } }), 202);
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/events/batch`, { sdkKey: tenant.rawKey, body: { events } }), 202);

    await page.getByRole('button', { name: 'Recompute results' }).click();
    await page.getByText('Results recomputed.').waitFor({ timeout: 30_000 });
    const chart = page.getByRole('figure').filter({ hasText: 'purchase' });
    await chart.getByRole('img').waitFor();
    const rows = await chart.getByRole('row').allInnerTexts();
    // By hand: means 10/40 = 0.25 and 20/40 = 0.5; relative lift (0.5 - 0.25) / 0.25 = 100 %.
    // Its p (delta method, docs/statistics.md): se² = 0.25641/(40·0.25²) + 0.5²·0.19231/(40·0.25⁴)
    // (variances 0.5·0.5·40/39 and 0.25·0.75·40/39), se 0.6405, t = 1.561 on 76.4 degrees of
    // freedom (Welch's): two-sided p 0.1226 (SciPy), not below 0.05: inconclusive.
    assert.match(rows[1]!, /^control \(control\)\s+0\.2500/);
    assert.match(rows[2]!, /^treatment\s+0\.5000\s+\+?100\.0 %/);
    assert.match(rows[2]!, /0\.12[0-9]*\s+Inconclusive/i);
    assert.equal(await page.getByText(/Sample ratio mismatch/).count(), 0, '40 against 40 on a 50/50 plan is no mismatch');
    await page.screenshot({ path: artifactPath('experiment-results.png'), fullPage: true });
    await page.context().close();
  });

  test('from the first sign-in of a fresh server to a flag served to an SDK, without leaving the browser', async () => {
    // The system administrator `npm start` prints creates an organisation and its first admin.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const admin = await context.newPage();
    await admin.goto(ts.base + '/');
    await admin.getByLabel('Email').fill(TEST_ADMIN.email);
    await admin.getByLabel('Password').fill(TEST_ADMIN.password);
    await admin.getByRole('button', { name: 'Sign in' }).click();
    await admin.getByRole('heading', { name: 'Administration' }).waitFor();
    const email = `first-${unique()}@example.com`;
    await admin.getByLabel('Organisation name').fill(`First ${unique()}`);
    await admin.getByLabel("Administrator's email").fill(email);
    await admin.getByLabel("Administrator's password").fill('first-admin-password');
    await admin.getByRole('button', { name: 'Create organisation' }).click();
    await admin.getByText(/Sign out and sign in as/).waitFor();
    await admin.getByRole('button', { name: 'Sign out' }).click();

    await admin.getByLabel('Email').fill(email);
    await admin.getByLabel('Password').fill('first-admin-password');
    await admin.getByRole('button', { name: 'Sign in' }).click();
    await admin.getByRole('heading', { name: 'Projects' }).waitFor();
    // The new-project form offers development and production; renamed and one left out here.
    await admin.getByLabel('Project name').fill('web');
    await admin.getByLabel('Environment 1').fill('production');
    await admin.getByLabel('Environment 2').fill('');
    await admin.getByRole('button', { name: 'Create project' }).click();
    await admin.getByRole('heading', { name: 'Flags in production' }).waitFor();
    await admin.getByLabel('Key', { exact: true }).fill('beta-banner');
    await admin.getByRole('button', { name: 'Create flag' }).click();
    await admin.getByRole('heading', { name: 'beta-banner' }).waitFor();
    // A rule for everyone serving "on" (a new rule serves the first variant), then on.
    await admin.getByRole('button', { name: 'Add rule' }).click();
    await admin.getByRole('button', { name: 'Save rules' }).click();
    await admin.getByText('Rules saved.').waitFor();
    // Pressed at once after the save: the page already holds the saved flag's version (it used to
    // send the one from before the save while its reload was under way, and the API refused it).
    await admin.getByRole('switch', { name: ON_OFF }).check();
    await admin.getByText('Turned on.').waitFor();
    assert.equal(await admin.getByRole('switch', { name: ON_OFF }).isChecked(), true);
    assert.equal(await admin.getByRole('alert').count(), 0);
    await admin.getByRole('link', { name: 'SDK keys' }).click();
    await admin.getByRole('button', { name: 'Create a server key' }).click();
    const sdkKey = await admin.getByTestId('new-sdk-key').innerText();
    const envId = /#\/env\/([^/]+)\//.exec(admin.url())![1]!;
    await eventually('the flag to be served', async () => {
      const answer = await client.post(`/v1/environments/${envId}/evaluate`, { sdkKey, body: { context_key: 'visitor', context_type: 'user', flag_key: 'beta-banner' } });
      return answer.status === 200 && answer.body.value === true;
    });
    await context.close();
  });

  test('text from the API is shown as text: markup in a flag description never runs', async () => {
    const attack = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>';
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { key: 'markup', enabled: false, flag: { description: attack, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } } }),
      201,
    );
    const page = await signedIn(tenant.admin);
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
    await page.getByText(attack).waitFor();
    await page.goto(flagUrl('markup'));
    await page.getByRole('heading', { name: 'markup' }).waitFor();
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    assert.equal(await page.locator('img[src="x"]').count(), 0);
    await page.context().close();
  });

  test('single sign-on from the console: the provider\'s sign-in link, the identity provider\'s form, back signed in', async () => {
    const provider = expectStatus(
      await client.post(`/v1/management/orgs/${tenant.orgId}/auth-providers`, {
        token: tenant.admin.token,
        body: { provider_type: 'oidc', display_name: 'Corp IdP', redirect_uris: [`${ts.base}/`], oidc: { issuer_url: op.issuer, client_id: 'console', client_secret: 'console-client-secret-0123456789' } },
      }),
      201,
    );
    op.addClient({ clientId: 'console', clientSecret: 'console-client-secret-0123456789', redirectUris: [provider.oidc.callback_url] });
    // The org's member, known to the identity provider under a subject of its own.
    op.addAccount('member-login', { sub: `sub-${unique()}`, email: tenant.member.email, email_verified: true, name: 'Member' });

    // The admin finds the organisation's sign-in page on the Single sign-on page.
    const admin = await signedIn(tenant.admin);
    await admin.getByRole('link', { name: 'Single sign-on' }).click();
    const link = await admin.getByText(`${ts.base}/#/sign-in/${tenant.orgId}`).innerText();
    await admin.getByText(`${ts.base}/#/sso/${provider.id}`).waitFor(); // and the provider's own link
    await admin.context().close();

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(link);
    await page.getByRole('button', { name: 'Sign in with Corp IdP' }).click();
    // The identity provider's own login form (oidc-provider's), then back to the console.
    await page.locator('input[name="login"]').fill('member-login');
    await page.locator('button[type="submit"], input[type="submit"]').first().click();
    await page.getByRole('navigation', { name: 'Pages' }).waitFor();
    assert.equal(new URL(page.url()).search, '', 'the code and state are gone from the address');
    const session = await page.evaluate(() => JSON.parse(sessionStorage.getItem('switchyard.session') ?? 'null') as { user_id: string; org_id: string } | null);
    assert.deepEqual([session?.user_id, session?.org_id], [tenant.member.userId, tenant.orgId]);

    // The provider's own link names the provider and its org and waits for a click: opened by
    // any page (login CSRF), it starts nothing.
    const linked = await (await browser.newContext()).newPage();
    const starts: string[] = [];
    linked.on('request', (request) => void (new URL(request.url()).pathname.endsWith('/start') && starts.push(request.url())));
    await linked.goto(`${ts.base}/#/sso/${provider.id}`);
    const continueButton = linked.getByRole('button', { name: 'Continue to Corp IdP' });
    await continueButton.waitFor();
    assert.match(await linked.locator('main').innerText(), new RegExp(`Sign in to the organisation ${tenant.orgName} with its identity provider Corp IdP \\(OpenID Connect\\)`));
    await linked.waitForTimeout(500);
    assert.deepEqual(starts, [], 'nothing started before the click');
    assert.equal(new URL(linked.url()).origin, ts.base, 'still on the console');
    await continueButton.click();
    await linked.locator('input[name="login"]').fill('member-login');
    await linked.locator('button[type="submit"], input[type="submit"]').first().click();
    await linked.getByRole('navigation', { name: 'Pages' }).waitFor();
    assert.equal(starts.length, 1, 'one start, on the click');
    await linked.context().close();
    // A link to an unknown provider says so, and offers nothing to click.
    const unknown = await (await browser.newContext()).newPage();
    await unknown.goto(`${ts.base}/#/sso/00000000-0000-4000-8000-000000000000`);
    await unknown.getByRole('alert').waitFor();
    assert.match(await unknown.getByRole('alert').innerText(), /not valid here/);
    assert.equal(await unknown.getByRole('button').count(), 0);
    await unknown.context().close();

    // A return that this tab did not start (a forged or replayed link) signs nobody in.
    const other = await context.newPage();
    await other.goto(`${ts.base}/?code=forged-code&state=forged-state`);
    await other.evaluate(() => sessionStorage.clear());
    await other.goto(`${ts.base}/?code=forged-code&state=forged-state`);
    const alert = other.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /not started from this browser tab/);
    await context.close();
  });

  test('an id in the address is one path segment of the API request: "../" cannot lead it to another route', async () => {
    const page = await signedIn(tenant.admin);
    const requested: string[] = [];
    page.on('request', (request) => void (new URL(request.url()).pathname.startsWith('/v1/') && requested.push(new URL(request.url()).pathname)));
    // An experiment "id" that climbs to the org's member list, as a link someone could send.
    const climbing = `../../../management/orgs/${tenant.orgId}/users`;
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/experiments/${encodeURIComponent(climbing)}`);
    await page.getByRole('alert').waitFor();
    const encoded = `/v1/environments/${tenant.environmentId}/experiments/${encodeURIComponent(climbing)}`;
    assert.ok(requested.includes(encoded), `the experiment is asked for under its own route: ${requested.join(', ')}`);
    assert.ok(!requested.includes(`/v1/management/orgs/${tenant.orgId}/users`), `no request left the experiment's route: ${requested.join(', ')}`);
    // A dot segment cannot be encoded away: the page refuses it without asking the API.
    requested.length = 0;
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/experiments/..`);
    await page.getByText('There is no such flag or experiment.').waitFor();
    assert.ok(!requested.some((path) => path.startsWith(`/v1/environments/${tenant.environmentId}/`)), `nothing asked of the API: ${requested.join(', ')}`);
    await page.context().close();
  });

  test('segments, members and the organisation\'s change history', async () => {
    const page = await signedIn(tenant.admin);
    // A rule segment with one condition, and a list segment filled from a CSV file.
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/segments`);
    await page.getByLabel('Key', { exact: true }).fill('enterprise');
    await page.getByLabel('Kind').selectOption('rule');
    await page.getByRole('button', { name: 'Create segment' }).click();
    const card = page.getByRole('article').filter({ hasText: 'enterprise' });
    await card.getByRole('button', { name: 'Add condition' }).click();
    await card.getByLabel('Attribute').fill('plan');
    await card.getByLabel('Values (comma-separated)').fill('enterprise, business');
    await card.getByLabel('Values (comma-separated)').press('Tab');
    await card.getByRole('button', { name: 'Save conditions of enterprise' }).click();
    await card.getByText('Conditions on user: 1').waitFor();
    const segment = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/segments/enterprise`, { token: tenant.admin.token }), 200);
    assert.deepEqual(segment.conditions, [{ attribute: 'plan', op: 'eq', values: ['enterprise', 'business'] }]);

    await page.getByLabel('Key', { exact: true }).fill('beta-testers');
    await page.getByLabel('Kind').selectOption('list');
    await page.getByRole('button', { name: 'Create segment' }).click();
    const list = page.getByRole('article').filter({ hasText: 'beta-testers' });
    const keys = Array.from({ length: 25_000 }, (_, i) => `user-${i}`);
    await list.getByLabel('CSV of keys for beta-testers').setInputFiles({ name: 'keys.csv', mimeType: 'text/csv', buffer: Buffer.from(['key', ...keys].join('\n')) });
    await list.getByText('25000 of 25000 keys').waitFor();
    await list.getByText(/25000 included/).waitFor();
    const members = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/segments/beta-testers`, { token: tenant.admin.token }), 200);
    assert.equal(members.included_count, 25_000);

    // Members: invite someone (the token is shown once) and make the member an admin.
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByLabel('Email', { exact: true }).fill(`invited-${unique()}@example.com`);
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByText(/Invitation created for/).waitFor();
    // The pending list names who invited (a removed or demoted admin's invitations are withdrawn).
    await page.getByText(`invited by ${tenant.admin.email}`).first().waitFor();
    await page.getByLabel(`Role of ${tenant.member.email}`).selectOption('org_admin');
    await eventually('the role change', async () => {
      const users = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/users`, { token: tenant.admin.token }), 200);
      return users.some((u: { email: string; org_role: string }) => u.email === tenant.member.email && u.org_role === 'org_admin');
    });
    await page.getByLabel(`Role of ${tenant.member.email}`).selectOption('org_member');
    // Back to member before moving on: later tests sign in as the member and expect a member.
    await eventually('the role change back', async () => {
      const users = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/users`, { token: tenant.admin.token }), 200);
      return users.some((u: { email: string; org_role: string }) => u.email === tenant.member.email && u.org_role === 'org_member');
    });

    // The change history, filtered to segments: the two created above and the members upload.
    await page.getByRole('link', { name: 'Change history' }).click();
    await page.getByLabel('Kind').selectOption('segment');
    await page.getByText(/Changed the segment's keys in production — segment beta-testers/).first().waitFor();
    // The unfiltered list (which has segment entries too) stays on screen until the filtered one
    // arrives: wait for the filter's answer before reading the list (a filter that never applies
    // still fails here, after the wait).
    await eventually('the segment filter to apply', async () => {
      const texts = await page.getByRole('listitem').allInnerTexts();
      return texts.some((text) => /Created the segment in production — segment enterprise[\s\S]*segment\.create/.test(text)) && texts.every((text) => !/\bflag\./.test(text));
    });
    const shown = await page.getByRole('listitem').allInnerTexts();
    assert.ok(shown.every((text) => !/\bflag\./.test(text)), 'only segment entries under the segment filter');
    assert.ok(shown.some((text) => /Created the segment in production — segment enterprise[\s\S]*segment\.create/.test(text)));
    await page.screenshot({ path: artifactPath('change-history.png'), fullPage: true });
    await page.context().close();
  });

  test('identity providers: an admin creates an OIDC provider (its secret never shown), edits and deletes it; a member cannot manage them', async () => {
    const page = await signedIn(tenant.admin);
    await page.getByRole('link', { name: 'Single sign-on' }).click();
    const form = page.getByRole('form', { name: 'New identity provider' });
    const secret = `never-shown-${unique()}-0123456789`;
    await form.getByLabel('Display name').fill('Okta test');
    await form.getByLabel('Issuer URL').fill(op.issuer);
    await form.getByLabel('Client ID').fill('console-client');
    await form.getByLabel('Client secret').fill(secret);
    // A return address the API refuses: its words are shown under the form, with the form's names.
    await form.getByLabel(/Redirect URIs/).fill('http://console.example.com/');
    await form.getByRole('button', { name: 'Create identity provider' }).click();
    const refusal = form.getByRole('alert');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /^Redirect URI 1 must use https/);
    const none = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/auth-providers`, { token: tenant.admin.token }), 200);
    assert.ok(!none.some((p: { display_name: string }) => p.display_name === 'Okta test'), 'nothing was created');

    await form.getByLabel(/Redirect URIs/).fill(`${ts.base}/`);
    await form.getByRole('button', { name: 'Create identity provider' }).click();
    await page.getByText('Okta test created.').waitFor();
    const card = page.getByRole('article', { name: 'Okta test' });
    await card.getByText('stored (never shown)').waitFor();
    await card.getByText(`Created by ${tenant.admin.email}, last changed by ${tenant.admin.email} · never used`).waitFor();
    const listed = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/auth-providers`, { token: tenant.admin.token }), 200);
    const created = listed.find((p: { display_name: string }) => p.display_name === 'Okta test');
    assert.ok(created, 'the provider is stored');
    assert.equal(created.provider_type, 'oidc');
    assert.equal(created.oidc.issuer_url, op.issuer);
    assert.equal(created.oidc.client_id, 'console-client');
    assert.equal(created.oidc.client_secret_set, true);
    assert.deepEqual(created.redirect_uris, [`${ts.base}/`]);
    await card.getByText(`${ts.base}/#/sso/${created.id}`).waitFor();
    /** Whether the secret is anywhere on the page: its text or any field's value. */
    const secretShown = () =>
      page.evaluate((s) => document.body.innerText.includes(s) || Array.from(document.querySelectorAll('input, textarea')).some((el) => (el as HTMLInputElement).value.includes(s)), secret);
    assert.equal(await secretShown(), false, 'the secret is not shown after creating');
    await page.screenshot({ path: artifactPath('identity-providers.png'), fullPage: true });

    // Edit: the secret field starts empty (write-only) and, left empty, keeps the stored secret.
    await card.getByRole('button', { name: 'Edit Okta test' }).click();
    const edit = page.getByRole('form', { name: 'Edit Okta test' });
    // The focus moves into the form that replaced the button.
    await page.waitForFunction(() => document.activeElement?.closest('form')?.getAttribute('aria-label') === 'Edit Okta test');
    assert.equal(await edit.getByLabel(/New client secret/).inputValue(), '');
    assert.equal(await secretShown(), false, 'the secret is not shown when editing');
    await edit.getByLabel('Display name').fill('Okta corp');
    // A new client ID without a new secret is refused: the stored secret is not sent elsewhere.
    await edit.getByLabel('Client ID').fill('console-client-2');
    await edit.getByRole('button', { name: 'Save Okta test' }).click();
    const secretNeeded = edit.getByRole('alert');
    await secretNeeded.waitFor();
    assert.match(await secretNeeded.innerText(), /^Client secret is required when Issuer URL or Client ID changes/);
    await edit.getByLabel('Client ID').fill('console-client');
    await edit.getByLabel(/Enabled/).uncheck();
    await edit.getByRole('button', { name: 'Save Okta test' }).click();
    await page.getByText('Okta corp saved.').waitFor();
    const renamed = page.getByRole('article', { name: 'Okta corp' });
    await renamed.getByText(/OpenID Connect, disabled/).waitFor();
    const edited = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/auth-providers/${created.id}`, { token: tenant.admin.token }), 200);
    assert.equal(edited.display_name, 'Okta corp');
    assert.equal(edited.oidc.client_id, 'console-client');
    assert.equal(edited.enabled, false);
    assert.equal(edited.oidc.client_secret_set, true, 'an empty secret field keeps the stored secret');

    // Delete, after a confirmation.
    await renamed.getByRole('button', { name: 'Delete Okta corp' }).click();
    const confirmation = renamed.getByRole('alertdialog');
    assert.match(await confirmation.innerText(), /Nobody can sign in with it/);
    await confirmation.getByRole('button', { name: 'Yes, delete Okta corp' }).click();
    await page.getByText('Okta corp deleted.').waitFor();
    await page.getByRole('article', { name: 'Okta corp' }).waitFor({ state: 'detached', timeout: 5_000 });
    expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/auth-providers/${created.id}`, { token: tenant.admin.token }), 404);
    await page.context().close();

    // A member may not manage (nor read) providers: the page says so and offers no form.
    const member = await signedIn(tenant.member);
    await member.getByRole('link', { name: 'Single sign-on' }).click();
    await member.getByText("Only the organisation's admins can see and manage its identity providers.").waitFor();
    assert.equal(await member.getByRole('button', { name: 'Create identity provider' }).count(), 0);
    await member.context().close();
  });

  test('identity providers: a SAML provider from pasted IdP metadata, a malformed one refused in place', async () => {
    const idp = createTestSamlIdp();
    const page = await signedIn(tenant.admin);
    await page.goto(`${ts.base}/#/single-sign-on`);
    const form = page.getByRole('form', { name: 'New identity provider' });
    await form.getByLabel('Protocol').selectOption('saml');
    await form.getByLabel('Display name').fill('SAML corp');
    await form.getByRole('radio', { name: 'the XML itself' }).check();
    await form.getByLabel(/IdP metadata XML/).fill('<md:EntityDescriptor>not metadata');
    await form.getByRole('button', { name: 'Create identity provider' }).click();
    const refusal = form.getByRole('alert');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /^IdP metadata XML: /);
    await form.getByLabel(/IdP metadata XML/).fill(idp.metadataXml);
    await form.getByRole('button', { name: 'Create identity provider' }).click();
    await page.getByText('SAML corp created.').waitFor();
    const card = page.getByRole('article', { name: 'SAML corp' });
    await card.getByText('SAML 2.0', { exact: false }).first().waitFor();
    const stored = expectStatus(await client.get(`/v1/management/orgs/${tenant.orgId}/auth-providers`, { token: tenant.admin.token }), 200).find(
      (p: { display_name: string }) => p.display_name === 'SAML corp',
    );
    assert.equal(stored.provider_type, 'saml');
    assert.equal(stored.saml.idp_metadata_xml.trim(), idp.metadataXml.trim());
    assert.equal(stored.saml.idp_metadata_url, null);
    await card.getByText(stored.saml.acs_url).first().waitFor();
    // Where the start will send people, for the admin to check.
    assert.equal(stored.saml.idp_sso_url, idp.ssoUrl);
    await card.getByText(idp.ssoUrl, { exact: true }).waitFor();
    expectStatus(await client.delete(`/v1/management/orgs/${tenant.orgId}/auth-providers/${stored.id}`, { token: tenant.admin.token }), 204);
    await page.context().close();
  });

  test('identity providers: one admin enables a provider that makes admins, another confirms it in the page', async () => {
    // An org of its own with two admins: enabling such a provider takes both (docs/sso.md "Confirmation").
    const root = await login(client, TEST_ADMIN.email, TEST_ADMIN.password);
    const org = await seedTenant(client, root.token, 'console-confirm');
    const second = await seedUser(client, root.token, org.orgId, 'org_admin', 'console-second');
    const name = `Admins IdP ${unique()}`;
    const body = {
      provider_type: 'oidc',
      display_name: name,
      default_role: 'org_admin',
      redirect_uris: [`${ts.base}/`],
      oidc: { issuer_url: op.issuer, client_id: 'console-confirm', client_secret: `secret-${unique()}` },
    };
    const pending = expectStatus(await client.post(`/v1/management/orgs/${org.orgId}/auth-providers`, { token: org.admin.token, body }), 201);
    assert.equal(pending.status, 'pending_confirmation');

    const asker = await signedIn(org.admin);
    await asker.goto(`${ts.base}/#/single-sign-on`);
    const askerCard = asker.getByRole('article', { name });
    await askerCard.getByText("waiting for a second admin's confirmation", { exact: false }).waitFor();
    await askerCard.getByText('another admin of the organisation must confirm', { exact: false }).waitFor();
    assert.equal(await askerCard.getByRole('button', { name: `Confirm ${name}` }).count(), 0, 'the admin who asked cannot confirm');
    await asker.context().close();

    const confirmer = await signedIn(second);
    await confirmer.goto(`${ts.base}/#/single-sign-on`);
    await confirmer.getByRole('article', { name }).getByRole('button', { name: `Confirm ${name}` }).click();
    await confirmer.getByText(`${name} confirmed.`).waitFor();
    const stored = expectStatus(await client.get(`/v1/management/orgs/${org.orgId}/auth-providers/${pending.id}`, { token: org.admin.token }), 200);
    assert.deepEqual([stored.status, stored.enabled], ['enabled', true]);
    await confirmer.context().close();
  });

  test("a flag's settings: description and off variant saved, a conflict keeps the edit, archive and unarchive", async () => {
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { key: 'described', enabled: false, flag: { description: 'Old words', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } } }),
      201,
    );
    const flagPath = `/v1/environments/${tenant.environmentId}/flags/described`;
    const page = await signedIn(tenant.admin);
    await page.goto(flagUrl('described', 'settings'));
    await page.getByRole('heading', { name: 'described' }).waitFor();
    const settings = page.getByRole('form', { name: 'Flag settings' });
    assert.equal(await settings.getByLabel('Description').inputValue(), 'Old words');
    assert.equal(await settings.getByLabel(/Served when off/).inputValue(), 'off');
    await settings.getByLabel('Description').fill('Shows the new checkout');
    await settings.getByLabel(/Served when off/).selectOption('on');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Settings saved.').waitFor();
    let stored = expectStatus(await client.get(flagPath, { token: tenant.admin.token }), 200);
    assert.equal(stored.description, 'Shows the new checkout');
    assert.equal(stored.off_variant_key, 'on');
    await page.getByText(/bool flag — Shows the new checkout/).waitFor();

    // Someone else changes the flag meanwhile: the save is refused, the edit stays, Reload shows theirs.
    expectStatus(await client.request('PUT', flagPath, { token: tenant.member.token, body: { flag: { description: 'Their words' }, version: stored.version } }), 200);
    await settings.getByLabel('Description').fill('My words');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /changed by someone else/);
    assert.equal(await settings.getByLabel('Description').inputValue(), 'My words', 'the edit is kept');
    assert.equal(expectStatus(await client.get(flagPath, { token: tenant.admin.token }), 200).description, 'Their words');
    await page.getByRole('button', { name: 'Reload the flag' }).click();
    await page.getByText(/bool flag — Their words/).waitFor();
    assert.equal(await settings.getByLabel('Description').inputValue(), 'Their words');

    // Archive, then unarchive.
    await page.getByRole('button', { name: 'Archive the flag' }).click();
    await page.getByText('Flag archived.').waitFor();
    await page.getByText(/· archived/).waitFor();
    assert.equal(expectStatus(await client.get(flagPath, { token: tenant.admin.token }), 200).archived, true);
    await page.screenshot({ path: artifactPath('flag-settings.png'), fullPage: true });
    await page.getByRole('button', { name: 'Unarchive the flag' }).click();
    await page.getByText('Flag unarchived.').waitFor();
    stored = expectStatus(await client.get(flagPath, { token: tenant.admin.token }), 200);
    assert.equal(stored.archived, false);
    assert.equal(stored.off_variant_key, 'on');
    await page.context().close();
  });

  test("a variant's value changed in place: a value that is not JSON is refused in place, then the new value is served", async () => {
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { key: 'banner', enabled: true, flag: { value_type: 'json', variants: [{ key: 'wide', value: { width: 1200 } }, { key: 'narrow', value: { width: 600 } }], off_variant_key: 'narrow', rules: [] } } }),
      201,
    );
    const flagPath = `/v1/environments/${tenant.environmentId}/flags/banner`;
    const page = await signedIn(tenant.admin);
    await page.goto(flagUrl('banner', 'variants'));
    await page.getByRole('heading', { name: 'banner' }).waitFor();
    // With the keyboard: the Change button opens the field with the value as JSON, focused.
    await page.getByRole('button', { name: 'Change the value of narrow' }).focus();
    await page.keyboard.press('Enter');
    const form = page.getByRole('form', { name: 'Value of narrow' });
    const field = form.getByLabel(/New value/);
    await page.waitForFunction(() => document.activeElement?.tagName === 'INPUT');
    assert.equal(await field.inputValue(), '{"width":600}');
    await field.fill('{width: 640}');
    await page.keyboard.press('Enter');
    const refusal = form.getByRole('alert');
    await refusal.waitFor();
    assert.match(await refusal.innerText(), /not a JSON value/);
    assert.deepEqual(expectStatus(await client.get(flagPath, { token: tenant.admin.token }), 200).variants[1].value, { width: 600 }, 'nothing was sent');
    await field.fill('{"width": 640}');
    await form.getByRole('button', { name: 'Save value' }).click();
    await page.getByText('{"width":640}').waitFor();
    const stored = expectStatus(await client.get(flagPath, { token: tenant.admin.token }), 200);
    assert.deepEqual(
      stored.variants.map((v: { key: string; value: unknown }) => [v.key, v.value]),
      [['wide', { width: 1200 }], ['narrow', { width: 640 }]],
      'the other variant is unchanged',
    );
    // Served: an enabled flag without rules serves its off variant (DEFAULT), now with the new value.
    const served = expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_key: 'user-1', context_type: 'user', flag_key: 'banner' } }),
      200,
    );
    assert.deepEqual(served.value, { width: 640 });
    await page.context().close();
  });

  test('delete a flag after a confirmation (with the keyboard), and land on the flags list', async () => {
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { key: 'doomed', enabled: false, flag: { value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } } }),
      201,
    );
    const page = await signedIn(tenant.admin);
    await page.goto(flagUrl('doomed', 'settings'));
    await page.getByRole('heading', { name: 'doomed' }).waitFor();
    await page.getByRole('button', { name: 'Delete the flag doomed' }).click();
    const confirmation = page.getByRole('alertdialog');
    assert.match(await confirmation.innerText(), /cannot be undone/);
    // "Keep it" leaves the flag alone.
    await confirmation.getByRole('button', { name: 'Keep it' }).click();
    assert.equal(await page.getByRole('alertdialog').count(), 0);
    expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/doomed`, { token: tenant.admin.token }), 200);
    // The confirmation takes the focus: Enter deletes.
    await page.getByRole('button', { name: 'Delete the flag doomed' }).click();
    await page.waitForFunction(() => document.activeElement?.textContent === 'Yes, delete doomed');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: /Flags in/ }).waitFor();
    assert.match(page.url(), new RegExp(`#/env/${tenant.environmentId}/flags$`));
    assert.equal(await page.getByRole('link', { name: 'doomed' }).count(), 0);
    expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/doomed`, { token: tenant.admin.token }), 404);
    await page.context().close();
  });

  test("a list segment's keys: uploaded, paged through in the console, one added and one removed", async () => {
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/segments`, { token: tenant.admin.token, body: { key: 'vip', kind: 'list', context_type: 'user' } }), 201);
    const page = await signedIn(tenant.admin);
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/segments`);
    const card = page.getByRole('article').filter({ has: page.getByRole('heading', { name: 'vip', exact: true }) });
    const keys = Array.from({ length: 150 }, (_, i) => `vip-${String(i).padStart(3, '0')}`);
    await card.getByLabel('CSV of keys for vip').setInputFiles({ name: 'vip.csv', mimeType: 'text/csv', buffer: Buffer.from(keys.join('\n')) });
    await card.getByText(/150 included/).waitFor();

    await card.getByRole('button', { name: 'Show the keys of vip' }).click();
    const table = card.getByRole('table', { name: 'included keys of vip' });
    await table.getByText('vip-049', { exact: true }).waitFor();
    assert.deepEqual(await table.locator('tbody code').allInnerTexts(), keys.slice(0, 50), 'the first page: 50 keys in key order');
    await card.getByRole('button', { name: 'Next 50 keys' }).click();
    await table.getByText('vip-099', { exact: true }).waitFor();
    assert.deepEqual(await table.locator('tbody code').allInnerTexts(), keys.slice(50, 100));
    await card.getByRole('button', { name: 'Next 50 keys' }).click();
    await table.getByText('vip-149', { exact: true }).waitFor();
    assert.deepEqual(await table.locator('tbody code').allInnerTexts(), keys.slice(100));
    assert.equal(await card.getByRole('button', { name: 'Next 50 keys' }).count(), 0, 'the last page has no next');
    await card.getByRole('button', { name: 'Previous keys' }).click();
    await table.getByText('vip-050', { exact: true }).waitFor();
    await card.getByRole('button', { name: 'Previous keys' }).click();
    await table.getByText('vip-000', { exact: true }).waitFor();

    await card.getByLabel('New included keys (comma-separated)').fill('aaa-extra');
    await card.getByRole('button', { name: 'Add keys' }).click();
    await card.getByText('Added 1 key to the included keys.').waitFor();
    await table.getByText('aaa-extra', { exact: true }).waitFor();
    await card.getByRole('button', { name: 'Remove vip-003' }).click();
    await card.getByText('Removed vip-003 from the included keys.').waitFor();
    await card.getByText(/150 included/).waitFor();
    await table.getByText('vip-003', { exact: true }).waitFor({ state: 'detached', timeout: 5_000 });
    await table.getByText('vip-004', { exact: true }).waitFor();
    await page.screenshot({ path: artifactPath('segment-keys.png'), fullPage: true });

    const stored: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
      const answer = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/segments/vip/members?limit=1000${query}`, { token: tenant.admin.token }), 200);
      stored.push(...answer.keys);
      cursor = answer.next_cursor;
    } while (cursor !== null);
    assert.equal(stored.length, 150);
    assert.ok(stored.includes('aaa-extra'));
    assert.ok(!stored.includes('vip-003'));
    assert.equal(expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/segments/vip`, { token: tenant.admin.token }), 200).included_count, 150);
    await page.context().close();
  });

  test('the flags list switches a flag per environment of the project; the environment switcher keeps the page', async () => {
    const staging = expectStatus(await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name: 'staging' } }), 201);
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { key: 'per-env', enabled: false, flag: { value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } } }),
      201,
    );
    const page = await signedIn(tenant.admin);
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
    const inStaging = page.getByRole('switch', { name: 'per-env on in staging' });
    await inStaging.check();
    await eventually('the flag on in staging', async () => expectStatus(await client.get(`/v1/environments/${staging.environment_id}/flags/per-env`, { token: tenant.admin.token }), 200).enabled === true);
    assert.equal(expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/per-env`, { token: tenant.admin.token }), 200).enabled, false, 'production is untouched');
    await page.waitForFunction(() => document.querySelectorAll('[role="switch"][aria-busy="true"]').length === 0);
    assert.equal(await page.getByRole('switch', { name: 'per-env on in production' }).isChecked(), false);

    // On a flag's page, switching environment shows the same flag in the other environment.
    await page.goto(flagUrl('per-env'));
    await page.getByRole('heading', { name: 'per-env' }).waitFor();
    await page.getByLabel('Environment').selectOption(staging.environment_id);
    await page.getByText('On in staging', { exact: true }).waitFor();
    assert.match(page.url(), new RegExp(`#/env/${staging.environment_id}/flags/per-env$`));
    await page.context().close();
  });

  test('a narrow screen shows the same pages in one column', async () => {
    const page = await signedIn(tenant.admin, { width: 390, height: 844 });
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
    await page.getByRole('heading', { name: /Flags in/ }).waitFor();
    const overflow = async () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok((await overflow()) <= 0, `the page scrolls sideways by ${await overflow()}px`);
    await page.screenshot({ path: artifactPath('flags-narrow.png'), fullPage: true });
    // The pages with the longer forms: a flag's settings, the identity providers, a list segment's keys.
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/flags`, { token: tenant.admin.token, body: { key: 'narrow', enabled: false, flag: { value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } } }),
      201,
    );
    await page.goto(flagUrl('narrow', 'settings'));
    await page.getByRole('form', { name: 'Flag settings' }).waitFor();
    assert.ok((await overflow()) <= 0, `the flag page scrolls sideways by ${await overflow()}px`);
    await page.goto(`${ts.base}/#/single-sign-on`);
    await page.getByRole('form', { name: 'New identity provider' }).waitFor();
    assert.ok((await overflow()) <= 0, `the single sign-on page scrolls sideways by ${await overflow()}px`);
    await page.screenshot({ path: artifactPath('single-sign-on-narrow.png'), fullPage: true });
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/segments`);
    await page.getByRole('heading', { name: 'Segments' }).waitFor();
    const showKeys = page.getByRole('button', { name: /^Show the keys of/ }).first();
    if ((await showKeys.count()) > 0) await showKeys.click();
    assert.ok((await overflow()) <= 0, `the segments page scrolls sideways by ${await overflow()}px`);
    await page.context().close();
  });
});
