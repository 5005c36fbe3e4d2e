import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig, loadGatewayConfig } from '@switchyard/transport/config.ts';

test('INSIGHTS_COUNTING: on by default (docs/configuration.md), false/0 turn it off, the same for a gateway, anything else refused', () => {
  assert.equal(loadConfig({}).insights.counting, true);
  assert.equal(loadConfig({ INSIGHTS_COUNTING: '' }).insights.counting, true);
  assert.equal(loadConfig({ INSIGHTS_COUNTING: 'true' }).insights.counting, true);
  assert.equal(loadConfig({ INSIGHTS_COUNTING: '1' }).insights.counting, true);
  assert.equal(loadConfig({ INSIGHTS_COUNTING: 'false' }).insights.counting, false);
  assert.equal(loadConfig({ INSIGHTS_COUNTING: 'FALSE' }).insights.counting, false);
  assert.equal(loadConfig({ INSIGHTS_COUNTING: '0' }).insights.counting, false);
  assert.equal(loadGatewayConfig({}).insights.counting, true);
  assert.equal(loadGatewayConfig({ INSIGHTS_COUNTING: 'false' }).insights.counting, false);
  for (const value of ['no', 'off', 'yes']) {
    assert.throws(() => loadConfig({ INSIGHTS_COUNTING: value }), (error: unknown) => error instanceof ConfigError && error.message.startsWith('INSIGHTS_COUNTING'), value);
  }
});
