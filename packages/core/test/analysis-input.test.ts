import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  DEFAULT_ANALYSIS,
  DEFAULT_CUPED_LOOKBACK_MS,
  MAX_METRICS,
  normaliseStoredAnalysis,
  normaliseStoredMetric,
  analysisWire,
  isDomainError,
  metricWire,
  parseAnalysis,
  parseMetric,
  parseMetrics,
  type ExperimentMetric,
} from '../src/index.ts';

/** The call is refused with INVALID_ARGUMENT, its message matching `message` and naming `field`. */
function refused(call: () => unknown, field: string, message: RegExp): void {
  assert.throws(call, (error: unknown) => {
    assert.ok(isDomainError(error), `a DomainError, got ${String(error)}`);
    assert.equal(error.code, 'INVALID_ARGUMENT', error.message);
    assert.equal(error.field, field, error.message);
    assert.match(error.message, message);
    return true;
  });
}

const DAY = 86_400_000;

describe('parseMetric: event metrics', () => {
  test('a bare event metric takes its defaults: key = event_key, no window, increase, no capping, no CUPED, no guardrail', () => {
    assert.deepEqual(parseMetric({ event_key: 'purchase', aggregation: 'conversion' }, 'metrics[0]'), {
      kind: 'event', key: 'purchase', eventKey: 'purchase', aggregation: 'conversion', windowMs: null,
      direction: 'increase', capping: null, cuped: null, guardrail: null,
    });
  });

  test('every field given; null means not given; cuped {} takes the default lookback (14 days)', () => {
    const metric = parseMetric({
      key: 'capped', event_key: 'revenue', aggregation: 'mean', window_ms: DAY, direction: 'decrease',
      capping: { kind: 'absolute', lower: null, upper: 500 }, cuped: {}, guardrail: true,
    }, 'metrics[0]');
    assert.deepEqual(metric, {
      kind: 'event', key: 'capped', eventKey: 'revenue', aggregation: 'mean', windowMs: DAY, direction: 'decrease',
      capping: { kind: 'absolute', lower: null, upper: 500, ignoreZeros: false }, cuped: { lookbackMs: 14 * DAY }, guardrail: { margin: 0, marginKind: 'relative' },
    });
    assert.equal(DEFAULT_CUPED_LOOKBACK_MS, 1_209_600_000);
    assert.deepEqual(parseMetric({ event_key: 'x', aggregation: 'sum', window_ms: null, capping: null, cuped: null, guardrail: null, key: null }, 'm'), {
      kind: 'event', key: 'x', eventKey: 'x', aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: null, guardrail: null,
    });
    assert.deepEqual(parseMetric({ event_key: 'x', aggregation: 'count', cuped: { lookback_ms: 3_600_000 } }, 'm').cuped, { lookbackMs: 3_600_000 });
  });

  test('guardrail: true is margin 0 on the relative effect, false none, an object sets the margin (default 0, relative)', () => {
    const base = { event_key: 'x', aggregation: 'sum' };
    assert.deepEqual(parseMetric({ ...base, guardrail: true }, 'm').guardrail, { margin: 0, marginKind: 'relative' });
    assert.equal(parseMetric({ ...base, guardrail: false }, 'm').guardrail, null);
    assert.deepEqual(parseMetric({ ...base, guardrail: {} }, 'm').guardrail, { margin: 0, marginKind: 'relative' });
    assert.deepEqual(parseMetric({ ...base, guardrail: { margin: 0.02 } }, 'm').guardrail, { margin: 0.02, marginKind: 'relative' });
    assert.deepEqual(parseMetric({ ...base, guardrail: { margin: 10, margin_kind: 'relative' } }, 'm').guardrail, { margin: 10, marginKind: 'relative' });
    assert.deepEqual(parseMetric({ ...base, guardrail: { margin: 250, margin_kind: 'absolute' } }, 'm').guardrail, { margin: 250, marginKind: 'absolute' });
    assert.deepEqual(parseMetric({ key: 'r', ratio: { numerator: base, denominator: base }, guardrail: { margin: 0.1 } }, 'm').guardrail, { margin: 0.1, marginKind: 'relative' });
  });

  test('a metric stored with a boolean guardrail (before margins) reads as margin 0 or none', () => {
    const stored = { kind: 'event', key: 'x', eventKey: 'x', aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: null } as const;
    assert.deepEqual(normaliseStoredMetric({ ...stored, guardrail: true } as unknown as ExperimentMetric).guardrail, { margin: 0, marginKind: 'relative' });
    assert.equal(normaliseStoredMetric({ ...stored, guardrail: false } as unknown as ExperimentMetric).guardrail, null);
    assert.deepEqual(normaliseStoredMetric({ ...stored, guardrail: { margin: 3, marginKind: 'absolute' } }).guardrail, { margin: 3, marginKind: 'absolute' });
  });

  test('each wrong field is refused naming it', () => {
    const base = { event_key: 'revenue', aggregation: 'sum' };
    const cases: Array<[unknown, string, RegExp]> = [
      ['nope', 'metrics[0]', /must be an object/],
      [[], 'metrics[0]', /must be an object/],
      [{ aggregation: 'sum' }, 'metrics[0].event_key', /needs event_key .* or ratio/],
      [{ ...base, event_key: '' }, 'metrics[0].event_key', /non-empty string/],
      [{ ...base, event_key: 'x'.repeat(129) }, 'metrics[0].event_key', /at most 128/],
      [{ ...base, key: 7 }, 'metrics[0].key', /non-empty string/],
      [{ ...base, key: ' ' }, 'metrics[0].key', /non-empty string/],
      [{ event_key: 'revenue' }, 'metrics[0].aggregation', /one of conversion, sum, count, mean/],
      [{ ...base, aggregation: 'median' }, 'metrics[0].aggregation', /one of conversion, sum, count, mean/],
      [{ ...base, direction: 'up' }, 'metrics[0].direction', /one of increase, decrease/],
      [{ ...base, window_ms: 0 }, 'metrics[0].window_ms', /integer number of milliseconds > 0/],
      [{ ...base, window_ms: -5 }, 'metrics[0].window_ms', /> 0/],
      [{ ...base, window_ms: 1.5 }, 'metrics[0].window_ms', /integer/],
      [{ ...base, window_ms: '60000' }, 'metrics[0].window_ms', /integer/],
      [{ ...base, window_ms: 367 * DAY }, 'metrics[0].window_ms', /<= 31622400000/],
      [{ ...base, guardrail: 'yes' }, 'metrics[0].guardrail', /boolean or \{margin, margin_kind\}/],
      [{ ...base, guardrail: { margin: -0.01 } }, 'metrics[0].guardrail.margin', /from 0 to 10 for a relative margin/],
      [{ ...base, guardrail: { margin: 10.5 } }, 'metrics[0].guardrail.margin', /from 0 to 10 /],
      [{ ...base, guardrail: { margin: 2e15, margin_kind: 'absolute' } }, 'metrics[0].guardrail.margin', /from 0 to 1000000000000000 for an? absolute/],
      [{ ...base, guardrail: { margin: '0.1' } }, 'metrics[0].guardrail.margin', /finite number/],
      [{ ...base, guardrail: { margin: 0.1, margin_kind: 'percent' } }, 'metrics[0].guardrail.margin_kind', /one of relative, absolute/],
      [{ ...base, guardrail: { margin: 0.1, kind: 'relative' } }, 'metrics[0].guardrail.kind', /not a field/],
      [{ ...base, windowMs: 5 }, 'metrics[0].windowMs', /not a field/],
      [{ ...base, cuped: true }, 'metrics[0].cuped', /must be an object/],
      [{ ...base, cuped: { lookback_ms: 0 } }, 'metrics[0].cuped.lookback_ms', /> 0/],
      [{ ...base, cuped: { lookback_ms: 2.5 } }, 'metrics[0].cuped.lookback_ms', /integer/],
      [{ ...base, cuped: { days: 3 } }, 'metrics[0].cuped.days', /not a field/],
    ];
    for (const [value, field, message] of cases) refused(() => parseMetric(value, 'metrics[0]'), field, message);
  });
});

describe('parseMetric: capping', () => {
  const capped = (capping: unknown) => parseMetric({ event_key: 'revenue', aggregation: 'sum', capping }, 'metrics[1]');

  test('absolute: one bound or both, lower <= upper (equal allowed); percentile: quantiles in (0, 1), lower < upper', () => {
    const cappingOf = (capping: unknown) => (capped(capping) as { capping: unknown }).capping;
    assert.deepEqual(cappingOf({ kind: 'absolute', lower: 0 }), { kind: 'absolute', lower: 0, upper: null, ignoreZeros: false });
    assert.deepEqual(cappingOf({ kind: 'absolute', lower: 5, upper: 5 }), { kind: 'absolute', lower: 5, upper: 5, ignoreZeros: false });
    assert.deepEqual(cappingOf({ kind: 'absolute', lower: -10, upper: 10 }), { kind: 'absolute', lower: -10, upper: 10, ignoreZeros: false });
    assert.deepEqual(cappingOf({ kind: 'percentile', upper: 0.99, ignore_zeros: true }), { kind: 'percentile', lower: null, upper: 0.99, ignoreZeros: true });
    assert.deepEqual(cappingOf({ kind: 'percentile', lower: 0.01, upper: 0.99 }), { kind: 'percentile', lower: 0.01, upper: 0.99, ignoreZeros: false });
  });

  test('bad cappings are refused naming the field', () => {
    const cases: Array<[unknown, string, RegExp]> = [
      ['absolute', 'metrics[1].capping', /must be an object/],
      [{ lower: 1 }, 'metrics[1].capping.kind', /one of absolute, percentile/],
      [{ kind: 'winsorize', lower: 1 }, 'metrics[1].capping.kind', /one of absolute, percentile/],
      [{ kind: 'absolute' }, 'metrics[1].capping', /needs lower, upper or both/],
      [{ kind: 'absolute', lower: null, upper: null }, 'metrics[1].capping', /needs lower, upper or both/],
      [{ kind: 'absolute', lower: 10, upper: 1 }, 'metrics[1].capping.lower', /lower must be <= metrics\[1\]\.capping\.upper/],
      [{ kind: 'absolute', lower: 'a' }, 'metrics[1].capping.lower', /finite number/],
      [{ kind: 'absolute', upper: 1e16 }, 'metrics[1].capping.upper', /within/],
      [{ kind: 'percentile', upper: 1 }, 'metrics[1].capping.upper', /quantile in \(0, 1\)/],
      [{ kind: 'percentile', lower: 0 }, 'metrics[1].capping.lower', /quantile in \(0, 1\)/],
      [{ kind: 'percentile', upper: 99 }, 'metrics[1].capping.upper', /quantile in \(0, 1\)/],
      [{ kind: 'percentile', lower: 0.5, upper: 0.5 }, 'metrics[1].capping.lower', /lower must be < /],
      [{ kind: 'percentile', lower: 0.9, upper: 0.1 }, 'metrics[1].capping.lower', /lower must be < /],
      [{ kind: 'absolute', upper: 3, ignore_zeros: 1 }, 'metrics[1].capping.ignore_zeros', /boolean/],
      [{ kind: 'absolute', upper: 3, max: 4 }, 'metrics[1].capping.max', /not a field/],
    ];
    for (const [capping, field, message] of cases) refused(() => capped(capping), field, message);
  });
});

describe('parseMetric: ratio metrics', () => {
  const ratio = { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'sessions', aggregation: 'count', window_ms: DAY } };

  test('numerator and denominator each a source; key required; CUPED allowed', () => {
    assert.deepEqual(parseMetric({ key: 'rps', ratio, cuped: {}, direction: 'increase', guardrail: false }, 'metrics[0]'), {
      kind: 'ratio', key: 'rps',
      numerator: { eventKey: 'revenue', aggregation: 'sum', windowMs: null },
      denominator: { eventKey: 'sessions', aggregation: 'count', windowMs: DAY },
      direction: 'increase', cuped: { lookbackMs: DEFAULT_CUPED_LOOKBACK_MS }, guardrail: null,
    });
  });

  test('bad ratio metrics are refused naming the field', () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [{ ratio }, 'metrics[0].key', /key is required for a ratio metric/],
      [{ key: 'r', ratio: 'x' }, 'metrics[0].ratio', /must be an object/],
      [{ key: 'r', ratio: { numerator: ratio.numerator } }, 'metrics[0].ratio.denominator', /must be an object/],
      [{ key: 'r', ratio: { ...ratio, numerator: { aggregation: 'sum' } } }, 'metrics[0].ratio.numerator.event_key', /non-empty string/],
      [{ key: 'r', ratio: { ...ratio, denominator: { event_key: 's', aggregation: 'avg' } } }, 'metrics[0].ratio.denominator.aggregation', /one of/],
      [{ key: 'r', ratio: { ...ratio, denominator: { event_key: 's', aggregation: 'sum', window_ms: 0 } } }, 'metrics[0].ratio.denominator.window_ms', /> 0/],
      [{ key: 'r', ratio: { ...ratio, extra: 1 } }, 'metrics[0].ratio.extra', /not a field/],
      [{ key: 'r', ratio, capping: { kind: 'absolute', upper: 1 } }, 'metrics[0].capping', /capping applies to event metrics only/],
      [{ key: 'r', ratio, event_key: 'revenue' }, 'metrics[0].event_key', /ratio metric/],
      [{ key: 'r', ratio, aggregation: 'sum' }, 'metrics[0].aggregation', /ratio metric/],
    ];
    for (const [value, field, message] of cases) refused(() => parseMetric(value, 'metrics[0]'), field, message);
  });
});

describe('parseMetrics', () => {
  test('an array of at most 20 metrics with unique keys', () => {
    assert.deepEqual(parseMetrics([]), []);
    const twenty = Array.from({ length: MAX_METRICS }, (_, i) => ({ event_key: `e${i}`, aggregation: 'sum' }));
    assert.equal(parseMetrics(twenty).length, 20);
    refused(() => parseMetrics([...twenty, { event_key: 'e20', aggregation: 'sum' }]), 'metrics', /at most 20 metrics/);
    refused(() => parseMetrics({ event_key: 'x' }), 'metrics', /must be an array/);
    refused(() => parseMetrics([{ event_key: 'revenue', aggregation: 'sum' }, { event_key: 'revenue', aggregation: 'mean' }]), 'metrics[1].key', /'revenue' names two metrics/);
    // Two metrics over one event, told apart by key, are fine.
    assert.deepEqual(parseMetrics([{ event_key: 'revenue', aggregation: 'sum' }, { key: 'avg', event_key: 'revenue', aggregation: 'mean' }]).map((m) => m.key), ['revenue', 'avg']);
    refused(() => parseMetrics([{ event_key: 'a', aggregation: 'sum' }, { key: 'a', ratio: { numerator: { event_key: 'x', aggregation: 'sum' }, denominator: { event_key: 'y', aggregation: 'sum' } } }]), 'metrics[1].key', /names two metrics/);
  });
});

describe('parseAnalysis', () => {
  test('missing fields take the defaults', () => {
    assert.deepEqual(parseAnalysis({}), DEFAULT_ANALYSIS);
    assert.deepEqual(DEFAULT_ANALYSIS, {
      alpha: 0.05, sides: 'two', relativeInterval: 'delta', correction: 'none', correctionFamily: 'all', srmThreshold: 0.001, srmMinExpected: 5,
      engine: 'frequentist', sequential: null, hybrid: false, prior: null,
    });
    assert.deepEqual(parseAnalysis({ alpha: 0.5, correction: 'benjamini_hochberg', srm_min_expected: 0, sides: null }), { ...DEFAULT_ANALYSIS, alpha: 0.5, correction: 'benjamini_hochberg', srmMinExpected: 0 });
    assert.deepEqual(parseAnalysis({ alpha: 0.01, sides: 'one', relative_interval: 'fieller', correction: 'holm', correction_family: 'per_variant', srm_threshold: 0.05, srm_min_expected: 100 }), {
      alpha: 0.01, sides: 'one', relativeInterval: 'fieller', correction: 'holm', correctionFamily: 'per_variant', srmThreshold: 0.05, srmMinExpected: 100,
      engine: 'frequentist', sequential: null, hybrid: false, prior: null,
    });
  });

  test('engine, sequential (N* default 5,000), hybrid and prior', () => {
    assert.deepEqual(parseAnalysis({ sequential: {} }), { ...DEFAULT_ANALYSIS, sequential: { tuningN: 5000 } });
    assert.deepEqual(parseAnalysis({ sequential: { tuning_n: 10_000 }, hybrid: true }), { ...DEFAULT_ANALYSIS, sequential: { tuningN: 10_000 }, hybrid: true });
    assert.deepEqual(parseAnalysis({ engine: 'bayesian' }), { ...DEFAULT_ANALYSIS, engine: 'bayesian' });
    assert.deepEqual(parseAnalysis({ engine: 'bayesian', prior: { sd: 0.05 } }), { ...DEFAULT_ANALYSIS, engine: 'bayesian', prior: { mean: 0, sd: 0.05 } });
    assert.deepEqual(parseAnalysis({ engine: 'bayesian', prior: { mean: 0.01, sd: 0.1 }, sequential: { tuning_n: 10 }, hybrid: false }),
      { ...DEFAULT_ANALYSIS, engine: 'bayesian', prior: { mean: 0.01, sd: 0.1 }, sequential: { tuningN: 10 } });
    // α = 0.5 is fine without sequential (the fixed tests), not with it (one-sided mixtures at 2α).
    assert.equal(parseAnalysis({ sides: 'one', alpha: 0.5 }).alpha, 0.5);
    assert.deepEqual(parseAnalysis({ sides: 'one', alpha: 0.49, sequential: {} }).sequential, { tuningN: 5000 });
  });

  test('settings stored before engines read with the defaults', () => {
    const old = { alpha: 0.1, sides: 'one', relativeInterval: 'fieller', correction: 'holm', correctionFamily: 'per_metric', srmThreshold: 0.01, srmMinExpected: 0 };
    assert.deepEqual(normaliseStoredAnalysis(old as unknown as typeof DEFAULT_ANALYSIS), { ...old, engine: 'frequentist', sequential: null, hybrid: false, prior: null });
  });

  test('each bad field is refused naming it', () => {
    const cases: Array<[unknown, string, RegExp]> = [
      [[], 'analysis', /must be an object/],
      [{ alpha: 0 }, 'analysis.alpha', /\(0, 0\.5\]/],
      [{ alpha: 0.51 }, 'analysis.alpha', /\(0, 0\.5\]/],
      [{ alpha: -1 }, 'analysis.alpha', /\(0, 0\.5\]/],
      [{ alpha: '0.05' }, 'analysis.alpha', /finite number/],
      [{ sides: 'both' }, 'analysis.sides', /one of two, one/],
      [{ relative_interval: 'bootstrap' }, 'analysis.relative_interval', /one of delta, fieller/],
      [{ correction: 'sidak' }, 'analysis.correction', /one of none, bonferroni, holm, benjamini_hochberg/],
      [{ correction_family: 'per_arm' }, 'analysis.correction_family', /one of all, per_metric, per_variant/],
      [{ srm_threshold: 0 }, 'analysis.srm_threshold', /\(0, 1\)/],
      [{ srm_threshold: 1 }, 'analysis.srm_threshold', /\(0, 1\)/],
      [{ srm_min_expected: -1 }, 'analysis.srm_min_expected', /from 0 to/],
      [{ srm_min_expected: 1e10 }, 'analysis.srm_min_expected', /from 0 to/],
      [{ srmThreshold: 0.1 }, 'analysis.srmThreshold', /not a field/],
      [{ engine: 'bandit' }, 'analysis.engine', /one of frequentist, bayesian/],
      [{ sequential: true }, 'analysis.sequential', /must be an object/],
      [{ sequential: { tuning_n: 9 } }, 'analysis.sequential.tuning_n', /integer from 10 to 1000000000/],
      [{ sequential: { tuning_n: 1e9 + 1 } }, 'analysis.sequential.tuning_n', /integer from 10/],
      [{ sequential: { tuning_n: 5000.5 } }, 'analysis.sequential.tuning_n', /integer/],
      [{ sequential: { tuningN: 5000 } }, 'analysis.sequential.tuningN', /not a field/],
      [{ sequential: {}, sides: 'one', alpha: 0.5 }, 'analysis.alpha', /below 0\.5 with sequential testing/],
      [{ sequential: {}, alpha: 0.5 }, 'analysis.alpha', /below 0\.5 with sequential testing/],
      [{ hybrid: true }, 'analysis.hybrid', /needs analysis\.sequential/],
      [{ hybrid: 'yes', sequential: {} }, 'analysis.hybrid', /boolean/],
      [{ prior: { mean: 0, sd: 0.05 } }, 'analysis.prior', /bayesian engine only/],
      [{ engine: 'bayesian', prior: { mean: 0 } }, 'analysis.prior.sd', /required/],
      [{ engine: 'bayesian', prior: { sd: 0 } }, 'analysis.prior.sd', /> 0/],
      [{ engine: 'bayesian', prior: { sd: -1 } }, 'analysis.prior.sd', /> 0/],
      [{ engine: 'bayesian', prior: { sd: 2e6 } }, 'analysis.prior.sd', /<= 1000000/],
      [{ engine: 'bayesian', prior: { mean: 2e6, sd: 1 } }, 'analysis.prior.mean', /within/],
      [{ engine: 'bayesian', prior: { mean: 'x', sd: 1 } }, 'analysis.prior.mean', /finite number/],
      [{ engine: 'bayesian', prior: { sd: 1, variance: 1 } }, 'analysis.prior.variance', /not a field/],
    ];
    for (const [value, field, message] of cases) refused(() => parseAnalysis(value), field, message);
  });
});

describe('the answer shapes', () => {
  test('metricWire answers every field, and parsing the answer gives the metric back', () => {
    const metrics: ExperimentMetric[] = parseMetrics([
      { key: 'c', event_key: 'revenue', aggregation: 'mean', window_ms: DAY, capping: { kind: 'percentile', upper: 0.95, ignore_zeros: true }, cuped: {}, guardrail: true, direction: 'decrease' },
      { key: 'r', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'sessions', aggregation: 'count' } } },
    ]);
    assert.deepEqual(metrics.map(metricWire), [
      { key: 'c', event_key: 'revenue', aggregation: 'mean', window_ms: DAY, direction: 'decrease', capping: { kind: 'percentile', lower: null, upper: 0.95, ignore_zeros: true }, cuped: { lookback_ms: 14 * DAY }, guardrail: { margin: 0, margin_kind: 'relative' } },
      { key: 'r', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum', window_ms: null }, denominator: { event_key: 'sessions', aggregation: 'count', window_ms: null } }, direction: 'increase', cuped: null, guardrail: null },
    ]);
    assert.deepEqual(parseMetrics(metrics.map(metricWire)), metrics);
  });

  test('analysisWire is snake_case and parses back to the same settings', () => {
    const settings = parseAnalysis({ alpha: 0.1, correction: 'holm' });
    assert.deepEqual(analysisWire(settings), {
      alpha: 0.1, sides: 'two', relative_interval: 'delta', correction: 'holm', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5,
      engine: 'frequentist', sequential: null, hybrid: false, prior: null,
    });
    assert.deepEqual(parseAnalysis(analysisWire(settings)), settings);
    const rich = parseAnalysis({ engine: 'bayesian', prior: { mean: 0, sd: 0.05 }, sequential: { tuning_n: 10_000 }, hybrid: true });
    assert.deepEqual(analysisWire(rich), { ...analysisWire(DEFAULT_ANALYSIS), engine: 'bayesian', prior: { mean: 0, sd: 0.05 }, sequential: { tuning_n: 10_000 }, hybrid: true });
    assert.deepEqual(parseAnalysis(analysisWire(rich)), rich);
  });
});
