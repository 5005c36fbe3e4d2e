import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { artifactPath, chromiumExecutable, expectTexts, launchChromium, signInToConsole } from './support/browser.ts';
import { createFlag, createSegment, envFlags } from './support/flag-client.ts';
import { eventually } from './support/flag-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// The flag page of the web console (docs/console.md "Flag page"): tabs, the default rule, the
// warning for a flag that is on without one, variants, the segment picker, attribute suggestions
// and the history's words and highlighted lines, in a real Chromium against the real server.
// topologies: single
// (The console only calls the REST API, which the REST suites run against a gateway too; a
// browser pass per topology would double a slow file for nothing new.)

const chromiumCheck = chromiumExecutable();
/** The flag page's on/off switch (its other switch, in Settings, is "Visible to client keys"). */
const ON_OFF = /^(On|Off) in /;
const BOOL_VARIANTS = [
  { key: 'on', value: true },
  { key: 'off', value: false },
];

describe('the flag page in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;

  before(async () => {
    await buildConsole();
    ts = await startTestServer();
    client = api(ts.base);
    const root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'flagpage');
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  const signedIn = (): Promise<Page> => signInToConsole(browser, ts.base, tenant.admin);

  const flagUrl = (key: string, tab?: string) => `${ts.base}/#/env/${tenant.environmentId}/flags/${key}${tab ? `/${tab}` : ''}`;
  const flagPath = (key: string) => `${envFlags(tenant.environmentId)}/${key}`;
  const stored = async (key: string) => expectStatus(await client.get(flagPath(key), { token: tenant.admin.token }), 200);
  const evaluateOne = async (key: string) =>
    expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_key: 'visitor-1', context_type: 'user', flag_key: key } }), 200);
  const ofrepOne = async (key: string) => expectStatus(await client.post(`/ofrep/v1/evaluate/flags/${key}`, { sdkKey: tenant.rawKey, body: { context: { targetingKey: 'visitor-1' } } }), 200);

  test('the create form sends no rules, so the API decides the new flag\'s rules', async () => {
    const page = await signedIn();
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
    await page.getByLabel('Key', { exact: true }).fill('form-body');
    const request = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith(envFlags(tenant.environmentId)));
    await page.getByRole('button', { name: 'Create flag' }).click();
    assert.deepEqual((await request).postDataJSON(), {
      key: 'form-body',
      enabled: false,
      flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off' },
    });
    await page.getByRole('heading', { name: 'form-body' }).waitFor();
    await page.context().close();
  });

  test('a new flag created in the console and turned on serves its first variant through evaluate and OFREP; its default rule is shown', async () => {
    const page = await signedIn();
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
    await page.getByLabel('Key', { exact: true }).fill('welcome-banner');
    await page.getByRole('button', { name: 'Create flag' }).click();
    await page.getByRole('heading', { name: 'welcome-banner' }).waitFor();
    // By hand: a bool flag made by the form has variants on (true), off (false) and off variant
    // "off"; its default rule serves the first variant that is not the off variant: "on".
    const defaultRule = page.getByRole('group', { name: 'Default rule' });
    await defaultRule.waitFor();
    assert.equal(await defaultRule.getByRole('combobox', { name: 'Variant' }).inputValue(), 'on');
    assert.match(await defaultRule.innerText(), /Every context: serves on/);
    await page.getByRole('switch', { name: ON_OFF }).check();
    await page.getByText('Turned on.').waitFor();
    assert.equal(await page.getByText(/without a default rule/).count(), 0, 'no warning: the flag has its default rule');

    const evaluated = await evaluateOne('welcome-banner');
    assert.deepEqual([evaluated.value, evaluated.variant_key, evaluated.reason], [true, 'on', 'TARGETING_MATCH']);
    assert.deepEqual(await ofrepOne('welcome-banner'), { key: 'welcome-banner', value: true, reason: 'TARGETING_MATCH', variant: 'on', metadata: { rule_id: 'default' } });
    await page.screenshot({ path: artifactPath('flag-default-rule.png'), fullPage: true });
    await page.context().close();
  });

  test('a flag on without a default rule: a warning in the list and on its page, until a default rule is added and saved', async () => {
    await createFlag(client, tenant.admin.token, tenant.environmentId, { key: 'no-fallback', enabled: true, flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off', rules: [] } });
    // Served now: the off variant, reason DEFAULT (the API's semantics, unchanged).
    assert.deepEqual(((r) => [r.value, r.reason])(await evaluateOne('no-fallback')), [false, 'DEFAULT']);
    const page = await signedIn();
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'no-fallback' }) });
    await row.getByText('No default rule in production').waitFor();
    await page.screenshot({ path: artifactPath('flags-warning.png'), fullPage: true });

    await page.goto(flagUrl('no-fallback'));
    const warning = page.getByText(/on in production without a default rule/);
    await warning.waitFor();
    assert.match(await warning.innerText(), /get the off variant, off/);
    await page.getByRole('button', { name: 'Add a default rule' }).click();
    const defaultRule = page.getByRole('group', { name: 'Default rule' });
    assert.equal(await defaultRule.getByRole('combobox', { name: 'Variant' }).inputValue(), 'on');
    await page.getByRole('button', { name: 'Save rules' }).click();
    await page.getByText('Rules saved.').waitFor();
    await warning.waitFor({ state: 'detached' });
    assert.deepEqual((await stored('no-fallback')).rules, [{ id: 'default', conditions: [], variant_key: 'on' }]);
    assert.deepEqual(((r) => [r.value, r.variant_key, r.reason])(await evaluateOne('no-fallback')), [true, 'on', 'TARGETING_MATCH']);
    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
    await page.getByRole('link', { name: 'no-fallback' }).waitFor();
    assert.equal(await page.getByRole('row').filter({ has: page.getByRole('link', { name: 'no-fallback' }) }).getByText(/No default rule/).count(), 0);
    await page.context().close();
  });

  test('tabs: Targeting first, each tab its own address, the arrow keys move between them', async () => {
    await createFlag(client, tenant.admin.token, tenant.environmentId, { key: 'tabbed', enabled: false, flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off', rules: [] } });
    const page = await signedIn();
    await page.goto(flagUrl('tabbed'));
    const tabs = page.getByRole('tablist');
    await tabs.waitFor();
    assert.deepEqual(await tabs.getByRole('tab').allInnerTexts(), ['Targeting', 'Variants', 'Settings', 'Schedule', 'Insights', 'History']);
    assert.equal(await page.getByRole('tab', { name: 'Targeting' }).getAttribute('aria-selected'), 'true');
    await page.getByRole('heading', { name: 'Default rule' }).waitFor();
    // The switch is above the tabs: on every tab.
    await page.getByRole('tab', { name: 'Targeting' }).focus();
    await page.keyboard.press('ArrowRight');
    await page.getByRole('table', { name: 'Variants of tabbed' }).waitFor();
    assert.match(page.url(), /\/flags\/tabbed\/variants$/);
    await page.waitForFunction(() => document.activeElement?.textContent === 'Variants');
    assert.equal(await page.getByRole('switch', { name: ON_OFF }).count(), 1);
    await page.keyboard.press('End');
    await page.getByRole('heading', { name: 'History' }).waitFor();
    await page.keyboard.press('ArrowRight');
    await page.getByRole('heading', { name: 'Rules' }).waitFor();
    // An address names its tab.
    await page.goto(flagUrl('tabbed', 'settings'));
    await page.getByRole('form', { name: 'Flag settings' }).waitFor();
    assert.equal(await page.getByRole('tab', { name: 'Settings' }).getAttribute('aria-selected'), 'true');
    await page.context().close();
  });

  test('variants: where each is served; one served nowhere is removed after a confirmation; a bool flag adds none', async () => {
    await createFlag(client, tenant.admin.token, tenant.environmentId, {
      key: 'colours',
      enabled: true,
      flag: {
        value_type: 'string',
        variants: [
          { key: 'red', value: 'RED' },
          { key: 'green', value: 'GREEN' },
          { key: 'blue', value: 'BLUE' },
        ],
        off_variant_key: 'red',
        rules: [{ id: 'greens', conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }], variant_key: 'green' }],
      },
    });
    const page = await signedIn();
    await page.goto(flagUrl('colours', 'variants'));
    const table = page.getByRole('table', { name: 'Variants of colours' });
    const rowOf = (key: string) => table.getByRole('row').filter({ has: page.getByRole('cell', { name: key, exact: true }) });
    await rowOf('green').getByText('production: rule greens').waitFor();
    await rowOf('red').getByText('production: the off variant').waitFor();
    await rowOf('blue').getByText('nowhere').waitFor();
    assert.equal(await page.getByRole('button', { name: /^Remove variant (red|green)$/ }).count(), 0, 'served variants offer no removal');
    await page.getByRole('button', { name: 'Remove variant blue' }).click();
    const confirmation = page.getByRole('alertdialog');
    assert.match(await confirmation.innerText(), /Remove the variant blue/);
    await confirmation.getByRole('button', { name: 'Yes, remove blue' }).click();
    await rowOf('blue').waitFor({ state: 'detached' });
    assert.deepEqual((await stored('colours')).variants.map((v: { key: string }) => v.key), ['red', 'green']);
    await page.getByRole('form', { name: 'Add a variant' }).waitFor();

    await createFlag(client, tenant.admin.token, tenant.environmentId, { key: 'yes-no', enabled: false, flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off', rules: [] } });
    await page.goto(flagUrl('yes-no', 'variants'));
    await page.getByText(/A bool flag has its two variants/).waitFor();
    assert.equal(await page.getByRole('form', { name: 'Add a variant' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: /^Remove variant/ }).count(), 0);
    await page.context().close();
  });

  test('a rule: attribute suggestions from the project\'s rules and segments, a segment picked from a list, the summary naming it', async () => {
    await createSegment(client, tenant.admin.token, tenant.environmentId, { key: 'beta-users', context_type: 'user', kind: 'list', included_keys: ['visitor-1'] });
    await createSegment(client, tenant.admin.token, tenant.environmentId, { key: 'europe', context_type: 'user', kind: 'rule', conditions: [{ attribute: 'country', op: 'in', values: ['fr', 'de'] }] });
    // Another environment of the project uses "app_version" in a rule.
    const staging = expectStatus(await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name: 'staging' } }), 201);
    await createFlag(client, tenant.admin.token, staging.environment_id, {
      key: 'staging-only',
      enabled: false,
      flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off', rules: [{ id: 'new-apps', conditions: [{ attribute: 'app_version', op: 'semver_gt', values: ['2.0.0'] }], variant_key: 'on' }] },
    });
    await createFlag(client, tenant.admin.token, tenant.environmentId, { key: 'picker', enabled: false, flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off', rules: [] } });
    // A context recently evaluated here used "subscription_tier" (docs/contract.md "Context attributes").
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_key: 'visitor-2', context_type: 'user', attributes: { subscription_tier: 'gold' } } }),
      200,
    );
    await eventually('the evaluated attribute is listed', async () => {
      const listed = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/context-attributes`, { token: tenant.admin.token }), 200);
      return listed.attributes.some((a: { name: string }) => a.name === 'subscription_tier');
    }, 10_000);
    const page = await signedIn();
    await page.goto(flagUrl('picker'));
    await page.getByRole('button', { name: 'Add rule' }).click();
    // A rule added with "Add rule" is a rule (its conditions and segments editable), not the default rule.
    const rule = page.locator('fieldset.rule').first();
    await rule.getByRole('button', { name: 'Add condition' }).click();
    const attribute = rule.getByLabel('Attribute');
    const listId = await attribute.getAttribute('list');
    assert.ok(listId, 'the attribute field has suggestions');
    await page.waitForFunction((id) => (document.getElementById(id!) as HTMLDataListElement | null)?.options.length === 4, listId);
    const suggestions = await page.evaluate((id) => Array.from((document.getElementById(id!) as HTMLDataListElement).options, (o) => o.value), listId);
    // By hand: "app_version" (staging's flag), "country" (the segment europe), "plan" (the rule of
    // the flag colours of the variants test, in production) and "subscription_tier" (the context
    // evaluated above), sorted.
    assert.deepEqual(suggestions, ['app_version', 'country', 'plan', 'subscription_tier']);
    await attribute.fill('country');
    await rule.getByLabel('Values (comma-separated)').fill('fr');
    await rule.getByLabel('Values (comma-separated)').press('Tab');
    const picker = rule.getByLabel('Add a segment');
    await expectTexts(picker.locator('option'), ['Choose a segment', 'beta-users (list, user)', 'europe (rule, user)']);
    await picker.selectOption('beta-users');
    await rule.getByRole('button', { name: 'Remove segment beta-users' }).waitFor();
    assert.match(await rule.locator('.summary').innerText(), /^Contexts where country is fr and in segment beta-users: serves on$/);
    await page.getByRole('button', { name: 'Save rules' }).click();
    await page.getByText('Rules saved.').waitFor();
    const [saved] = (await stored('picker')).rules;
    assert.deepEqual([saved.conditions, saved.segment_keys, saved.variant_key], [[{ attribute: 'country', op: 'eq', values: ['fr'] }], ['beta-users'], 'on']);
    await page.screenshot({ path: artifactPath('flag-rule-segments.png'), fullPage: true });
    await page.context().close();
  });

  test('prerequisites: a flag picked from the list, its variants ticked, saved with the flag; the stored list is shown again', async () => {
    await createFlag(client, tenant.admin.token, tenant.environmentId, { key: 'gate', enabled: true, flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off', rules: [] } });
    await createFlag(client, tenant.admin.token, tenant.environmentId, { key: 'gated', enabled: true, flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off', rules: [] } });
    const page = await signedIn();
    await page.goto(flagUrl('gated'));
    const form = page.getByRole('form', { name: 'Prerequisites' });
    await form.getByText('No prerequisites.').waitFor();
    await form.getByRole('button', { name: 'Add prerequisite' }).click();
    const entry = form.getByRole('group', { name: 'Prerequisite 1' });
    const picker = entry.getByLabel('Flag');
    // Every other flag of the environment, not the flag itself.
    const options = await picker.locator('option').allInnerTexts();
    assert.ok(options.includes('gate') && !options.includes('gated'), JSON.stringify(options));
    await picker.selectOption('gate');
    await entry.getByRole('checkbox', { name: 'on' }).check();
    await form.getByRole('button', { name: 'Save prerequisites' }).click();
    await page.getByText('Prerequisites saved.').waitFor();
    assert.deepEqual((await stored('gated')).prerequisites, [{ flag_key: 'gate', variant_keys: ['on'] }]);
    await page.reload();
    assert.equal(await page.getByRole('form', { name: 'Prerequisites' }).getByRole('group', { name: 'Prerequisite 1' }).getByLabel('Flag').inputValue(), 'gate');
    // The named flag cannot be deleted meanwhile: the API's 409 names the dependent.
    expectStatus(await client.delete(flagPath('gate'), { token: tenant.admin.token }), 409);
    await page.screenshot({ path: artifactPath('flag-prerequisites.png'), fullPage: true });
    await page.context().close();
  });

  test('tags and ownership: edited on Settings (a bucket_by change warns first), saved; the list shows tags, the temporary marker and filters by tag', async () => {
    const split = [{ id: 'half', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] } }];
    await createFlag(client, tenant.admin.token, tenant.environmentId, { key: 'tagged', enabled: true, flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off', rules: split } });
    await createFlag(client, tenant.admin.token, tenant.environmentId, { key: 'untagged', enabled: false, flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off', tags: ['other-tag'] } });
    const page = await signedIn();
    await page.goto(flagUrl('tagged', 'settings'));
    const form = page.getByRole('form', { name: 'Tags and ownership' });
    await form.getByLabel('Tags').fill('web team:payments, web');
    await form.getByLabel('Lifetime').selectOption('temporary');
    await form.getByLabel('Maintainer').fill('ana@example.com');
    assert.equal(await form.getByRole('note').count(), 0, 'no warning before bucket_by changes');
    await form.getByLabel('Bucket users by').selectOption('project');
    assert.match(await form.getByRole('note').innerText(), /reshuffles the users of every percentage rollout.*this one has a rollout/);
    const request = page.waitForRequest((r) => r.method() === 'PUT' && r.url().endsWith(flagPath('tagged')));
    await form.getByRole('button', { name: 'Save tags and ownership' }).click();
    assert.deepEqual((await request).postDataJSON().flag, { tags: ['team:payments', 'web'], lifetime: 'temporary', maintainer: 'ana@example.com', bucket_by: 'project' });
    await page.getByText('Tags and ownership saved.').waitFor();
    const saved = await stored('tagged');
    assert.deepEqual([saved.tags, saved.lifetime, saved.maintainer, saved.bucket_by], [['team:payments', 'web'], 'temporary', 'ana@example.com', 'project']);
    await page.reload();
    assert.equal(await page.getByRole('form', { name: 'Tags and ownership' }).getByLabel('Tags').inputValue(), 'team:payments, web');

    await page.goto(`${ts.base}/#/env/${tenant.environmentId}/flags`);
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'tagged', exact: true }) });
    await row.getByText('temporary', { exact: true }).waitFor();
    assert.deepEqual(await row.getByRole('list', { name: 'Tags of tagged' }).getByRole('listitem').allInnerTexts(), ['team:payments', 'web']);
    /** The flags the table lists, once they are `expected` (the list re-renders after a filter change). */
    const listed = async (expected: string[]) => {
      const links = () => page.getByRole('table').getByRole('link').allInnerTexts();
      for (let i = 0; i < 100 && JSON.stringify((await links()).filter((k) => expected.includes(k) || ['tagged', 'untagged'].includes(k))) !== JSON.stringify(expected); i++) await page.waitForTimeout(50);
      assert.deepEqual((await links()).filter((k) => expected.includes(k) || ['tagged', 'untagged'].includes(k)), expected);
    };
    await listed(['tagged', 'untagged']);
    await page.getByLabel('Filter by tag').selectOption('web');
    await listed(['tagged']);
    await page.getByLabel('Filter by tag').selectOption('');
    await listed(['tagged', 'untagged']);
    // A tag in a row filters by it too.
    await page.getByRole('list', { name: 'Tags of untagged' }).getByRole('button', { name: 'other-tag' }).click();
    await listed(['untagged']);
    assert.equal(await page.getByLabel('Filter by tag').inputValue(), 'other-tag');
    await page.screenshot({ path: artifactPath('flag-tags.png'), fullPage: true });
    await page.context().close();
  });

  test('history: what happened in words, who by name, and the changed lines marked in before and after', async () => {
    await createFlag(client, tenant.admin.token, tenant.environmentId, { key: 'storied', enabled: false, flag: { value_type: 'bool', variants: BOOL_VARIANTS, off_variant_key: 'off', rules: [] } });
    const page = await signedIn();
    await page.goto(flagUrl('storied'));
    await page.getByRole('switch', { name: ON_OFF }).check();
    await page.getByText('Turned on.').waitFor();
    await page.getByRole('tab', { name: 'History' }).click();
    const entries = page.getByRole('tabpanel').getByRole('listitem');
    await entries.first().getByText(/Turned on in production/).waitFor();
    const newest = entries.first();
    // seedTenant names the admin "flagpage-admin" (its display name) beside the email.
    assert.match(await newest.innerText(), new RegExp(`^flagpage-admin \\(${tenant.admin.email.replace(/[.]/g, '\\.')}\\): Turned on in production — flag storied`));
    assert.match(await newest.innerText(), /flag\.update/);
    const texts = await entries.allInnerTexts();
    assert.ok(texts.some((t) => /: Created the flag — flag storied/.test(t)), 'the definition entry of the create');
    assert.ok(texts.some((t) => /: Created the flag in production — flag storied/.test(t)), "production's entry of the create");

    await newest.getByText('Before and after').click();
    // By hand: turning on changes enabled, version and updated_at_ms; no other line of the record.
    const removed = await newest.getByLabel('Before').locator('del').allInnerTexts();
    const added = await newest.getByLabel('After').locator('ins').allInnerTexts();
    assert.ok(removed.some((line) => /^- +"enabled": false/.test(line)), `removed: ${JSON.stringify(removed)}`);
    assert.ok(added.some((line) => /^\+ +"enabled": true/.test(line)), `added: ${JSON.stringify(added)}`);
    for (const line of [...removed, ...added]) assert.match(line, /"(enabled|version|updated_at_ms)"/);
    assert.equal(removed.length, 3);
    assert.equal(added.length, 3);
    await page.screenshot({ path: artifactPath('flag-history.png'), fullPage: true });
    await page.context().close();
  });
});
