import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_AUDIT_MAX_ENTRIES_PER_ORG, DEFAULT_AUDIT_RETENTION_DAYS } from '@switchyard/services';
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

test('AUDIT_RETENTION_DAYS and AUDIT_MAX_ENTRIES_PER_ORG: defaults (the pruner\'s own), overrides and bounds', () => {
  const defaults = loadConfig({});
  assert.deepEqual([defaults.auditRetentionDays, defaults.auditMaxEntriesPerOrg], [DEFAULT_AUDIT_RETENTION_DAYS, DEFAULT_AUDIT_MAX_ENTRIES_PER_ORG]);
  assert.deepEqual([DEFAULT_AUDIT_RETENTION_DAYS, DEFAULT_AUDIT_MAX_ENTRIES_PER_ORG], [365, 100_000]);
  const tuned = loadConfig({ AUDIT_RETENTION_DAYS: '90', AUDIT_MAX_ENTRIES_PER_ORG: '5000' });
  assert.deepEqual([tuned.auditRetentionDays, tuned.auditMaxEntriesPerOrg], [90, 5_000]);
  const bad = [
    ['AUDIT_RETENTION_DAYS', '0'],
    ['AUDIT_RETENTION_DAYS', '36501'],
    ['AUDIT_RETENTION_DAYS', '-1'],
    ['AUDIT_RETENTION_DAYS', '1.5'],
    ['AUDIT_RETENTION_DAYS', 'forever'],
    ['AUDIT_MAX_ENTRIES_PER_ORG', '0'],
    ['AUDIT_MAX_ENTRIES_PER_ORG', '100000001'],
    ['AUDIT_MAX_ENTRIES_PER_ORG', '1e5'],
  ] as const;
  for (const [name, value] of bad) {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (error: unknown) => error instanceof ConfigError && error.message.startsWith(`${name} must be an integer from`) && error.message.includes(`"${value}"`),
      `${name}=${value}`,
    );
  }
});
