import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SwitchyardClient, TestData } from '../src/index.ts';

const valid = { sdkKey: 'sdk_x', baseUrl: 'http://localhost:8080', syncUrl: 'localhost:50050' };

test('invalid options throw a TypeError or RangeError naming the option', () => {
  const cases: Array<[Record<string, unknown>, RegExp, ErrorConstructor]> = [
    [{ ...valid, sdkKey: undefined }, /sdkKey is required/, TypeError],
    [{ ...valid, sdkKey: ' ' }, /sdkKey is required/, TypeError],
    [{ ...valid, sdkKey: 'sdk_x\n' }, /sdkKey must be the key as the console shows it/, TypeError],
    [{ ...valid, sdkKey: 'sdk_\u00e9' }, /sdkKey must be the key as the console shows it/, TypeError],
    [{ ...valid, baseUrl: 'localhost:8080' }, /baseUrl must be an http/, TypeError],
    [{ ...valid, baseUrl: 'ftp://x' }, /baseUrl must be an http/, TypeError],
    [{ ...valid, baseUrl: undefined }, /baseUrl is required/, TypeError],
    [{ ...valid, syncUrl: 'localhost' }, /syncUrl must be "host:port"/, TypeError],
    [{ ...valid, syncUrl: 'localhost:99999' }, /syncUrl/, TypeError],
    [{ ...valid, syncUrl: 'grpc://localhost:1' }, /syncUrl/, TypeError],
    [{ ...valid, environmentId: '' }, /environmentId/, TypeError],
    [{ ...valid, cacheFallbackMs: -1 }, /cacheFallbackMs must be 0 or more/, RangeError],
    [{ ...valid, reconnect: { baseDelayMs: -5 } }, /reconnect.baseDelayMs/, RangeError],
    [{ ...valid, reconnect: { baseDelayMs: 1000, maxDelayMs: 10 } }, /reconnect.maxDelayMs/, RangeError],
    [{ ...valid, listSegmentCache: { ttlMs: Number.NaN } }, /listSegmentCache.ttlMs/, TypeError],
    [{ ...valid, tls: { ca: 42 } }, /tls.ca/, TypeError],
  ];
  for (const [options, message, type] of cases) {
    assert.throws(() => new SwitchyardClient(options as never), (error: Error) => error instanceof type && message.test(error.message), JSON.stringify(options));
  }
});

test('valid forms are accepted; testData needs no key or URLs', async () => {
  for (const syncUrl of ['127.0.0.1:1', 'http://127.0.0.1:1', 'https://localhost:1', '[::1]:1']) {
    const client = new SwitchyardClient({ ...valid, syncUrl, logger: { debug() {}, info() {}, warn() {}, error() {} }, events: { enabled: false } });
    await client.close();
  }
  const client = new SwitchyardClient({ testData: new TestData() });
  assert.equal(client.state, 'ready');
  await client.close();
  assert.equal(client.state, 'closed');
  await assert.rejects(client.waitForReady(), /closed/);
  await assert.rejects(new SwitchyardClient({ testData: new TestData() }).waitForReady({ timeoutMs: -1 }), RangeError);
});
