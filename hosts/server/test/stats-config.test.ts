import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '@switchyard/transport/config.ts';

test('STATS_INTERVAL_MS and STATS_POLL_MS: defaults, overrides and bounds', () => {
  const defaults = loadConfig({});
  assert.deepEqual([defaults.statsIntervalMs, defaults.statsPollMs], [300_000, 1_000]);
  const tuned = loadConfig({ STATS_INTERVAL_MS: '60000', STATS_POLL_MS: '25' });
  assert.deepEqual([tuned.statsIntervalMs, tuned.statsPollMs], [60_000, 25]);
  assert.throws(() => loadConfig({ STATS_INTERVAL_MS: '999' }), (error: unknown) => error instanceof ConfigError && /STATS_INTERVAL_MS/.test(error.message));
  assert.throws(() => loadConfig({ STATS_POLL_MS: 'fast' }), (error: unknown) => error instanceof ConfigError && /STATS_POLL_MS/.test(error.message));
});
