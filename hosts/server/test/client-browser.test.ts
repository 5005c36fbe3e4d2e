import assert from 'node:assert/strict';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { artifactPath, chromiumExecutable, launchChromium } from './support/browser.ts';
import { signContextToken, startPageServer } from './support/client-page/page-server.ts';
import { ACTIVE, createExperiment, moveThrough, splitFlag } from './support/experiment-fixtures.ts';
import { eventually } from './support/flag-fixtures.ts';
import { envFlags, put } from './support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Browser apps on the STOCK OpenFeature packages (issue 32, docs/client-side.md): a page served
// from another origin than Switchyard's loads @openfeature/web-sdk + @openfeature/ofrep-web-provider
// (bundled here by esbuild, with @openfeature/react-sdk and @switchyard/web) in a real Chromium, and
// does what an app does. Every expectation is derived by hand from the flags set up below, not from
// the code under test. Runs on both topologies (a gateway in front of the services too).

const chromiumCheck = chromiumExecutable();
const PAGE_ENTRY = fileURLToPath(new URL('./support/client-page/page.js', import.meta.url));
const ROOT = path.resolve(path.dirname(PAGE_ENTRY), '../../../../..');
/** The per-(client key, address) evaluation bucket of this server: small, so a flood reaches it quickly. */
const EVALUATION_BURST = 40;

describe('browser apps with the stock OpenFeature packages, in Chromium', { skip: chromiumCheck.reason ?? false }, () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;
  let browser: Browser;
  let bundle: string;
  /** The app's origin (allowed on the client keys below) and another site's (never allowed). */
  let app: { origin: string; close(): Promise<void> };
  let elsewhere: { origin: string; close(): Promise<void> };

  before(async () => {
    ts = await startTestServer({
      // Limits low enough for the 429 scenario to reach in a few dozen requests (docs/client-side.md "6. Limits").
      CLIENT_EVALUATION_RATE_PER_ADDRESS: '1',
      CLIENT_EVALUATION_BURST_PER_ADDRESS: String(EVALUATION_BURST),
      CLIENT_EVALUATION_RATE_PER_KEY: '1',
      CLIENT_EVALUATION_BURST_PER_KEY: String(EVALUATION_BURST * 2),
      SSO_SECRETS_KEY: 'client-browser-test-secrets-key-0123456789',
    });
    client = api(ts.base);
    const root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'client-browser');
    const built = await build({
      entryPoints: [PAGE_ENTRY],
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      write: false,
      logLevel: 'silent',
      absWorkingDir: ROOT,
      define: { 'process.env.NODE_ENV': '"production"' },
    });
    bundle = built.outputFiles[0]!.text;
    [app, elsewhere] = await Promise.all([startPageServer(bundle), startPageServer(bundle)]);
    browser = await launchChromium();

    // headline: 'pro-headline' for plan=pro, else the default 'basic-headline'; client-visible.
    await createVisibleFlag('headline', {
      value_type: 'string',
      variants: [{ key: 'basic', value: 'basic-headline' }, { key: 'pro', value: 'pro-headline' }],
      off_variant_key: 'basic',
      rules: [{ id: 'pro-plan', conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }], variant_key: 'pro' }],
    });
    // secret-plan: NOT client-visible (the default for new flags): a client key never sees it.
    expectStatus(
      await client.post(envFlags(tenant.environmentId), {
        token: tenant.admin.token,
        body: { flag: { key: 'secret-plan', value_type: 'string', variants: [{ key: 'x', value: 'unreleased' }], off_variant_key: 'x', rules: [] }, enabled: true },
      }),
      201,
      'create hidden flag',
    );
  });

  after(async () => {
    await browser?.close();
    await app?.close();
    await elsewhere?.close();
    await ts?.stop();
  });

  async function createVisibleFlag(key: string, flag: Record<string, unknown>): Promise<void> {
    expectStatus(await client.post(envFlags(tenant.environmentId), { token: tenant.admin.token, body: { flag: { key, ...flag }, enabled: true, client_visible: true } }), 201, `create ${key}`);
  }

  /** A client key of the tenant's environment (default: the app's origin only, no signing). */
  async function clientKey(settings: Record<string, unknown> = {}): Promise<{ id: string; raw: string }> {
    const body = { kind: 'client', name: `browser-${Math.random().toString(36).slice(2, 8)}`, allowed_origins: [app.origin], ...settings };
    const key = expectStatus(await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token, body }), 201, 'create client key');
    assert.match(key.raw_key, /^ck_/);
    // The instance answering (a gateway in the split topology) hears of the key and re-reads the
    // origins it answers preflights from: a moment later, not at once.
    const origins = (settings.allowed_origins as string[] | undefined) ?? [app.origin];
    for (const origin of origins) {
      await eventually(`the preflight allows ${origin}`, async () => {
        const answer = await fetch(`${ts.base}/ofrep/v1/evaluate/flags`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } });
        return answer.status === 204;
      });
    }
    return { id: key.sdk_key_id, raw: key.raw_key };
  }

  /** A fresh browser session on `origin`'s page, with the bundle loaded (window.sy). */
  async function openPage(origin = app.origin): Promise<Page> {
    const context = await browser.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(origin + '/');
    await page.waitForFunction(() => document.title === 'switchyard client page ready', undefined, { timeout: 15_000 }).catch(() => {
      throw new Error(`the page bundle did not start: ${problems.join('; ')}`);
    });
    return page;
  }

  type StartOptions = { bootstrap?: Json; clientKey: string; context?: Record<string, unknown>; token?: string; pollInterval?: number; changeDetection?: string; headers?: [string, string][]; reactFlag?: string; baseUrl?: string };
  const start = (page: Page, options: StartOptions): Promise<{ ready: boolean; error?: string }> =>
    page.evaluate((o) => (window as any).sy.start(o), { baseUrl: ts.base, environmentId: tenant.environmentId, ...options });
  const read = (page: Page, flagKey: string, type = 'String', fallback: unknown = 'fallback'): Promise<{ value: unknown; variant: string | null; reason: string | null; errorCode: string | null }> =>
    page.evaluate(([t, k, d]) => (window as any).sy.read(t, k, d), [type, flagKey, fallback] as const);
  const calls = (page: Page): Promise<Array<{ at: number; status?: number; etag?: string | null; retryAfter?: string | null; ifNoneMatch?: string | null; body?: Json; error?: string }>> =>
    page.evaluate(() => (window as any).sy.calls);
  const raw = (page: Page, url: string, init: Record<string, unknown>): Promise<{ status?: number; etag?: string | null; retryAfter?: string | null; text?: string; error?: string }> =>
    page.evaluate(([u, i]) => (window as any).sy.raw(u, i), [url, init] as const);
  const bulkFetch = (key: string, context: Record<string, unknown>) => ({
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify({ context }),
  });

  test('preflight: an allowed origin gets 204 with the CORS headers the stock provider needs; an unknown one 403 without them', async () => {
    await clientKey(); // the app's origin is in the union of allowed origins from now on
    const preflight = (origin: string) =>
      fetch(`${ts.base}/ofrep/v1/evaluate/flags`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-api-key,if-none-match,authorization' },
      });
    const allowed = await preflight(app.origin);
    assert.equal(allowed.status, 204);
    assert.equal(allowed.headers.get('access-control-allow-origin'), app.origin);
    const allowedHeaders = (allowed.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/);
    for (const header of ['authorization', 'content-type', 'if-none-match', 'x-api-key']) assert.ok(allowedHeaders.includes(header), `preflight allows ${header}`);
    assert.match(allowed.headers.get('access-control-allow-methods') ?? '', /POST/);
    assert.ok(Number(allowed.headers.get('access-control-max-age')) > 0);
    assert.match(allowed.headers.get('vary') ?? '', /origin/i);
    assert.equal(allowed.headers.get('access-control-allow-credentials'), null);
    const refused = await preflight(elsewhere.origin);
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get('access-control-allow-origin'), null);
  });

  test('values arrive in the stock provider and the React SDK; a second fetch is a 304 (the ETag is readable); a hidden flag is FLAG_NOT_FOUND', async () => {
    const key = await clientKey();
    const page = await openPage();
    // Polling, so the provider sends its ETag back (If-None-Match) while nothing changes.
    const started = await start(page, { clientKey: key.raw, context: { targetingKey: 'visitor-1', plan: 'pro' }, pollInterval: 300, changeDetection: 'polling', reactFlag: 'headline' });
    assert.deepEqual(started, { ready: true });
    assert.deepEqual(await read(page, 'headline'), { value: 'pro-headline', variant: 'pro', reason: 'TARGETING_MATCH', errorCode: null });
    await page.locator('#react-value', { hasText: 'pro-headline' }).waitFor({ timeout: 5000 });

    // The hidden flag: absent from the bulk answer, so the stock provider says FLAG_NOT_FOUND,
    // exactly as for a flag that does not exist.
    const hidden = await read(page, 'secret-plan');
    const missing = await read(page, 'no-such-flag');
    assert.deepEqual(hidden, { value: 'fallback', variant: null, reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' });
    assert.deepEqual(hidden, missing);
    const first = (await calls(page))[0]!;
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.flags.map((f: Json) => f.key).sort(), ['headline'], 'only client-visible flags are in the bulk answer');
    assert.deepEqual(Object.keys(first.body.flags[0]).sort().filter((k) => k !== 'metadata'), ['key', 'reason', 'value', 'variant']);
    assert.doesNotMatch(JSON.stringify(first.body), /pro-plan|unreleased|rule_id/, 'no rule ids, no hidden values');

    // The second fetch carries the ETag the page could read, and is answered 304.
    assert.match(first.etag ?? '', /.+/, 'the ETag header is exposed to the page');
    await page.waitForFunction(() => (window as any).sy.calls.some((c: any) => c.status === 304), undefined, { timeout: 10_000 });
    const later = (await calls(page)).find((c) => c.status === 304)!;
    assert.equal(later.ifNoneMatch, first.etag);
    assert.equal(await page.locator('#react-value').innerText(), 'pro-headline');
    // The single-flag route says the same (FLAG_NOT_FOUND, 404) for the hidden and the missing flag.
    for (const flagKey of ['secret-plan', 'no-such-flag']) {
      const single = await fetch(`${ts.base}/ofrep/v1/evaluate/flags/${flagKey}`, { ...bulkFetch(key.raw, { targetingKey: 'visitor-1' }), headers: { ...bulkFetch(key.raw, {}).headers, origin: app.origin } });
      assert.equal(single.status, 404);
      const answer = await single.json();
      assert.equal(answer.errorCode, 'FLAG_NOT_FOUND');
      assert.doesNotMatch(JSON.stringify(answer), /unreleased|hidden|visible/i);
    }
    await page.screenshot({ path: artifactPath('client-page.png') });
    await page.context().close();
  });

  test('a flag change reaches the page through the event stream, without a reload and without polling', async () => {
    await createVisibleFlag('live-banner', { value_type: 'string', variants: [{ key: 'a', value: 'first' }, { key: 'b', value: 'second' }], off_variant_key: 'a', rules: [] });
    const key = await clientKey();
    const page = await openPage();
    assert.deepEqual(await start(page, { clientKey: key.raw, context: { targetingKey: 'visitor-2' }, pollInterval: 0, reactFlag: 'live-banner' }), { ready: true });
    const [first] = await calls(page);
    const streams = first!.body.eventStreams;
    assert.ok(Array.isArray(streams) && streams.length === 1 && streams[0].type === 'sse', `the bulk answer names an SSE stream: ${JSON.stringify(first!.body)}`);
    assert.equal(typeof streams[0].endpoint?.requestUri, 'string');
    assert.ok(streams[0].inactivityDelaySec > 0);
    assert.equal((await read(page, 'live-banner')).value, 'first');
    await page.locator('#react-value', { hasText: 'first' }).waitFor();
    const loadId = await page.evaluate(() => (window as any).sy.loadId);
    // The stream is open before the change (the provider connects right after its first answer).
    await sleep(500);

    // The change: every context now gets variant b.
    expectStatus(
      await put(client, `${envFlags(tenant.environmentId)}/live-banner/rules`, { token: tenant.admin.token, body: { rules: [{ id: 'all', conditions: [], variant_key: 'b' }] } }),
      202,
      'change rules',
    );
    await page.locator('#react-value', { hasText: 'second' }).waitFor({ timeout: 10_000 });
    assert.equal((await read(page, 'live-banner')).value, 'second');
    assert.equal(await page.evaluate(() => (window as any).sy.loadId), loadId, 'the same page: no reload');
    const changed = await page.evaluate(() => (window as any).sy.events.filter((e: any) => e.type === 'PROVIDER_CONFIGURATION_CHANGED'));
    assert.ok(changed.some((e: Json) => (e.flagsChanged ?? []).includes('live-banner')), JSON.stringify(changed));
    assert.ok((await calls(page)).length >= 2, 'refetched when the stream said so (polling is off)');
    await page.context().close();
  });

  test('a disallowed origin fails: the provider cannot start, and the answer is not readable by the page', async () => {
    const key = await clientKey(); // allows the app's origin only
    const page = await openPage(elsewhere.origin);
    const started = await start(page, { clientKey: key.raw, context: { targetingKey: 'visitor-3', plan: 'pro' } });
    assert.equal(started.ready, false);
    const plain = await raw(page, `${ts.base}/ofrep/v1/evaluate/flags`, bulkFetch(key.raw, { targetingKey: 'visitor-3' }));
    assert.match(plain.error ?? '', /Failed to fetch/, 'the browser blocks the answer (no CORS headers for this origin)');
    // What the server said, seen from outside a browser: refused, without CORS headers.
    const direct = await fetch(`${ts.base}/ofrep/v1/evaluate/flags`, { ...bulkFetch(key.raw, { targetingKey: 'visitor-3' }), headers: { ...bulkFetch(key.raw, {}).headers, origin: elsewhere.origin } });
    assert.equal(direct.status, 403);
    assert.equal(direct.headers.get('access-control-allow-origin'), null);
    await page.context().close();
  });

  test('a 429 is honoured: Retry-After is readable, and the stock provider sends nothing until it has passed', async () => {
    const key = await clientKey();
    const page = await openPage();
    assert.deepEqual(await start(page, { clientKey: key.raw, context: { targetingKey: 'visitor-4' }, pollInterval: 250, changeDetection: 'polling' }), { ready: true });
    // The page empties the key's bucket for this address while the provider keeps polling.
    const flood = await page.evaluate(
      ([url, key]) => (window as any).sy.flood({ url, headers: { 'content-type': 'application/json', 'x-api-key': key }, max: 3000, untilProviderLimited: true }),
      [`${ts.base}/ofrep/v1/evaluate/flags`, key.raw] as const,
    );
    assert.ok(flood.first429, `a 429 within ${flood.sent} requests`);
    assert.match(flood.first429.retryAfter ?? '', /^\d+$/, 'Retry-After is exposed to the page');
    assert.ok(flood.providerLimited, 'the provider itself got a 429');
    const log = await calls(page);
    const limited = log.findIndex((c) => c.status === 429);
    const retryAfterMs = Number(log[limited]!.retryAfter) * 1000;
    assert.ok(retryAfterMs >= 1000, `Retry-After read by the provider: ${log[limited]!.retryAfter}`);
    // Without Retry-After the provider would poll again 250 ms later.
    await sleep(retryAfterMs + 1000);
    const next = (await calls(page))[limited + 1];
    assert.ok(next !== undefined, 'the provider polls again once Retry-After has passed');
    assert.ok(next.at - log[limited]!.at >= retryAfterMs - 50, `next poll ${next.at - log[limited]!.at} ms after the 429 (Retry-After ${retryAfterMs} ms)`);
    await page.context().close();
  });

  test('a signed context is required and honoured: no token, 401; the token\'s attributes win over the page\'s', async () => {
    // context_signing "context": the targeting key must be the token's sub, and the attributes it vouches for come from it only.
    const key = await clientKey({ context_signing: 'context' });
    const secret = expectStatus(
      await client.post(`/v1/management/environments/${tenant.environmentId}/context-signing-secrets`, { token: tenant.admin.token }),
      201,
      'create signing secret',
    );
    assert.equal(typeof secret.kid, 'string');
    assert.equal(typeof secret.secret, 'string');
    const now = Math.floor(Date.now() / 1000);
    const token = (claims: Record<string, unknown>) => signContextToken(secret.secret, secret.kid, { ck: key.id, iat: now, exp: now + 600, ...claims });

    // Without a token: refused, and the provider does not start.
    const unsigned = await openPage();
    const refused = await start(unsigned, { clientKey: key.raw, context: { targetingKey: 'signed-user', plan: 'pro' } });
    assert.equal(refused.ready, false);
    assert.equal((await calls(unsigned))[0]!.status, 401);
    await unsigned.context().close();

    // A token for another targeting key: refused too.
    const stolen = await openPage();
    const mismatch = await start(stolen, { clientKey: key.raw, context: { targetingKey: 'someone-else' }, token: token({ sub: 'signed-user', ctx: { plan: 'basic' } }) });
    assert.equal(mismatch.ready, false);
    assert.ok([401, 403].includes((await calls(stolen))[0]!.status!), JSON.stringify(await calls(stolen)));
    await stolen.context().close();

    // A token vouching plan=basic while the page claims plan=pro: the token wins (basic-headline).
    const signed = await openPage();
    const ok = await start(signed, { clientKey: key.raw, context: { targetingKey: 'signed-user', plan: 'pro' }, token: token({ sub: 'signed-user', ctx: { plan: 'basic' } }) });
    assert.deepEqual(ok, { ready: true });
    assert.deepEqual(await read(signed, 'headline'), { value: 'basic-headline', variant: 'basic', reason: 'DEFAULT', errorCode: null });
    await signed.context().close();

    // And vouching plan=pro: pro-headline, whatever the page claims.
    const pro = await openPage();
    assert.deepEqual(await start(pro, { clientKey: key.raw, context: { targetingKey: 'signed-user', plan: 'basic' }, token: token({ sub: 'signed-user', ctx: { plan: 'pro' } }) }), { ready: true });
    assert.equal((await read(pro, 'headline')).value, 'pro-headline');
    await pro.context().close();
  });

  test('a server key from the page is refused (403), and no value arrives', async () => {
    await clientKey(); // the app's origin passes the preflight; the server key must still be refused
    const page = await openPage();
    const started = await start(page, { clientKey: 'ck_placeholder', headers: [['X-API-Key', tenant.rawKey]], context: { targetingKey: 'visitor-5', plan: 'pro' } });
    assert.equal(started.ready, false);
    const [call] = await calls(page);
    assert.ok(call!.status === 403 || /Failed to fetch/.test(call!.error ?? ''), JSON.stringify(call));
    assert.equal(call!.body, undefined, 'no flag values reached the page');
    // Outside a browser, the same request with that Origin: 403 with a message that says what to do.
    const direct = await fetch(`${ts.base}/ofrep/v1/evaluate/flags`, { ...bulkFetch(tenant.rawKey, {}), headers: { ...bulkFetch(tenant.rawKey, {}).headers, origin: app.origin } });
    assert.equal(direct.status, 403);
    assert.match(await direct.text(), /client key/i);
    await page.context().close();
  });

  test('reading a flag under an active experiment reports one exposure from the page; track sends a client-allowed event', async () => {
    await createVisibleFlag('exp-checkout', { ...splitFlag('exp-checkout').flag, key: 'exp-checkout' });
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/event-definitions`, { token: tenant.admin.token, body: { key: 'web-purchase', value_type: 'bool', client_allowed: true } }),
      202,
      'define a client-allowed metric',
    );
    const experiment = await createExperiment(client, tenant, { flag_key: 'exp-checkout', metric_keys: ['web-purchase'] });
    await moveThrough(client, tenant, String(experiment.id), [ACTIVE]);
    const key = await clientKey();
    const page = await openPage();
    assert.deepEqual(await start(page, { clientKey: key.raw, context: { targetingKey: 'buyer-1' } }), { ready: true });
    const seen = await read(page, 'exp-checkout');
    assert.ok(seen.variant === 'control' || seen.variant === 'treatment', JSON.stringify(seen));
    await read(page, 'exp-checkout'); // read twice: reported once
    await page.evaluate(() => (window as any).sy.track('web-purchase'));
    await page.evaluate(() => (window as any).sy.flush());
    const sends = await page.evaluate(() => (window as any).sy.sends);
    const exposures = sends.filter((s: Json) => s.url.endsWith('/exposures'));
    assert.equal(exposures.length, 1);
    assert.deepEqual(exposures[0].body.exposures.map((e: Json) => [e.flag_key, e.variant_key, e.context_key]), [['exp-checkout', seen.variant, 'buyer-1']]);
    assert.equal(exposures[0].status, 202, JSON.stringify(exposures[0]));
    assert.equal(exposures[0].answer.accepted_count, 1);
    const events = sends.filter((s: Json) => s.url.endsWith('/events/batch'));
    assert.equal(events[0]?.status, 202, JSON.stringify(events));
    assert.equal(events[0].answer.accepted_count, 1);
    const [row] = await ts.db.sql<{ variant_key: string }[]>`
      SELECT variant_key FROM exposures WHERE environment_id = ${tenant.environmentId} AND flag_key = 'exp-checkout' AND context_key = 'buyer-1'`;
    assert.equal(row?.variant_key, seen.variant, 'stored as the variant the page was served');
    await page.context().close();
  });

  test('a same-origin app (its server proxies OFREP) needs no CORS: the stock provider evaluates through the proxy', async () => {
    // Also the harness's own check: the bundle, the page and the provider work before any CORS answer does.
    const proxied = await startPageServer(bundle, ts.base);
    // The proxy passes the browser's Origin on (Chromium sends it with a same-origin POST): the page's own.
    // Two keys, one per page below: the evaluation bucket is per (key, address), and a page that polls
    // faster than the bucket refills (1 per second here) would meet a 429 on a slow machine.
    const key = await clientKey({ allowed_origins: [proxied.origin] });
    const bootstrapKey = await clientKey({ allowed_origins: [proxied.origin] });
    try {
      const page = await openPage(proxied.origin);
      const started = await start(page, {
        clientKey: key.raw,
        baseUrl: proxied.origin,
        // OFREP's other scheme for the key: the Authorization header, as a server-side proxy may send it.
        headers: [['Authorization', `Bearer ${key.raw}`]],
        context: { targetingKey: 'visitor-6', plan: 'pro' },
        pollInterval: 1000,
        changeDetection: 'polling',
        reactFlag: 'headline',
      });
      assert.deepEqual(started, { ready: true });
      assert.equal((await read(page, 'headline')).value, 'pro-headline');
      await page.locator('#react-value', { hasText: 'pro-headline' }).waitFor({ timeout: 5000 });
      await page.waitForFunction(() => (window as any).sy.calls.some((c: any) => c.status === 304), undefined, { timeout: 20_000 });
      await page.context().close();

      // Server-side rendering: the page starts from the answer its server rendered (no request, no
      // flash), and the next request goes to Switchyard.
      const bootstrapped = await openPage(proxied.origin);
      const bootstrap = { flags: [{ key: 'headline', value: 'rendered-by-the-server', variant: 'pro', reason: 'TARGETING_MATCH' }] };
      const ready = await start(bootstrapped, { clientKey: bootstrapKey.raw, baseUrl: proxied.origin, headers: [['Authorization', `Bearer ${bootstrapKey.raw}`]], context: { targetingKey: 'visitor-6', plan: 'pro' }, pollInterval: 1000, bootstrap });
      assert.deepEqual(ready, { ready: true });
      assert.equal((await read(bootstrapped, 'headline')).value, 'rendered-by-the-server');
      assert.equal((await calls(bootstrapped)).length, 0, 'ready without a request');
      await bootstrapped.waitForFunction(() => (window as any).sy.calls.some((c: any) => c.status === 200), undefined, { timeout: 20_000 });
      await bootstrapped.waitForFunction(() => (window as any).sy.read('String', 'headline', 'x').value === 'pro-headline', undefined, { timeout: 10_000 });
      await bootstrapped.context().close();
    } finally {
      await proxied.close();
    }
  });
});

describe('native apps (no Origin header), as the stock OFREP Kotlin/Swift providers call', () => {
  let ts: TestServer;
  let client: ApiClient;
  let tenant: Tenant;

  before(async () => {
    ts = await startTestServer();
    client = api(ts.base);
    tenant = await seedTenant(client, (await loginAdmin(client)).token, 'client-native');
    expectStatus(
      await client.post(envFlags(tenant.environmentId), {
        token: tenant.admin.token,
        body: { flag: { key: 'native-flag', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [{ id: 'all', conditions: [], variant_key: 'on' }] }, enabled: true, client_visible: true },
      }),
      201,
      'create flag',
    );
  });
  after(() => ts?.stop());

  const keyWith = async (allowMissingOrigin: boolean) =>
    expectStatus(
      await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, {
        token: tenant.admin.token,
        body: { kind: 'client', name: `native-${allowMissingOrigin}`, allowed_origins: ['https://app.example.com'], allow_missing_origin: allowMissingOrigin },
      }),
      201,
      'create client key',
    ).raw_key as string;

  // Node's fetch sends no Origin header: what a native app's HTTP client sends.
  const evaluate = (key: string) =>
    fetch(`${ts.base}/ofrep/v1/evaluate/flags`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ context: { targetingKey: 'device-1' } }) });

  test('without allow_missing_origin a request without Origin is refused; with it, values arrive', async () => {
    const browserOnly = await evaluate(await keyWith(false));
    assert.equal(browserOnly.status, 403);
    const native = await evaluate(await keyWith(true));
    assert.equal(native.status, 200);
    const body = await native.json();
    assert.deepEqual(body.flags.map((f: Json) => [f.key, f.value, f.variant]), [['native-flag', true, 'on']]);
  });
});
