import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createFlag, onOffFlag, patch, put } from './support/flag-client.ts';
import {
  ACTIVE,
  CONCLUDED,
  DRAFT,
  EXPERIMENT_FIELDS,
  PAUSED,
  createExperiment,
  defineMetric,
  experimentPath,
  experimentsOf,
  moveThrough,
  prepareEnvironment,
  transition,
} from './support/experiment-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Metric definitions, analysis settings, the studied rule and the explicit control over REST
 * (docs/contract.md "Experiments"; docs/decisions.md "Experiments and statistics").
 */

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;

const DAY = 86_400_000;
const DEFAULT_ANALYSIS = {
  alpha: 0.05, sides: 'two', relative_interval: 'delta', correction: 'none', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5,
  engine: 'frequentist', sequential: null, hybrid: false, prior: null,
};
/** metricFromKey as the wire shows it: bool events convert, numeric events sum. */
const oldStyle = (key: string, aggregation: 'conversion' | 'sum') => ({
  key, event_key: key, aggregation, window_ms: null, direction: 'increase', capping: null, cuped: null, guardrail: null,
});
const half = (id: string, control = 'control', treatment = 'treatment') => ({
  id, conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: control, weight_milli: 500 }, { variant_key: treatment, weight_milli: 500 }] },
});

before(async () => {
  ts = await startTestServer({ STATS_POLL_MS: '3600000' }, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'exp-metrics-a');
  b = await seedTenant(client, root.token, 'exp-metrics-b');
  await prepareEnvironment(client, a);
  await prepareEnvironment(client, b);
  await defineMetric(client, a, 'sessions', 'int');
});
after(() => ts.stop());

const path = (id: string): string => experimentPath(a.environmentId, id);
const post = (body: unknown, token = a.admin.token) => client.post(experimentsOf(a.environmentId), { token, body });
const setRules = async (flagKey: string, rules: unknown[]) =>
  expectStatus(await put(client, `/v1/environments/${a.environmentId}/flags/${flagKey}/rules`, { token: a.admin.token, body: { rules } }), 202, 'set rules');

const RICH_METRICS = [
  { key: 'capped-revenue', event_key: 'revenue', aggregation: 'mean', window_ms: 7 * DAY, direction: 'increase', capping: { kind: 'percentile', upper: 0.99, ignore_zeros: true }, cuped: {}, guardrail: false },
  { event_key: 'purchase', aggregation: 'conversion' },
  { key: 'revenue-per-session', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'sessions', aggregation: 'count', window_ms: DAY } }, direction: 'decrease', cuped: { lookback_ms: 3 * DAY }, guardrail: true },
  { key: 'bounded', event_key: 'revenue', aggregation: 'sum', capping: { kind: 'absolute', lower: 0, upper: 1000 } },
];
/** RICH_METRICS as answered: every field present, defaults filled in. */
const RICH_ANSWER = [
  { key: 'capped-revenue', event_key: 'revenue', aggregation: 'mean', window_ms: 7 * DAY, direction: 'increase', capping: { kind: 'percentile', lower: null, upper: 0.99, ignore_zeros: true }, cuped: { lookback_ms: 14 * DAY }, guardrail: null },
  { key: 'purchase', event_key: 'purchase', aggregation: 'conversion', window_ms: null, direction: 'increase', capping: null, cuped: null, guardrail: null },
  {
    key: 'revenue-per-session',
    ratio: { numerator: { event_key: 'revenue', aggregation: 'sum', window_ms: null }, denominator: { event_key: 'sessions', aggregation: 'count', window_ms: DAY } },
    direction: 'decrease', cuped: { lookback_ms: 3 * DAY }, guardrail: { margin: 0, margin_kind: 'relative' },
  },
  { key: 'bounded', event_key: 'revenue', aggregation: 'sum', window_ms: null, direction: 'increase', capping: { kind: 'absolute', lower: 0, upper: 1000, ignore_zeros: false }, cuped: null, guardrail: null },
];

describe('create, get, list', () => {
  test('metrics, analysis, rule_id and control_variant_key are stored and answered with every field', async () => {
    const created = await createExperiment(client, a, {
      variant_keys: ['control', 'treatment'], metrics: RICH_METRICS, analysis: { alpha: 0.1, correction: 'holm', correction_family: 'per_metric' },
      rule_id: 'split', control_variant_key: 'treatment',
    });
    assert.deepEqual(Object.keys(created).sort(), EXPERIMENT_FIELDS);
    assert.deepEqual(created.metrics, RICH_ANSWER);
    assert.deepEqual(created.metric_keys, ['capped-revenue', 'purchase', 'revenue-per-session', 'bounded']);
    assert.deepEqual(created.analysis, { ...DEFAULT_ANALYSIS, alpha: 0.1, correction: 'holm', correction_family: 'per_metric' });
    assert.deepEqual([created.rule_id, created.control_variant_key], ['split', 'treatment']);
    assert.deepEqual(expectStatus(await client.get(path(created.id), { token: a.member.token }), 200), created);
    const listed = expectStatus(await client.get(experimentsOf(a.environmentId), { token: a.member.token }), 200);
    assert.deepEqual(listed.find((e: Json) => e.id === created.id), created);
  });

  test('guardrail margins (true = margin 0 relative, false = none), engine, sequential (tuning_n 5000 by default), hybrid and prior (issue 39)', async () => {
    const created = await createExperiment(client, a, {
      metrics: [
        { event_key: 'revenue', aggregation: 'sum', guardrail: { margin: 2.5, margin_kind: 'absolute' } },
        { event_key: 'purchase', aggregation: 'conversion', guardrail: { margin: 0.02 } },
        { key: 'old-true', event_key: 'sessions', aggregation: 'count', guardrail: true },
        { key: 'old-false', event_key: 'sessions', aggregation: 'sum', guardrail: false },
      ],
      analysis: { engine: 'bayesian', sequential: {}, hybrid: true, prior: { sd: 0.05 } },
    });
    assert.deepEqual(created.metrics.map((m: Json) => m.guardrail), [
      { margin: 2.5, margin_kind: 'absolute' }, { margin: 0.02, margin_kind: 'relative' }, { margin: 0, margin_kind: 'relative' }, null,
    ]);
    assert.deepEqual(created.analysis, { ...DEFAULT_ANALYSIS, engine: 'bayesian', sequential: { tuning_n: 5000 }, hybrid: true, prior: { mean: 0, sd: 0.05 } });
    // The record sent back whole is accepted unchanged.
    const { id: _id, environment_id: _env, status: _status, created_at_ms: _c, updated_at_ms: _u, ...record } = created;
    const same = expectStatus(await put(client, path(created.id), { token: a.admin.token, body: record }), 200);
    assert.deepEqual([same.metrics, same.analysis], [created.metrics, created.analysis]);
  });

  test('defaults: no metrics, default analysis, rule_id null, the first variant the control', async () => {
    const created = await createExperiment(client, a, { variant_keys: ['treatment', 'control'] });
    assert.deepEqual([created.metrics, created.metric_keys, created.analysis, created.rule_id, created.control_variant_key], [[], [], DEFAULT_ANALYSIS, null, 'treatment']);
  });

  test('old-style metric_keys: each key is summed (a bool event converts), nothing else changes', async () => {
    const created = await createExperiment(client, a, { metric_keys: ['purchase', 'revenue'] });
    assert.deepEqual(created.metric_keys, ['purchase', 'revenue']);
    assert.deepEqual(created.metrics, [oldStyle('purchase', 'conversion'), oldStyle('revenue', 'sum')]);
    assert.deepEqual([created.analysis, created.rule_id, created.control_variant_key], [DEFAULT_ANALYSIS, null, 'control']);
    const patched = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { metric_keys: ['sessions'] } }), 200);
    assert.deepEqual([patched.metric_keys, patched.metrics], [['sessions'], [oldStyle('sessions', 'sum')]]);
    const cleared = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { metric_keys: [] } }), 200);
    assert.deepEqual([cleared.metric_keys, cleared.metrics], [[], []]);
  });

  test('a record sent back whole (metric_keys with the same metrics) is accepted; metric_keys that disagree is 400', async () => {
    const created = await createExperiment(client, a, { metrics: RICH_METRICS });
    const { id: _id, environment_id: _env, status: _status, created_at_ms: _c, updated_at_ms: _u, ...record } = created;
    const same = expectStatus(await put(client, path(created.id), { token: a.admin.token, body: record }), 200);
    assert.deepEqual({ ...same, version: 0, updated_at_ms: 0 }, { ...created, version: 0, updated_at_ms: 0 });
    expectError(await put(client, path(created.id), { token: a.admin.token, body: { ...record, version: same.version, metric_keys: ['purchase'] } }), 400, 'INVALID_ARGUMENT', /metrics or metric_keys, not both/);
    expectError(await post({ flag_key: 'checkout', metric_keys: ['revenue'], metrics: [{ event_key: 'purchase', aggregation: 'conversion' }] }), 400, 'INVALID_ARGUMENT', /not both/);
  });
});

describe('validation: 400 INVALID_ARGUMENT naming the field, never a 500', () => {
  test('metric definitions', async () => {
    const metric = (m: unknown) => post({ flag_key: 'checkout', metrics: [m] });
    const cases: Array<[unknown, RegExp]> = [
      [{ event_key: 'unregistered', aggregation: 'sum' }, /metrics\[0\]\.event_key: 'unregistered' is not registered/],
      [{ key: 'r', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'nope', aggregation: 'sum' } } }, /metrics\[0\]\.ratio\.denominator\.event_key: 'nope' is not registered/],
      [{ event_key: 'revenue' }, /metrics\[0\]\.aggregation must be one of conversion, sum, count, mean/],
      [{ event_key: 'revenue', aggregation: 'median' }, /metrics\[0\]\.aggregation/],
      [{ event_key: 'revenue', aggregation: 'sum', direction: 'up' }, /metrics\[0\]\.direction/],
      [{ event_key: 'revenue', aggregation: 'sum', window_ms: 0 }, /metrics\[0\]\.window_ms/],
      [{ event_key: 'revenue', aggregation: 'sum', window_ms: 1.5 }, /metrics\[0\]\.window_ms/],
      [{ event_key: 'revenue', aggregation: 'sum', capping: { kind: 'absolute' } }, /metrics\[0\]\.capping needs lower, upper or both/],
      [{ event_key: 'revenue', aggregation: 'sum', capping: { kind: 'absolute', lower: 5, upper: 1 } }, /metrics\[0\]\.capping\.lower must be <=/],
      [{ event_key: 'revenue', aggregation: 'sum', capping: { kind: 'percentile', upper: 1.5 } }, /metrics\[0\]\.capping\.upper .*\(0, 1\)/],
      [{ event_key: 'revenue', aggregation: 'sum', capping: { kind: 'percentile', lower: 0.9, upper: 0.1 } }, /metrics\[0\]\.capping\.lower must be </],
      [{ event_key: 'revenue', aggregation: 'sum', capping: { kind: 'trim', upper: 1 } }, /metrics\[0\]\.capping\.kind/],
      [{ event_key: 'revenue', aggregation: 'sum', cuped: { lookback_ms: -1 } }, /metrics\[0\]\.cuped\.lookback_ms/],
      [{ event_key: 'revenue', aggregation: 'sum', windowMs: 5 }, /metrics\[0\]\.windowMs is not a field/],
      [{ ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'sessions', aggregation: 'sum' } } }, /metrics\[0\]\.key is required for a ratio metric/],
      [{ key: 'r', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' } } }, /metrics\[0\]\.ratio\.denominator must be an object/],
      [{ key: 'r', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'sessions', aggregation: 'sum' } }, capping: { kind: 'absolute', upper: 1 } }, /capping applies to event metrics only/],
      [{ aggregation: 'sum' }, /metrics\[0\] needs event_key/],
      [{ event_key: 'revenue', aggregation: 'sum', guardrail: 'yes' }, /metrics\[0\]\.guardrail must be a boolean or \{margin, margin_kind\}/],
      [{ event_key: 'revenue', aggregation: 'sum', guardrail: { margin: -0.1 } }, /metrics\[0\]\.guardrail\.margin must be from 0 to 10 for a relative margin/],
      [{ event_key: 'revenue', aggregation: 'sum', guardrail: { margin: 1, margin_kind: 'pct' } }, /metrics\[0\]\.guardrail\.margin_kind must be one of relative, absolute/],
      ['revenue', /body\.metrics\.0: must be object/],
    ];
    for (const [value, message] of cases) expectError(await metric(value), 400, 'INVALID_ARGUMENT', message);
    expectError(await post({ flag_key: 'checkout', metrics: [{ event_key: 'revenue', aggregation: 'sum' }, { event_key: 'revenue', aggregation: 'mean' }] }), 400, 'INVALID_ARGUMENT', /metrics\[1\]\.key: 'revenue' names two metrics/);
    const many = Array.from({ length: 21 }, (_, i) => ({ key: `m${i}`, event_key: 'revenue', aggregation: 'sum' }));
    expectError(await post({ flag_key: 'checkout', metrics: many }), 400, 'INVALID_ARGUMENT', /metrics/);
    expectError(await post({ flag_key: 'checkout', metrics: { event_key: 'revenue' } }), 400, 'INVALID_ARGUMENT', /metrics/);
  });

  test('analysis settings', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ alpha: 0 }, /analysis\.alpha must be in \(0, 0\.5\]/],
      [{ alpha: 0.6 }, /analysis\.alpha/],
      [{ sides: 'both' }, /analysis\.sides/],
      [{ relative_interval: 'bootstrap' }, /analysis\.relative_interval/],
      [{ correction: 'sidak' }, /analysis\.correction must be one of/],
      [{ correction_family: 'per_arm' }, /analysis\.correction_family/],
      [{ srm_threshold: 1 }, /analysis\.srm_threshold must be in \(0, 1\)/],
      [{ srm_min_expected: -1 }, /analysis\.srm_min_expected/],
      [{ srmThreshold: 0.1 }, /analysis\.srmThreshold is not a field/],
      [{ engine: 'bandit' }, /analysis\.engine must be one of frequentist, bayesian/],
      [{ sequential: true }, /analysis\.sequential/],
      [{ sequential: { tuning_n: 0 } }, /analysis\.sequential\.tuning_n must be an integer from 10 to 1000000000/],
      [{ sequential: { tuning_n: 'many' } }, /analysis\.sequential\.tuning_n/],
      [{ sequential: {}, sides: 'one', alpha: 0.5 }, /analysis\.alpha must be below 0\.5 with sequential testing/],
      [{ hybrid: true }, /analysis\.hybrid needs analysis\.sequential/],
      [{ prior: { mean: 0, sd: 0.1 } }, /analysis\.prior applies to the bayesian engine only/],
      [{ engine: 'bayesian', prior: { mean: 0 } }, /analysis\.prior\.sd is required/],
      [{ engine: 'bayesian', prior: { sd: -0.1 } }, /analysis\.prior\.sd must be > 0/],
      [[0.05], /analysis/],
      ['strict', /analysis/],
    ];
    for (const [analysis, message] of cases) expectError(await post({ flag_key: 'checkout', analysis }), 400, 'INVALID_ARGUMENT', message);
  });

  test('rule_id and control_variant_key', async () => {
    expectError(await post({ flag_key: 'checkout', rule_id: 'missing' }), 400, 'INVALID_ARGUMENT', /rule_id 'missing' is not a rule of flag 'checkout' \(its rules: split\)/);
    expectError(await post({ flag_key: 'checkout', rule_id: '' }), 400, 'INVALID_ARGUMENT', /rule_id/);
    expectError(await post({ flag_key: 'checkout', rule_id: 7 }), 400, 'INVALID_ARGUMENT', /rule_id/);
    expectError(await post({ flag_key: 'checkout', control_variant_key: 'third' }), 400, 'INVALID_ARGUMENT', /control_variant_key 'third' must be one of variant_keys \(control, treatment\)/);
    expectError(await post({ flag_key: 'checkout', control_variant_key: '' }), 400, 'INVALID_ARGUMENT', /control_variant_key/);
    const created = await createExperiment(client, a);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { control_variant_key: 'nope' } }), 400, 'INVALID_ARGUMENT', /control_variant_key 'nope'/);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { rule_id: 'nope' } }), 400, 'INVALID_ARGUMENT', /rule_id 'nope'/);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { metrics: [{ event_key: 'revenue', aggregation: 'avg' }] } }), 400, 'INVALID_ARGUMENT', /metrics\[0\]\.aggregation/);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { analysis: { alpha: 2 } } }), 400, 'INVALID_ARGUMENT', /analysis\.alpha/);
    // Nothing of the refused writes stuck.
    assert.deepEqual(expectStatus(await client.get(path(created.id), { token: a.admin.token }), 200), created);
  });
});

describe('update', () => {
  test('metrics and analysis change in every status; analysis fields not sent go back to their defaults', async () => {
    const created = await createExperiment(client, a, { metric_keys: ['purchase'] });
    const drafted = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { metrics: RICH_METRICS.slice(0, 2), analysis: { alpha: 0.2, sides: 'one' } } }), 200);
    assert.deepEqual([drafted.metrics, drafted.analysis], [RICH_ANSWER.slice(0, 2), { ...DEFAULT_ANALYSIS, alpha: 0.2, sides: 'one' }]);
    for (const status of [ACTIVE, PAUSED, CONCLUDED]) {
      await moveThrough(client, a, created.id, [status]);
      const metrics = status === PAUSED ? [RICH_METRICS[2]] : [RICH_METRICS[3]];
      const changed = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { metrics, analysis: { correction: 'bonferroni' } } }), 200, status);
      assert.deepEqual([changed.status, changed.metrics, changed.analysis], [status, status === PAUSED ? [RICH_ANSWER[2]] : [RICH_ANSWER[3]], { ...DEFAULT_ANALYSIS, correction: 'bonferroni' }]);
    }
    // An empty analysis object is all the defaults.
    assert.deepEqual(expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { analysis: {} } }), 200).analysis, DEFAULT_ANALYSIS);
  });

  test('rule_id and control_variant_key change only in DRAFT; sent back unchanged they are fine', async () => {
    const created = await createExperiment(client, a);
    const set = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { rule_id: 'split', control_variant_key: 'treatment' } }), 200);
    assert.deepEqual([set.rule_id, set.control_variant_key], ['split', 'treatment']);
    // rule_id null is a value: back to the default rule.
    const reset = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { rule_id: null } }), 200);
    assert.deepEqual([reset.rule_id, reset.control_variant_key], [null, 'treatment']);
    // variant_keys sent back unchanged keep the control; new variant_keys without
    // control_variant_key make their first the control, as before the field existed.
    const unchanged = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { variant_keys: ['control', 'treatment'] } }), 200);
    assert.equal(unchanged.control_variant_key, 'treatment');
    const swapped = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { variant_keys: ['treatment', 'control'] } }), 200);
    assert.deepEqual([swapped.variant_keys, swapped.control_variant_key], [['treatment', 'control'], 'treatment']);
    const reordered = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { variant_keys: ['control', 'treatment'] } }), 200);
    assert.equal(reordered.control_variant_key, 'control');
    const explicit = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { variant_keys: ['treatment', 'control'], control_variant_key: 'control' } }), 200);
    assert.deepEqual([explicit.variant_keys, explicit.control_variant_key], [['treatment', 'control'], 'control']);
    await moveThrough(client, a, created.id, [ACTIVE]);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { control_variant_key: 'treatment' } }), 409, 'FAILED_PRECONDITION', /rule_id and control_variant_key can change only in EXPERIMENT_STATUS_DRAFT/);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { rule_id: 'split' } }), 409, 'FAILED_PRECONDITION', /only in EXPERIMENT_STATUS_DRAFT/);
    const same = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { rule_id: null, control_variant_key: 'control', name: 'unchanged arms' } }), 200);
    assert.deepEqual([same.name, same.rule_id, same.control_variant_key, same.status], ['unchanged arms', null, 'control', ACTIVE]);
  });

  test('a new flag keeps a named rule only when the new flag has it', async () => {
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag('banner', [half('split', 'on', 'off')]));
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag('footer', [half('other', 'on', 'off')]));
    const created = await createExperiment(client, a, { rule_id: 'split' });
    const moved = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { flag_key: 'banner' } }), 200);
    assert.deepEqual([moved.flag_key, moved.variant_keys, moved.control_variant_key, moved.rule_id], ['banner', ['on', 'off'], 'on', 'split']);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { flag_key: 'footer' } }), 400, 'INVALID_ARGUMENT', /rule_id 'split' is not a rule of flag 'footer'/);
    const both = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { flag_key: 'footer', rule_id: 'other', control_variant_key: 'off' } }), 200);
    assert.deepEqual([both.flag_key, both.rule_id, both.control_variant_key], ['footer', 'other', 'off']);
  });
});

describe('starting needs the studied rule (409 FAILED_PRECONDITION)', () => {
  test('a flag without a rule allocating over the arms cannot start; once it has one, it can', async () => {
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag('no-split', [{ id: 'all-on', conditions: [], variant_key: 'on' }]));
    const created = await createExperiment(client, a, { flag_key: 'no-split' });
    expectError(await transition(client, a, created.id, 'active'), 409, 'FAILED_PRECONDITION', /flag 'no-split' has no rule with a percentage allocation giving traffic to the control 'on'/);
    assert.equal(expectStatus(await client.get(path(created.id), { token: a.admin.token }), 200).status, DRAFT);
    // Only the control gets traffic: still no comparison.
    await setRules('no-split', [{ id: 'all-on', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 1000 }, { variant_key: 'off', weight_milli: 0 }] } }]);
    expectError(await transition(client, a, created.id, 'active'), 409, 'FAILED_PRECONDITION', /no rule with a percentage allocation/);
    await setRules('no-split', [half('split', 'on', 'off')]);
    assert.equal(expectStatus(await transition(client, a, created.id, 'active'), 200).status, ACTIVE);
  });

  test('a named rule that is gone, or has no allocation over the arms, refuses DRAFT→ACTIVE and PAUSED→ACTIVE', async () => {
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag('named', [half('first', 'on', 'off'), half('second', 'on', 'off')]));
    const created = await createExperiment(client, a, { flag_key: 'named', rule_id: 'second' });
    await setRules('named', [half('first', 'on', 'off')]);
    expectError(await transition(client, a, created.id, 'active'), 409, 'FAILED_PRECONDITION', /rule 'second' is no longer a rule of flag 'named'/);
    await setRules('named', [half('first', 'on', 'off'), { id: 'second', conditions: [], variant_key: 'on' }]);
    expectError(await transition(client, a, created.id, 'active'), 409, 'FAILED_PRECONDITION', /rule 'second' of flag 'named' has no percentage allocation/);
    await setRules('named', [half('first', 'on', 'off'), half('second', 'on', 'off')]);
    await moveThrough(client, a, created.id, [ACTIVE, PAUSED]);
    await setRules('named', [half('first', 'on', 'off')]);
    expectError(await transition(client, a, created.id, 'active'), 409, 'FAILED_PRECONDITION', /rule 'second' is no longer a rule/);
    assert.equal(expectStatus(await client.get(path(created.id), { token: a.admin.token }), 200).status, PAUSED);
    // Concluding needs no rule.
    assert.equal(expectStatus(await transition(client, a, created.id, 'concluded'), 200).status, CONCLUDED);
  });
});

describe('results carry the new statistics when the computation wrote them, and map without them', () => {
  test('absolute, relative, adjusted_p_value, capped/uncapped means, cuped, verdict, srm_warning, analysis', async () => {
    const created = await createExperiment(client, a, { metrics: [{ event_key: 'revenue', aggregation: 'sum' }] });
    const control = { mean: 1, variance: 2, lift: null, ci_low: null, ci_high: null, p_value: null, absolute: null, relative: null, adjusted_p_value: null, capped_mean: 1, uncapped_mean: 1.5, cuped: null };
    const treatment = {
      mean: 1.2, variance: 2.1, lift: 0.2, ci_low: -0.1, ci_high: 0.5, p_value: 0.3,
      absolute: { estimate: 0.2, ci_low: -0.1, ci_high: 0.5, p_value: 0.3 }, relative: { estimate: 0.2, ci_low: null, ci_high: 0.45, p_value: 0.31 },
      adjusted_p_value: 0.62, capped_mean: 1.2, uncapped_mean: 1.9, cuped: { theta: 0.8, variance_reduction: 0.35, balance_p_value: null }, verdict: 'inconclusive',
    };
    const variantResults = [
      { variantKey: 'control', participantCount: 10, metricValues: { revenue: 1 }, metricStats: { revenue: control }, pValue: 0, pValuePresent: false },
      { variantKey: 'treatment', participantCount: 12, metricValues: { revenue: 1.2 }, metricStats: { revenue: treatment }, pValue: 0.3, pValuePresent: true },
    ];
    const analysis = { alpha: 0.05, sides: 'two', relativeInterval: 'delta', correction: 'holm', correctionFamily: 'all', srmThreshold: 0.001, srmMinExpected: 5 };
    await ts.db.sql`
      INSERT INTO experiment_results (experiment_id, org_id, environment_id, variant_results, srm_p_value, computed_at_ms, computation_status, srm_warning, analysis)
      SELECT id, org_id, environment_id, ${ts.db.sql.json(variantResults)}::jsonb, 0.0001, ${Date.now() + 60_000}, 'completed', true, ${ts.db.sql.json(analysis)}::jsonb
      FROM experiments WHERE id = ${created.id}`;
    const results = expectStatus(await client.get(`${path(created.id)}/results`, { token: a.member.token }), 200);
    assert.deepEqual([results.srm_p_value, results.srm_warning, results.analysis], [0.0001, true, { ...DEFAULT_ANALYSIS, correction: 'holm' }]);
    assert.deepEqual(results.variant_results[0].metric_stats.revenue, control);
    assert.deepEqual(results.variant_results[1].metric_stats.revenue, treatment);

    // Results stored before the new fields: they are absent per metric, null at the top.
    await ts.db.sql`UPDATE experiment_results SET srm_warning = NULL, analysis = NULL,
      variant_results = ${ts.db.sql.json(variantResults.map((v) => ({ ...v, metricStats: { revenue: { mean: 1, variance: 2, lift: null, ci_low: null, ci_high: null, p_value: null } } })))}::jsonb
      WHERE experiment_id = ${created.id}`;
    const old = expectStatus(await client.get(`${path(created.id)}/results`, { token: a.member.token }), 200);
    assert.deepEqual([old.srm_warning, old.analysis], [null, null]);
    assert.deepEqual(old.variant_results[1].metric_stats.revenue, { mean: 1, variance: 2, lift: null, ci_low: null, ci_high: null, p_value: null });
  });
});

describe("another org's member", () => {
  test('cannot read or change metrics, analysis, rule or control: 404 as if nothing existed', async () => {
    const created = await createExperiment(client, a, { metrics: RICH_METRICS.slice(0, 1), analysis: { alpha: 0.1 } });
    const other = { token: b.member.token };
    expectError(await client.get(path(created.id), other), 404, 'NOT_FOUND');
    expectError(await client.get(experimentsOf(a.environmentId), other), 404, 'NOT_FOUND');
    expectError(await patch(client, path(created.id), { ...other, body: { metrics: [], analysis: { alpha: 0.2 } } }), 404, 'NOT_FOUND');
    expectError(await put(client, path(created.id), { ...other, body: { rule_id: 'split', control_variant_key: 'treatment' } }), 404, 'NOT_FOUND');
    expectError(await client.post(experimentsOf(a.environmentId), { ...other, body: { flag_key: 'checkout', metrics: RICH_METRICS } }), 404, 'NOT_FOUND');
    expectError(await patch(client, experimentPath(b.environmentId, created.id), { ...other, body: { metrics: [] } }), 404, 'NOT_FOUND');
    assert.deepEqual(expectStatus(await client.get(path(created.id), { token: a.member.token }), 200), created);
  });
});

describe('the rules of an ACTIVE experiment\'s flag keep its studied rule', () => {
  const rulesPath = (flagKey: string) => `/v1/environments/${a.environmentId}/flags/${flagKey}/rules`;
  const putRules = (flagKey: string, rules: unknown[]) => put(client, rulesPath(flagKey), { token: a.admin.token, body: { rules } });
  const targeted = { id: 'beta', conditions: [{ attribute: 'beta', op: 'eq', values: [true] }], variant_key: 'treatment' };

  test('removing it, taking its allocation off the arms, or putting another split first (default rule) is 409 naming the experiment; a new weight or a targeting rule is fine; paused, anything goes', async () => {
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag('guarded', [half('split', 'off', 'on')]));
    const experiment = await createExperiment(client, a, { name: 'guarded test', flag_key: 'guarded' });
    await moveThrough(client, a, String(experiment.id), [ACTIVE]);

    expectError(await putRules('guarded', []), 409, 'FAILED_PRECONDITION', /guarded test.*rule 'split'/);
    expectError(await putRules('guarded', [{ id: 'split', conditions: [], variant_key: 'on' }]), 409, 'FAILED_PRECONDITION', /guarded test/);
    expectError(await putRules('guarded', [half('other', 'off', 'on'), half('split', 'off', 'on')]), 409, 'FAILED_PRECONDITION', /study rule 'other'/);
    // The same through an update of the whole flag.
    expectError(
      await put(client, `/v1/environments/${a.environmentId}/flags/guarded`, { token: a.admin.token, body: { flag: { rules: [] } } }),
      409,
      'FAILED_PRECONDITION',
      /guarded test/,
    );
    // Ramping the split, or targeting some users before it, keeps the studied rule.
    const ramped = { ...half('split', 'off', 'on'), allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'off', weight_milli: 900 }, { variant_key: 'on', weight_milli: 100 }] } };
    expectStatus(await putRules('guarded', [{ ...targeted, variant_key: 'on' }, ramped]), 202, 'a targeting rule before the split');

    await moveThrough(client, a, String(experiment.id), [PAUSED]);
    expectStatus(await putRules('guarded', []), 202, 'the experiment is paused');
    // And it cannot start again without its rule.
    expectError(await transition(client, a, String(experiment.id), ACTIVE), 409, 'FAILED_PRECONDITION');
  });
});
