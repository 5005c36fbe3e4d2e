import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_CLIENT_RATE_LIMITS } from '@switchyard/services';
import { ConfigError, loadConfig, loadGatewayConfig } from '@switchyard/transport/config.ts';

test('CLIENT_* rate limits: defaults (the limiter\'s own, as docs/client-side.md states them), overrides and bounds', () => {
  assert.deepEqual(loadConfig({}).clientLimits, DEFAULT_CLIENT_RATE_LIMITS);
  // The figures of docs/client-side.md "6. Limits".
  assert.deepEqual(DEFAULT_CLIENT_RATE_LIMITS, {
    evaluation: { perAddress: { perSecond: 50, burst: 500 }, perKey: { perSecond: 5_000, burst: 50_000 } },
    ingest: { perAddress: { perSecond: 100, burst: 1_000 }, perKey: { perSecond: 2_000, burst: 20_000 } },
    stream: { perAddress: { perSecond: 5, burst: 50 }, perKey: { perSecond: 500, burst: 5_000 } },
  });
  const tuned = loadConfig({
    CLIENT_EVALUATION_RATE_PER_ADDRESS: '2',
    CLIENT_EVALUATION_BURST_PER_ADDRESS: '3',
    CLIENT_EVALUATION_RATE_PER_KEY: '4',
    CLIENT_EVALUATION_BURST_PER_KEY: '5',
    CLIENT_INGEST_RATE_PER_ADDRESS: '6',
    CLIENT_INGEST_BURST_PER_ADDRESS: '100',
    CLIENT_INGEST_RATE_PER_KEY: '7',
    CLIENT_INGEST_BURST_PER_KEY: '200',
    CLIENT_STREAM_RATE_PER_ADDRESS: '1',
    CLIENT_STREAM_BURST_PER_ADDRESS: '1',
    CLIENT_STREAM_RATE_PER_KEY: '8',
    CLIENT_STREAM_BURST_PER_KEY: '9',
  }).clientLimits;
  assert.deepEqual(tuned, {
    evaluation: { perAddress: { perSecond: 2, burst: 3 }, perKey: { perSecond: 4, burst: 5 } },
    ingest: { perAddress: { perSecond: 6, burst: 100 }, perKey: { perSecond: 7, burst: 200 } },
    stream: { perAddress: { perSecond: 1, burst: 1 }, perKey: { perSecond: 8, burst: 9 } },
  });
  // One setting leaves the others at their defaults.
  const one = loadConfig({ CLIENT_STREAM_BURST_PER_KEY: '77' }).clientLimits;
  assert.deepEqual(one, { ...DEFAULT_CLIENT_RATE_LIMITS, stream: { ...DEFAULT_CLIENT_RATE_LIMITS.stream, perKey: { perSecond: 500, burst: 77 } } });
  const bad = [
    ['CLIENT_EVALUATION_RATE_PER_ADDRESS', '0'],
    ['CLIENT_EVALUATION_BURST_PER_KEY', '0'],
    ['CLIENT_STREAM_RATE_PER_KEY', 'unlimited'],
    ['CLIENT_EVALUATION_RATE_PER_KEY', '1.5'],
    ['CLIENT_STREAM_BURST_PER_ADDRESS', '-1'],
    // A burst below a full client request's 100 entries would refuse that request for ever.
    ['CLIENT_INGEST_BURST_PER_ADDRESS', '99'],
    ['CLIENT_INGEST_BURST_PER_KEY', '99'],
    ['CLIENT_INGEST_RATE_PER_ADDRESS', '10000001'],
  ] as const;
  for (const [name, value] of bad) {
    assert.throws(() => loadConfig({ [name]: value }), (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${name} must be an integer from`), `${name}=${value}`);
  }
});

test('a gateway reads the same CLIENT_* settings: its limits are its own (it answers the requests)', () => {
  const gateway = loadGatewayConfig({ CLIENT_EVALUATION_BURST_PER_ADDRESS: '42' });
  assert.deepEqual(gateway.clientLimits.evaluation.perAddress, { perSecond: 50, burst: 42 });
  assert.deepEqual(loadGatewayConfig({}).clientLimits, DEFAULT_CLIENT_RATE_LIMITS);
  assert.throws(() => loadGatewayConfig({ CLIENT_INGEST_BURST_PER_KEY: '5' }), ConfigError);
});
