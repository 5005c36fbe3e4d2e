import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig, loadGatewayConfig } from '@switchyard/transport/config.ts';

test('EVALUATION_BUDGET_MS: 100 by default (README), settable from 1 to 60000, the same for a gateway', () => {
  assert.equal(loadConfig({}).evaluationBudgetMs, 100);
  assert.equal(loadConfig({ EVALUATION_BUDGET_MS: '250' }).evaluationBudgetMs, 250);
  assert.equal(loadGatewayConfig({ EVALUATION_BUDGET_MS: '250' }).evaluationBudgetMs, 250);
  for (const value of ['0', '60001', 'soon']) {
    assert.throws(() => loadConfig({ EVALUATION_BUDGET_MS: value }), (error: unknown) => error instanceof ConfigError && error.message.startsWith('EVALUATION_BUDGET_MS'), value);
  }
});
