import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { connect, createPostgresRepositories, type Sql } from '@switchyard/postgres';
import { ResultsComputer, StatsWorker, type ResultsComputation } from '@switchyard/services';
import { eventually } from './support/flag-fixtures.ts';
import { ACTIVE, JOB_FIELDS, createExperiment, experimentPath, moveThrough, prepareEnvironment } from './support/experiment-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

before(async () => {
  // The server's own worker looks once at startup, then every hour: these tests drive workers
  // themselves, so every job runs exactly when a test says.
  ts = await startTestServer({ STATS_POLL_MS: '3600000' });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'stats-a');
  b = await seedTenant(client, root.token, 'stats-b');
  await prepareEnvironment(client, a);
});
after(() => ts.stop());

const recompute = (experimentId: string, token = a.admin.token) => client.post(`/v1/experiments/${experimentId}/recompute`, { token });
const job = (jobId: string, token = a.admin.token) => client.get(`/v1/jobs/${jobId}`, { token });
const results = (experimentId: string) => client.get(`${experimentPath(a.environmentId, experimentId)}/results`, { token: a.admin.token });

describe('POST /v1/experiments/{experiment_id}/recompute and GET /v1/jobs/{job_id}', () => {
  test('202 with a pending job; the job goes pending → running → completed and the results appear', async () => {
    const experiment = await createExperiment(client, a, { metric_keys: ['purchase'] });
    await moveThrough(client, a, experiment.id, [ACTIVE]);
    const before = Date.now();
    const queued = expectStatus(await recompute(experiment.id), 202);
    assert.deepEqual(Object.keys(queued).sort(), ['created_at_ms', 'job_id', 'status']);
    assert.equal(queued.status, 'pending');
    assert.ok(queued.created_at_ms >= before && queued.created_at_ms <= Date.now());
    const pending = expectStatus(await job(queued.job_id, a.member.token), 200);
    assert.deepEqual(Object.keys(pending).sort(), JOB_FIELDS);
    assert.deepEqual(pending, { job_id: queued.job_id, status: 'pending', started_at_ms: 0, completed_at_ms: 0, error: '', created_at_ms: queued.created_at_ms });

    // A worker mid-computation: the job shows running until the computation is let through.
    let release = (): void => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let entered = (): void => {};
    const computing = new Promise<void>((resolve) => (entered = resolve));
    const inner = new ResultsComputer(ts.server.repos);
    const worker = new StatsWorker(ts.server.repos, {
      async compute(orgId, experimentId) {
        entered();
        await gate;
        return inner.compute(orgId, experimentId);
      },
    });
    const run = worker.runPending();
    await computing;
    const running = expectStatus(await job(queued.job_id), 200);
    assert.deepEqual([running.status, running.completed_at_ms, running.error], ['running', 0, '']);
    assert.ok(running.started_at_ms >= queued.created_at_ms);
    release();
    assert.deepEqual((await run).map((j) => j.id), [queued.job_id]);
    const done = expectStatus(await job(queued.job_id), 200);
    assert.deepEqual([done.status, done.error, done.started_at_ms], ['completed', '', running.started_at_ms]);
    assert.ok(done.completed_at_ms >= done.started_at_ms);
    const computed = expectStatus(await results(experiment.id), 200);
    assert.deepEqual([computed.computation_status, computed.is_stale], ['completed', false]);
    assert.deepEqual(computed.variant_results.map((v: { variant_key: string; participant_count: number }) => [v.variant_key, v.participant_count]), [['control', 0], ['treatment', 0]]);
  });

  test('errors: 400 for a non-UUID id, 404 unknown or of another org, 401 without a bearer, 403 for a system-org user', async () => {
    const experiment = await createExperiment(client, a);
    expectError(await recompute('not-a-uuid'), 400, 'INVALID_ARGUMENT', /UUID/);
    expectError(await recompute(UNKNOWN), 404, 'NOT_FOUND');
    expectError(await recompute(experiment.id, b.admin.token), 404, 'NOT_FOUND');
    expectError(await client.post(`/v1/experiments/${experiment.id}/recompute`), 401, 'UNAUTHENTICATED');
    expectError(await client.post(`/v1/experiments/${experiment.id}/recompute`, { sdkKey: a.rawKey }), 401, 'UNAUTHENTICATED');
    expectError(await recompute(experiment.id, root.token), 403, 'PERMISSION_DENIED');
    const queued = expectStatus(await recompute(experiment.id), 202);
    expectError(await job(UNKNOWN), 404, 'NOT_FOUND');
    expectError(await job('not-a-uuid'), 404, 'NOT_FOUND');
    expectError(await job(queued.job_id, b.admin.token), 404, 'NOT_FOUND');
    expectError(await client.get(`/v1/jobs/${queued.job_id}`), 401, 'UNAUTHENTICATED');
    expectError(await job(queued.job_id, root.token), 403, 'PERMISSION_DENIED');
    await ts.server.statsWorker.runPending();
  });

  test('a DRAFT experiment computes to no_iteration with zero participants and no schedule', async () => {
    const experiment = await createExperiment(client, a, { metric_keys: ['purchase', 'revenue'] });
    const queued = expectStatus(await recompute(experiment.id), 202);
    await ts.server.statsWorker.runPending();
    assert.equal(expectStatus(await job(queued.job_id), 200).status, 'completed');
    const computed = expectStatus(await results(experiment.id), 200);
    assert.deepEqual([computed.computation_status, computed.next_run_at_ms, computed.srm_p_value], ['no_iteration', 0, null]);
    assert.deepEqual(computed.variant_results.map((v: { participant_count: number; p_value_present: boolean }) => [v.participant_count, v.p_value_present]), [[0, false], [0, false]]);
  });

  test('concurrent recomputes of one experiment while a job is queued: all 202 with that one job', async () => {
    const experiment = await createExperiment(client, a);
    const answers = await Promise.all(Array.from({ length: 20 }, () => recompute(experiment.id)));
    const queued = answers.map((answer) => expectStatus(answer, 202));
    assert.equal(new Set(queued.map((q) => q.job_id)).size, 1, 'one job for twenty triggers');
    assert.equal(new Set(queued.map((q) => q.created_at_ms)).size, 1);
    const [row] = await ts.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM stats_jobs WHERE experiment_id = ${experiment.id}`;
    assert.equal(row?.n, 1);
    // A later trigger while it is still queued gets it too; once it ran, a trigger queues anew.
    assert.equal(expectStatus(await recompute(experiment.id, a.member.token), 202).job_id, queued[0]?.job_id);
    await ts.server.statsWorker.runPending();
    assert.equal(expectStatus(await job(queued[0]?.job_id), 200).status, 'completed');
    const next = expectStatus(await recompute(experiment.id), 202);
    assert.notEqual(next.job_id, queued[0]?.job_id);
    assert.equal(next.status, 'pending');
    await ts.server.statsWorker.runPending();
  });

  test('a job for an experiment deleted before it ran fails with an error text', async () => {
    const experiment = await createExperiment(client, a);
    const queued = expectStatus(await recompute(experiment.id), 202);
    expectStatus(await client.delete(experimentPath(a.environmentId, experiment.id), { token: a.admin.token }), 200);
    await ts.server.statsWorker.runPending();
    const failed = expectStatus(await job(queued.job_id), 200);
    assert.equal(failed.status, 'failed');
    assert.equal(failed.error, `experiment ${experiment.id} no longer exists`);
    assert.ok(failed.started_at_ms > 0 && failed.completed_at_ms >= failed.started_at_ms);
  });
});

describe('workers', () => {
  let secondPool: Sql;
  before(() => {
    secondPool = connect(ts.db.url, { poolSize: 3 });
  });
  after(() => secondPool.end({ timeout: 5 }));

  /** A computation that takes a while, so two workers really overlap. */
  const slow = (computer: ResultsComputation, calls: string[]): ResultsComputation => ({
    async compute(orgId, experimentId) {
      calls.push(experimentId);
      await sleep(15);
      return computer.compute(orgId, experimentId);
    },
  });

  test('two workers on two connection pools never run the same job', async () => {
    // Twelve experiments (one experiment has at most one queued job).
    const queued: string[] = [];
    for (let i = 0; i < 12; i += 1) queued.push(expectStatus(await recompute((await createExperiment(client, a)).id), 202).job_id);
    const otherRepos = createPostgresRepositories(secondPool);
    const calls: string[] = [];
    const first = new StatsWorker(ts.server.repos, slow(new ResultsComputer(ts.server.repos), calls));
    const second = new StatsWorker(otherRepos, slow(new ResultsComputer(otherRepos), calls));
    const [ranByFirst, ranBySecond] = await Promise.all([first.runPending(), second.runPending()]);
    const ids = [...ranByFirst, ...ranBySecond].map((j) => j.id);
    assert.equal(new Set(ids).size, ids.length, 'a job ran twice');
    assert.deepEqual([...ids].sort(), [...queued].sort());
    assert.equal(calls.length, 12);
    assert.ok(ranByFirst.length > 0 && ranBySecond.length > 0, `both workers should have worked (${ranByFirst.length}/${ranBySecond.length})`);
    for (const id of queued) {
      const stored = await ts.server.repos.statsJobs.get({ orgId: a.orgId }, id);
      assert.deepEqual([stored?.status, stored?.attempts], ['completed', 1]);
    }
  });

  test("orgs take turns: org B's one job queued after org A's twenty runs within the first two", async () => {
    await prepareEnvironment(client, b);
    const busy: string[] = [];
    for (let i = 0; i < 20; i += 1) {
      const experiment = await createExperiment(client, a);
      expectStatus(await recompute(experiment.id), 202);
      busy.push(experiment.id);
    }
    const quiet = await createExperiment(client, b);
    expectStatus(await recompute(quiet.id, b.admin.token), 202);
    const order: string[] = [];
    const worker = new StatsWorker(ts.server.repos, {
      compute(orgId, experimentId) {
        order.push(experimentId);
        return new ResultsComputer(ts.server.repos).compute(orgId, experimentId);
      },
    });
    await worker.runPending();
    assert.deepEqual([...order].sort(), [...busy, quiet.id].sort(), 'every job ran once');
    const position = order.indexOf(quiet.id);
    assert.ok(position <= 1, `org B's job ran ${position + 1}th of ${order.length}`);
  });

  test('a job whose worker crashed (lease expired) is claimed again and completed; too many attempts fail it', async () => {
    const experiment = await createExperiment(client, a);
    const crashed = expectStatus(await recompute(experiment.id), 202);
    // The "crashed" worker claims with a 1 ms lease and never finishes.
    const claim = await ts.server.repos.statsJobs.claimNext(Date.now(), 1);
    assert.equal(claim?.id, crashed.job_id);
    await sleep(5);
    const worker = new StatsWorker(ts.server.repos, new ResultsComputer(ts.server.repos));
    assert.deepEqual((await worker.runPending()).map((j) => j.id), [crashed.job_id]);
    const recovered = await ts.server.repos.statsJobs.get({ orgId: a.orgId }, crashed.job_id);
    assert.deepEqual([recovered?.status, recovered?.attempts, recovered?.startedAtMs], ['completed', 2, claim?.startedAtMs]);

    const poisoned = expectStatus(await recompute(experiment.id), 202);
    for (let i = 0; i < 3; i += 1) {
      assert.equal((await ts.server.repos.statsJobs.claimNext(Date.now(), 1))?.id, poisoned.job_id);
      await sleep(3);
    }
    await worker.runPending();
    const gaveUp = expectStatus(await job(poisoned.job_id), 200);
    assert.equal(gaveUp.status, 'failed');
    assert.match(gaveUp.error, /gave up after 3 attempts/);
  });

  test('the schedule recomputes ACTIVE experiments on its own, once per interval', async () => {
    const experiment = await createExperiment(client, a, { metric_keys: ['purchase'] });
    await moveThrough(client, a, experiment.id, [ACTIVE]);
    const draft = await createExperiment(client, a);
    const intervalMs = 1_000;
    const worker = new StatsWorker(ts.server.repos, new ResultsComputer(ts.server.repos, { intervalMs }), { intervalMs, pollMs: 20 });
    worker.start();
    try {
      let first: { computed_at_ms: number; next_run_at_ms: number } | undefined;
      await eventually('the first scheduled computation', async () => {
        const response = await results(experiment.id);
        if (response.status === 200) first = response.body;
        return response.status === 200;
      });
      assert.ok(first);
      assert.equal(first.next_run_at_ms, first.computed_at_ms + intervalMs);
      await eventually('the next scheduled computation', async () => (await results(experiment.id)).body.computed_at_ms > (first?.computed_at_ms ?? 0), 8_000);
      expectError(await results(draft.id), 404, 'NOT_FOUND');
    } finally {
      await worker.stop();
    }
    // Pause: off the schedule.
    await moveThrough(client, a, experiment.id, ['paused']);
    const queued = expectStatus(await recompute(experiment.id), 202);
    await ts.server.statsWorker.runPending();
    assert.equal(expectStatus(await job(queued.job_id), 200).status, 'completed');
    assert.equal(expectStatus(await results(experiment.id), 200).next_run_at_ms, 0);
  });

  test('is_stale turns true when an exposure or event arrives after the computation', async () => {
    const experiment = await createExperiment(client, a, { metric_keys: ['purchase'] });
    await moveThrough(client, a, experiment.id, [ACTIVE]);
    expectStatus(await recompute(experiment.id), 202);
    await ts.server.statsWorker.runPending();
    assert.equal(expectStatus(await results(experiment.id), 200).is_stale, false);
    expectStatus(await client.post(`/v1/environments/${a.environmentId}/exposures`, { sdkKey: a.rawKey, body: { exposures: [{ flag_key: 'checkout', variant_key: 'control', context_type: 'user', context_key: 'late' }] } }), 202);
    assert.equal(expectStatus(await results(experiment.id), 200).is_stale, true);
    expectStatus(await recompute(experiment.id), 202);
    await ts.server.statsWorker.runPending();
    const fresh = expectStatus(await results(experiment.id), 200);
    assert.deepEqual([fresh.is_stale, fresh.variant_results[0].participant_count], [false, 1]);
    expectStatus(await client.post(`/v1/environments/${a.environmentId}/events`, { sdkKey: a.rawKey, body: { metric_key: 'purchase', context_type: 'user', context_key: 'late', value: true } }), 202);
    assert.equal(expectStatus(await results(experiment.id), 200).is_stale, true);
  });
});
