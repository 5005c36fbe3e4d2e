import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { newMetricDraft, newSetup, type SetupDraft } from '../src/components/experiment-setup.ts';
import {
  BY_HAND,
  formatCount,
  formatDays,
  formatPerArm,
  formatPercent,
  formatValue,
  inputWords,
  newPowerDraft,
  noSampleWords,
  percentToFraction,
  plannedArms,
  powerBody,
  powerQuery,
} from '../src/components/power-reading.ts';
import type { PowerInputs, Rule } from '../src/records.ts';

// The power calculator's bodies and words (components/power-reading.ts), against the wire shapes
// of docs/contract.md "Power and duration" written out by hand.

const split = (id: string, weights: Record<string, number>): Rule => ({
  id,
  conditions: [],
  allocation: { context_hash_specs: {}, buckets: Object.entries(weights).map(([variant_key, weight_milli]) => ({ variant_key, weight_milli })) },
});

const setupWith = (patch: Partial<SetupDraft['analysis']> = {}): SetupDraft => {
  const setup = newSetup(undefined);
  return { ...setup, control: 'control', metrics: [newMetricDraft([], 'purchase')], analysis: { ...setup.analysis, ...patch } };
};

describe('power calculator', () => {
  test('percentages typed become the fractions the API takes, without float noise', () => {
    assert.equal(percentToFraction('2'), 0.02);
    assert.equal(percentToFraction('7'), 0.07);
    assert.equal(percentToFraction('80'), 0.8);
    assert.equal(percentToFraction('0.5'), 0.005);
    assert.equal(percentToFraction(''), null);
    assert.equal(percentToFraction('  '), null);
  });

  test("the arms, the control first, with the studied rule's weights; equal (null) when a weight is 0 or no rule splits", () => {
    const flag = { rules: [split('a', { control: 0, treatment: 1000 }), split('b', { treatment: 750, control: 250 })] };
    // The default rule: the first that splits the control with another variant ('b').
    assert.deepEqual(plannedArms(flag, ['treatment', 'control'], 'control', ''), { arms: ['control', 'treatment'], weights: [250, 750] });
    assert.deepEqual(plannedArms(flag, ['treatment', 'control'], 'control', 'a'), { arms: ['control', 'treatment'], weights: null });
    assert.deepEqual(plannedArms(undefined, ['x', 'y', 'z'], 'y', ''), { arms: ['y', 'x', 'z'], weights: null });
    // Buckets of one variant add up.
    assert.deepEqual(plannedArms({ rules: [{ ...split('c', { control: 300, treatment: 400 }), allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'control', weight_milli: 300 }, { variant_key: 'treatment', weight_milli: 400 }, { variant_key: 'control', weight_milli: 300 }] } }] }, ['control', 'treatment'], 'control', 'c').weights, [600, 400]);
  });

  test("the body: the form's metric as it would be created, its analysis settings, the panel's inputs; empty fields left out", () => {
    const setup = setupWith({ alpha: '0.1', sides: 'one', sequential: true, tuningN: '10000' });
    const draft = { ...newPowerDraft(), mdePercent: '5', powerPercent: '90', windowDays: '7' };
    assert.deepEqual(powerBody(draft, { setup, arms: ['control', 'treatment'], weights: [250, 750], trafficAllocation: 0.5 }), {
      mde: 0.05,
      metric: { event_key: 'purchase', aggregation: 'sum', window_ms: null, direction: 'increase', capping: null, cuped: null, guardrail: false },
      window_days: 7,
      power: 0.9,
      alpha: 0.1,
      sides: 'one',
      sequential: { tuning_n: 10000 },
      weights: [250, 750],
      traffic_allocation: 0.5,
    });
    // By hand, equal arms (three), fixed-horizon (no `sequential`), the API's default power and a rate typed in.
    const byHand = { ...newPowerDraft(), metric: BY_HAND, mean: '25', variance: '900', powerPercent: '', exposuresPerDay: '1000' };
    assert.deepEqual(powerBody(byHand, { setup: setupWith(), arms: ['a', 'b', 'c'], weights: null, trafficAllocation: 1 }), {
      mde: 0.02,
      window_days: 14,
      mean: 25,
      variance: 900,
      exposures_per_day: 1000,
      alpha: 0.05,
      sides: 'two',
      arms: 3,
      traffic_allocation: 1,
    });
    // No MDE: not sent, so the API's "mde is required" is what the person reads.
    assert.equal('mde' in powerBody({ ...newPowerDraft(), mdePercent: '' }, { setup: setupWith(), arms: ['a'], weights: null, trafficAllocation: 1 }), false);
    // A flag not chosen yet: still two arms.
    assert.equal(powerBody(newPowerDraft(), { setup: setupWith(), arms: [''], weights: null, trafficAllocation: 1 }).arms, 2);
  });

  test('the query of the running experiment: mde and power as fractions, the window', () => {
    assert.equal(powerQuery('20', '80', '14'), 'mde=0.2&power=0.8&window_days=14');
    assert.equal(powerQuery('', '', ''), 'mde=');
  });

  test('numbers in words', () => {
    assert.equal(formatCount(1774), '1,774');
    assert.equal(formatCount(null), '—');
    assert.equal(formatPerArm({ sample_per_arm: [437, 437], total: 874, days: null }, ['control', 'treatment']), '437 each');
    assert.equal(formatPerArm({ sample_per_arm: [5046, 15137], total: 20183, days: null }, ['control', 'treatment']), 'control 5,046 · treatment 15,137');
    assert.equal(formatPerArm({ sample_per_arm: null, total: null, days: null }, []), '—');
    // 874 participants at 10/14 a day: 874 · 14 / 10 = 1223.6 days, 174.8 weeks.
    assert.equal(formatDays(874 / (10 / 14)), '1,223.6 days (about 175 weeks)');
    assert.equal(formatDays(2.25), '2.3 days');
    assert.equal(formatDays(14), '14.0 days');
    assert.equal(formatDays(null), '— (no exposure rate)');
    assert.equal(formatDays(0.0004), 'under 0.1 days');
    assert.equal(formatDays(0.05), '0.1 days');
    assert.equal(formatPercent(0.8), '80.0 %');
    assert.equal(formatPercent(0.12345), '12.3 %');
    assert.equal(formatPercent(null), '—');
    assert.equal(formatValue(2.5 / 9), '0.2778');
    assert.equal(formatValue(2090 / 9), '232.2');
    assert.equal(formatValue(12345.678), '12,350');
    assert.equal(formatValue(0), '0');
    assert.equal(formatValue(0.00001234), '1.234e-5');
    assert.equal(formatValue(null), '—');
  });

  test('where the inputs came from; truncated said; why there is no sample', () => {
    const inputs: PowerInputs = {
      mean: 0.5, variance: 2.5 / 9, exposures_per_day: 10 / 14, cuped_r2: 0, participants: 10, window_days: 14, truncated: false,
      source: { mean: 'events', variance: 'given', exposures_per_day: 'events', cuped_r2: 'none' },
    };
    assert.deepEqual(inputWords(inputs), [
      'Mean 0.5, from the events (10 units in the last 14 days)',
      'Variance per participant 0.2778, given',
      'New participants a day 0.7143, from the events (10 units in the last 14 days)',
      'CUPED R² 0, none',
    ]);
    const truncated = inputWords({ ...inputs, truncated: true, participants: 1_000_000, source: { ...inputs.source, exposures_per_day: 'experiment', cuped_r2: 'events' }, cuped_r2: 0.25 });
    assert.equal(truncated[2], "New participants a day 0.7143, from the experiment's own participants");
    assert.equal(truncated[3], 'CUPED R² 0.25, from the events');
    assert.match(truncated[4]!, /^Truncated: /);
    assert.match(noSampleWords({ ...inputs, mean: null }), /fewer than 2 units/);
    assert.match(noSampleWords({ ...inputs, variance: 0 }), /is 0/);
  });
});
