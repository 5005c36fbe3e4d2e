import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  cappingChange,
  confidenceWords,
  engineOf,
  formatChance,
  formatPercent,
  formatRisk,
  guardrailMeaning,
  imbalances,
  intervalKindOf,
  intervalWords,
  isAnalysed,
  leadEffect,
  marginOf,
  marginWords,
  quantileCountWords,
  quantileOf,
  quantileWords,
  sequentialSrmWarns,
  statisticWords,
  srmWarns,
  verdictBasisWords,
  verdictReading,
} from '../src/components/results-reading.ts';
import type { AnalysisWire, MetricStats, Results } from '../src/records.ts';

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

  // Issue 39: the reading follows the engine (docs/statistics.md "Issue 39 in the results").
  const ANALYSIS: AnalysisWire = { alpha: 0.05, sides: 'two', relative_interval: 'delta', correction: 'none', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5 };
  const FIXED: AnalysisWire = { ...ANALYSIS, engine: 'frequentist', sequential: null, hybrid: false, prior: null };
  const SEQUENTIAL: AnalysisWire = { ...FIXED, sequential: { tuning_n: 5000 } };
  const BAYESIAN: AnalysisWire = { ...FIXED, engine: 'bayesian' };
  const TREATMENT: MetricStats = {
    ...OLD_STATS,
    relative: { estimate: 0.1, ci_low: 0.02, ci_high: 0.18, p_value: 0.014 },
    sequential: { estimate: 0.1, ci_low: -0.01, ci_high: 0.21, p_value: 0.12, adjusted_p_value: 0.24 },
    bayesian: { chance_to_win: 0.993, risk_control: 0.1004, risk_treatment: 0.0004, ci_low: 0.03, ci_high: 0.15 },
  };

  test('the interval the verdicts read: credible with the Bayesian engine, else always-valid with sequential, else confidence', () => {
    assert.equal(engineOf(ANALYSIS), 'frequentist', 'settings stored before the engine');
    assert.equal(engineOf(undefined), 'frequentist');
    assert.equal(intervalKindOf(ANALYSIS), 'confidence');
    assert.equal(intervalKindOf(FIXED), 'confidence');
    assert.equal(intervalKindOf(SEQUENTIAL), 'always-valid');
    assert.equal(intervalKindOf(BAYESIAN), 'credible');
    assert.equal(intervalKindOf({ ...BAYESIAN, sequential: { tuning_n: 5000 } }), 'credible', 'the Bayesian verdicts win over the sequential ones');
    assert.deepEqual(leadEffect(TREATMENT, FIXED), TREATMENT.relative);
    assert.deepEqual(leadEffect(TREATMENT, SEQUENTIAL), { estimate: 0.1, ci_low: -0.01, ci_high: 0.21, p_value: 0.12 });
    // The credible interval's middle, (0.03 + 0.15) / 2 = 0.09: the posterior mean.
    const credible = leadEffect(TREATMENT, BAYESIAN)!;
    assert.ok(Math.abs(credible.estimate - 0.09) < 1e-15);
    assert.deepEqual([credible.ci_low, credible.ci_high, credible.p_value], [0.03, 0.15, null]);
    assert.equal(leadEffect({ ...TREATMENT, sequential: null }, SEQUENTIAL), null, 'no always-valid estimate yet');
    assert.equal(leadEffect(undefined, FIXED), null);
  });

  test('the words after the verdict badge come from the same reading', () => {
    assert.equal(verdictReading(TREATMENT, FIXED), '+10.0 %, interval +2.0 % to +18.0 %');
    assert.equal(verdictReading(TREATMENT, SEQUENTIAL), '+10.0 %, always-valid interval −1.0 % to +21.0 %, always-valid p = 0.120');
    assert.equal(verdictReading(TREATMENT, { ...SEQUENTIAL, correction: 'holm' }), '+10.0 %, always-valid interval −1.0 % to +21.0 %, always-valid p = 0.120 (adjusted 0.240)');
    assert.equal(verdictReading({ ...TREATMENT, sequential: { estimate: 0.1, ci_low: 0.01, ci_high: null, p_value: 0.01 } }, SEQUENTIAL), '+10.0 %, always-valid interval +1.0 % to no upper bound, always-valid p = 0.0100');
    assert.equal(verdictReading(TREATMENT, BAYESIAN), 'chance to win 99.3 %, credible interval +3.0 % to +15.0 %');
    assert.equal(verdictReading({ ...OLD_STATS, relative: null }, FIXED), 'no estimate yet');
    assert.equal(verdictReading(OLD_STATS, SEQUENTIAL), 'no always-valid estimate yet');
    assert.equal(verdictReading(OLD_STATS, BAYESIAN), 'no posterior yet');
  });

  test('what the verdicts read, in words: thresholds from alpha and the sides', () => {
    assert.equal(verdictBasisWords(FIXED), 'Verdicts read the fixed-horizon p-values (below 0.05): valid when read once, at the planned end, not at every look.');
    assert.equal(
      verdictBasisWords({ ...SEQUENTIAL, correction: 'bonferroni', hybrid: true, sequential: { tuning_n: 10000 } }),
      'Verdicts read the always-valid (sequential) test: Better or Worse once its running p-value after the correction is below 0.05 ' +
        '(planned sample N* = 10,000; hybrid: half of alpha sequential while running, half fixed-horizon once the iteration ends). ' +
        'It may be read at every look: a result once declared stays declared.',
    );
    // Two-sided at 0.05: the tails are 2.5 % each; one-sided at 0.1: 10 %.
    assert.equal(
      verdictBasisWords(BAYESIAN),
      'Verdicts read the Bayesian engine (flat prior): Better when the chance to win is above 97.5 %, Worse when it is below 2.5 %; intervals are 95 % credible intervals, risks the expected loss of each choice.',
    );
    assert.match(verdictBasisWords({ ...BAYESIAN, alpha: 0.1, sides: 'one', prior: { mean: 0, sd: 0.05 }, sequential: {} }), /^Verdicts read the Bayesian engine \(prior N\(0, 0\.05²\) on the relative lift\): Better when the chance to win is above 90 %, Worse when it is below 10 %; intervals are 90 % credible .* The always-valid test is shown beside it\.$/);
  });

  test('chances and risks in words: never a certainty by rounding, tiny losses said', () => {
    assert.equal(formatChance(0.993), '99.3 %');
    assert.equal(formatChance(0.9995), '> 99.9 %');
    assert.equal(formatChance(0.999), '99.9 %');
    assert.equal(formatChance(0.0004), '< 0.1 %');
    assert.equal(formatChance(0.5), '50.0 %');
    assert.equal(formatChance(null), '—');
    assert.equal(formatRisk(0.1004), '10.0 %');
    assert.equal(formatRisk(0.01234), '1.2 %');
    assert.equal(formatRisk(0.0004), '0.04 %');
    assert.equal(formatRisk(0.00001234), '0.0012 %');
    assert.equal(formatRisk(1e-9), '< 0.001 %');
    assert.equal(formatRisk(0), '0 %');
    assert.equal(formatRisk(undefined), '—');
  });

  test('guardrails: the margin from the definition, the status in words with it', () => {
    assert.equal(marginOf({ guardrail: null }), undefined);
    assert.equal(marginOf({ guardrail: false }), undefined);
    assert.deepEqual(marginOf({ guardrail: true }), { margin: 0, kind: 'relative' });
    assert.deepEqual(marginOf({ guardrail: { margin: 0.02, margin_kind: 'relative' } }), { margin: 0.02, kind: 'relative' });
    assert.deepEqual(marginOf({ guardrail: { margin: 5, margin_kind: 'absolute' } }), { margin: 5, kind: 'absolute' });
    assert.equal(marginWords({ margin: 0.02, kind: 'relative' }), 'a 2 % margin');
    assert.equal(marginWords({ margin: 0.025, kind: 'relative' }), 'a 2.5 % margin');
    assert.equal(marginWords({ margin: 5, kind: 'absolute' }), 'a margin of 5.000 (absolute)');
    assert.equal(marginWords({ margin: 0, kind: 'relative' }), 'no tolerated harm');
    const two = { margin: 0.02, kind: 'relative' as const };
    assert.equal(guardrailMeaning('failing', two), 'harm beyond a 2 % margin');
    assert.equal(guardrailMeaning('warning', two), 'harmful estimate, neither shown within the margin nor beyond it yet');
    assert.equal(guardrailMeaning('ok', two), 'within a 2 % margin, or not harmful');
    const none = { margin: 0, kind: 'relative' as const };
    assert.equal(guardrailMeaning('failing', none), 'significantly harmful');
    assert.equal(guardrailMeaning('warning', none), 'harmful estimate, not significant yet');
    assert.equal(guardrailMeaning('ok', none), 'not harmful');
  });

  test('the sequential SRM check warns below the SRM threshold, whatever the expected counts', () => {
    assert.equal(sequentialSrmWarns({ sequential_srm_p_value: 0.0005 }, FIXED), true);
    assert.equal(sequentialSrmWarns({ sequential_srm_p_value: 0.001 }, FIXED), false, 'equal to the threshold is not below it');
    assert.equal(sequentialSrmWarns({ sequential_srm_p_value: 0.02 }, { ...FIXED, srm_threshold: 0.05 }), true);
    assert.equal(sequentialSrmWarns({ sequential_srm_p_value: 0.0005 }, undefined), true, 'no settings: 0.001');
    assert.equal(sequentialSrmWarns({ sequential_srm_p_value: null }, FIXED), false);
    assert.equal(sequentialSrmWarns({}, FIXED), false, 'older results');
  });

  // Quantile metrics (docs/statistics.md §15): the quantile is said where a mean metric says "mean".
  const P90 = (n: number, estimate: number) => ({ p: 0.9, unit: 'participant' as const, n, estimate, ci_low: estimate - 1, ci_high: estimate + 2, se: 0.8 });

  test('a quantile metric: its quantile from the definition, else from the arms; none for a mean metric', () => {
    const r = results([{ m: { ...OLD_STATS, quantile: null } }, { m: { ...OLD_STATS, quantile: P90(200, 12) } }]);
    assert.deepEqual(quantileOf({ quantile: { p: 0.5, unit: 'event' } }, r, 'm'), { p: 0.5, unit: 'event' }, 'the definition first');
    assert.deepEqual(quantileOf({ quantile: { p: 0.99 } }, r, 'm'), { p: 0.99, unit: 'participant' }, 'no unit: per participant');
    // No definition (a metric no longer defined): the first arm with a quantile; the control's is null (no values).
    assert.deepEqual(quantileOf(undefined, r, 'm'), { p: 0.9, unit: 'participant' });
    assert.equal(quantileOf({ quantile: null }, results([{ m: OLD_STATS }, { m: OLD_STATS }]), 'm'), undefined);
    assert.equal(quantileOf(undefined, r, 'other'), undefined);
  });

  test('a quantile metric in words: "p90 of revenue per participant", "per event"', () => {
    assert.equal(quantileWords({ p: 0.9, unit: 'participant' }, 'revenue'), 'p90 of revenue per participant');
    assert.equal(quantileWords({ p: 0.9, unit: 'participant' }, 'revenue', 'sum'), 'p90 of revenue per participant');
    assert.equal(quantileWords({ p: 0.5, unit: 'participant' }, 'page_view', 'count'), 'p50 of the count of page_view per participant');
    assert.equal(quantileWords({ p: 0.75, unit: 'participant' }, 'latency', 'mean'), 'p75 of the mean latency per participant');
    assert.equal(quantileWords({ p: 0.999, unit: 'event' }, 'latency', null), 'p99.9 of latency per event');
    assert.deepEqual(statisticWords(undefined), { value: 'Mean', absolute: 'Absolute difference', relative: 'Relative lift', lift: 'relative lift' });
    assert.deepEqual(statisticWords({ p: 0.9, unit: 'event' }), { value: 'p90', absolute: 'Difference of p90', relative: 'Relative difference of p90', lift: 'relative difference of the p90' });
    assert.equal(quantileCountWords({ n: 1200, unit: 'participant' }), '1,200 participants');
    assert.equal(quantileCountWords({ n: 1, unit: 'event' }), '1 event');
  });

  test("a quantile metric's verdict words name the quantile", () => {
    const p90 = { p: 0.9, unit: 'participant' as const };
    assert.equal(verdictReading(TREATMENT, FIXED, p90), 'p90 +10.0 %, interval +2.0 % to +18.0 %');
    assert.equal(verdictReading(TREATMENT, SEQUENTIAL, p90), 'p90 +10.0 %, always-valid interval −1.0 % to +21.0 %, always-valid p = 0.120');
    assert.equal(verdictReading(TREATMENT, BAYESIAN, p90), 'chance to win 99.3 % on the p90, credible interval +3.0 % to +15.0 %');
    assert.equal(verdictReading({ ...OLD_STATS, relative: null }, FIXED, p90), 'no estimate yet');
  });
});
