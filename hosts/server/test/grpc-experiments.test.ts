import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { after, before, describe, test } from 'node:test';
import { bearer, rejectsWithStatus } from './support/grpc-clients.ts';
import { experimentClient, statsClient, type ExperimentClient, type StatsClient } from './support/grpc-experiment-clients.ts';
import { prepareEnvironment } from './support/experiment-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
let experiments: ExperimentClient;
let stats: StatsClient;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

before(async () => {
  ts = await startTestServer({ STATS_POLL_MS: '3600000' });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'grpc-exp-a');
  b = await seedTenant(client, root.token, 'grpc-exp-b');
  await prepareEnvironment(client, a);
  experiments = experimentClient(ts.server.grpcPort);
  stats = statsClient(ts.server.grpcPort);
});
after(async () => {
  experiments.close();
  stats.close();
  await ts.stop();
});

const asA = () => bearer(a.admin.token);
const create = (fields: Record<string, unknown> = {}) =>
  experiments.createExperiment({ experiment: { environment_id: a.environmentId, name: 'grpc test', flag_key: 'checkout', ...fields } }, asA());
const ref = (id: string) => ({ environment_id: a.environmentId, experiment_id: id });
/** Without proto-loader's virtual `_field` members of proto3 optionals (oneofs: true), recursively. */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => !key.startsWith('_')).map(([key, inner]) => [key, plain(inner)]));
}

describe('svc.experiments.v1.ExperimentationService', () => {
  test('CreateExperiment: DRAFT at version 1 with defaults; field errors are INVALID_ARGUMENT', async () => {
    const created = await create({ metric_keys: ['purchase'] });
    assert.deepEqual(
      { ...(plain(created) as object), id: '', created_at_ms: 0, updated_at_ms: 0 },
      {
        id: '', environment_id: a.environmentId, name: 'grpc test', description: '', flag_key: 'checkout', status: 'EXPERIMENT_STATUS_DRAFT',
        variant_keys: ['control', 'treatment'], metric_keys: ['purchase'], traffic_allocation: 1, version: 1, created_at_ms: 0, updated_at_ms: 0,
        control_variant_key: 'control',
        metrics: [{ key: 'purchase', event_key: 'purchase', aggregation: 'conversion', direction: 'increase', capping: null, cuped: null, guardrail: false, ratio: null, guardrail_margin: null, quantile: null }],
        analysis: {
          alpha: 0.05, sides: 'two', relative_interval: 'delta', correction: 'none', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5,
          engine: 'frequentist', sequential: null, hybrid: false, prior: null,
        },
      },
    );
    assert.ok(created.created_at_ms > 0);
    await rejectsWithStatus(create({ flag_key: 'missing' }), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(create({ traffic_allocation: 2 }), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(experiments.createExperiment({ experiment: { flag_key: 'checkout' } }, asA()), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(experiments.createExperiment({}, asA()), grpc.status.INVALID_ARGUMENT);
  });

  test('credentials: none UNAUTHENTICATED, another org NOT_FOUND, a system-org user PERMISSION_DENIED', async () => {
    const created = await create();
    await rejectsWithStatus(experiments.getExperiment(ref(created.id)), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(experiments.getExperiment(ref(created.id), bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(experiments.listExperiments({ environment_id: a.environmentId }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(experiments.getExperiment(ref(created.id), bearer(root.token)), grpc.status.PERMISSION_DENIED);
  });

  test('Get, List, Update (set fields and update_mask), Delete', async () => {
    const created = await create({ metric_keys: ['purchase', 'revenue'] });
    assert.deepEqual(await experiments.getExperiment(ref(created.id), asA()), created);
    const { experiments: listed } = await experiments.listExperiments({ environment_id: a.environmentId }, asA());
    assert.ok(listed.some((e: { id: string }) => e.id === created.id));
    const renamed = await experiments.updateExperiment({ experiment: { environment_id: a.environmentId, id: created.id, name: 'renamed', version: 1 } }, asA());
    assert.deepEqual([renamed.name, renamed.metric_keys, renamed.traffic_allocation, renamed.version], ['renamed', ['purchase', 'revenue'], 1, 2]);
    const cleared = await experiments.updateExperiment({ experiment: { environment_id: a.environmentId, id: created.id, traffic_allocation: 0.3 }, update_mask: ['metric_keys'] }, asA());
    assert.deepEqual([cleared.name, cleared.metric_keys, cleared.traffic_allocation], ['renamed', [], 0.3]);
    await rejectsWithStatus(experiments.updateExperiment({ experiment: { environment_id: a.environmentId, id: created.id, name: 'stale', version: 1 } }, asA()), grpc.status.ABORTED);
    await rejectsWithStatus(experiments.updateExperiment({ experiment: { environment_id: a.environmentId, id: UNKNOWN, name: 'x' } }, asA()), grpc.status.NOT_FOUND);
    await rejectsWithStatus(experiments.deleteExperiment({ ...ref(created.id), version: 1 }, asA()), grpc.status.ABORTED);
    assert.deepEqual(await experiments.deleteExperiment(ref(created.id), asA()), cleared);
    await rejectsWithStatus(experiments.getExperiment(ref(created.id), asA()), grpc.status.NOT_FOUND);
  });

  test('TransitionExperiment follows the lifecycle; ListIterations numbers the iterations', async () => {
    const created = await create();
    const moved = await experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_ACTIVE', reason: 'launch' }, asA());
    assert.deepEqual([moved.status, moved.version], ['EXPERIMENT_STATUS_ACTIVE', 2]);
    await rejectsWithStatus(experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_DRAFT' }, asA()), grpc.status.FAILED_PRECONDITION);
    await rejectsWithStatus(experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_UNSPECIFIED' }, asA()), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_PAUSED', version: 1 }, asA()), grpc.status.ABORTED);
    await experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_PAUSED' }, asA());
    await experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_ACTIVE' }, asA());
    const { iterations } = await experiments.listIterations(ref(created.id), asA());
    assert.deepEqual(iterations.map((i: { iteration_number: number; ended_at_ms: number }) => [i.iteration_number, i.ended_at_ms > 0]), [[1, true], [2, false]]);
    assert.deepEqual(Object.keys(iterations[0]).sort(), ['ended_at_ms', 'experiment_id', 'id', 'iteration_number', 'metric_keys', 'started_at_ms', 'traffic_allocation']);
  });
});

describe('svc.stats.v1.StatsService and GetResults', () => {
  test('TriggerRecompute → GetJobStatus → GetResults, with unset optionals for the control', async () => {
    const created = await create({ metric_keys: ['purchase'] });
    await experiments.transitionExperiment({ ...ref(created.id), new_status: 'EXPERIMENT_STATUS_ACTIVE' }, asA());
    await rejectsWithStatus(experiments.getResults(ref(created.id), asA()), grpc.status.NOT_FOUND);
    const exposures = [0, 1, 2].flatMap((i) => [
      { flag_key: 'checkout', variant_key: 'control', context_type: 'user', context_key: `gc-${i}` },
      { flag_key: 'checkout', variant_key: 'treatment', context_type: 'user', context_key: `gt-${i}` },
    ]);
    expectStatus(await client.post(`/v1/environments/${a.environmentId}/exposures`, { sdkKey: a.rawKey, body: { exposures } }), 202);
    const events = ['gc-0', 'gt-0', 'gt-1'].map((key) => ({ metric_key: 'purchase', context_type: 'user', context_key: key, value: true }));
    expectStatus(await client.post(`/v1/environments/${a.environmentId}/events/batch`, { sdkKey: a.rawKey, body: events }), 202);

    const queued = await stats.triggerRecompute({ experiment_id: created.id }, asA());
    assert.deepEqual(Object.keys(queued).sort(), ['created_at_ms', 'job_id', 'status']);
    assert.equal(queued.status, 'pending');
    const pending = await stats.getJobStatus({ job_id: queued.job_id }, asA());
    assert.deepEqual([pending.status, pending.started_at_ms, pending.completed_at_ms, pending.error], ['pending', 0, 0, '']);
    await ts.server.statsWorker.runPending();
    const done = await stats.getJobStatus({ job_id: queued.job_id }, asA());
    assert.equal(done.status, 'completed');
    assert.ok(done.started_at_ms > 0 && done.completed_at_ms >= done.started_at_ms);

    const results = await experiments.getResults(ref(created.id), asA());
    assert.deepEqual([results.experiment_id, results.computation_status, results.is_stale], [created.id, 'completed', false]);
    const [control, treatment] = results.variant_results;
    assert.deepEqual([control.variant_key, control.participant_count, treatment.participant_count], ['control', 3, 3]);
    assert.deepEqual([control.metric_values.purchase, treatment.metric_values.purchase], [1 / 3, 2 / 3]);
    assert.equal(control.metric_stats.purchase.lift, undefined);
    assert.equal(control.metric_stats.purchase.p_value, undefined);
    assert.equal(treatment.p_value_present, true);
    // welch.json "bool 1/3 vs 2/3"
    assert.ok(Math.abs(treatment.metric_stats.purchase.p_value - 0.5185185185185183) < 1e-12);
    assert.equal(treatment.p_value, treatment.metric_stats.purchase.p_value);
    assert.equal(results.srm_p_value, 1);
  });

  test('TriggerRecompute while a job is queued answers that job: ten concurrent calls, one job', async () => {
    const created = await create();
    const answers = await Promise.all(Array.from({ length: 10 }, () => stats.triggerRecompute({ experiment_id: created.id }, asA())));
    assert.equal(new Set(answers.map((answer) => answer.job_id)).size, 1);
    assert.ok(answers.every((answer) => answer.status === 'pending'));
    await ts.server.statsWorker.runPending();
    const next = await stats.triggerRecompute({ experiment_id: created.id }, asA());
    assert.notEqual(next.job_id, answers[0]?.job_id, 'a finished job is not handed out again');
    await ts.server.statsWorker.runPending();
  });

  test('TriggerRecompute: INVALID_ARGUMENT for a non-UUID, NOT_FOUND unknown or of another org; GetJobStatus NOT_FOUND', async () => {
    const created = await create();
    await rejectsWithStatus(stats.triggerRecompute({ experiment_id: 'nope' }, asA()), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(stats.triggerRecompute({ experiment_id: UNKNOWN }, asA()), grpc.status.NOT_FOUND);
    await rejectsWithStatus(stats.triggerRecompute({ experiment_id: created.id }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(stats.triggerRecompute({ experiment_id: created.id }), grpc.status.UNAUTHENTICATED);
    const queued = await stats.triggerRecompute({ experiment_id: created.id }, asA());
    await rejectsWithStatus(stats.getJobStatus({ job_id: queued.job_id }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(stats.getJobStatus({ job_id: UNKNOWN }, asA()), grpc.status.NOT_FOUND);
    await ts.server.statsWorker.runPending();
  });
});
