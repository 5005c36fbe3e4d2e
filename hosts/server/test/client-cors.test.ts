import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type ApiResponse, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { eventually } from './support/flag-fixtures.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// CORS and origins (docs/client-side.md "CORS and origins"), in whichever topology TEST_TOPOLOGY
// names (npm test runs both). Expected headers are written out here from the rules, not
// read from the code under test.

const PUBLIC_URL = 'https://flags.example.test';
const APP = 'https://app.example.com';
const SHOP_PATTERN = 'https://*.shop.example.com';
const OTHER_KEYS_ORIGIN = 'https://partner.example.org';

const BULK = '/ofrep/v1/evaluate/flags';
const SINGLE = (key: string) => `/ofrep/v1/evaluate/flags/${encodeURIComponent(key)}`;

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
/** A client key for APP and any subdomain of shop.example.com. */
let web: { id: string; raw: string };
/** Another client key (same tenant) for OTHER_KEYS_ORIGIN only: its origin passes preflights. */
let partner: { id: string; raw: string };
/** A native-app client key: no Origin allowed. */
let mobile: { id: string; raw: string };

const keysPath = (tenant: Tenant) => `/v1/management/environments/${tenant.environmentId}/sdk-keys`;

async function createClientKey(tenant: Tenant, body: Record<string, unknown>): Promise<{ id: string; raw: string }> {
  const created = expectStatus(await client.post(keysPath(tenant), { token: tenant.admin.token, body: { kind: 'client', name: 'web', ...body } }), 201, 'create client key');
  return { id: created.sdk_key_id, raw: created.raw_key };
}

const preflight = (path: string, origin: string | undefined, method = 'POST', extra: Record<string, string> = {}): Promise<ApiResponse> =>
  client.request('OPTIONS', path, {
    headers: {
      ...(origin === undefined ? {} : { origin }),
      'access-control-request-method': method,
      'access-control-request-headers': 'content-type,x-api-key,authorization,if-none-match',
      ...extra,
    },
  });

const ofrep = (path: string, headers: Record<string, string>, body: unknown = { context: { targetingKey: 'user-1' } }): Promise<ApiResponse> =>
  client.post(path, { headers, body });

/** Every `access-control-*` header of an answer. */
const corsHeaders = (response: ApiResponse): string[] => {
  const names: string[] = [];
  response.headers.forEach((_value, name) => {
    if (name.startsWith('access-control-')) names.push(name);
  });
  return names;
};

async function metric(name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${ts.base}/metrics`)).text();
  const line = text.split('\n').find((entry) => entry.startsWith(`${name}${labels} `) || (labels === '' && entry.startsWith(`${name} `)));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

before(async () => {
  ts = await startTestServer({ PUBLIC_URL });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'cors-a');
  web = await createClientKey(a, { allowed_origins: [APP, SHOP_PATTERN] });
  partner = await createClientKey(a, { name: 'partner', allowed_origins: [OTHER_KEYS_ORIGIN] });
  mobile = await createClientKey(a, { name: 'ios', allowed_origins: [], allow_missing_origin: true });
  // A gateway loads an environment's definitions over FlagService.Sync with the credential of the
  // first caller, which a client key may not open (PERMISSION_DENIED): one server-key evaluation
  // opens it for everyone. That gap is client-key-access.test.ts's; these tests are about origins.
  expectStatus(await ofrep(BULK, { 'x-sdk-key': a.rawKey }), 200, 'server-key evaluation opens the environment');
  // The union is re-read on each key notice: wait until this instance has heard of all three.
  await eventually('the preflight union holds the new keys’ origins', async () => {
    const answers = await Promise.all([preflight(BULK, APP), preflight(BULK, OTHER_KEYS_ORIGIN)]);
    return answers.every((response) => response.status === 204);
  });
});
after(() => ts.stop());

describe('preflight (OPTIONS), answered before authentication from the union of client keys’ origins', () => {
  test('an allowed origin: 204 echoing it, with methods, headers, max age and Vary; never credentials', async () => {
    const response = await preflight(BULK, APP);
    assert.equal(response.status, 204);
    assert.equal(response.text, '');
    assert.equal(response.headers.get('access-control-allow-origin'), APP);
    assert.equal(response.headers.get('access-control-allow-methods'), 'POST');
    const allowed = (response.headers.get('access-control-allow-headers') ?? '').split(',').map((name) => name.trim().toLowerCase());
    for (const header of ['authorization', 'content-type', 'if-none-match', 'x-api-key']) assert.ok(allowed.includes(header), `allows ${header}`);
    const maxAge = Number(response.headers.get('access-control-max-age'));
    assert.ok(Number.isInteger(maxAge) && maxAge > 0, `a max age (${maxAge})`);
    assert.match(response.headers.get('vary') ?? '', /\bOrigin\b/i);
    assert.equal(response.headers.get('access-control-allow-credentials'), null);
  });

  test('every client route answers its preflight: single flag, exposures, events and event batches', async () => {
    for (const path of [SINGLE('any-flag'), `/v1/environments/${a.environmentId}/exposures`, `/v1/environments/${a.environmentId}/events`, `/v1/environments/${a.environmentId}/events/batch`]) {
      const response = await preflight(path, APP);
      assert.equal(response.status, 204, path);
      assert.equal(response.headers.get('access-control-allow-origin'), APP, path);
    }
  });

  test('a subdomain at any depth of a wildcard entry passes; the bare domain and look-alikes do not', async () => {
    for (const origin of ['https://eu.shop.example.com', 'https://a.b.shop.example.com']) {
      const response = await preflight(BULK, origin);
      assert.equal(response.status, 204, origin);
      assert.equal(response.headers.get('access-control-allow-origin'), origin);
    }
    for (const origin of ['https://shop.example.com', 'https://evilshop.example.com', 'http://eu.shop.example.com', 'https://eu.shop.example.com:8443', 'https://eu.shop.example.com.evil.test']) {
      const response = await preflight(BULK, origin);
      assert.equal(response.status, 403, origin);
      assert.deepEqual(corsHeaders(response), [], `no CORS header for ${origin}`);
    }
  });

  test('an unknown origin, or none, gets 403 without any CORS header', async () => {
    for (const origin of ['https://evil.example.net', 'null', `${APP}/`, 'https://APP.example.com', undefined]) {
      const response = await preflight(BULK, origin);
      assert.equal(response.status, 403, String(origin));
      assert.deepEqual(corsHeaders(response), [], String(origin));
      assert.equal(response.body.code, 'PERMISSION_DENIED');
    }
  });

  test('a preflight is not authenticated: a bogus key or a server key changes nothing', async () => {
    const credentials: Array<Record<string, string>> = [{ 'x-api-key': 'ck_bogus' }, { authorization: 'Bearer nonsense' }, { 'x-sdk-key': a.rawKey }];
    for (const headers of credentials) {
      assert.equal((await preflight(BULK, APP, 'POST', headers)).status, 204);
      assert.equal((await preflight(BULK, 'https://evil.example.net', 'POST', headers)).status, 403);
    }
  });
});

describe('the actual request: the key authenticates, then the Origin must be in that key’s own list', () => {
  test('an allowed origin: 200 echoing it, exposing ETag and Retry-After, Vary: Origin, no credentials', async () => {
    for (const origin of [APP, 'https://eu.shop.example.com']) {
      const response = await ofrep(BULK, { origin, 'x-api-key': web.raw });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.headers.get('access-control-allow-origin'), origin);
      const exposed = (response.headers.get('access-control-expose-headers') ?? '').split(',').map((name) => name.trim().toLowerCase());
      assert.ok(exposed.includes('etag') && exposed.includes('retry-after'), `exposes ETag and Retry-After: ${exposed.join(',')}`);
      assert.match(response.headers.get('vary') ?? '', /\bOrigin\b/i);
      assert.equal(response.headers.get('access-control-allow-credentials'), null);
      assert.equal(response.headers.get('set-cookie'), null);
    }
  });

  test('a 304 keeps the CORS headers, so the page can see it and its ETag', async () => {
    const first = await ofrep(BULK, { origin: APP, 'x-api-key': web.raw });
    const etag = first.headers.get('etag');
    assert.ok(etag, 'an ETag');
    const second = await ofrep(BULK, { origin: APP, 'x-api-key': web.raw, 'if-none-match': etag });
    assert.equal(second.status, 304);
    assert.equal(second.headers.get('access-control-allow-origin'), APP);
    assert.equal(second.headers.get('etag'), etag);
  });

  test('an error answer for an admitted request keeps them too (the page can read why)', async () => {
    const response = await ofrep(SINGLE('no-such-flag'), { origin: APP, 'x-api-key': web.raw });
    assert.equal(response.status, 404);
    assert.equal(response.headers.get('access-control-allow-origin'), APP);
  });

  test('attack: an origin allowed by another client key (so its preflight passes) is refused for this key', async () => {
    assert.equal((await preflight(BULK, OTHER_KEYS_ORIGIN)).status, 204, 'the preflight passes: another key allows it');
    const response = await ofrep(BULK, { origin: OTHER_KEYS_ORIGIN, 'x-api-key': web.raw });
    assert.equal(response.status, 403);
    assert.deepEqual(corsHeaders(response), []);
    assert.match(response.body.errorDetails, /not in this client key's allowed_origins/);
    // The same origin is fine with the key that lists it.
    assert.equal((await ofrep(BULK, { origin: OTHER_KEYS_ORIGIN, 'x-api-key': partner.raw })).status, 200);
  });

  test('attack: an origin in no list is refused on every client route, whatever the route', async () => {
    const evil = 'https://evil.example.net';
    assert.equal((await ofrep(BULK, { origin: evil, 'x-api-key': web.raw })).status, 403);
    assert.equal((await ofrep(SINGLE('f'), { origin: evil, 'x-api-key': web.raw })).status, 403);
    for (const path of [`/v1/environments/${a.environmentId}/exposures`, `/v1/environments/${a.environmentId}/events/batch`]) {
      const response = await client.post(path, { headers: { origin: evil, 'x-api-key': web.raw }, body: [] });
      assert.equal(response.status, 403, path);
      assert.equal(response.body.code, 'PERMISSION_DENIED');
      assert.deepEqual(corsHeaders(response), []);
    }
  });

  test('no Origin (a native app): refused unless the key has allow_missing_origin', async () => {
    const browserKey = await ofrep(BULK, { 'x-api-key': web.raw });
    assert.equal(browserKey.status, 403);
    assert.match(browserKey.body.errorDetails, /allow_missing_origin/);
    const nativeKey = await ofrep(BULK, { 'x-api-key': mobile.raw });
    assert.equal(nativeKey.status, 200, nativeKey.text);
    assert.equal(nativeKey.headers.get('access-control-allow-origin'), null, 'no Origin, nothing to echo');
    // allow_missing_origin is not "any origin": the native key has no origins, so a page cannot use it.
    assert.equal((await ofrep(BULK, { origin: APP, 'x-api-key': mobile.raw })).status, 403);
  });

  test('cookies are ignored: a cookie authenticates nothing, and no answer sets or allows one', async () => {
    const login = await client.post('/v1/auth/login', { body: { email: a.admin.email, password: a.admin.password } });
    const cookie = login.headers.get('set-cookie') ?? 'session=whatever';
    const response = await ofrep(BULK, { origin: APP, cookie });
    assert.equal(response.status, 401);
    const withKey = await ofrep(BULK, { origin: APP, cookie, 'x-api-key': web.raw });
    assert.equal(withKey.status, 200);
    assert.equal(withKey.headers.get('access-control-allow-credentials'), null);
    assert.equal(withKey.headers.get('set-cookie'), null);
  });
});

describe('the union follows the keys: created, changed and revoked keys reach the preflight answers', () => {
  test('a new key’s origin passes once created; removed by PATCH or by revocation, it is refused again', async () => {
    const origin = 'https://new.example.com';
    assert.equal((await preflight(BULK, origin)).status, 403, 'unknown before');
    const key = await createClientKey(a, { name: 'new', allowed_origins: [origin] });
    await eventually('the created key’s origin is allowed', async () => (await preflight(BULK, origin)).status === 204);
    const patched = await client.request('PATCH', `${keysPath(a)}/${key.id}`, { token: a.admin.token, body: { allowed_origins: ['https://renamed.example.com'] } });
    expectStatus(patched, 200, 'patch origins');
    await eventually('the removed origin is refused', async () => (await preflight(BULK, origin)).status === 403);
    await eventually('the added origin is allowed', async () => (await preflight(BULK, 'https://renamed.example.com')).status === 204);
    // The key's own check follows the change at once: the old origin is refused on the actual request.
    assert.equal((await ofrep(BULK, { origin, 'x-api-key': key.raw })).status, 403);
    assert.equal((await ofrep(BULK, { origin: 'https://renamed.example.com', 'x-api-key': key.raw })).status, 200);
    expectStatus(await client.delete(`${keysPath(a)}/${key.id}`, { token: a.admin.token }), 204, 'revoke');
    await eventually('the revoked key’s origin is refused', async () => (await preflight(BULK, 'https://renamed.example.com')).status === 403);
  });
});

describe('a server key from a browser is refused with a message to create a client key', () => {
  const refusedEverywhere = async (origin: string): Promise<ApiResponse[]> => [
    await ofrep(BULK, { origin, 'x-sdk-key': a.rawKey }),
    await ofrep(SINGLE('f'), { origin, authorization: `Bearer ${a.rawKey}` }),
    await ofrep(BULK, { origin, 'x-api-key': a.rawKey }),
    await client.post(`/v1/environments/${a.environmentId}/evaluate`, { headers: { origin, 'x-sdk-key': a.rawKey }, body: { context_key: 'u', context_type: 'user' } }),
    await client.post(`/v1/environments/${a.environmentId}/exposures`, { headers: { origin, 'x-sdk-key': a.rawKey }, body: [] }),
    await client.post(`/v1/environments/${a.environmentId}/events/batch`, { headers: { origin, 'x-sdk-key': a.rawKey }, body: [] }),
    await client.post(`/v1/environments/${a.environmentId}/segments/list-check`, {
      headers: { origin, 'x-sdk-key': a.rawKey },
      body: { segment_key: 'any', context_key: 'u', context_type: 'user' },
    }),
  ];

  test('on OFREP, REST evaluate, exposures, events and list-check: 403 saying to use a client key; counted; logged once per key', async () => {
    const before = await metric('switchyard_sdk_key_origin_refusals_total', '{kind="server",reason="server_key_in_browser"}');
    const answers = await refusedEverywhere('https://evil.example.net');
    for (const response of answers) {
      assert.equal(response.status, 403, response.text);
      assert.match(response.text, /create a client key/);
      assert.ok(!response.text.includes(a.rawKey), 'the answer does not echo the key');
    }
    assert.equal(await metric('switchyard_sdk_key_origin_refusals_total', '{kind="server",reason="server_key_in_browser"}'), before + answers.length);
    // Logged once for the key, however many refusals (the log line names the key by id, never the key).
    await eventually('the refusal is logged', async () => ts.logs.some((line) => line.includes(a.sdkKeyId) && line.includes('server SDK key')));
    const lines = ts.logs.filter((line) => line.includes(a.sdkKeyId) && line.includes('server SDK key was used from a browser'));
    assert.equal(lines.length, 1, `one log line, got ${lines.length}`);
    assert.ok(!ts.logs.some((line) => line.includes(a.rawKey)), 'the raw key is never logged');
  });

  test('from an origin the client keys allow, the refusal carries CORS headers so the page can read it', async () => {
    const response = await ofrep(BULK, { origin: APP, 'x-sdk-key': a.rawKey });
    assert.equal(response.status, 403);
    assert.equal(response.headers.get('access-control-allow-origin'), APP);
    assert.match(response.body.errorDetails, /create a client key/);
  });

  test('the server’s own origins are not browsers to refuse: PUBLIC_URL’s origin and the request’s own host', async () => {
    const ownHost = new URL(ts.base).origin; // what a page served by this server sends
    for (const origin of [PUBLIC_URL, ownHost]) {
      const bulk = await ofrep(BULK, { origin, 'x-sdk-key': a.rawKey });
      assert.equal(bulk.status, 200, `${origin}: ${bulk.text}`);
      const evaluate = await client.post(`/v1/environments/${a.environmentId}/evaluate`, { headers: { origin, 'x-sdk-key': a.rawKey }, body: { context_key: 'u', context_type: 'user' } });
      assert.equal(evaluate.status, 200, `${origin}: ${evaluate.text}`);
    }
  });

  test('without an Origin (servers, SDKs, curl) a server key works as before', async () => {
    assert.equal((await ofrep(BULK, { 'x-sdk-key': a.rawKey })).status, 200);
    assert.equal((await ofrep(BULK, { 'x-api-key': a.rawKey })).status, 200);
    assert.equal((await ofrep(BULK, { authorization: `Bearer ${a.rawKey}` })).status, 200);
    const events = await client.post(`/v1/environments/${a.environmentId}/events/batch`, { headers: { 'x-sdk-key': a.rawKey }, body: [] });
    assert.equal(events.status, 202, events.text);
  });
});
