import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { artifactPath, chromiumExecutable, expectTexts, launchChromium, signInToConsole } from './support/browser.ts';
import { createFlag, eventually } from './support/flag-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Flag insights in the console (docs/console.md "Flag page" Insights, "Flag cleanup"): counts
// written by the server's own flusher (every 200 ms here) after a known number of REST
// evaluations, shown on the flag list and the Insights tab; a history written straight into
// PostgreSQL (as rest-flag-lifecycle.test.ts does) makes a flag ready for code removal, shown on
// the Cleanup page, whose thresholds an org admin changes (a refusal shown at its field).
// topologies: single
// (The console only calls the REST API, which the REST suites run in both topologies.)

const chromiumCheck = chromiumExecutable();
const DAY = 86_400_000;
const EVALUATIONS = 5;
const bool = (key: string, enabled: boolean) => ({ key, value_type: 'bool' as const, variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', enabled });

describe('flag insights and cleanup in the console, in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;

  before(async () => {
    await buildConsole();
    ts = await startTestServer({ INSIGHTS_FLUSH_MS: '200', INSIGHTS_LIFECYCLE_INTERVAL_MS: '3600000' });
    ts.server.lifecycleJob.unschedule();
    client = api(ts.base);
    tenant = await seedTenant(client, (await loginAdmin(client)).token, 'insights-console');
    await createFlag(ts, client, tenant, bool('checkout', true));
    await createFlag(ts, client, tenant, bool('fresh', false));
    await createFlag(ts, client, tenant, bool('legacy-banner', true));
    // legacy-banner: temporary, made 60 days ago, serving "on" to everyone unchanged for 20 days,
    // last evaluated a day ago → launched in production, the only environment (it counts): 60 ≥ 30
    // days old, so ready for code removal (docs/insights.md "Lifecycle stages").
    const sql = ts.db.sql;
    const ago = (days: number) => (Date.now() - days * DAY) / 1000;
    const [legacy] = await sql<{ id: string }[]>`
      UPDATE flags SET lifetime = 'temporary', created_at = to_timestamp(${ago(60)}::float8), updated_at = to_timestamp(${ago(60)}::float8)
      WHERE project_id = ${tenant.projectId} AND key = 'legacy-banner' RETURNING id`;
    await sql`
      UPDATE flag_environment_states SET enabled = true, rules = ${sql.json([{ id: 'all', conditions: [], variant_key: 'on' }] as never)}, prerequisites = '[]', updated_at = to_timestamp(${ago(20)}::float8)
      WHERE environment_id = ${tenant.environmentId} AND flag_id = ${legacy!.id}`;
    await sql`
      INSERT INTO flag_evaluation_last (environment_id, flag_id, org_id, project_id, last_evaluated_at)
      VALUES (${tenant.environmentId}, ${legacy!.id}, ${tenant.orgId}, ${tenant.projectId}, to_timestamp(${ago(1)}::float8))`;
    // checkout: evaluated EVALUATIONS times through REST, each serving "on" (its default rule).
    for (let i = 0; i < EVALUATIONS; i++) {
      expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/evaluate`, { sdkKey: tenant.rawKey, body: { context_type: 'user', context_key: `u${i}`, flag_key: 'checkout' } }), 200, 'evaluate');
    }
    await eventually(
      'the counts flushed',
      async () => {
        const answer: Json = expectStatus(await client.get(`/v1/environments/${tenant.environmentId}/flags/checkout/insights`, { token: tenant.member.token }), 200, 'insights');
        return answer.series.reduce((sum: number, point: Json) => sum + (point.variants.on ?? 0), 0) === EVALUATIONS;
      },
      15_000,
    );
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    await ts?.stop();
  });

  const rowOf = (page: Page, key: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name: key, exact: true }) });

  test('the flag list shows each status and last evaluation; the Insights tab charts the counts per variant, hourly and daily, and the status in each environment', async () => {
    const page = await signInToConsole(browser, ts.base, tenant.admin, { hash: `#/env/${tenant.environmentId}/flags` });
    const headers = page.getByRole('table').getByRole('columnheader');
    await expectTexts(headers, ['Flag', 'Type', 'Rules', 'Status in production', 'Last evaluated', 'On in production']);
    // checkout: made just now and evaluated (changed within the window): active.
    const checkout = rowOf(page, 'checkout');
    assert.equal(await checkout.locator('.badge[data-status]').innerText(), 'Active');
    assert.match(await checkout.locator('time').innerText(), /^(just now|1 minute ago)$/);
    // fresh: made just now, never evaluated: new.
    assert.equal(await rowOf(page, 'fresh').locator('.badge[data-status]').innerText(), 'New');
    assert.match(await rowOf(page, 'fresh').innerText(), /\bnever\b/);
    // legacy-banner: evaluated a day ago, one variant, unchanged for 20 days: launched.
    const legacy = rowOf(page, 'legacy-banner');
    assert.equal(await legacy.locator('.badge[data-status]').innerText(), 'Launched');
    assert.equal(await legacy.locator('time').innerText(), '1 day ago');

    await checkout.getByRole('link', { name: 'checkout', exact: true }).click();
    await page.getByRole('tab', { name: 'Insights' }).click();
    assert.match(page.url(), /\/flags\/checkout\/insights$/);
    const summary = page.getByTestId('insights-summary');
    await summary.waitFor();
    assert.match(await summary.innerText(), /^Status in production: Active · Last evaluated: (just now|1 minute ago)$/);
    const totals = page.getByRole('table', { name: 'Evaluations per variant' }).getByRole('row');
    const rows = async () => (await totals.allInnerTexts()).map((row) => row.split('\t').map((cell) => cell.trim()));
    await expectTexts(totals.first(), ['Variant\tEvaluations\tShare']);
    assert.deepEqual(await rows(), [['Variant', 'Evaluations', 'Share'], ['on', String(EVALUATIONS), '100.0 %']]);
    const chart = page.getByRole('img', { name: /^Evaluations of checkout in production per variant, the last 7 days, by hour$/ });
    const line = chart.locator('polyline.series');
    assert.equal(await line.count(), 1);
    assert.equal(await line.getAttribute('data-variant'), 'on');
    assert.equal(await line.getAttribute('data-total'), String(EVALUATIONS));
    // 168 hours, one point each; the last (this hour, or the one before when the evaluations ran
    // across an hour) is above the zero line, the earlier ones on it.
    await page.waitForFunction(() => (document.querySelector('polyline.series')?.getAttribute('points') ?? '').split(' ').length === 168, undefined, { timeout: 10_000 }).catch(() => {});
    const points = (await line.getAttribute('points'))!.split(' ').map((p) => p.split(',').map(Number) as [number, number]);
    assert.equal(points.length, 168);
    const zero = Math.max(...points.map(([, y]) => y));
    assert.ok(points.slice(0, 166).every(([, y]) => y === zero), 'no counts before the last two hours');
    assert.ok(points.slice(166).some(([, y]) => y < zero), 'the counts in the last hours');

    await page.getByRole('button', { name: 'Last 90 days, by day (UTC)' }).click();
    await page.getByRole('img', { name: /per variant, the last 90 days, by day \(UTC\)$/ }).waitFor();
    // The chart's title follows the toggle at once; its points follow the daily series when it arrives.
    await page.waitForFunction(() => (document.querySelector('polyline.series')?.getAttribute('points') ?? '').split(' ').length === 90, undefined, { timeout: 10_000 }).catch(() => {});
    assert.equal(await page.getByRole('button', { name: 'Last 90 days, by day (UTC)' }).getAttribute('aria-pressed'), 'true');
    assert.equal((await page.locator('polyline.series').getAttribute('points'))!.split(' ').length, 90);
    assert.deepEqual((await rows())[1], ['on', String(EVALUATIONS), '100.0 %']);

    const environments = page.getByRole('table', { name: 'Status in each environment' }).getByRole('row');
    await expectTexts(environments.nth(1).locator('.badge'), ['Active']);
    assert.match(await environments.nth(1).innerText(), /^production\s+Active\s+(just now|1 minute ago)\s+yes$/);
    assert.match(await page.getByText('Lifecycle stage:').innerText(), /Live/);
    await page.screenshot({ path: artifactPath('flag-insights.png'), fullPage: true });
    await page.context().close();
  });

  test('the Cleanup page lists the flag ready for code removal with its status; a member reads the thresholds; an org admin changes them (a refusal at its field)', async () => {
    const member = await signInToConsole(browser, ts.base, tenant.member, { hash: `#/cleanup/${tenant.projectId}` });
    await member.getByRole('heading', { name: 'Thresholds' }).waitFor();
    assert.equal(await member.getByRole('form', { name: 'Lifecycle thresholds' }).count(), 0);
    assert.match(await member.locator('dl.thresholds').innerText(), /Code removal: minimum age \(days\)\s+30/);
    await member.context().close();

    const page = await signInToConsole(browser, ts.base, tenant.admin, { hash: `#/cleanup/${tenant.projectId}` });
    const ready = page.getByRole('region', { name: 'Ready for code removal (1)' });
    await ready.waitFor();
    assert.match(await page.getByTestId('counted-environments').innerText(), /^Environments that count: production \(all of them: none is critical\)\.$/);
    const rows = ready.getByRole('row');
    assert.deepEqual((await rows.allInnerTexts()).map((row) => row.split('\t').map((cell) => cell.trim())), [
      ['Flag', 'Lifetime', 'Status in production', 'Last evaluated'],
      ['legacy-banner', 'temporary', 'Launched', '1 day ago'],
    ]);
    assert.equal(await ready.getByRole('link', { name: 'legacy-banner' }).getAttribute('href'), `#/env/${tenant.environmentId}/flags/legacy-banner/insights`);
    assert.match(await page.getByRole('region', { name: 'Ready to archive (0)' }).innerText(), /No flag\./);
    assert.equal(await page.getByRole('note').count(), 0, 'not truncated');

    // Out of range: the API's refusal at the field it names; nothing changed.
    const form = page.getByRole('form', { name: 'Lifecycle thresholds' });
    const minimumAge = form.getByLabel('Code removal: minimum age (days)');
    await minimumAge.fill('0');
    await form.getByRole('button', { name: 'Save thresholds' }).click();
    await page.locator('#code_removal_min_age_days-error').waitFor();
    assert.match(await page.locator('#code_removal_min_age_days-error').innerText(), /lifecycle\.code_removal_min_age_days must be a whole number of days from 1 to 365/);
    assert.equal(await minimumAge.getAttribute('aria-invalid'), 'true');
    assert.equal(expectStatus(await client.get(`/v1/projects/${tenant.projectId}/flag-lifecycle`, { token: tenant.member.token }), 200, 'lifecycle').thresholds.code_removal_min_age_days, 30);

    // 90 days: legacy-banner (60 days old) is live again.
    await minimumAge.fill('90');
    await form.getByRole('button', { name: 'Save thresholds' }).click();
    await form.getByRole('status').filter({ hasText: 'Thresholds saved.' }).waitFor();
    await page.getByRole('region', { name: 'Ready for code removal (0)' }).waitFor();
    assert.equal(await page.locator('#code_removal_min_age_days-error').count(), 0);
    assert.equal(await minimumAge.inputValue(), '90');
    const stored: Json = expectStatus(await client.get(`/v1/projects/${tenant.projectId}/flag-lifecycle`, { token: tenant.member.token }), 200, 'lifecycle');
    assert.deepEqual(stored.thresholds, { status_window_days: 7, code_removal_min_age_days: 90, archive_after_days: 30, unchanged_fallback_days: 14 });
    await page.screenshot({ path: artifactPath('flag-cleanup.png'), fullPage: true });
    await page.context().close();
  });
});
