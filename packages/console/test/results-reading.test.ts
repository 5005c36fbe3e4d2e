import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cappingChange, confidenceWords, formatPercent, imbalances, intervalWords, isAnalysed, srmWarns } from '../src/components/results-reading.ts';
import type { MetricStats, Results } from '../src/records.ts';

// How the results page reads results (components/results-reading.ts); expectations by hand.

const OLD_STATS: MetricStats = { mean: 0.25, variance: 0.19, lift: 1, ci_low: 0.05, ci_high: 0.45, p_value: 0.02 };
const results = (stats: Record<string, MetricStats>[], extra: Partial<Results> = {}): Results => ({
  experiment_id: 'x',
  variant_results: stats.map((metric_stats, i) => ({ variant_key: `v${i}`, participant_count: 10, metric_values: {}, p_value: 0, p_value_present: false, metric_stats })),
  computed_at_ms: 0,
  is_stale: false,
  next_run_at_ms: 0,
  computation_status: 'completed',
  srm_p_value: 0.5,
  ...extra,
});

describe('reading results', () => {
  test('results with metric definitions are told from older ones by their fields', () => {
    assert.equal(isAnalysed(results([{ m: OLD_STATS }, { m: OLD_STATS }])), false);
    assert.equal(isAnalysed(results([{ m: OLD_STATS }, { m: { ...OLD_STATS, relative: null } }], { srm_warning: null, analysis: null })), false, 'nulls are older results');
    assert.equal(isAnalysed(results([{ m: OLD_STATS }, { m: { ...OLD_STATS, relative: null, verdict: 'not_enough_data' } }])), true);
    assert.equal(isAnalysed(results([{}, {}], { analysis: { alpha: 0.05, sides: 'two', relative_interval: 'delta', correction: 'none', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5 } })), true);
  });

  test('SRM: the results\' own verdict; older results warn below p 0.001', () => {
    assert.equal(srmWarns({ srm_warning: false, srm_p_value: 0.0001 }), false, 'too few expected participants: no warning');
    assert.equal(srmWarns({ srm_warning: true, srm_p_value: 0.01 }), true, 'a stricter threshold of its own');
    assert.equal(srmWarns({ srm_p_value: 0.0009 }), true);
    assert.equal(srmWarns({ srm_p_value: 0.001 }), false);
    assert.equal(srmWarns({ srm_p_value: null }), false, 'no p-value, no warning');
    assert.equal(srmWarns({ srm_warning: null, srm_p_value: 0.0002 }), true, 'null: the older rule');
  });

  test('pre-exposure imbalance: a balance p-value below alpha, per metric and variant', () => {
    const cuped = (balance: number | null) => ({ ...OLD_STATS, cuped: { theta: 0.5, variance_reduction: 0.3, balance_p_value: balance } });
    const r = results([{ a: { ...OLD_STATS, cuped: null } }, { a: cuped(0.01), b: cuped(0.2), c: cuped(null) }]);
    assert.deepEqual(imbalances(r, 0.05), [{ metric: 'a', variant: 'v1', pValue: 0.01 }]);
    assert.deepEqual(imbalances(r, 0.01), [], 'p equal to alpha is not below it');
  });

  test('numbers in words: signed percentages, unbounded sides said, the confidence of 1 − alpha', () => {
    assert.equal(formatPercent(0.123), '+12.3 %');
    assert.equal(formatPercent(-0.05), '−5.0 %');
    assert.equal(formatPercent(0.0004), '0.0 %');
    assert.equal(intervalWords({ ci_low: 0.02, ci_high: null }), '+2.0 % to no upper bound');
    assert.equal(intervalWords({ ci_low: null, ci_high: -0.01 }), 'no lower bound to −1.0 %');
    assert.equal(confidenceWords(undefined), '95 %');
    assert.equal(confidenceWords({ alpha: 0.1, sides: 'two', relative_interval: 'delta', correction: 'none', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5 }), '90 %');
  });

  test('capping is reported only where it changed the mean', () => {
    assert.equal(cappingChange(OLD_STATS), undefined);
    assert.equal(cappingChange({ ...OLD_STATS, capped_mean: 3, uncapped_mean: 3 }), undefined);
    assert.deepEqual(cappingChange({ ...OLD_STATS, capped_mean: 3, uncapped_mean: 4.5 }), { capped: 3, uncapped: 4.5 });
  });
});
