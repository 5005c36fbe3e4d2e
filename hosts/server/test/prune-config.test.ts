import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '@switchyard/transport/config.ts';

test('PRUNE_INTERVAL_MS and PRUNE_BATCH_SIZE: defaults, overrides and bounds', () => {
  const defaults = loadConfig({});
  assert.deepEqual([defaults.pruneIntervalMs, defaults.pruneBatchSize], [3_600_000, 1_000]);
  const tuned = loadConfig({ PRUNE_INTERVAL_MS: '60000', PRUNE_BATCH_SIZE: '250' });
  assert.deepEqual([tuned.pruneIntervalMs, tuned.pruneBatchSize], [60_000, 250]);
  for (const [name, value] of [['PRUNE_INTERVAL_MS', '999'], ['PRUNE_INTERVAL_MS', '86400001'], ['PRUNE_BATCH_SIZE', '0'], ['PRUNE_BATCH_SIZE', '100001'], ['PRUNE_BATCH_SIZE', 'many']] as const) {
    assert.throws(() => loadConfig({ [name]: value }), (error: unknown) => error instanceof ConfigError && error.message.startsWith(name), `${name}=${value}`);
  }
});
