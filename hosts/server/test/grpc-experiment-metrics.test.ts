import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { after, before, describe, test } from 'node:test';
import { bearer, rejectsWithStatus } from './support/grpc-clients.ts';
import { experimentClient, type ExperimentClient } from './support/grpc-experiment-clients.ts';
import { createFlag, put } from './support/flag-client.ts';
import { defineMetric, experimentPath, prepareEnvironment, splitFlag } from './support/experiment-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Metric definitions, analysis settings, the studied rule and the explicit control over
 * svc.experiments.v1.ExperimentationService: the same parser and checks as REST.
 */

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
let experiments: ExperimentClient;

const DAY = 86_400_000;

before(async () => {
  ts = await startTestServer({ STATS_POLL_MS: '3600000' }, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'grpc-exp-metrics-a');
  b = await seedTenant(client, root.token, 'grpc-exp-metrics-b');
  await prepareEnvironment(client, a);
  await defineMetric(client, a, 'sessions', 'int');
  experiments = experimentClient(ts.server.grpcPort);
});
after(async () => {
  experiments.close();
  await ts.stop();
});

const asA = () => bearer(a.admin.token);
const create = (fields: Record<string, unknown> = {}) =>
  experiments.createExperiment({ experiment: { environment_id: a.environmentId, name: 'grpc metrics', flag_key: 'checkout', ...fields } }, asA());
const update = (id: string, fields: Record<string, unknown>, updateMask: string[] = []) =>
  experiments.updateExperiment({ experiment: { environment_id: a.environmentId, id, ...fields }, update_mask: updateMask }, asA());
const ref = (id: string) => ({ environment_id: a.environmentId, experiment_id: id });

/** A decoded message without proto-loader's virtual `_field` members of proto3 optionals, recursively. */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => !key.startsWith('_')).map(([key, inner]) => [key, plain(inner)]));
}

const DEFAULT_ANALYSIS = {
  alpha: 0.05, sides: 'two', relative_interval: 'delta', correction: 'none', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5,
  engine: 'frequentist', sequential: null, hybrid: false, prior: null,
};
/** A decoded Metric with its proto defaults: "" strings, false, null messages, absent optionals. */
const decoded = (fields: Record<string, unknown>) => ({ key: '', event_key: '', aggregation: '', direction: '', capping: null, cuped: null, guardrail: false, ratio: null, guardrail_margin: null, quantile: null, ...fields });

const METRICS = [
  { key: 'capped', event_key: 'revenue', aggregation: 'mean', window_ms: DAY, capping: { kind: 'percentile', upper: 0.99, ignore_zeros: true }, cuped: {} },
  { event_key: 'purchase', aggregation: 'conversion', direction: 'decrease', guardrail: true },
  { key: 'rps', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'sessions', aggregation: 'count', window_ms: 3_600_000 } } },
];
const METRICS_ANSWER = [
  decoded({ key: 'capped', event_key: 'revenue', aggregation: 'mean', window_ms: DAY, direction: 'increase', capping: { kind: 'percentile', upper: 0.99, ignore_zeros: true }, cuped: { lookback_ms: 14 * DAY } }),
  decoded({ key: 'purchase', event_key: 'purchase', aggregation: 'conversion', direction: 'decrease', guardrail: true, guardrail_margin: { margin: 0, margin_kind: 'relative' } }),
  decoded({ key: 'rps', direction: 'increase', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'sessions', aggregation: 'count', window_ms: 3_600_000 } } }),
];

describe('svc.experiments.v1 metrics, analysis, rule_id, control_variant_key', () => {
  test('CreateExperiment stores them; GetExperiment and ListExperiments answer them', async () => {
    const created = await create({ metrics: METRICS, analysis: { alpha: 0.1, correction: 'holm' }, rule_id: 'split', control_variant_key: 'treatment', variant_keys: ['control', 'treatment'] });
    assert.deepEqual(plain(created.metrics), METRICS_ANSWER);
    assert.deepEqual(created.metric_keys, ['capped', 'purchase', 'rps']);
    assert.deepEqual(plain(created.analysis), { ...DEFAULT_ANALYSIS, alpha: 0.1, correction: 'holm' });
    assert.deepEqual([created.rule_id, created.control_variant_key], ['split', 'treatment']);
    assert.deepEqual(await experiments.getExperiment(ref(created.id), asA()), created);
    const { experiments: listed } = await experiments.listExperiments({ environment_id: a.environmentId }, asA());
    assert.deepEqual(listed.find((e: { id: string }) => e.id === created.id), created);
    // REST shows the same experiment with the same definitions.
    const rest = expectStatus(await client.get(experimentPath(a.environmentId, created.id), { token: a.admin.token }), 200);
    assert.deepEqual(rest.metrics.map((m: { key: string }) => m.key), ['capped', 'purchase', 'rps']);
    assert.deepEqual(rest.metrics[0].cuped, { lookback_ms: 14 * DAY });
  });

  test('guardrail margins, engine, sequential, hybrid and prior round-trip (issue 39)', async () => {
    const created = await create({
      metrics: [
        { event_key: 'revenue', aggregation: 'sum', guardrail_margin: { margin: 2.5, margin_kind: 'absolute' } },
        { event_key: 'purchase', aggregation: 'conversion', guardrail_margin: { margin: 0.02 } },
      ],
      analysis: { engine: 'bayesian', sequential: { tuning_n: 10_000 }, hybrid: true, prior: { mean: 0, sd: 0.05 } },
    });
    assert.deepEqual((plain(created.metrics) as Array<Record<string, unknown>>).map((m: Record<string, unknown>) => [m.guardrail, m.guardrail_margin]), [
      [true, { margin: 2.5, margin_kind: 'absolute' }],
      [true, { margin: 0.02, margin_kind: 'relative' }],
    ]);
    assert.deepEqual(plain(created.analysis), { ...DEFAULT_ANALYSIS, engine: 'bayesian', sequential: { tuning_n: 10_000 }, hybrid: true, prior: { mean: 0, sd: 0.05 } });
    // REST answers the same settings.
    const rest = expectStatus(await client.get(experimentPath(a.environmentId, created.id), { token: a.admin.token }), 200);
    assert.deepEqual(rest.metrics.map((m: { guardrail: unknown }) => m.guardrail), [{ margin: 2.5, margin_kind: 'absolute' }, { margin: 0.02, margin_kind: 'relative' }]);
    assert.deepEqual([rest.analysis.engine, rest.analysis.sequential, rest.analysis.hybrid, rest.analysis.prior], ['bayesian', { tuning_n: 10_000 }, true, { mean: 0, sd: 0.05 }]);
    // The whole answer sent back changes nothing.
    const resent = await update(created.id, { ...created, version: 0 });
    assert.deepEqual([plain(resent.metrics), plain(resent.analysis)], [plain(created.metrics), plain(created.analysis)]);
  });

  test('quantile metrics round-trip; REST answers the same definition; refusals as REST (docs/statistics.md §15)', async () => {
    const created = await create({
      metrics: [
        { key: 'p50', event_key: 'revenue', quantile: { p: 0.5 } },
        { key: 'p90e', event_key: 'revenue', quantile: { p: 0.9, unit: 'event' }, direction: 'decrease' },
      ],
    });
    assert.deepEqual(plain(created.metrics), [
      decoded({ key: 'p50', event_key: 'revenue', aggregation: 'sum', direction: 'increase', quantile: { p: 0.5, unit: 'participant' } }),
      decoded({ key: 'p90e', event_key: 'revenue', direction: 'decrease', quantile: { p: 0.9, unit: 'event' } }),
    ]);
    const rest = expectStatus(await client.get(experimentPath(a.environmentId, created.id), { token: a.admin.token }), 200);
    assert.deepEqual(rest.metrics.map((m: { aggregation: unknown; quantile: unknown }) => [m.aggregation, m.quantile]), [
      ['sum', { p: 0.5, unit: 'participant' }],
      [null, { p: 0.9, unit: 'event' }],
    ]);
    // The whole answer sent back changes nothing.
    const resent = await update(created.id, { ...created, version: 0 });
    assert.deepEqual(plain(resent.metrics), plain(created.metrics));
    assert.match((await rejectsWithStatus(create({ metrics: [{ event_key: 'revenue', quantile: { p: 0.5 }, cuped: {} }] }), grpc.status.INVALID_ARGUMENT)).details, /CUPED adjusts means/);
    assert.match((await rejectsWithStatus(create({ metrics: [{ event_key: 'revenue', quantile: { p: 1.5 } }] }), grpc.status.INVALID_ARGUMENT)).details, /quantile\.p must be/);
  });

  test('defaults and old-style metric_keys: derived metrics, default analysis, no rule, the first variant the control', async () => {
    const created = await create({ metric_keys: ['purchase', 'revenue'] });
    assert.deepEqual(plain(created.metrics), [
      decoded({ key: 'purchase', event_key: 'purchase', aggregation: 'conversion', direction: 'increase' }),
      decoded({ key: 'revenue', event_key: 'revenue', aggregation: 'sum', direction: 'increase' }),
    ]);
    assert.deepEqual(plain(created.analysis), DEFAULT_ANALYSIS);
    assert.equal(created.rule_id, undefined);
    assert.equal(created.control_variant_key, 'control');
    // The whole answer sent back (metric_keys with the metrics it lists) changes nothing.
    const resent = await update(created.id, { ...created, version: 0 });
    assert.deepEqual(plain(resent.metrics), plain(created.metrics));
  });

  test('UpdateExperiment: metrics and analysis in any status; rule_id and control only in DRAFT; "" or the mask clears rule_id', async () => {
    const created = await create();
    const ruled = await update(created.id, { rule_id: 'split', control_variant_key: 'treatment' });
    assert.deepEqual([ruled.rule_id, ruled.control_variant_key], ['split', 'treatment']);
    assert.equal((await update(created.id, { rule_id: '' })).rule_id, undefined);
    await update(created.id, { rule_id: 'split' });
    const masked = await update(created.id, { name: 'masked' }, ['rule_id']);
    assert.deepEqual([masked.name, masked.rule_id], ['masked', undefined]);
    await update(created.id, { control_variant_key: 'control' });
    await experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_ACTIVE' }, asA());
    const running = await update(created.id, { metrics: [METRICS[1]], analysis: { sides: 'one' } });
    assert.deepEqual([plain(running.metrics), plain(running.analysis)], [[METRICS_ANSWER[1]], { ...DEFAULT_ANALYSIS, sides: 'one' }]);
    const cleared = await update(created.id, {}, ['metrics', 'analysis']);
    assert.deepEqual([cleared.metrics, cleared.metric_keys, plain(cleared.analysis)], [[], [], DEFAULT_ANALYSIS]);
    await rejectsWithStatus(update(created.id, { control_variant_key: 'treatment' }), grpc.status.FAILED_PRECONDITION);
    await rejectsWithStatus(update(created.id, { rule_id: 'split' }), grpc.status.FAILED_PRECONDITION);
  });

  test('every field error is INVALID_ARGUMENT with the message REST gives', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ metrics: [{ event_key: 'unregistered', aggregation: 'sum' }] }, /metrics\[0\]\.event_key: 'unregistered' is not registered/],
      [{ metrics: [{ event_key: 'revenue' }] }, /metrics\[0\]\.aggregation must be one of/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum', direction: 'up' }] }, /metrics\[0\]\.direction/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum', window_ms: -1 }] }, /metrics\[0\]\.window_ms/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum', capping: { kind: 'absolute' } }] }, /metrics\[0\]\.capping needs lower, upper or both/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum', capping: { kind: 'absolute', lower: 3, upper: 1 } }] }, /capping\.lower must be <=/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum', capping: { kind: 'percentile', lower: 0.5, upper: 0.2 } }] }, /capping\.lower must be </],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum', capping: { kind: 'percentile', upper: 2 } }] }, /capping\.upper .*\(0, 1\)/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum', capping: { upper: 2 } }] }, /capping\.kind/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum', cuped: { lookback_ms: 0 } }] }, /cuped\.lookback_ms/],
      [{ metrics: [{ ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'sessions', aggregation: 'sum' } } }] }, /metrics\[0\]\.key is required for a ratio metric/],
      [{ metrics: [{ key: 'r', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' } } }] }, /metrics\[0\]\.ratio\.denominator must be an object/],
      [{ metrics: [{ key: 'r', event_key: 'revenue', ratio: { numerator: { event_key: 'revenue', aggregation: 'sum' }, denominator: { event_key: 'sessions', aggregation: 'sum' } } }] }, /ratio metric/],
      [{ metrics: [{ key: 'r' }] }, /metrics\[0\] needs event_key/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum' }, { event_key: 'revenue', aggregation: 'mean' }] }, /metrics\[1\]\.key: 'revenue' names two metrics/],
      [{ metrics: Array.from({ length: 21 }, (_, i) => ({ key: `m${i}`, event_key: 'revenue', aggregation: 'sum' })) }, /at most 20 metrics/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum' }], metric_keys: ['purchase'] }, /not both/],
      [{ analysis: { alpha: 0.7 } }, /analysis\.alpha/],
      [{ analysis: { sides: 'both' } }, /analysis\.sides/],
      [{ analysis: { relative_interval: 'x' } }, /analysis\.relative_interval/],
      [{ analysis: { correction: 'x' } }, /analysis\.correction must/],
      [{ analysis: { correction_family: 'x' } }, /analysis\.correction_family/],
      [{ analysis: { srm_threshold: 0 } }, /analysis\.srm_threshold/],
      [{ analysis: { srm_min_expected: -3 } }, /analysis\.srm_min_expected/],
      [{ analysis: { engine: 'bandit' } }, /analysis\.engine must be one of frequentist, bayesian/],
      [{ analysis: { sequential: { tuning_n: 5 } } }, /analysis\.sequential\.tuning_n must be an integer from 10/],
      [{ analysis: { hybrid: true } }, /analysis\.hybrid needs analysis\.sequential/],
      [{ analysis: { prior: { mean: 0, sd: 0.05 } } }, /analysis\.prior applies to the bayesian engine only/],
      [{ analysis: { engine: 'bayesian', prior: { mean: 0, sd: 0 } } }, /analysis\.prior\.sd must be > 0/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum', guardrail_margin: { margin: -1 } }] }, /metrics\[0\]\.guardrail\.margin must be from 0/],
      [{ metrics: [{ event_key: 'revenue', aggregation: 'sum', guardrail_margin: { margin: 1, margin_kind: 'percent' } }] }, /metrics\[0\]\.guardrail\.margin_kind/],
      [{ rule_id: 'missing' }, /rule_id 'missing' is not a rule of flag 'checkout'/],
      [{ control_variant_key: 'third' }, /control_variant_key 'third' must be one of variant_keys/],
      [{ control_variant_key: '' }, /control_variant_key/],
    ];
    for (const [fields, message] of cases) {
      const error = await rejectsWithStatus(create(fields), grpc.status.INVALID_ARGUMENT);
      assert.match(error.details, message, JSON.stringify(fields));
    }
  });

  test('starting without the studied rule is FAILED_PRECONDITION with the reason', async () => {
    // A flag of its own: an ACTIVE experiment on `checkout` would keep its rules from changing.
    await createFlag(client, a.admin.token, a.environmentId, splitFlag('unstudied'));
    const created = await create({ flag_key: 'unstudied', rule_id: 'split' });
    expectStatus(await put(client, `/v1/environments/${a.environmentId}/flags/unstudied/rules`, { token: a.admin.token, body: { rules: [] } }), 202);
    const error = await rejectsWithStatus(experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_ACTIVE' }, asA()), grpc.status.FAILED_PRECONDITION);
    assert.match(error.details, /rule 'split' is no longer a rule of flag 'unstudied'/);
    await update(created.id, { rule_id: '' });
    const unnamed = await rejectsWithStatus(experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_ACTIVE' }, asA()), grpc.status.FAILED_PRECONDITION);
    assert.match(unnamed.details, /flag 'unstudied' has no rule with a percentage allocation/);
    const split = { id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }] } };
    expectStatus(await put(client, `/v1/environments/${a.environmentId}/flags/unstudied/rules`, { token: a.admin.token, body: { rules: [split] } }), 202);
    const moved = await experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_ACTIVE' }, asA());
    assert.equal(moved.status, 'EXPERIMENT_STATUS_ACTIVE');
  });

  test("another org's member cannot read or change them: NOT_FOUND", async () => {
    const created = await create({ metrics: [METRICS[1]] });
    const other = bearer(b.member.token);
    await rejectsWithStatus(experiments.getExperiment(ref(created.id), other), grpc.status.NOT_FOUND);
    await rejectsWithStatus(experiments.updateExperiment({ experiment: { environment_id: a.environmentId, id: created.id, metrics: [], analysis: { alpha: 0.2 } }, update_mask: ['metrics'] }, other), grpc.status.NOT_FOUND);
    await rejectsWithStatus(experiments.updateExperiment({ experiment: { environment_id: a.environmentId, id: created.id, control_variant_key: 'treatment' } }, other), grpc.status.NOT_FOUND);
    assert.deepEqual(await experiments.getExperiment(ref(created.id), asA()), created);
  });

  /** MetricStats' issue-39 fields as decoded when unset. */
  const ISSUE_39_UNSET = { sequential: null, bayesian: null, guardrail: null, guardrail_status: '', quantile: null };

  test('GetResults maps the new statistics, and results without them', async () => {
    const created = await create({ metrics: [{ event_key: 'revenue', aggregation: 'sum' }] });
    const base = { mean: 1, variance: 2, lift: null, ci_low: null, ci_high: null, p_value: null };
    const rich = {
      mean: 1.2, variance: 2.1, lift: 0.2, ci_low: -0.1, ci_high: 0.5, p_value: 0.3,
      absolute: { estimate: 0.2, ci_low: -0.1, ci_high: 0.5, p_value: 0.3 }, relative: { estimate: 0.2, ci_low: null, ci_high: 0.45, p_value: 0.31 },
      adjusted_p_value: 0.62, capped_mean: 1.2, uncapped_mean: 1.9, cuped: { theta: 0.8, variance_reduction: 0.35, balance_p_value: null }, verdict: 'better',
    };
    const variantResults = [
      { variantKey: 'control', participantCount: 10, metricValues: { revenue: 1 }, metricStats: { revenue: { ...base, absolute: null, relative: null, adjusted_p_value: null, cuped: null } }, pValue: 0, pValuePresent: false },
      { variantKey: 'treatment', participantCount: 12, metricValues: { revenue: 1.2 }, metricStats: { revenue: rich }, pValue: 0.3, pValuePresent: true },
    ];
    const analysis = { alpha: 0.05, sides: 'one', relativeInterval: 'fieller', correction: 'none', correctionFamily: 'all', srmThreshold: 0.001, srmMinExpected: 5 };
    await ts.db.sql`
      INSERT INTO experiment_results (experiment_id, org_id, environment_id, variant_results, srm_p_value, computed_at_ms, computation_status, srm_warning, analysis)
      SELECT id, org_id, environment_id, ${ts.db.sql.json(variantResults)}::jsonb, 0.5, ${Date.now() + 60_000}, 'completed', false, ${ts.db.sql.json(analysis)}::jsonb
      FROM experiments WHERE id = ${created.id}`;
    const results = await experiments.getResults(ref(created.id), asA());
    assert.deepEqual([results.srm_warning, plain(results.analysis)], [false, { ...DEFAULT_ANALYSIS, sides: 'one', relative_interval: 'fieller' }]);
    const [control, treatment] = results.variant_results;
    // A quantile metric's per-arm statistics (docs/statistics.md §15).
    const quantile = { p: 0.9, unit: 'event', n: 200, estimate: 190, ci_low: 184, ci_high: 196, se: 3.06 };
    await ts.db.sql`UPDATE experiment_results SET variant_results = ${ts.db.sql.json(variantResults.map((v) => ({ ...v, metricStats: { revenue: { ...v.metricStats.revenue, quantile } } })))}::jsonb
      WHERE experiment_id = ${created.id}`;
    const withQuantile = await experiments.getResults(ref(created.id), asA());
    assert.deepEqual(plain(withQuantile.variant_results[1].metric_stats.revenue.quantile), quantile);
    await ts.db.sql`UPDATE experiment_results SET variant_results = ${ts.db.sql.json(variantResults)}::jsonb WHERE experiment_id = ${created.id}`;
    assert.deepEqual(plain(treatment.metric_stats.revenue), {
      mean: 1.2, variance: 2.1, lift: 0.2, ci_low: -0.1, ci_high: 0.5, p_value: 0.3,
      absolute: { estimate: 0.2, ci_low: -0.1, ci_high: 0.5, p_value: 0.3 }, relative: { estimate: 0.2, ci_high: 0.45, p_value: 0.31 },
      adjusted_p_value: 0.62, capped_mean: 1.2, uncapped_mean: 1.9, cuped: { theta: 0.8, variance_reduction: 0.35 }, verdict: 'better',
      sequential: null, bayesian: null, guardrail: null, guardrail_status: '', quantile: null,
    });
    assert.deepEqual(plain(control.metric_stats.revenue), { ...ISSUE_39_UNSET, mean: 1, variance: 2, absolute: null, relative: null, cuped: null, verdict: '' });

    await ts.db.sql`UPDATE experiment_results SET srm_warning = NULL, analysis = NULL,
      variant_results = ${ts.db.sql.json(variantResults.map((v) => ({ ...v, metricStats: { revenue: base } })))}::jsonb WHERE experiment_id = ${created.id}`;
    const old = await experiments.getResults(ref(created.id), asA());
    assert.deepEqual([old.srm_warning, old.analysis], [undefined, null]);
    assert.deepEqual(plain(old.variant_results[1].metric_stats.revenue), { ...ISSUE_39_UNSET, mean: 1, variance: 2, absolute: null, relative: null, cuped: null, verdict: '' });
  });
});
