import assert from 'node:assert/strict';
import { test } from 'node:test';
import chisquareCdf from '@stdlib/stats-base-dists-chisquare-cdf';
import { bucketFor, evaluate } from '../src/evaluation/index.ts';
import type { EvaluationEnvironment } from '../src/evaluation/index.ts';
import type { Flag } from '../src/index.ts';

const env: EvaluationEnvironment = { projectId: 'proj-uniform', environmentId: 'env-uniform' };

function splitFlag(weights: [string, number][]): Flag {
  return {
    key: 'rollout',
    description: '',
    value_type: 'bool',
    variants: [
      { key: 'on', value: true },
      { key: 'off', value: false },
    ],
    enabled: true,
    off_variant_key: 'off',
    rules: [
      {
        id: 'rollout',
        conditions: [],
        allocation: { context_hash_specs: {}, buckets: weights.map(([variant_key, weight_milli]) => ({ variant_key, weight_milli })) },
      },
    ],
    hashing: [],
    version: 1,
    archived: false,
    client_visible: false,
    created_at_ms: 0,
    updated_at_ms: 0,
  };
}

test('1,000,000 keys spread uniformly over 100 bins (chi-squared p > 0.001)', () => {
  const bins = new Array<number>(100).fill(0);
  const keys = 1_000_000;
  for (let i = 0; i < keys; i++) {
    const bucket = bucketFor(`user-${i}`, 'uniformity-flag', 'proj-uniform', 'env-uniform');
    bins[Math.floor(bucket / 1000)]!++;
  }
  const expected = keys / bins.length;
  const statistic = bins.reduce((sum, observed) => sum + (observed - expected) ** 2 / expected, 0);
  const pValue = 1 - chisquareCdf(statistic, bins.length - 1);
  assert.equal(bins.reduce((a, b) => a + b, 0), keys);
  assert.ok(pValue > 0.001, `chi-squared ${statistic.toFixed(1)} on 99 df gives p = ${pValue}`);
});

test('raising a rollout from 10% to 20% keeps every key that was in', () => {
  const at10 = splitFlag([['on', 100], ['off', 900]]);
  const at20 = splitFlag([['on', 200], ['off', 800]]);
  let in10 = 0;
  let in20 = 0;
  for (let i = 0; i < 50_000; i++) {
    const context = { context_type: 'user', key: `member-${i}` };
    const before = evaluate(at10, context, env).variant_key === 'on';
    const after = evaluate(at20, context, env).variant_key === 'on';
    if (before) {
      in10++;
      assert.equal(after, true, `member-${i} left the rollout when it grew`);
    }
    if (after) in20++;
  }
  assert.ok(Math.abs(in10 / 50_000 - 0.1) < 0.01, `10% rollout served ${in10}`);
  assert.ok(Math.abs(in20 / 50_000 - 0.2) < 0.01, `20% rollout served ${in20}`);
});

test('a 50/50 split over 10,000 keys lands within 2 points of half', () => {
  const flag = splitFlag([['on', 500], ['off', 500]]);
  let on = 0;
  for (let i = 0; i < 10_000; i++) {
    const result = evaluate(flag, { context_type: 'user', key: `visitor-${i}` }, env);
    assert.equal(result.reason, 'SPLIT');
    if (result.variant_key === 'on') on++;
  }
  assert.ok(on >= 4_800 && on <= 5_200, `${on} of 10000 on`);
});
