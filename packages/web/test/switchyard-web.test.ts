import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { chunkEntries, createSwitchyardWeb, MAX_BODY_BYTES, retryAfterMs, type SendError, type SwitchyardWebOptions } from '../src/index.ts';
import { fakeFetch, fakeTimers, fakeWindow, settle } from './fakes.ts';

const ENV = '7b0f6f7e-0000-4000-8000-000000000001';

function setup(answers: Parameters<typeof fakeFetch>[0] = [], extra: Partial<SwitchyardWebOptions> = {}) {
  const { fetch, requests } = fakeFetch(answers);
  const timers = fakeTimers();
  const window = fakeWindow();
  const errors: SendError[] = [];
  const web = createSwitchyardWeb({
    baseUrl: 'https://flags.example.com/',
    environmentId: ENV,
    clientKey: 'ck_public',
    fetch,
    timers,
    now: timers.now,
    eventTarget: window,
    onError: (error) => errors.push(error),
    // Off unless a test is about them ("evaluation counts" below): the other tests count requests.
    evaluationCounts: false,
    ...extra,
  });
  return { web, requests, timers, window, errors };
}

/** What the web SDK hands a hook after a read. */
const read = (flagKey: string, variant: string | undefined, context: Record<string, unknown>, more: Record<string, unknown> = {}) =>
  [{ flagKey, context }, { flagKey, value: variant ?? 'default', variant, reason: 'SPLIT', ...more }] as const;

describe('exposure hook', () => {
  test('a read becomes one exposure entry, sent on the timer to the exposures route with the client key', async () => {
    const { web, requests, timers } = setup();
    web.exposureHook.after(...read('checkout', 'treatment', { targetingKey: 'user-1', plan: 'pro', seats: 3, beta: true, nested: { a: 1 } }));
    assert.equal(requests.length, 0, 'batched, not sent at once');
    await timers.advance(1999);
    assert.equal(requests.length, 0);
    await timers.advance(1);
    assert.equal(requests.length, 1);
    const [request] = requests;
    assert.equal(request!.url, `https://flags.example.com/v1/environments/${ENV}/exposures`);
    assert.equal(request!.method, 'POST');
    assert.deepEqual(request!.headers, { 'content-type': 'application/json', 'x-api-key': 'ck_public' });
    assert.deepEqual(request!.body, {
      exposures: [{ flag_key: 'checkout', variant_key: 'treatment', context_type: 'user', context_key: 'user-1', timestamp_ms: 1_000_000, attributes: { plan: 'pro', seats: 3, beta: true } }],
    });
    assert.equal(request!.keepalive, false);
  });

  test('deduplicated per (context, flag, variant): reading a flag again sends nothing; another variant or context does', async () => {
    const { web, requests, timers } = setup();
    for (let i = 0; i < 5; i++) web.exposureHook.after(...read('checkout', 'treatment', { targetingKey: 'user-1' }));
    web.exposureHook.after(...read('checkout', 'control', { targetingKey: 'user-1' }));
    web.exposureHook.after(...read('checkout', 'treatment', { targetingKey: 'user-2' }));
    web.exposureHook.after(...read('checkout', 'treatment', { targetingKey: 'user-1', kind: 'organization' }));
    web.exposureHook.after(...read('pricing', 'treatment', { targetingKey: 'user-1' }));
    await timers.advance(2000);
    const sent = requests.flatMap((r) => r.body.exposures.map((e: any) => `${e.context_type}/${e.context_key}/${e.flag_key}/${e.variant_key}`));
    assert.deepEqual(sent, ['user/user-1/checkout/treatment', 'user/user-1/checkout/control', 'user/user-2/checkout/treatment', 'organization/user-1/checkout/treatment', 'user/user-1/pricing/treatment']);
    // And later reads of the same ones stay silent.
    web.exposureHook.after(...read('checkout', 'treatment', { targetingKey: 'user-1' }));
    await timers.advance(5000);
    assert.equal(requests.length, 1);
  });

  test('no exposure for a failed read, a default without variant, a disabled flag, or a context without a targeting key', async () => {
    const { web, requests, timers } = setup();
    web.exposureHook.after(...read('missing', undefined, { targetingKey: 'user-1' }, { reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' }));
    web.exposureHook.after(...read('errored', 'on', { targetingKey: 'user-1' }, { errorCode: 'PARSE_ERROR' }));
    web.exposureHook.after(...read('off', 'off', { targetingKey: 'user-1' }, { reason: 'DISABLED' }));
    web.exposureHook.after(...read('anon', 'on', {}));
    web.exposureHook.after(...read('empty-variant', '', { targetingKey: 'user-1' }));
    await timers.advance(10_000);
    assert.equal(requests.length, 0);
  });

  test('shouldReportExposure narrows the reads reported', async () => {
    const { web, requests, timers } = setup([], { shouldReportExposure: (flagKey) => flagKey.startsWith('exp-') });
    web.exposureHook.after(...read('exp-checkout', 'a', { targetingKey: 'u' }));
    web.exposureHook.after(...read('banner', 'a', { targetingKey: 'u' }));
    await timers.advance(2000);
    assert.deepEqual(requests[0]!.body.exposures.map((e: any) => e.flag_key), ['exp-checkout']);
  });

  test('the signed context token goes with each batch as Authorization: Bearer', async () => {
    let token = 'eyJ.one';
    const { web, requests, timers } = setup([], { contextToken: () => token });
    web.exposureHook.after(...read('f', 'a', { targetingKey: 'u' }));
    await timers.advance(2000);
    token = 'eyJ.two';
    web.exposureHook.after(...read('f', 'b', { targetingKey: 'u' }));
    await timers.advance(2000);
    assert.deepEqual(requests.map((r) => r.headers.authorization), ['Bearer eyJ.one', 'Bearer eyJ.two']);
  });
});

describe('batching', () => {
  test('at most 100 entries a request; a full batch goes at once', async () => {
    const { web, requests, timers } = setup();
    for (let i = 0; i < 250; i++) web.exposureHook.after(...read('f', 'a', { targetingKey: `user-${i}` }));
    await settle();
    // The first full batch starts a flush, which takes everything queued by the time it sends.
    assert.deepEqual(requests.map((r) => r.body.exposures.length), [100, 100, 50], 'sent without waiting for the timer');
    await timers.advance(2000);
    assert.equal(requests.length, 3);
    const keys = new Set(requests.flatMap((r) => r.body.exposures.map((e: any) => e.context_key)));
    assert.equal(keys.size, 250, 'each entry sent once');
  });

  test('bodies stay under the 32 KiB limit of client routes; an entry too large alone is dropped and reported', () => {
    const big = (n: number) => ({ flag_key: 'f', attributes: { blob: 'é'.repeat(n) } });
    const { chunks, oversized } = chunkEntries([big(6000), big(6000), big(6000), big(6000), big(20_000)], (entries) => ({ exposures: entries }));
    assert.equal(oversized, 1);
    for (const chunk of chunks) assert.ok(Buffer.byteLength(JSON.stringify({ exposures: chunk })) <= MAX_BODY_BYTES);
    assert.deepEqual(chunks.map((c) => c.length), [2, 2], '"é" is two bytes: two 12 KB entries fit in 30 KiB, three do not');
  });

  test('a 429 keeps the entries and waits for Retry-After before sending again', async () => {
    const { web, requests, timers, errors } = setup([{ status: 429, retryAfter: '7' }]);
    web.exposureHook.after(...read('f', 'a', { targetingKey: 'u' }));
    await timers.advance(2000);
    assert.equal(requests.length, 1);
    web.exposureHook.after(...read('f', 'b', { targetingKey: 'u' }));
    await timers.advance(6000);
    assert.equal(requests.length, 1, 'nothing before Retry-After has passed');
    await timers.advance(1000);
    assert.equal(requests.length, 2);
    assert.deepEqual(requests[1]!.body.exposures.map((e: any) => e.variant_key), ['a', 'b'], 'the limited entry is sent again, first');
    assert.deepEqual(errors, []);
  });

  test('a network failure or 5xx keeps the entries for the next flush; a 4xx refusal drops them and says so', async () => {
    const { web, requests, timers, errors } = setup([new TypeError('Failed to fetch'), 503, 403]);
    web.exposureHook.after(...read('f', 'a', { targetingKey: 'u' }));
    await timers.advance(2000);
    await timers.advance(2000);
    await timers.advance(2000);
    assert.equal(requests.length, 3);
    assert.deepEqual(requests.map((r) => r.body.exposures.length), [1, 1, 1]);
    assert.deepEqual(errors.map((e) => [e.status, e.dropped]), [[0, 0], [503, 0], [403, 1]]);
    await timers.advance(10_000);
    assert.equal(requests.length, 3, 'a refused entry is not sent again');
  });

  test('pagehide sends what is queued at once with keepalive, for both routes', async () => {
    const { web, requests, window } = setup();
    web.exposureHook.after(...read('f', 'a', { targetingKey: 'u' }));
    web.track('checkout', { targetingKey: 'u' }, 19.5);
    window.fire('pagehide');
    await settle();
    assert.deepEqual(requests.map((r) => [r.url.replace(/.*\/environments\/[^/]+/, ''), r.keepalive]), [['/exposures', true], ['/events/batch', true]]);
  });

  test('close sends the rest with keepalive and removes the page listeners', async () => {
    const { web, requests, window, timers } = setup();
    assert.equal(window.count(), 2);
    web.track('signup', { context_type: 'account', context_key: 'acct-9' });
    await web.close();
    assert.equal(window.count(), 0);
    assert.equal(requests.length, 1);
    assert.equal(requests[0]!.keepalive, true);
    web.track('signup', { context_type: 'account', context_key: 'acct-9' });
    await timers.advance(10_000);
    assert.equal(requests.length, 1, 'nothing after close');
  });

  test('Retry-After in seconds or as an HTTP date; 5 s when absent', () => {
    assert.equal(retryAfterMs('3', 0), 3000);
    assert.equal(retryAfterMs(null, 0), 5000);
    assert.equal(retryAfterMs('garbage', 0), 5000);
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:00:10 GMT', now), 10_000);
  });
});

describe('track', () => {
  test('events go to events/batch as {events: [...]}, each with its own timestamp, value only when given', async () => {
    const { web, requests, timers } = setup();
    web.track('checkout', { targetingKey: 'user-1', kind: 'user', plan: 'pro' }, 19.99);
    await timers.advance(500);
    web.track('clicked', { context_type: 'account', context_key: 'acct-1' });
    web.track('clicked', { context_type: 'account', context_key: 'acct-1' });
    await timers.advance(1500);
    assert.equal(requests.length, 1);
    assert.equal(requests[0]!.url, `https://flags.example.com/v1/environments/${ENV}/events/batch`);
    assert.deepEqual(requests[0]!.body, {
      events: [
        { metric_key: 'checkout', context_type: 'user', context_key: 'user-1', timestamp_ms: 1_000_000, value: 19.99 },
        { metric_key: 'clicked', context_type: 'account', context_key: 'acct-1', timestamp_ms: 1_000_500 },
        { metric_key: 'clicked', context_type: 'account', context_key: 'acct-1', timestamp_ms: 1_000_500 },
      ],
    });
  });

  test('a metric key and a targeting key are required', () => {
    const { web } = setup();
    assert.throws(() => web.track('', { targetingKey: 'u' }), /metric key/);
    assert.throws(() => web.track('m', {}), /targeting key/);
  });
});

describe('createSwitchyardWeb', () => {
  test('refuses a server key and a missing environment', () => {
    assert.throws(() => setup([], { clientKey: 'sdk_secret' }), /server key/);
    assert.throws(() => setup([], { environmentId: '' }), /environmentId/);
  });

  test('providerOptions are the recommended ones, with the same token source', async () => {
    const { web } = setup([], { contextToken: async () => 'eyJ.t' });
    const options = web.providerOptions({ pollInterval: 5000 });
    assert.equal(options.baseUrl, 'https://flags.example.com');
    assert.deepEqual(options.headers, [['X-API-Key', 'ck_public']]);
    assert.equal(options.pollInterval, 5000);
    assert.deepEqual(await options.headersFactory(), [['Authorization', 'Bearer eyJ.t']]);
  });
});

describe('evaluation counts', () => {
  const summariesOf = <R extends { url: string }>(requests: R[]): R[] => requests.filter((r) => r.url.endsWith('/evaluation-summaries'));

  test('every read is counted per (flag, variant, reason) and sent as one summary a minute with an Idempotency-Key', async () => {
    const { web, requests, timers } = setup([], { evaluationCounts: {} });
    // checkout/treatment/SPLIT × 3 (two contexts: counts are not deduplicated as exposures are),
    // checkout/control/SPLIT × 1, banner/on/STATIC × 2, a failed read: missing/""/ERROR × 1.
    for (const key of ['u1', 'u2', 'u1']) web.exposureHook.after(...read('checkout', 'treatment', { targetingKey: key }));
    web.exposureHook.after(...read('checkout', 'control', { targetingKey: 'u3' }));
    for (let i = 0; i < 2; i++) web.exposureHook.after(...read('banner', 'on', {}, { reason: 'STATIC' }));
    web.exposureHook.after(...read('missing', undefined, {}, { reason: 'ERROR', errorCode: 'FLAG_NOT_FOUND' }));
    await timers.advance(59_999);
    assert.equal(summariesOf(requests).length, 0);
    await timers.advance(1);
    const [summary, ...more] = summariesOf(requests);
    assert.equal(more.length, 0);
    assert.equal(summary!.url, `https://flags.example.com/v1/environments/${ENV}/evaluation-summaries`);
    assert.equal(summary!.headers['x-api-key'], 'ck_public');
    assert.match(summary!.headers['idempotency-key']!, /^[0-9a-f-]{36}$/);
    assert.deepEqual(summary!.body, {
      start_ms: 1_000_000,
      end_ms: 1_060_000,
      counts: [
        { flag_key: 'checkout', variant_key: 'treatment', reason: 'SPLIT', count: 3 },
        { flag_key: 'checkout', variant_key: 'control', reason: 'SPLIT', count: 1 },
        { flag_key: 'banner', variant_key: 'on', reason: 'STATIC', count: 2 },
        { flag_key: 'missing', variant_key: '', reason: 'ERROR', count: 1 },
      ],
    });
    await timers.advance(60_000);
    assert.equal(summariesOf(requests).length, 1, 'nothing new read: nothing sent');
  });

  test('a failed send is resent with the same Idempotency-Key; new reads go in a summary of their own', async () => {
    const { web, requests, timers } = setup([503], { evaluationCounts: { intervalMs: 1_000 } });
    web.exposureHook.after(...read('checkout', 'treatment', { targetingKey: 'u1' }));
    await timers.advance(1_000);
    web.exposureHook.after(...read('checkout', 'treatment', { targetingKey: 'u2' }));
    await timers.advance(1_000);
    const sent = summariesOf(requests);
    assert.equal(sent.length, 3, 'the failed one, its resend, then the new one');
    assert.equal(sent[1]!.headers['idempotency-key'], sent[0]!.headers['idempotency-key']);
    assert.deepEqual(sent[1]!.body, sent[0]!.body);
    assert.notEqual(sent[2]!.headers['idempotency-key'], sent[0]!.headers['idempotency-key']);
    assert.equal(sent[2]!.body.counts[0].count, 1);
  });

  test('pagehide sends the counts at once with keepalive; evaluationCounts: false sends none', async () => {
    const { web, requests, window } = setup([], { evaluationCounts: {} });
    web.exposureHook.after(...read('f', 'a', { targetingKey: 'u' }));
    window.fire('pagehide');
    await settle();
    assert.deepEqual(summariesOf(requests).map((r) => [r.body.counts, r.keepalive]), [[[{ flag_key: 'f', variant_key: 'a', reason: 'SPLIT', count: 1 }], true]]);
    const off = setup([], { evaluationCounts: false });
    off.web.exposureHook.after(...read('f', 'a', { targetingKey: 'u' }));
    off.window.fire('pagehide');
    await settle();
    assert.equal(summariesOf(off.requests).length, 0);
  });
});
