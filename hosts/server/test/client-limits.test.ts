import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createFlag } from './support/flag-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type ApiResponse, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Client keys' limits (docs/client-side.md "6. Limits"), in both topologies: token buckets per
 * (client key, client address) and per client key on the instance answering (the gateway in the
 * split one), 32 KiB bodies for client keys, and the per-key-kind metrics at /metrics.
 *
 * The client address comes from X-Forwarded-For under TRUST_PROXY=true (one trusted hop: the
 * loopback peer is the proxy), as rest-auth-throttling.test.ts does. Every limit refills one token
 * per second, so counts of admitted requests allow for the seconds a flood took; each test uses
 * keys of its own, hence buckets of its own.
 */
const EVALUATION_PER_ADDRESS = 5;
const EVALUATION_PER_KEY = 12;
const INGEST_PER_ADDRESS = 100;
const INGEST_PER_KEY = 250;

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let tenant: Tenant;

const BULK = '/ofrep/v1/evaluate/flags';
const SINGLE = (key: string) => `/ofrep/v1/evaluate/flags/${key}`;

before(async () => {
  ts = await startTestServer({
    TRUST_PROXY: 'true',
    CLIENT_EVALUATION_RATE_PER_ADDRESS: '1',
    CLIENT_EVALUATION_BURST_PER_ADDRESS: String(EVALUATION_PER_ADDRESS),
    CLIENT_EVALUATION_RATE_PER_KEY: '1',
    CLIENT_EVALUATION_BURST_PER_KEY: String(EVALUATION_PER_KEY),
    CLIENT_INGEST_RATE_PER_ADDRESS: '1',
    CLIENT_INGEST_BURST_PER_ADDRESS: String(INGEST_PER_ADDRESS),
    CLIENT_INGEST_RATE_PER_KEY: '1',
    CLIENT_INGEST_BURST_PER_KEY: String(INGEST_PER_KEY),
  });
  client = api(ts.base);
  root = await loginAdmin(client);
  tenant = await seedTenant(client, root.token, 'client-limits');
  await createFlag(ts, client, tenant, {
    key: 'banner',
    value_type: 'bool',
    variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
    enabled: true,
    off_variant_key: 'off',
  });
});
after(() => ts.stop());


/** A new client key of the tenant's environment (no Origin needed: allow_missing_origin, as a native app). */
async function newClientKey(): Promise<string> {
  const body = { kind: 'client', name: 'web', allowed_origins: ['https://app.example.com'], allow_missing_origin: true };
  return expectStatus(await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token, body }), 201).raw_key as string;
}

const from = (address: string): Record<string, string> => ({ 'x-forwarded-for': address });

const evaluateAll = (key: string, address: string, headers: Record<string, string> = {}): Promise<ApiResponse> =>
  client.post(BULK, { sdkKey: key, body: { context: { targetingKey: 'user-1' } }, headers: { ...from(address), ...headers } });

/** OFREP's 429: no body (the protocol defines none), Retry-After in whole seconds. */
function expectOfrepLimited(response: ApiResponse, retryAfter: number, what: string): void {
  assert.equal(response.status, 429, `${what}: ${response.status} ${response.text}`);
  assert.equal(response.text, '', what);
  assert.equal(response.headers.get('retry-after'), String(retryAfter), what);
}

/** Requests until the first 429 (at most `max`): how many were admitted, the refusal, and the seconds it took. */
async function floodUntilLimited(send: () => Promise<ApiResponse>, max: number): Promise<{ admitted: number; refusal: ApiResponse; seconds: number }> {
  const started = Date.now();
  for (let admitted = 0; admitted < max; admitted++) {
    const response = await send();
    if (response.status === 429) return { admitted, refusal: response, seconds: (Date.now() - started) / 1000 };
    assert.equal(response.status, 200, `request ${admitted + 1}: ${response.status} ${response.text}`);
  }
  assert.fail(`no 429 after ${max} requests`);
}

/** Admitted requests: the burst, plus at most one per second the flood took (1 token per second), plus one. */
function assertBurst(admitted: number, burst: number, seconds: number, what: string): void {
  assert.ok(admitted >= burst && admitted <= burst + Math.ceil(seconds) + 1, `${what}: ${admitted} admitted (burst ${burst}, ${seconds} s)`);
}

describe('evaluation limits of a client key', () => {
  test('a flood from one address gets 429 with Retry-After after the per-(key, address) burst; another address and another key are unaffected', async () => {
    const key = await newClientKey();
    const { admitted, refusal, seconds } = await floodUntilLimited(() => evaluateAll(key, '203.0.113.10'), 50);
    assertBurst(admitted, EVALUATION_PER_ADDRESS, seconds, 'one address');
    // One request needs one token, refilled at 1 per second: Retry-After 1.
    expectOfrepLimited(refusal, 1, 'the flood');
    // The single route draws on the same bucket.
    expectOfrepLimited(
      await client.post(SINGLE('banner'), { sdkKey: key, body: { context: { targetingKey: 'user-1' } }, headers: from('203.0.113.10') }),
      1,
      'single evaluation from the flooding address',
    );
    expectStatus(await evaluateAll(key, '203.0.113.11'), 200, 'the same key from another address');
    expectStatus(await evaluateAll(await newClientKey(), '203.0.113.10'), 200, 'another key from the flooding address');
    // A server key is not limited by the client buckets.
    for (let i = 0; i < EVALUATION_PER_ADDRESS + 3; i++) expectStatus(await evaluateAll(tenant.rawKey, '203.0.113.10'), 200, `server key request ${i + 1}`);
  });

  test('the per-key limit holds across addresses: once the key has spent its burst, a fresh address is refused too', async () => {
    const key = await newClientKey();
    const started = Date.now();
    let admitted = 0;
    let address = 0;
    // Fresh addresses one after another, each until its own bucket or the key's refuses.
    for (; address < 20; address++) {
      const flood = await floodUntilLimited(() => evaluateAll(key, `198.51.100.${address}`), 50);
      admitted += flood.admitted;
      if (flood.admitted === 0) break; // refused on its first request: the key's bucket
    }
    assert.ok(address >= 2, `the key's burst spans addresses (refused at address ${address})`);
    assertBurst(admitted, EVALUATION_PER_KEY, (Date.now() - started) / 1000, 'all addresses together');
    expectOfrepLimited(await evaluateAll(key, '198.51.100.200'), 1, 'yet another fresh address');
    expectStatus(await evaluateAll(await newClientKey(), '198.51.100.200'), 200, 'another key from that address');
  });

  test('X-Forwarded-For entries left of the trusted hop make no new address (TRUST_PROXY=true: the rightmost entry is the client)', async () => {
    const key = await newClientKey();
    // Whatever the client writes before the entry the trusted proxy added, the address is that entry.
    const { admitted, seconds } = await floodUntilLimited(() => evaluateAll(key, `10.9.${Math.floor(Math.random() * 250)}.1, 192.0.2.77`), 50);
    assertBurst(admitted, EVALUATION_PER_ADDRESS, seconds, 'spoofed leftmost entries');
  });
});

describe('ingest limits of a client key (exposures and events together, by entries)', () => {
  const eventsOf = (count: number, padding = 0) =>
    Array.from({ length: count }, (_, i) => ({ metric_key: 'undefined-metric', context_type: 'user', context_key: `u${i}${'x'.repeat(padding)}`, value: 1 }));
  const exposure = { flag_key: 'banner', variant_key: 'on', context_type: 'user', context_key: 'u1' };

  test('a batch costs its entries: after the per-address burst, 429 {error, code} with Retry-After; the per-key burst holds across addresses', async () => {
    const key = await newClientKey();
    const batch = (count: number, address: string) =>
      client.post(`/v1/environments/${tenant.environmentId}/events/batch`, { sdkKey: key, body: { events: eventsOf(count) }, headers: from(address) });
    expectStatus(await batch(INGEST_PER_ADDRESS, '192.0.2.1'), 202, 'the whole per-address burst in one batch');
    const refused = await client.post(`/v1/environments/${tenant.environmentId}/events`, { sdkKey: key, body: eventsOf(1)[0], headers: from('192.0.2.1') });
    expectError(refused, 429, 'RESOURCE_EXHAUSTED');
    assert.match(refused.body.error as string, /client key from this address/);
    assert.equal(refused.headers.get('retry-after'), '1');
    // Exposures draw on the same bucket.
    const exposures = await client.post(`/v1/environments/${tenant.environmentId}/exposures`, { sdkKey: key, body: { exposures: [exposure] }, headers: from('192.0.2.1') });
    expectError(exposures, 429, 'RESOURCE_EXHAUSTED');
    assert.equal(exposures.headers.get('retry-after'), '1');

    // Another address has its own bucket, the key's is shared: 250 - 100 - 100 = 50 left (plus what refilled).
    expectStatus(await batch(INGEST_PER_ADDRESS, '192.0.2.2'), 202, 'a second address');
    const perKey = await batch(INGEST_PER_ADDRESS, '192.0.2.3');
    expectError(perKey, 429, 'RESOURCE_EXHAUSTED');
    assert.match(perKey.body.error as string, /for this client key;/);
    // 100 entries need 100 tokens with about 50 there, at 1 per second: about 50 s.
    const retryAfter = Number(perKey.headers.get('retry-after'));
    assert.ok(retryAfter >= 40 && retryAfter <= 50, `Retry-After ${retryAfter}`);
  });
});

describe('client-key bodies are at most 32 KiB', () => {
  /** A context of `attributes` strings of 3,800 characters (each under OFREP's 4,096 per attribute). */
  const bigContext = (attributes: number) => ({
    targetingKey: 'user-1',
    ...Object.fromEntries(Array.from({ length: attributes }, (_, i) => [`pad${i}`, 'x'.repeat(3_800)])),
  });
  const json = (value: unknown) => JSON.stringify(value);

  async function post(path: string, key: string, body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = {}): Promise<ApiResponse> {
    const response = await fetch(ts.base + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sdk-key': key, ...headers },
      body,
      ...(typeof body === 'string' ? {} : { duplex: 'half' }),
    } as RequestInit);
    const text = await response.text();
    let parsed: Json;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = text;
    }
    return { status: response.status, headers: response.headers, body: parsed, text };
  }

  /** The body as a stream of 4 KiB chunks: sent chunked, with no Content-Length to check up front. */
  const chunked = (text: string): ReadableStream<Uint8Array> => {
    const bytes = new TextEncoder().encode(text);
    let at = 0;
    return new ReadableStream({
      pull(controller) {
        if (at >= bytes.length) return controller.close();
        controller.enqueue(bytes.subarray(at, at + 4096));
        at += 4096;
      },
    });
  };

  test('OFREP: 33 KiB from a client key is 413 in OFREP\'s shape, declared or chunked; a server key\'s is evaluated; 31 KiB passes', async () => {
    const key = await newClientKey();
    const big = json({ context: bigContext(9) });
    const small = json({ context: bigContext(8) });
    assert.ok(Buffer.byteLength(big) > 33 * 1024 && Buffer.byteLength(big) < 34 * 1024, `${Buffer.byteLength(big)} bytes`);
    assert.ok(Buffer.byteLength(small) < 31 * 1024, `${Buffer.byteLength(small)} bytes`);

    const bulk = await post(BULK, key, big, from('192.0.2.50'));
    assert.equal(bulk.status, 413, bulk.text);
    // A client key's failures carry the code only (docs/client-side.md "3. What a client sees").
    assert.deepEqual(bulk.body, { errorCode: 'PARSE_ERROR' });
    const single = await post(SINGLE('banner'), key, big, from('192.0.2.51'));
    assert.equal(single.status, 413, single.text);
    assert.deepEqual(single.body, { key: 'banner', errorCode: 'PARSE_ERROR' });
    const streamed = await post(BULK, key, chunked(big), from('192.0.2.52'));
    assert.equal(streamed.status, 413, `chunked: ${streamed.text}`);
    assert.equal(streamed.body.errorCode, 'PARSE_ERROR');
    // As `Authorization: Bearer <key>` (the OFREP providers' header) too.
    const bearer = await fetch(ts.base + BULK, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, ...from('192.0.2.53') }, body: big });
    assert.equal(bearer.status, 413);

    assert.equal((await post(BULK, key, small, from('192.0.2.54'))).status, 200, 'a client key\'s 31 KiB');
    assert.equal((await post(BULK, key, chunked(small), from('192.0.2.55'))).status, 200, 'a client key\'s 31 KiB, chunked');
    assert.equal((await post(BULK, tenant.rawKey, big)).status, 200, 'a server key\'s 33 KiB');
    assert.equal((await post(BULK, tenant.rawKey, chunked(big))).status, 200, 'a server key\'s 33 KiB, chunked');
  });

  test('events and exposures: 33 KiB from a client key is 413 {error, code: RESOURCE_EXHAUSTED}; a server key\'s is accepted', async () => {
    const key = await newClientKey();
    const events = (count: number) =>
      json({ events: Array.from({ length: count }, (_, i) => ({ metric_key: 'undefined-metric', context_type: 'user', context_key: `u${i}-${'x'.repeat(300)}`, value: 1 })) });
    const exposures = (count: number) =>
      json({ exposures: Array.from({ length: count }, (_, i) => ({ flag_key: 'banner', variant_key: 'on', context_type: 'user', context_key: `u${i}-${'x'.repeat(300)}` })) });
    const bigEvents = events(95);
    const bigExposures = exposures(95);
    assert.ok(Buffer.byteLength(bigEvents) > 33 * 1024 && Buffer.byteLength(bigExposures) > 33 * 1024, `${Buffer.byteLength(bigEvents)}, ${Buffer.byteLength(bigExposures)} bytes`);
    const eventsPath = `/v1/environments/${tenant.environmentId}/events/batch`;
    const exposuresPath = `/v1/environments/${tenant.environmentId}/exposures`;

    for (const [path, body] of [[eventsPath, bigEvents], [exposuresPath, bigExposures]] as const) {
      const refused = await post(path, key, body, from('192.0.2.60'));
      assert.equal(refused.status, 413, `${path}: ${refused.text}`);
      assert.deepEqual(refused.body, { error: 'request body is too large', code: 'RESOURCE_EXHAUSTED' });
      const streamed = await post(path, key, chunked(body), from('192.0.2.61'));
      assert.equal(streamed.status, 413, `${path} chunked: ${streamed.text}`);
      assert.equal((await post(path, tenant.rawKey, body)).status, 202, `${path}: a server key's 33 KiB`);
    }
    // As `X-API-Key` (OFREP's own header for keys) the key gets the client limit too.
    const apiKey = await fetch(ts.base + eventsPath, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key, ...from('192.0.2.63') }, body: bigEvents });
    assert.equal(apiKey.status, 413);
    const smallEvents = events(80);
    assert.ok(Buffer.byteLength(smallEvents) < 31 * 1024);
    assert.equal((await post(eventsPath, key, smallEvents, from('192.0.2.62'))).status, 202, 'a client key\'s 30 KiB');
  });
});

describe('metrics per key kind at /metrics', () => {
  async function scrape(): Promise<string> {
    const response = await fetch(`${ts.base}/metrics`);
    assert.equal(response.status, 200);
    return response.text();
  }

  /** The value of `name` with exactly these labels (in any order); undefined when the series is absent. */
  function valueOf(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
    const wanted = Object.entries(labels).map(([label, value]) => `${label}="${value}"`);
    for (const line of text.split('\n')) {
      const match = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
      if (!match || match[1] !== name) continue;
      const present = match[2] ? match[2].split(',') : [];
      if (present.length === wanted.length && wanted.every((pair) => present.includes(pair))) return Number(match[3]);
    }
    return undefined;
  }

  test('requests, 304s and 429s by key kind; the series the CORS, signing and stream code feed exist from the start', async () => {
    const key = await newClientKey();
    const before = await scrape();
    expectStatus(await evaluateAll(key, '100.64.0.1'), 200);
    const etag = (await evaluateAll(key, '100.64.0.1')).headers.get('etag');
    assert.ok(etag);
    assert.equal((await evaluateAll(key, '100.64.0.1', { 'if-none-match': etag })).status, 304);
    for (let i = 0; i < 2; i++) expectStatus(await evaluateAll(tenant.rawKey, '100.64.0.1'), 200);
    // The address's burst is 5: 3 spent, 2 more, then 429.
    const { admitted, seconds } = await floodUntilLimited(() => evaluateAll(key, '100.64.0.1'), 50);
    assertBurst(admitted + 3, EVALUATION_PER_ADDRESS, seconds, 'the metrics key');
    expectStatus(
      await client.post(`/v1/environments/${tenant.environmentId}/events`, { sdkKey: key, body: { metric_key: 'undefined-metric', context_type: 'user', context_key: 'u1' }, headers: from('100.64.0.1') }),
      202,
    );
    const after = await scrape();

    const delta = (name: string, labels: Record<string, string>) => (valueOf(after, name, labels) ?? NaN) - (valueOf(before, name, labels) ?? NaN);
    assert.equal(delta('switchyard_sdk_key_requests_total', { kind: 'client', work: 'evaluation' }), 3 + admitted + 1, 'client evaluation requests (the refused one included)');
    assert.equal(delta('switchyard_sdk_key_requests_total', { kind: 'server', work: 'evaluation' }), 2);
    assert.equal(delta('switchyard_sdk_key_requests_total', { kind: 'client', work: 'ingest' }), 1);
    assert.equal(delta('switchyard_sdk_key_not_modified_total', { kind: 'client' }), 1);
    assert.equal(delta('switchyard_sdk_key_not_modified_total', { kind: 'server' }), 0);
    assert.equal(delta('switchyard_sdk_key_rate_limited_total', { kind: 'client', work: 'evaluation' }), 1);
    assert.equal(delta('switchyard_sdk_key_rate_limited_total', { kind: 'server', work: 'evaluation' }), 0);

    for (const kind of ['server', 'client']) {
      for (const name of ['switchyard_sdk_key_signature_failures_total', 'switchyard_sdk_key_streams']) {
        assert.equal(typeof valueOf(after, name, { kind }), 'number', `${name}{kind="${kind}"} is exposed`);
      }
      for (const reason of ['preflight', 'origin', 'missing_origin', 'server_key_in_browser']) {
        assert.equal(typeof valueOf(after, 'switchyard_sdk_key_origin_refusals_total', { kind, reason }), 'number', `origin refusals {kind="${kind}",reason="${reason}"}`);
      }
      assert.equal(typeof valueOf(after, 'switchyard_sdk_key_rate_limited_total', { kind, work: 'stream' }), 'number');
    }
    assert.equal(typeof valueOf(after, 'switchyard_server_key_origin_requests_total'), 'number');
  });

  test('a 429 of the services\' ingest limits is counted for the server key that got it', async () => {
    const before = await scrape();
    // The services' per-key ingest burst is 20,000 (docs/security.md); two full batches of 10,000 spend it.
    const batch = Array.from({ length: 10_000 }, (_, i) => ({ metric_key: 'undefined-metric', context_type: 'user', context_key: `u${i}` }));
    const key = expectStatus(await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token }), 201).raw_key as string;
    for (let i = 0; i < 2; i++) expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/events/batch`, { sdkKey: key, body: batch }), 202);
    // A third full batch needs 10,000 tokens at 2,000 per second: 5 s of refill, more than the test takes.
    const refused = await client.post(`/v1/environments/${tenant.environmentId}/events/batch`, { sdkKey: key, body: batch });
    expectError(refused, 429, 'RESOURCE_EXHAUSTED');
    const after = await scrape();
    assert.equal(
      (valueOf(after, 'switchyard_sdk_key_rate_limited_total', { kind: 'server', work: 'ingest' }) ?? NaN) -
        (valueOf(before, 'switchyard_sdk_key_rate_limited_total', { kind: 'server', work: 'ingest' }) ?? NaN),
      1,
    );
  });
});
