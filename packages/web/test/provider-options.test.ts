import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_POLL_INTERVAL_MS, ofrepProviderOptions } from '../src/index.ts';

describe('ofrepProviderOptions', () => {
  test('the client key as X-API-Key, the base URL without a trailing slash, polling every 30 s as the fallback', async () => {
    const options = ofrepProviderOptions({ baseUrl: 'https://flags.example.com//', clientKey: 'ck_abc' });
    assert.equal(options.baseUrl, 'https://flags.example.com');
    assert.deepEqual(options.headers, [['X-API-Key', 'ck_abc']]);
    assert.equal(options.pollInterval, 30_000);
    assert.equal(DEFAULT_POLL_INTERVAL_MS, 30_000);
    assert.deepEqual(await options.headersFactory(), [], 'no token: no Authorization header');
  });

  test('the signed context token is asked for before each request and sent as Authorization: Bearer', async () => {
    let token: string | undefined = 'eyJ.first';
    const options = ofrepProviderOptions({ baseUrl: 'http://127.0.0.1:8080', clientKey: 'ck_abc', contextToken: async () => token, pollInterval: 0 });
    assert.equal(options.pollInterval, 0);
    assert.deepEqual(await options.headersFactory(), [['Authorization', 'Bearer eyJ.first']]);
    token = 'eyJ.renewed';
    assert.deepEqual(await options.headersFactory(), [['Authorization', 'Bearer eyJ.renewed']]);
    token = '';
    assert.deepEqual(await options.headersFactory(), []);
  });

  test('a server key is refused before it can ship to a page; a missing key too', () => {
    assert.throws(() => ofrepProviderOptions({ baseUrl: 'https://x', clientKey: 'sdk_secret' }), /server key.*client key/);
    assert.throws(() => ofrepProviderOptions({ baseUrl: 'https://x', clientKey: '' }), /clientKey is required/);
  });
});

describe('bootstrap (server-side rendering)', () => {
  test('the first bulk request is answered from the bootstrap without the network; the rest go to fetch', async () => {
    const seen: string[] = [];
    const next = async (input: any) => (seen.push(`${input.method} ${input.url}`), new Response('{"flags":[]}', { status: 200 }));
    const bootstrap = { flags: [{ key: 'headline', value: 'rendered', variant: 'pro', reason: 'TARGETING_MATCH' }] };
    const options = ofrepProviderOptions({ baseUrl: 'https://flags.example.com', clientKey: 'ck_x', bootstrap, fetchImplementation: next });
    const fetch = options.fetchImplementation!;
    // A single-flag request is not the bulk one: it goes out.
    await fetch(new Request('https://flags.example.com/ofrep/v1/evaluate/flags/headline', { method: 'POST', body: '{}' }));
    const first = await fetch(new Request('https://flags.example.com/ofrep/v1/evaluate/flags', { method: 'POST', body: '{}' }));
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('etag'), null, 'no ETag: the next request gets a full answer');
    assert.deepEqual(await first.json(), bootstrap);
    await fetch(new Request('https://flags.example.com/ofrep/v1/evaluate/flags', { method: 'POST', body: '{}' }));
    assert.deepEqual(seen, ['POST https://flags.example.com/ofrep/v1/evaluate/flags/headline', 'POST https://flags.example.com/ofrep/v1/evaluate/flags']);
  });

  test('without a bootstrap no fetch is set (the provider uses the page\'s own)', () => {
    assert.equal(ofrepProviderOptions({ baseUrl: 'https://x', clientKey: 'ck_x' }).fetchImplementation, undefined);
    assert.equal(ofrepProviderOptions({ baseUrl: 'https://x', clientKey: 'ck_x', bootstrap: null }).fetchImplementation, undefined);
  });
});
