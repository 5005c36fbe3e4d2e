import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  allocatingRules,
  analysisFromWire,
  analysisToWire,
  defaultControl,
  defaultStudiedRule,
  metricFromWire,
  metricToWire,
  metricsOfExperiment,
  newMetricDraft,
  newSetup,
  percentileName,
  percentToQuantile,
  quantileName,
  quantileToPercent,
  setupBody,
  setupOf,
  splitsControl,
} from '../src/components/experiment-setup.ts';
import type { EventDefinition, Experiment, Rule } from '../src/records.ts';

// The experiment form's state and the bodies it sends (components/experiment-setup.ts), against
// the wire shapes of docs/contract.md "Experiments" written out by hand.

const definition = (key: string, value_type: EventDefinition['value_type']): EventDefinition => ({ key, value_type, description: '', created_at_ms: 0 });
const DEFINITIONS = [definition('purchase', 'bool'), definition('revenue', 'double'), definition('session', 'int')];
const DAY = 86_400_000;

describe('experiment setup', () => {
  test('the default control: the off variant when it is one of the variants, else the first', () => {
    assert.equal(defaultControl(['a', 'b', 'off'], 'off'), 'off');
    assert.equal(defaultControl(['a', 'b'], 'off'), 'a', 'the off variant is not compared');
    assert.equal(defaultControl(['a', 'b'], null), 'a');
    assert.equal(defaultControl([], 'off'), '');
    const flag = { variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off' };
    assert.equal(newSetup(flag).control, 'off');
    assert.equal(newSetup(flag).ruleId, '', 'the default rule: the first with an allocation');
  });

  test('the rules an experiment can study: those with an allocation', () => {
    const rules: Rule[] = [
      { id: 'fixed', conditions: [], variant_key: 'on' },
      { id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 1000 }] } },
    ];
    assert.deepEqual(allocatingRules({ rules }).map((r) => r.id), ['split']);
    assert.deepEqual(allocatingRules(undefined), []);
  });

  test('the default studied rule: the first whose allocation weights the control and another of the variants', () => {
    const split = (id: string, weights: Record<string, number>): Rule => ({
      id,
      conditions: [],
      allocation: { context_hash_specs: {}, buckets: Object.entries(weights).map(([variant_key, weight_milli]) => ({ variant_key, weight_milli })) },
    });
    const rules: Rule[] = [
      { id: 'fixed', conditions: [], variant_key: 'a' },
      split('no-control', { b: 500, c: 500 }),
      split('control-zero', { a: 0, b: 1000 }),
      split('only-outsider', { a: 500, z: 500 }),
      split('good', { a: 100, b: 900 }),
      split('later', { a: 500, c: 500 }),
    ];
    const variants = ['a', 'b', 'c'];
    assert.equal(splitsControl(rules[1]!, variants, 'a'), false, 'nobody gets the control');
    assert.equal(splitsControl(rules[2]!, variants, 'a'), false, 'a zero weight is no traffic');
    assert.equal(splitsControl(rules[3]!, variants, 'a'), false, 'z is not one of the experiment\'s variants');
    assert.equal(defaultStudiedRule({ rules }, variants, 'a')?.id, 'good');
    assert.equal(defaultStudiedRule({ rules }, variants, 'b')?.id, 'no-control', 'with control b, b and c split');
    assert.equal(defaultStudiedRule({ rules: rules.slice(0, 4) }, variants, 'a'), undefined);
  });

  test('a new row takes its event type\'s aggregation: a bool event converts, a number sums', () => {
    assert.equal(newMetricDraft(DEFINITIONS).event.aggregation, 'conversion');
    assert.equal(newMetricDraft(DEFINITIONS, 'revenue').event.aggregation, 'sum');
    // A new row sends the event alone: the key defaults to it, the API fills the rest.
    assert.deepEqual(metricToWire(newMetricDraft(DEFINITIONS, 'revenue')), {
      event_key: 'revenue',
      aggregation: 'sum',
      window_ms: null,
      direction: 'increase',
      cuped: null,
      guardrail: false,
      capping: null,
    });
  });

  test('an event metric with a window, capping and CUPED: days become milliseconds', () => {
    const draft = {
      ...newMetricDraft(DEFINITIONS, 'revenue'),
      key: ' big-spend ',
      event: { eventKey: 'revenue', aggregation: 'mean' as const, windowDays: '1.5' },
      direction: 'decrease' as const,
      capping: 'percentile' as const,
      capLower: '',
      capUpper: '0.99',
      ignoreZeros: true,
      cuped: true,
      lookbackDays: '7',
      guardrail: true,
    };
    const wire = metricToWire(draft);
    assert.deepEqual(wire, {
      key: 'big-spend',
      event_key: 'revenue',
      aggregation: 'mean',
      window_ms: 1.5 * DAY,
      direction: 'decrease',
      capping: { kind: 'percentile', lower: null, upper: 0.99, ignore_zeros: true },
      cuped: { lookback_ms: 7 * DAY },
      guardrail: { margin: 0, margin_kind: 'relative' },
    });
    // And back: what the form shows when it edits the metric.
    assert.deepEqual(metricFromWire(wire, DEFINITIONS), { ...draft, key: 'big-spend' });
  });

  test('absolute capping sends no ignore_zeros', () => {
    const wire = metricToWire({ ...newMetricDraft(DEFINITIONS, 'revenue'), capping: 'absolute', capLower: '0', capUpper: '500' });
    assert.deepEqual(wire.capping, { kind: 'absolute', lower: 0, upper: 500 });
  });

  test('a ratio metric: numerator and denominator, no event fields, no capping', () => {
    const draft = {
      ...newMetricDraft(DEFINITIONS),
      kind: 'ratio' as const,
      key: 'revenue-per-session',
      numerator: { eventKey: 'revenue', aggregation: 'sum' as const, windowDays: '' },
      denominator: { eventKey: 'session', aggregation: 'count' as const, windowDays: '2' },
      capping: 'absolute' as const,
      capUpper: '5',
    };
    assert.deepEqual(metricToWire(draft), {
      key: 'revenue-per-session',
      direction: 'increase',
      cuped: null,
      guardrail: false,
      ratio: { numerator: { event_key: 'revenue', aggregation: 'sum', window_ms: null }, denominator: { event_key: 'session', aggregation: 'count', window_ms: 2 * DAY } },
    });
  });

  test('an answered metric named after its event shows an empty key; CUPED without lookback shows 14 days', () => {
    const draft = metricFromWire({ key: 'purchase', event_key: 'purchase', aggregation: 'conversion', window_ms: null, direction: 'increase', capping: null, cuped: null, guardrail: false }, DEFINITIONS);
    assert.equal(draft.key, '');
    assert.equal(draft.cuped, false);
    assert.equal(draft.lookbackDays, '14');
  });

  test('a quantile metric keeps its quantile when the form sends it back; a per-event one sends no aggregation', () => {
    const p50 = { key: 'revenue_p50', event_key: 'revenue', aggregation: 'sum' as const, window_ms: null, direction: 'increase' as const, capping: null, cuped: null, guardrail: null, quantile: { p: 0.5, unit: 'participant' as const } };
    assert.deepEqual(metricToWire(metricFromWire(p50, DEFINITIONS)), {
      key: 'revenue_p50', event_key: 'revenue', aggregation: 'sum', window_ms: null, direction: 'increase', capping: null, cuped: null, guardrail: false, quantile: { p: 0.5, unit: 'participant' },
    });
    const p90 = { key: 'latency_p90', event_key: 'revenue', aggregation: null, window_ms: DAY, direction: 'decrease' as const, capping: null, cuped: null, guardrail: null, quantile: { p: 0.9, unit: 'event' as const } };
    assert.deepEqual(metricToWire(metricFromWire(p90, DEFINITIONS)), {
      key: 'latency_p90', event_key: 'revenue', window_ms: DAY, direction: 'decrease', capping: null, cuped: null, guardrail: false, quantile: { p: 0.9, unit: 'event' },
    });
  });

  test('a row switched to a percentile: p from percent, its unit; CUPED and capping kept on the row but not sent', () => {
    const fresh = newMetricDraft(DEFINITIONS, 'revenue');
    assert.deepEqual([fresh.statistic, fresh.percentile, fresh.percentileUnit], ['mean', '90', 'participant'], 'a mean, p90 per participant offered');
    // A row with capping and CUPED set, then switched to p90 per participant: 90 % is 0.9.
    const capped = { ...fresh, capping: 'absolute' as const, capUpper: '500', cuped: true, lookbackDays: '7' };
    const p90 = { ...capped, statistic: 'percentile' as const };
    assert.deepEqual(metricToWire(p90), {
      event_key: 'revenue', aggregation: 'sum', window_ms: null, direction: 'increase', cuped: null, guardrail: false, capping: null, quantile: { p: 0.9, unit: 'participant' },
    });
    // Per event: no aggregation (the API refuses one); 99.9 % is 0.999, not 99.9 / 100 = 0.9990000000000001 (above the API's bound).
    assert.notEqual(99.9 / 100, 0.999);
    assert.deepEqual(metricToWire({ ...p90, key: 'slow', percentile: '99.9', percentileUnit: 'event', direction: 'decrease' }), {
      key: 'slow', event_key: 'revenue', window_ms: null, direction: 'decrease', cuped: null, guardrail: false, capping: null, quantile: { p: 0.999, unit: 'event' },
    });
    assert.deepEqual(metricToWire({ ...p90, percentile: '0.1' }).quantile, { p: 0.001, unit: 'participant' });
    // An emptied percentile goes as null: the API refuses it in its words.
    assert.deepEqual(metricToWire({ ...p90, percentile: ' ' }).quantile, { p: null, unit: 'participant' });
    // Back to the mean: the capping and CUPED the row kept are sent again.
    assert.deepEqual(metricToWire({ ...p90, statistic: 'mean' }), metricToWire(capped));
    assert.equal(metricToWire(capped).quantile, undefined, 'a mean metric sends no quantile');
    // A ratio row ignores the statistic (a ratio cannot be a quantile metric).
    assert.equal(metricToWire({ ...p90, kind: 'ratio', key: 'r' }).quantile, undefined);
  });

  test('editing a stored quantile metric shows its percentile and unit', () => {
    const stored = { key: 'latency_p99', event_key: 'revenue', aggregation: null, window_ms: null, direction: 'decrease' as const, capping: null, cuped: null, guardrail: null, quantile: { p: 0.999, unit: 'event' as const } };
    const draft = metricFromWire(stored, DEFINITIONS);
    assert.deepEqual([draft.statistic, draft.percentile, draft.percentileUnit, draft.key], ['percentile', '99.9', 'event', 'latency_p99']);
    // 0.07 × 100 is 7.000000000000001 in binary: the input shows 7.
    assert.equal(metricFromWire({ ...stored, quantile: { p: 0.07, unit: 'participant' } }, DEFINITIONS).percentile, '7');
    // A unit left out is per participant (the API's default).
    assert.equal(metricFromWire({ ...stored, quantile: { p: 0.5 } }, DEFINITIONS).percentileUnit, 'participant');
    assert.equal(metricFromWire({ ...stored, quantile: null }, DEFINITIONS).statistic, 'mean');
  });

  test('percentiles named and converted: 0.9 is p90, 0.5 p50, 0.999 p99.9', () => {
    assert.equal(percentToQuantile(90), 0.9);
    assert.equal(percentToQuantile(7), 0.07);
    assert.equal(percentToQuantile(99.9), 0.999);
    assert.equal(quantileToPercent(0.9), '90');
    assert.equal(quantileToPercent(0.001), '0.1');
    assert.equal(quantileName(0.9), 'p90');
    assert.equal(quantileName(0.5), 'p50');
    assert.equal(quantileName(0.999), 'p99.9');
    assert.equal(quantileName(0.07), 'p7');
    assert.equal(percentileName('95'), 'p95');
    assert.equal(percentileName(' '), 'percentile');
    assert.equal(percentileName('abc'), 'percentile');
  });

  test('analysis settings: the defaults, and an empty number field left to the API', () => {
    const draft = analysisFromWire(undefined);
    // The engine, sequential, hybrid and prior always go: the settings replace the stored ones as a whole.
    const ISSUE_39_DEFAULTS = { engine: 'frequentist', sequential: null, hybrid: false, prior: null };
    assert.deepEqual(analysisToWire(draft), { alpha: 0.05, sides: 'two', relative_interval: 'delta', correction: 'none', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5, ...ISSUE_39_DEFAULTS });
    assert.deepEqual(analysisToWire({ ...draft, alpha: '0.1', srmThreshold: '', correction: 'holm', correctionFamily: 'per_metric' }), {
      alpha: 0.1,
      sides: 'two',
      relative_interval: 'delta',
      correction: 'holm',
      correction_family: 'per_metric',
      srm_min_expected: 5,
      ...ISSUE_39_DEFAULTS,
    });
  });

  test('sequential testing: N* 5000 offered, sent as tuning_n; the hybrid only with it; an empty N* takes the API\'s default', () => {
    const draft = analysisFromWire(undefined);
    assert.equal(draft.tuningN, '5000');
    assert.equal(draft.sequential, false);
    assert.deepEqual(analysisToWire({ ...draft, sequential: true }).sequential, { tuning_n: 5000 });
    const on = analysisToWire({ ...draft, sequential: true, tuningN: '10000', hybrid: true });
    assert.deepEqual([on.sequential, on.hybrid], [{ tuning_n: 10000 }, true]);
    assert.deepEqual(analysisToWire({ ...draft, sequential: true, tuningN: ' ' }).sequential, {});
    // A hybrid ticked, then sequential switched off: the API would refuse a hybrid alone.
    const off = analysisToWire({ ...draft, sequential: false, tuningN: '10000', hybrid: true });
    assert.deepEqual([off.sequential, off.hybrid], [null, false]);
  });

  test('the Bayesian engine: a flat prior by default, N(mean, sd²) sent only with the Bayesian engine', () => {
    const draft = analysisFromWire(undefined);
    assert.deepEqual([draft.engine, draft.prior, draft.priorMean, draft.priorSd], ['frequentist', 'flat', '0', '0.05']);
    const flat = analysisToWire({ ...draft, engine: 'bayesian' });
    assert.deepEqual([flat.engine, flat.prior], ['bayesian', null]);
    assert.deepEqual(analysisToWire({ ...draft, engine: 'bayesian', prior: 'normal', priorMean: '0.01', priorSd: '0.1' }).prior, { mean: 0.01, sd: 0.1 });
    // A prior typed, then the engine switched back: the API would refuse a prior for the frequentist engine.
    const back = analysisToWire({ ...draft, engine: 'frequentist', prior: 'normal', priorMean: '0.01', priorSd: '0.1' });
    assert.deepEqual([back.engine, back.prior], ['frequentist', null]);
    // An empty sd is sent without it: the API names the missing field.
    assert.deepEqual(analysisToWire({ ...draft, engine: 'bayesian', prior: 'normal', priorMean: '', priorSd: '' }).prior, {});
  });

  test('issue 39\'s settings as answered come back into the form, and settings stored before them read as the defaults', () => {
    const answered = {
      alpha: 0.1, sides: 'one' as const, relative_interval: 'delta' as const, correction: 'none' as const, correction_family: 'all' as const, srm_threshold: 0.001, srm_min_expected: 5,
      engine: 'bayesian' as const, sequential: { tuning_n: 20000 }, hybrid: true, prior: { mean: -0.01, sd: 0.2 },
    };
    const draft = analysisFromWire(answered);
    assert.deepEqual(
      [draft.engine, draft.sequential, draft.tuningN, draft.hybrid, draft.prior, draft.priorMean, draft.priorSd],
      ['bayesian', true, '20000', true, 'normal', '-0.01', '0.2'],
    );
    assert.deepEqual(analysisToWire(draft), answered, 'an edit that changes nothing sends what was stored');
    const older = analysisFromWire({ alpha: 0.05, sides: 'two', relative_interval: 'delta', correction: 'none', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5 });
    assert.deepEqual([older.engine, older.sequential, older.tuningN, older.hybrid, older.prior], ['frequentist', false, '5000', false, 'flat']);
  });

  test('a guardrail\'s margin and kind: sent as typed, answered back into the row; `true` is margin 0, relative', () => {
    const row = { ...newMetricDraft(DEFINITIONS, 'revenue'), guardrail: true, guardrailMargin: '2.5', guardrailMarginKind: 'absolute' as const };
    const wire = metricToWire(row);
    assert.deepEqual(wire.guardrail, { margin: 2.5, margin_kind: 'absolute' });
    assert.deepEqual(metricFromWire(wire, DEFINITIONS), row);
    assert.deepEqual(metricToWire({ ...row, guardrailMargin: '' }).guardrail, { margin_kind: 'absolute' }, 'empty: the API\'s default margin, 0');
    assert.equal(metricToWire({ ...row, guardrail: false }).guardrail, false, 'the margin stays in the row, unsent');
    const relative = metricFromWire({ event_key: 'revenue', aggregation: 'sum', guardrail: { margin: 0.02, margin_kind: 'relative' } }, DEFINITIONS);
    assert.deepEqual([relative.guardrail, relative.guardrailMargin, relative.guardrailMarginKind], [true, '0.02', 'relative']);
    const legacy = metricFromWire({ event_key: 'revenue', aggregation: 'sum', guardrail: true }, DEFINITIONS);
    assert.deepEqual([legacy.guardrail, legacy.guardrailMargin, legacy.guardrailMarginKind], [true, '0', 'relative']);
    const none = metricFromWire({ event_key: 'revenue', aggregation: 'sum', guardrail: null }, DEFINITIONS);
    assert.deepEqual([none.guardrail, none.guardrailMargin, none.guardrailMarginKind], [false, '0', 'relative']);
  });

  test('the body: metrics and analysis, never metric_keys; control and rule only for the design (DRAFT)', () => {
    const setup = { ...newSetup({ variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }], off_variant_key: 'b' }), metrics: [newMetricDraft(DEFINITIONS)] };
    const draftBody = setupBody(setup, true);
    assert.deepEqual(Object.keys(draftBody).sort(), ['analysis', 'control_variant_key', 'metrics', 'rule_id']);
    assert.equal(draftBody.control_variant_key, 'b');
    assert.equal(draftBody.rule_id, null);
    assert.equal(setupBody({ ...setup, ruleId: 'split' }, true).rule_id, 'split');
    assert.deepEqual(Object.keys(setupBody(setup, false)).sort(), ['analysis', 'metrics']);
  });

  test('an experiment from a server before metric definitions: its metric keys as default metrics, the first variant the control', () => {
    const old: Experiment = {
      id: 'x', environment_id: 'e', name: 'n', description: '', flag_key: 'f', status: 'EXPERIMENT_STATUS_DRAFT',
      variant_keys: ['control', 'treatment'], metric_keys: ['purchase', 'revenue'], traffic_allocation: 1, version: 1,
    };
    assert.deepEqual(metricsOfExperiment(old, DEFINITIONS), [
      { key: 'purchase', event_key: 'purchase', aggregation: 'conversion' },
      { key: 'revenue', event_key: 'revenue', aggregation: 'sum' },
    ]);
    const setup = setupOf(old, DEFINITIONS);
    assert.equal(setup.control, 'control');
    assert.deepEqual(setup.metrics.map((m) => [m.event.eventKey, m.event.aggregation]), [['purchase', 'conversion'], ['revenue', 'sum']]);
    assert.equal(setupOf({ ...old, control_variant_key: 'treatment', rule_id: 'r1' }).control, 'treatment');
    assert.equal(setupOf({ ...old, control_variant_key: 'treatment', rule_id: 'r1' }).ruleId, 'r1');
  });
});
