import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { after, before, describe, test } from 'node:test';
import { bearer, rejectsWithStatus } from './support/grpc-clients.ts';
import { experimentClient, type ExperimentClient } from './support/grpc-experiment-clients.ts';
import { ACTIVE, createExperiment, experimentPath, experimentsOf, moveThrough, prepareEnvironment } from './support/experiment-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Issue 39 "Power and duration" through REST and gRPC (docs/contract.md "Power and duration",
 * docs/statistics.md §14). The events seeded below give, worked out by hand:
 * - 10 units in the window (u0..u9 each sent a `purchase`), so 10/14 a day over 14 days;
 * - revenue summed per unit [20, 20, 30, 40, 0, 0, 0, 0, 0, 0]: mean 11, Σ(x − 11)² = 3300 − 1210 = 2090, variance 2090/9;
 * - purchase converted 5 of 10: mean 0.5, variance 10·0.25/9 = 2.5/9;
 * an event 20 days old and the other tenant's events are not read. The sample sizes and powers
 * come from statsmodels (fixtures/power-api.json, packages/stats/test-vectors/generate_power_api_fixtures.py).
 */

interface Case {
  mean: number;
  variance: number;
  mde: number;
  alpha: number;
  power: number;
  exposures_per_day?: number;
  traffic_allocation?: number;
  tuning_n?: number;
  sides?: string;
  weights?: number[];
  participants?: number[];
  fixed: number[];
  sequential?: number[];
  current_power?: number;
}
const fixture = JSON.parse(readFileSync(new URL('./fixtures/power-api.json', import.meta.url), 'utf8')) as { cases: Record<string, Case> };
const cases = fixture.cases as Record<'revenue' | 'purchase_sequential' | 'by_hand_weighted' | 'experiment_revenue', Case>;

const DAY_MS = 86_400_000;
let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let rootToken: string;
let grpcClient: ExperimentClient;

const close = (actual: unknown, expected: number, what: string, tolerance = 1e-9) =>
  assert.ok(typeof actual === 'number' && Math.abs(actual - expected) <= tolerance * Math.max(1, Math.abs(expected)), `${what}: ${String(actual)} vs ${expected}`);

async function postEvents(tenant: Tenant, events: Json[]): Promise<void> {
  const answer = expectStatus(await client.post(`/v1/environments/${tenant.environmentId}/events/batch`, { sdkKey: tenant.rawKey, body: { events } }), 202, 'events');
  assert.deepEqual(answer.rejected_keys, [], 'nothing rejected');
}

before(async () => {
  ts = await startTestServer({ STATS_POLL_MS: '3600000' }, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  rootToken = root.token;
  a = await seedTenant(client, root.token, 'power-a');
  b = await seedTenant(client, root.token, 'power-b');
  await prepareEnvironment(client, a);
  await prepareEnvironment(client, b);
  const t = Date.now() - 3_600_000;
  const event = (user: number, key: string, value: number | boolean, at = t) => ({ metric_key: key, context_type: 'user', context_key: `u${user}`, value, timestamp_ms: at });
  await postEvents(a, [
    ...[0, 1, 2, 3, 4].map((u) => event(u, 'purchase', true)),
    ...[5, 6, 7, 8, 9].map((u) => event(u, 'purchase', false)),
    event(0, 'revenue', 10), event(0, 'revenue', 10, t + 1), event(1, 'revenue', 20), event(2, 'revenue', 30), event(3, 'revenue', 40),
    // Outside a 14-day window.
    { ...event(99, 'revenue', 999, Date.now() - 20 * DAY_MS) },
  ]);
  // Another tenant's events are never read.
  await postEvents(b, [0, 1, 2].map((u) => event(u, 'revenue', 5000)));
  grpcClient = experimentClient(ts.server.grpcPort);
});
after(async () => {
  grpcClient?.close();
  await ts?.stop();
});

const powerPath = () => `${experimentsOf(a.environmentId)}/power`;
const postPower = (body: unknown, token = a.member.token) => client.post(powerPath(), { token, body });

describe('POST .../experiments/power', () => {
  test('a metric read from the window: mean and variance by hand, sample from statsmodels, days from the rate × allocation', async () => {
    const c = cases.revenue;
    const answer = expectStatus(await postPower({ metric: { event_key: 'revenue', aggregation: 'sum' }, mde: c.mde, traffic_allocation: c.traffic_allocation }), 200);
    close(answer.inputs.mean, 11, 'mean');
    close(answer.inputs.variance, 2090 / 9, 'variance');
    assert.equal(answer.inputs.participants, 10);
    assert.equal(answer.inputs.window_days, 14);
    assert.equal(answer.inputs.truncated, false);
    close(answer.inputs.exposures_per_day, (10 / 14) * 0.5, 'rate');
    assert.deepEqual(answer.inputs.source, { mean: 'events', variance: 'events', exposures_per_day: 'events', cuped_r2: 'none' });
    assert.deepEqual(answer.fixed.sample_per_arm, c.fixed);
    assert.equal(answer.fixed.total, c.fixed[0]! + c.fixed[1]!);
    close(answer.fixed.days, (c.fixed[0]! + c.fixed[1]!) / ((10 / 14) * 0.5), 'days');
    assert.equal(answer.sequential, null);
    assert.deepEqual(answer.settings, { mde: 0.1, alpha: 0.05, power: 0.8, sides: 'two', weights: [0.5, 0.5], sequential: null });
  });

  test('a conversion metric with the sequential test (its N* from the body)', async () => {
    const c = cases.purchase_sequential;
    const answer = expectStatus(await postPower({ metric: { event_key: 'purchase', aggregation: 'conversion' }, mde: c.mde, sequential: { tuning_n: c.tuning_n } }), 200);
    close(answer.inputs.mean, 0.5, 'mean');
    close(answer.inputs.variance, 2.5 / 9, 'variance');
    assert.deepEqual(answer.fixed.sample_per_arm, c.fixed);
    assert.deepEqual(answer.sequential.sample_per_arm, c.sequential);
    close(answer.sequential.days, (c.sequential![0]! * 2) / (10 / 14), 'sequential days');
    assert.ok(answer.sequential.total > answer.fixed.total, 'always-valid costs more than fixed');
  });

  test('values given by hand are used as given (no window read), unequal weights and one-sided', async () => {
    const c = cases.by_hand_weighted;
    const answer = expectStatus(await postPower({ mean: c.mean, variance: c.variance, exposures_per_day: c.exposures_per_day, mde: c.mde, alpha: c.alpha, power: c.power, sides: c.sides, weights: c.weights }), 200);
    assert.equal(answer.inputs.participants, null, 'nothing read');
    assert.deepEqual(answer.inputs.source, { mean: 'given', variance: 'given', exposures_per_day: 'given', cuped_r2: 'none' });
    assert.deepEqual(answer.fixed.sample_per_arm, c.fixed);
    close(answer.fixed.days, (c.fixed[0]! + c.fixed[1]!) / 1000, 'days');
    // CUPED's R² given: the variance shrinks by 1 − R², so the sample by about as much.
    const cuped = expectStatus(await postPower({ mean: c.mean, variance: c.variance, mde: c.mde, alpha: c.alpha, power: c.power, sides: c.sides, weights: c.weights, exposures_per_day: 1000, cuped_r2: 0.5 }), 200);
    const half = expectStatus(await postPower({ mean: c.mean, variance: c.variance / 2, mde: c.mde, alpha: c.alpha, power: c.power, sides: c.sides, weights: c.weights, exposures_per_day: 1000 }), 200);
    assert.deepEqual(cuped.fixed.sample_per_arm, half.fixed.sample_per_arm);
    assert.equal(cuped.inputs.source.cuped_r2, 'given');
    // Mean and variance by hand without a rate: the window's units a day (nothing else read).
    const rate = expectStatus(await postPower({ mean: c.mean, variance: c.variance, mde: c.mde }), 200);
    assert.equal(rate.inputs.participants, 10);
    close(rate.inputs.exposures_per_day, 10 / 14, 'window rate');
    assert.deepEqual(rate.inputs.source, { mean: 'given', variance: 'given', exposures_per_day: 'events', cuped_r2: 'none' });
  });

  test('a mean given by hand overrides the data; the variance still comes from the window', async () => {
    const answer = expectStatus(await postPower({ metric: { event_key: 'revenue', aggregation: 'sum' }, mean: 22, mde: 0.1 }), 200);
    assert.equal(answer.inputs.mean, 22);
    close(answer.inputs.variance, 2090 / 9, 'variance');
    assert.equal(answer.inputs.source.mean, 'given');
    assert.equal(answer.inputs.source.variance, 'events');
  });

  test('bad input is 400 INVALID_ARGUMENT naming the field, never 500', async () => {
    const metric = { event_key: 'revenue', aggregation: 'sum' };
    const bad: Array<[unknown, RegExp]> = [
      [{ metric }, /mde is required/],
      [{ metric, mde: 0 }, /mde must be > 0/],
      [{ metric, mde: -0.1 }, /mde must be > 0/],
      [{ metric, mde: 0.1, alpha: 1.5 }, /alpha/],
      [{ metric, mde: 0.1, alpha: 0 }, /alpha/],
      [{ metric, mde: 0.1, alpha: 0.1, power: 0.05 }, /power must be above alpha/],
      [{ metric, mde: 0.1, power: 1 }, /power/],
      [{ metric, mde: 0.1, window_days: 91 }, /window_days/],
      [{ metric, mde: 0.1, window_days: 0 }, /window_days/],
      [{ metric: { event_key: 'nope', aggregation: 'sum' }, mde: 0.1 }, /metric\.event_key: 'nope' is not registered/],
      // A key that names a property of every JavaScript object is no registered event either.
      [{ metric: { event_key: 'constructor', aggregation: 'sum' }, mde: 0.1 }, /metric\.event_key: 'constructor' is not registered/],
      [{ metric: { event_key: 'revenue', aggregation: 'median' }, mde: 0.1 }, /aggregation/],
      [{ mde: 0.1 }, /give a metric/],
      [{ mean: 1, variance: 1, mde: 0.1, cuped_r2: 1 }, /cuped_r2/],
      [{ mean: 1, variance: -1, mde: 0.1 }, /variance/],
      [{ mean: 1, variance: 1, mde: 0.1, weights: [1] }, /weights/],
      [{ mean: 1, variance: 1, mde: 0.1, weights: [1, -1] }, /weights/],
      [{ mean: 1, variance: 1, mde: 0.1, arms: 1 }, /arms/],
      [{ mean: 1, variance: 1, mde: 0.1, arms: 3, weights: [1, 1] }, /weights/],
      [{ mean: 1, variance: 1, mde: 0.1, sides: 'left' }, /sides/],
      [{ mean: 1, variance: 1, mde: 0.1, sequential: { tuning_n: 1 } }, /tuning_n/],
      [{ mean: 1, variance: 1, mde: 0.1, traffic_allocation: 0 }, /traffic_allocation/],
      // The calculator plans a difference of means: a quantile metric's plan would be another's.
      [{ metric: { event_key: 'revenue', quantile: { p: 0.9 } }, mde: 0.1 }, /quantile/],
    ];
    for (const [body, message] of bad) expectError(await postPower(body), 400, 'INVALID_ARGUMENT', message);
  });

  test('no usable variance (the window is empty for another environment) answers null samples, not an error', async () => {
    const answer = expectStatus(await client.post(`${experimentsOf(b.environmentId)}/power`, { token: b.member.token, body: { metric: { event_key: 'purchase', aggregation: 'conversion' }, mde: 0.1 } }), 200);
    // b's three units have no purchase: conversion 0 with variance 0.
    assert.equal(answer.inputs.participants, 3, "only b's own units");
    assert.equal(answer.fixed.sample_per_arm, null);
    assert.equal(answer.fixed.days, null);
  });

  test('RBAC as the experiments read routes: anonymous 401, another org 404', async () => {
    expectError(await client.post(powerPath(), { body: { mean: 1, variance: 1, mde: 0.1 } }), 401, 'UNAUTHENTICATED');
    expectError(await client.post(powerPath(), { sdkKey: a.rawKey, body: { mean: 1, variance: 1, mde: 0.1 } }), 401, 'UNAUTHENTICATED');
    expectError(await postPower({ mean: 1, variance: 1, mde: 0.1 }, b.admin.token), 404, 'NOT_FOUND');
    expectError(await postPower({ mean: 1, variance: 1, mde: 0.1 }, rootToken), 403, 'PERMISSION_DENIED');
    expectError(await client.post(`${experimentsOf('00000000-0000-4000-8000-000000000000')}/power`, { token: a.admin.token, body: { mean: 1, variance: 1, mde: 0.1 } }), 404, 'NOT_FOUND');
  });
});

describe('GET .../experiments/{id}/power', () => {
  test('while running: the experiment rate, the current power (statsmodels) and the projected end', async () => {
    const c = cases.experiment_revenue;
    const experiment = await createExperiment(client, a, { metrics: [{ event_key: 'revenue', aggregation: 'sum' }, { event_key: 'purchase', aggregation: 'conversion' }] });
    const path = `${experimentPath(a.environmentId, experiment.id)}/power`;
    // Before it runs: the window's rate × the experiment's allocation (1).
    const draft = expectStatus(await client.get(`${path}?mde=0.1&metric_key=revenue`, { token: a.member.token }), 200);
    assert.deepEqual(draft.arms, ['control', 'treatment']);
    assert.equal(draft.metrics.length, 1);
    assert.equal(draft.metrics[0].current, null);
    assert.equal(draft.metrics[0].inputs.source.exposures_per_day, 'events');
    close(draft.metrics[0].inputs.exposures_per_day, 10 / 14, 'window rate');
    assert.deepEqual(draft.metrics[0].fixed.sample_per_arm, c.fixed);

    await moveThrough(client, a, experiment.id, [ACTIVE]);
    const [iteration] = expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/iterations`, { token: a.admin.token }), 200);
    const start = iteration.started_at_ms as number;
    const exposures: Json[] = [];
    for (let i = 0; i < 30; i += 1) {
      for (const variant of ['control', 'treatment']) exposures.push({ flag_key: 'checkout', variant_key: variant, context_type: 'user', context_key: `${variant}-${i}`, timestamp_ms: start + i });
    }
    expectStatus(await client.post(`/v1/environments/${a.environmentId}/exposures`, { sdkKey: a.rawKey, body: { exposures } }), 202);
    // The iteration is counted up to now: on a quick machine the last exposure (start + 29 ms)
    // can still be in the future here, and would not be counted yet.
    while (Date.now() <= start + 29) await new Promise((resolve) => setTimeout(resolve, 5));
    const before = Date.now();
    const answer = expectStatus(await client.get(`${path}?mde=${c.mde}`, { token: a.member.token }), 200);
    const afterMs = Date.now();
    assert.equal(answer.experiment_id, experiment.id);
    assert.deepEqual(answer.metrics.map((m: Json) => m.metric_key), ['revenue', 'purchase']);
    const revenue = answer.metrics[0];
    close(revenue.inputs.mean, 11, 'mean');
    close(revenue.inputs.variance, 2090 / 9, 'variance');
    assert.equal(revenue.inputs.source.exposures_per_day, 'experiment');
    assert.deepEqual(revenue.fixed.sample_per_arm, c.fixed);
    assert.deepEqual(revenue.current.participants_per_arm, { control: 30, treatment: 30 });
    close(revenue.current.power, c.current_power!, 'current power');
    assert.equal(revenue.current.sequential_power, null);
    // rate = 60 participants over (now − start) days; end = start + total/rate days = start + total·(now − start)/60.
    const total = c.fixed[0]! + c.fixed[1]!;
    const end = revenue.current.projected_end_ms as number;
    assert.ok(end >= start + (total * (before - start)) / 60 - 1 && end <= start + (total * (afterMs - start)) / 60 + 1, `projected end ${end}`);
  });

  test("the experiment's own analysis: sequential N* plans the always-valid sample too", async () => {
    const c = cases.purchase_sequential;
    const experiment = await createExperiment(client, a, { metrics: [{ event_key: 'purchase', aggregation: 'conversion' }], analysis: { sequential: { tuning_n: c.tuning_n } } });
    const answer = expectStatus(await client.get(`${experimentPath(a.environmentId, experiment.id)}/power?mde=${c.mde}`, { token: a.member.token }), 200);
    const purchase = answer.metrics[0];
    assert.deepEqual(purchase.settings, { mde: c.mde, alpha: 0.05, power: 0.8, sides: 'two', weights: [0.5, 0.5], sequential: { tuning_n: c.tuning_n } });
    assert.deepEqual(purchase.fixed.sample_per_arm, c.fixed);
    assert.deepEqual(purchase.sequential.sample_per_arm, c.sequential);
    close(purchase.sequential.days, (c.sequential![0]! * 2) / (10 / 14), 'sequential days at the window rate');
  });

  test('quantile metrics are left out of the plan (it is for means); asking for one by key is 400', async () => {
    const experiment = await createExperiment(client, a, { metrics: [{ event_key: 'revenue', aggregation: 'sum' }, { key: 'revenue-p90', event_key: 'revenue', quantile: { p: 0.9 } }] });
    const path = `${experimentPath(a.environmentId, experiment.id)}/power`;
    const answer = expectStatus(await client.get(`${path}?mde=0.1`, { token: a.member.token }), 200);
    assert.deepEqual(answer.metrics.map((m: { metric_key: string }) => m.metric_key), ['revenue']);
    expectError(await client.get(`${path}?mde=0.1&metric_key=revenue-p90`, { token: a.member.token }), 400, 'INVALID_ARGUMENT', /quantile/);
  });

  test('validation and isolation: mde required, unknown metric 400; another org 404; anonymous 401', async () => {
    const experiment = await createExperiment(client, a, { metrics: [{ event_key: 'revenue', aggregation: 'sum' }] });
    const path = `${experimentPath(a.environmentId, experiment.id)}/power`;
    expectError(await client.get(path, { token: a.member.token }), 400, 'INVALID_ARGUMENT', /mde/);
    expectError(await client.get(`${path}?mde=abc`, { token: a.member.token }), 400, 'INVALID_ARGUMENT', /mde/);
    expectError(await client.get(`${path}?mde=-1`, { token: a.member.token }), 400, 'INVALID_ARGUMENT', /mde/);
    expectError(await client.get(`${path}?mde=0.1&power=0.01`, { token: a.member.token }), 400, 'INVALID_ARGUMENT', /power/);
    expectError(await client.get(`${path}?mde=0.1&window_days=365`, { token: a.member.token }), 400, 'INVALID_ARGUMENT', /window_days/);
    expectError(await client.get(`${path}?mde=0.1&metric_key=nope`, { token: a.member.token }), 400, 'INVALID_ARGUMENT', /metric_key/);
    expectError(await client.get(`${path}?mde=0.1`), 401, 'UNAUTHENTICATED');
    expectError(await client.get(`${path}?mde=0.1`, { token: rootToken }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(`${path}?mde=0.1`, { token: b.admin.token }), 404, 'NOT_FOUND');
    // b's own environment does not have the experiment either.
    expectError(await client.get(`${experimentPath(b.environmentId, experiment.id)}/power?mde=0.1`, { token: b.admin.token }), 404, 'NOT_FOUND');
  });
});

describe('gRPC EstimatePower and GetExperimentPower', () => {
  test('the same answers as REST; INVALID_ARGUMENT and NOT_FOUND as REST', async () => {
    const c = cases.revenue;
    const answer = await grpcClient.estimatePower({
      environment_id: a.environmentId,
      metric: { event_key: 'revenue', aggregation: 'sum' },
      mde: c.mde,
      traffic_allocation: c.traffic_allocation,
    }, bearer(a.member.token));
    close(answer.inputs.mean, 11, 'mean');
    close(answer.inputs.variance, 2090 / 9, 'variance');
    assert.deepEqual(answer.fixed.sample_per_arm, c.fixed);
    close(answer.fixed.days, (c.fixed[0]! + c.fixed[1]!) / ((10 / 14) * 0.5), 'days');
    assert.equal(answer.sequential, null);
    await rejectsWithStatus(grpcClient.estimatePower({ environment_id: a.environmentId, mean: 1, variance: 1 }, bearer(a.member.token)), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(grpcClient.estimatePower({ environment_id: a.environmentId, mean: 1, variance: 1, mde: 0.1 }, bearer(b.admin.token)), grpc.status.NOT_FOUND);

    const experiment = await createExperiment(client, a, { metrics: [{ event_key: 'revenue', aggregation: 'sum' }] });
    const forExperiment = await grpcClient.getExperimentPower({ environment_id: a.environmentId, experiment_id: experiment.id, mde: c.mde }, bearer(a.member.token));
    assert.deepEqual(forExperiment.arms, ['control', 'treatment']);
    assert.deepEqual(forExperiment.metrics[0].fixed.sample_per_arm, c.fixed);
    assert.equal(forExperiment.metrics[0].current, null);
    await rejectsWithStatus(grpcClient.getExperimentPower({ environment_id: a.environmentId, experiment_id: experiment.id }, bearer(a.member.token)), grpc.status.INVALID_ARGUMENT);
  });
});
