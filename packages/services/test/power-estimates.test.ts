import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EventMetric, RatioMetric } from '@switchyard/core';
import { windowEstimates } from '../src/experiments/power-service.ts';

/** The mean, per-unit variance and CUPED R² the calculator reads from a window's moments (docs/statistics.md §14), by hand. */

const common = { direction: 'increase' as const, guardrail: null };

test('event metric: mean, M2/(n − 1) and, with CUPED, R² = Sxy²/(Sxx·Syy)', () => {
  const metric: EventMetric = { ...common, kind: 'event', key: 'r', eventKey: 'r', aggregation: 'sum', windowMs: null, capping: null, cuped: { lookbackMs: 1 } };
  // y = [2, 4, 5, 9], x = [1, 2, 3, 4]: Syy 26, Sxx 5, Sxy 11.
  const estimates = windowEstimates(metric, { moments: { n: 4, means: [5, 2.5], comoments: [[26, 11], [11, 5]] }, uncappedMean: 5 });
  assert.equal(estimates.mean, 5);
  assert.ok(Math.abs(estimates.variance! - 26 / 3) < 1e-12);
  assert.ok(Math.abs(estimates.cupedR2! - 121 / 130) < 1e-12);
  assert.equal(windowEstimates({ ...metric, cuped: null }, { moments: { n: 4, means: [5], comoments: [[26]] }, uncappedMean: 5 }).cupedR2, null);
  assert.deepEqual(windowEstimates(metric, { moments: { n: 1, means: [5, 1], comoments: [[0, 0], [0, 0]] }, uncappedMean: 5 }), { mean: null, variance: null, cupedR2: null });
});

test('ratio metric: mean_N/mean_D and the delta-method variance (Var N − 2R Cov + R² Var D)/mean_D²', () => {
  const source = { aggregation: 'sum' as const, windowMs: null };
  const metric: RatioMetric = { ...common, kind: 'ratio', key: 'q', numerator: { ...source, eventKey: 'n' }, denominator: { ...source, eventKey: 'd' }, cuped: null };
  // N = [2, 4, 6], D = [1, 1, 2]: means 4 and 4/3, R = 3; Var N 4, Var D 1/3, Cov 1 → (4 − 6 + 3)/(16/9) = 9/16.
  const estimates = windowEstimates(metric, { moments: { n: 3, means: [4, 4 / 3], comoments: [[8, 2], [2, 2 / 3]] }, uncappedMean: 4 });
  assert.ok(Math.abs(estimates.mean! - 3) < 1e-12);
  assert.ok(Math.abs(estimates.variance! - 9 / 16) < 1e-12);
  assert.equal(estimates.cupedR2, null);
});
