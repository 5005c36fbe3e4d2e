import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  computeVariantResults,
  experimentAllocation,
  metricAggregate,
  variantAggregates,
  welchTTest,
  type SampleSummary,
} from '../src/index.ts';
import type { Flag, VariantTotals } from '@switchyard/core';

function twoPass(values: number[]): SampleSummary {
  const n = values.length;
  const mean = values.reduce((s, v) => s + v, 0) / n;
  return { n, mean, variance: values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1) };
}

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= 1e-12 * Math.max(1, Math.abs(expected)), `${what}: ${actual} vs ${expected}`);

describe('metricAggregate', () => {
  test('numeric: the contributors merged with the zeros equal the moments of the 0-padded sample', () => {
    const contributors = [12.5, 3, 0, 40.25, 7];
    const padded = [...contributors, ...Array<number>(95).fill(0)];
    const c = twoPass(contributors);
    const aggregate = metricAggregate(100, { key: 'revenue', valueType: 'double' }, { contributors: 5, mean: c.mean, variance: c.variance, nonZero: 4 });
    assert.equal(aggregate.kind, 'moments');
    if (aggregate.kind !== 'moments') return;
    const expected = twoPass(padded);
    close(aggregate.mean ?? Number.NaN, expected.mean, 'mean');
    close(aggregate.variance ?? Number.NaN, expected.variance, 'variance');
  });

  test('numeric: one contributor (SQL var_samp NULL) and no events at all', () => {
    const one = metricAggregate(4, { key: 'm', valueType: 'int' }, { contributors: 1, mean: 8, variance: null, nonZero: 1 });
    assert.deepEqual(one.kind === 'moments' ? [one.mean, one.variance] : null, [2, twoPass([8, 0, 0, 0]).variance]);
    assert.deepEqual(metricAggregate(4, { key: 'm', valueType: 'int' }, undefined), { kind: 'moments', mean: 0, variance: 0 });
  });

  test('bool: the non-zero contributors are the conversions', () => {
    assert.deepEqual(metricAggregate(10, { key: 'buy', valueType: 'bool' }, { contributors: 6, mean: 0.5, variance: 0.3, nonZero: 3 }), { kind: 'conversions', conversions: 3 });
    assert.deepEqual(metricAggregate(10, { key: 'buy', valueType: 'bool' }, undefined), { kind: 'conversions', conversions: 0 });
  });
});

describe('experimentAllocation', () => {
  const rules = (list: Flag['rules']) => ({ rules: list });
  test("the first rule (in order) whose allocation names one of the experiment's variants", () => {
    const flag = rules([
      { id: 'pinned', conditions: [], variant_key: 'a' },
      { id: 'other', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'x', weight_milli: 1000 }] } },
      { id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'a', weight_milli: 300 }, { variant_key: 'b', weight_milli: 700 }] } },
      { id: 'later', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'a', weight_milli: 1000 }] } },
    ]);
    assert.deepEqual(experimentAllocation(flag, ['a', 'b'])?.map((b) => b.weight_milli), [300, 700]);
    assert.equal(experimentAllocation(flag, ['y', 'z']), null);
    assert.equal(experimentAllocation(null, ['a', 'b']), null);
    assert.equal(experimentAllocation(rules([]), ['a', 'b']), null);
  });
});

describe('variantAggregates → computeVariantResults', () => {
  test('the p-value equals Welch on the full per-participant data', () => {
    const control = [5, 0, 0, 2, 0, 9, 1, 0];
    const treatment = [0, 7, 3, 0, 0, 11, 4, 6, 0, 2];
    const totals = (key: string, values: number[]): VariantTotals => {
      const nonZero = values.filter((v) => v !== 0);
      const s = twoPass(nonZero);
      return { variantKey: key, participants: values.length, metrics: { revenue: { contributors: nonZero.length, mean: s.mean, variance: s.variance, nonZero: nonZero.length } } };
    };
    const variants = variantAggregates([totals('control', control), totals('treatment', treatment)], [{ key: 'revenue', valueType: 'double' }], [500, 500]);
    assert.deepEqual(variants.map((v) => [v.variantKey, v.participants, v.plannedWeight]), [['control', 8, 500], ['treatment', 10, 500]]);
    const { variantResults, srmPValue } = computeVariantResults({ variants, metricKeys: ['revenue'] });
    const expected = welchTTest(twoPass(control), twoPass(treatment));
    assert.ok(expected);
    close(variantResults[1]?.pValue ?? Number.NaN, expected.pValue, 'p');
    assert.equal(variantResults[1]?.pValuePresent, true);
    assert.ok(srmPValue !== null && srmPValue > 0 && srmPValue < 1);
  });
});
