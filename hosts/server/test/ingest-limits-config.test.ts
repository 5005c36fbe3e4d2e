import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_EVENT_RETENTION_DAYS, DEFAULT_INGEST_RATE_LIMITS, DEFAULT_ROWS_PER_ENVIRONMENT } from '@switchyard/services';
import { ConfigError, loadConfig } from '@switchyard/transport/config.ts';

test('INGEST_* and LIST_CHECK_* rate limits: defaults (the limiter\'s own), overrides and bounds', () => {
  assert.deepEqual(loadConfig({}).ingestLimits, DEFAULT_INGEST_RATE_LIMITS);
  assert.deepEqual(DEFAULT_INGEST_RATE_LIMITS, {
    ingest: { perKey: { perSecond: 2_000, burst: 20_000 }, perEnvironment: { perSecond: 5_000, burst: 50_000 } },
    list_check: { perKey: { perSecond: 1_000, burst: 5_000 }, perEnvironment: { perSecond: 5_000, burst: 20_000 } },
  });
  const tuned = loadConfig({
    INGEST_RATE_PER_KEY: '10',
    INGEST_BURST_PER_KEY: '10000',
    INGEST_RATE_PER_ENVIRONMENT: '20',
    INGEST_BURST_PER_ENVIRONMENT: '30000',
    LIST_CHECK_RATE_PER_KEY: '3',
    LIST_CHECK_BURST_PER_KEY: '1000',
    LIST_CHECK_RATE_PER_ENVIRONMENT: '4',
    LIST_CHECK_BURST_PER_ENVIRONMENT: '2000',
  }).ingestLimits;
  assert.deepEqual(tuned, {
    ingest: { perKey: { perSecond: 10, burst: 10_000 }, perEnvironment: { perSecond: 20, burst: 30_000 } },
    list_check: { perKey: { perSecond: 3, burst: 1_000 }, perEnvironment: { perSecond: 4, burst: 2_000 } },
  });
  const bad = [
    ['INGEST_RATE_PER_KEY', '0'],
    ['INGEST_RATE_PER_ENVIRONMENT', 'unlimited'],
    // A burst below the largest request (10,000 entries, 1,000 list-checks) would refuse it for ever.
    ['INGEST_BURST_PER_KEY', '9999'],
    ['INGEST_BURST_PER_ENVIRONMENT', '9999'],
    ['LIST_CHECK_BURST_PER_KEY', '999'],
    ['LIST_CHECK_BURST_PER_ENVIRONMENT', '999'],
    ['LIST_CHECK_RATE_PER_KEY', '1.5'],
  ] as const;
  for (const [name, value] of bad) {
    assert.throws(() => loadConfig({ [name]: value }), (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${name} must be an integer from`), `${name}=${value}`);
  }
});

test('EVENT_ROWS_QUOTA_PER_ENVIRONMENT and EVENT_RETENTION_DAYS: defaults, overrides and bounds (never unlimited)', () => {
  const defaults = loadConfig({});
  assert.deepEqual([defaults.eventRowsQuotaPerEnvironment, defaults.eventRetentionDays], [DEFAULT_ROWS_PER_ENVIRONMENT, DEFAULT_EVENT_RETENTION_DAYS]);
  assert.deepEqual([DEFAULT_ROWS_PER_ENVIRONMENT, DEFAULT_EVENT_RETENTION_DAYS], [50_000_000, 90]);
  const tuned = loadConfig({ EVENT_ROWS_QUOTA_PER_ENVIRONMENT: '1000', EVENT_RETENTION_DAYS: '30' });
  assert.deepEqual([tuned.eventRowsQuotaPerEnvironment, tuned.eventRetentionDays], [1_000, 30]);
  for (const [name, value] of [['EVENT_ROWS_QUOTA_PER_ENVIRONMENT', '0'], ['EVENT_ROWS_QUOTA_PER_ENVIRONMENT', '1000000000001'], ['EVENT_RETENTION_DAYS', '0'], ['EVENT_RETENTION_DAYS', '3651']] as const) {
    assert.throws(() => loadConfig({ [name]: value }), (error: unknown) => error instanceof ConfigError && error.message.startsWith(name), `${name}=${value}`);
  }
});
