import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeEach, describe, test } from 'node:test';
import type { Principal } from '@switchyard/core';
import { welchTTest } from '@switchyard/stats';
import { ResultsComputer, StatsWorker, type ResultsComputation } from '../src/index.ts';
import { experimentWorld, rejectsWith, type ExperimentWorld } from './experiment-fixture.ts';

let w: ExperimentWorld;
beforeEach(async () => {
  w = await experimentWorld();
});

async function activeExperiment(metricKeys: string[] = ['purchase', 'clicks']) {
  const created = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', variant_keys: ['control', 'treatment'], metric_keys: metricKeys });
  return w.experiments.transition(w.admin, w.scope, created.id, { new_status: 'active' });
}

describe('StatsService', () => {
  test('triggerRecompute: UUID check, org scoping, RBAC', async () => {
    const experiment = await activeExperiment();
    await rejectsWith(w.stats.triggerRecompute(w.admin, 'not-a-uuid'), 'INVALID_ARGUMENT', /UUID/);
    await rejectsWith(w.stats.triggerRecompute(w.stranger, experiment.id), 'NOT_FOUND');
    const system: Principal = { kind: 'user', userId: 'root', orgId: w.scope.orgId, role: 'org_admin', isSystem: true };
    await rejectsWith(w.stats.triggerRecompute(system, experiment.id), 'PERMISSION_DENIED');
    const sdk: Principal = { kind: 'sdk_key', sdkKeyId: 'k', ...w.scope };
    await rejectsWith(w.stats.triggerRecompute(sdk, experiment.id), 'PERMISSION_DENIED');
    const job = await w.stats.triggerRecompute(w.admin, experiment.id);
    assert.deepEqual([job.status, job.orgId, job.experimentId], ['pending', w.scope.orgId, experiment.id]);
    assert.equal((await w.stats.getJob(w.admin, job.id)).id, job.id);
    await rejectsWith(w.stats.getJob(w.stranger, job.id), 'NOT_FOUND');
  });
});

describe('ResultsComputer', () => {
  test('aggregates the current iteration and stores results matching Welch on the raw data', async () => {
    const experiment = await activeExperiment();
    const t = Date.now() - 1000;
    const exposures = [];
    for (let i = 0; i < 6; i += 1) {
      exposures.push({ flagKey: 'checkout', variantKey: 'control', contextType: 'user', contextKey: `c${i}`, timestampMs: t + 2000 });
      exposures.push({ flagKey: 'checkout', variantKey: 'treatment', contextType: 'user', contextKey: `t${i}`, timestampMs: t + 2000 });
    }
    await w.repos.exposures.insert(w.scope, exposures);
    const clicks = { c0: 3, c1: 1, c4: 2, t0: 5, t1: 4, t2: 6, t3: 1 };
    await w.repos.events.insert(w.scope, Object.entries(clicks).map(([contextKey, value]) => ({ metricKey: 'clicks', contextType: 'user', contextKey, value, timestampMs: t + 2001 })));
    await w.repos.events.insert(w.scope, ['c0', 't0', 't1'].map((contextKey) => ({ metricKey: 'purchase', contextType: 'user', contextKey, value: 1, timestampMs: t + 2001 })));
    const computer = new ResultsComputer(w.repos, { intervalMs: 60_000, now: () => 5_000_000 });
    const results = await computer.compute(w.scope.orgId, experiment.id);
    const [iteration] = await w.repos.experiments.listIterations(w.scope, experiment.id);
    assert.deepEqual([results.iterationId, results.computedAtMs, results.nextRunAtMs, results.computationStatus, results.srmPValue], [iteration?.id, 5_000_000, 5_060_000, 'completed', 1]);
    const [control, treatment] = results.variantResults;
    assert.deepEqual([control?.participantCount, treatment?.participantCount], [6, 6]);
    const raw = (prefix: string) => Array.from({ length: 6 }, (_, i) => (clicks as Record<string, number>)[`${prefix}${i}`] ?? 0);
    const summary = (values: number[]) => {
      const mean = values.reduce((s, v) => s + v, 0) / values.length;
      return { n: values.length, mean, variance: values.reduce((s, v) => s + (v - mean) ** 2, 0) / (values.length - 1) };
    };
    const expected = welchTTest(summary(raw('c')), summary(raw('t')));
    assert.ok(expected && treatment?.metricStats.clicks?.p_value);
    assert.ok(Math.abs(treatment.metricStats.clicks.p_value - expected.pValue) < 1e-12);
    // purchase is the primary metric: 1/6 vs 2/6.
    assert.deepEqual([control?.metricValues.purchase, treatment?.metricValues.purchase], [1 / 6, 2 / 6]);
    assert.equal(treatment?.pValue, treatment?.metricStats.purchase?.p_value);
    assert.deepEqual(await w.repos.results.get(w.scope, experiment.id), results);
  });

  test('two recomputes at once lose no look of the running tests: the one saving second folds in the first', async () => {
    const created = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout', variant_keys: ['control', 'treatment'], metric_keys: ['clicks'], analysis: { sequential: {} } });
    const experiment = await w.experiments.transition(w.admin, w.scope, created.id, { new_status: 'active' });
    const t = Date.now() - 1000;
    const exposures = [];
    for (let i = 0; i < 6; i += 1) {
      exposures.push({ flagKey: 'checkout', variantKey: 'control', contextType: 'user', contextKey: `c${i}`, timestampMs: t + 2000 });
      exposures.push({ flagKey: 'checkout', variantKey: 'treatment', contextType: 'user', contextKey: `t${i}`, timestampMs: t + 2000 });
    }
    await w.repos.exposures.insert(w.scope, exposures);
    await w.repos.events.insert(w.scope, ['c0', 'c1', 't0', 't1', 't2', 't3'].map((contextKey, i) => ({ metricKey: 'clicks', contextType: 'user', contextKey, value: i + 1, timestampMs: t + 2001 })));
    // The later computation (started at 2000) reads the stored results (none), and before it saves,
    // an earlier-started one (1000) runs through and saves its look.
    const earlier = new ResultsComputer(w.repos, { now: () => 1000 });
    let interleaved = false;
    const results = new Proxy(w.repos.results, {
      get(target, name, receiver) {
        if (name !== 'saveIfUnchanged') return Reflect.get(target, name, receiver);
        return async (...args: Parameters<typeof target.saveIfUnchanged>) => {
          if (!interleaved) {
            interleaved = true;
            await earlier.compute(w.scope.orgId, experiment.id);
          }
          return target.saveIfUnchanged(...args);
        };
      },
    });
    const later = new ResultsComputer({ ...w.repos, results }, { now: () => 2000 });
    const saved = await later.compute(w.scope.orgId, experiment.id);
    assert.ok(interleaved);
    assert.equal(saved.computedAtMs, 2000);
    const stored = await w.repos.results.get(w.scope, experiment.id);
    assert.equal(stored?.computedAtMs, 2000);
    // Two looks folded: the earlier one's, then the later one's over it (one look each on its own).
    assert.equal(stored?.runningState?.sequential.treatment?.clicks?.looks, 2);
    // And a computation that started before the stored one does not replace it.
    const stale = await new ResultsComputer(w.repos, { now: () => 1500 }).compute(w.scope.orgId, experiment.id);
    assert.equal(stale.computedAtMs, 2000);
    assert.equal((await w.repos.results.get(w.scope, experiment.id))?.runningState?.sequential.treatment?.clicks?.looks, 2);
  });

  test('no planned split (no allocation rule) leaves srm_p_value null', async () => {
    const experiment = await activeExperiment();
    await w.repos.flags.updateState(w.scope, 'checkout', { rules: [] });
    const results = await new ResultsComputer(w.repos).compute(w.scope.orgId, experiment.id);
    assert.equal(results.srmPValue, null);
  });
});

describe('StatsWorker', () => {
  const worker = (computer: ResultsComputation = new ResultsComputer(w.repos), options = {}) => new StatsWorker(w.repos, computer, options);

  test('runs pending jobs to completed; a deleted experiment fails with a text; other errors a generic one', async () => {
    const experiment = await activeExperiment();
    const ok = await w.stats.triggerRecompute(w.admin, experiment.id);
    const doomed = await w.experiments.create(w.admin, w.scope, { flag_key: 'checkout' });
    const gone = await w.stats.triggerRecompute(w.admin, doomed.id);
    await w.experiments.remove(w.admin, w.scope, doomed.id);
    const finished = await worker().runPending();
    // Created in the same millisecond, the two may be claimed in either order.
    const byId = (rows: string[][]) => rows.sort((x, y) => (x[0] ?? '').localeCompare(y[0] ?? ''));
    assert.deepEqual(byId(finished.map((j) => [j.id, j.status, j.error])), byId([
      [ok.id, 'completed', ''],
      [gone.id, 'failed', `experiment ${doomed.id} no longer exists`],
    ]));
    const logged: string[] = [];
    const broken = await w.stats.triggerRecompute(w.admin, experiment.id);
    const failing = worker({ compute: async () => { throw new Error('relation "x" does not exist'); } }, { log: (_level: string, message: string) => logged.push(message) });
    const [failed] = await failing.runPending();
    assert.deepEqual([failed?.id, failed?.status], [broken.id, 'failed']);
    assert.doesNotMatch(failed?.error ?? '', /relation/, 'no SQL text in the job');
    assert.deepEqual(logged, ['stats: computation failed']);
  });

  test('a transient error leaves the job to its lease: claimed again later, not failed', async () => {
    const experiment = await activeExperiment();
    const job = await w.stats.triggerRecompute(w.admin, experiment.id);
    const outage = Object.assign(new Error('connection lost'), { code: 'CONNECTION_CLOSED' });
    const flaky = worker({ compute: async () => { throw outage; } }, { leaseMs: 5, isTransient: (error: unknown) => error === outage });
    await flaky.runNext();
    assert.equal((await w.stats.getJob(w.admin, job.id)).status, 'running');
    await sleep(10);
    const [retried] = await worker().runPending();
    assert.deepEqual([retried?.id, retried?.status, retried?.attempts], [job.id, 'completed', 2]);
  });

  test('schedule enqueues due ACTIVE experiments once', async () => {
    const experiment = await activeExperiment();
    const scheduler = worker(new ResultsComputer(w.repos), { intervalMs: 60_000 });
    assert.deepEqual((await scheduler.schedule()).map((j) => j.experimentId), [experiment.id]);
    assert.deepEqual(await scheduler.schedule(), []);
    await scheduler.runPending();
    assert.deepEqual(await scheduler.schedule(), [], 'fresh results');
  });

  test('the lease is renewed while a slow computation runs, so no other worker takes the job', async () => {
    const experiment = await activeExperiment();
    const job = await w.stats.triggerRecompute(w.admin, experiment.id);
    // A lease of 300 ms renewed every 100 ms, looked at 500 ms in: without renewal it would have
    // expired 200 ms before. (A 30 ms lease failed on a loaded machine: one renewal 30 ms late.)
    const slow: ResultsComputation = { compute: async (orgId, id) => { await sleep(900); return new ResultsComputer(w.repos).compute(orgId, id); } };
    const run = worker(slow, { leaseMs: 300 }).runPending();
    await sleep(500);
    assert.equal(await w.repos.statsJobs.claimNext(Date.now(), 30), null, 'the lease is still held');
    assert.deepEqual((await run).map((j) => [j.id, j.status, j.attempts]), [[job.id, 'completed', 1]]);
  });

  test('start() polls, stop() waits for the job in progress', async () => {
    const experiment = await activeExperiment();
    let finished = false;
    const slow: ResultsComputation = { compute: async (orgId, id) => { await sleep(60); const r = await new ResultsComputer(w.repos).compute(orgId, id); finished = true; return r; } };
    const looping = worker(slow, { pollMs: 10 });
    looping.start();
    const job = await w.stats.triggerRecompute(w.admin, experiment.id);
    while ((await w.stats.getJob(w.admin, job.id)).status === 'pending') await sleep(5);
    await looping.stop();
    assert.equal(finished, true);
    assert.equal((await w.stats.getJob(w.admin, job.id)).status, 'completed');
  });
});
