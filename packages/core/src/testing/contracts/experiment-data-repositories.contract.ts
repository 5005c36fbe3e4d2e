import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_ANALYSIS } from '../../experiments/analysis-model.ts';
import type { Exposure, MetricEvent } from '../../model/entities.ts';
import type { Repositories } from '../../ports/repositories.ts';
import type { EnvironmentScope } from '../../ports/scopes.ts';
import { foreignOrgScope, type EventExperimentRepositories, type EventExperimentWorld } from './event-experiment-fixture.ts';
import { metricAggregationContract } from './metric-aggregation.contract.ts';

/** The ports these suites exercise, with the event and experiment ports they set data up through. */
export type ExperimentDataRepositories = EventExperimentRepositories & Pick<Repositories, 'experimentData' | 'statsSchedule'>;
export interface ExperimentDataWorld extends Omit<EventExperimentWorld, 'repos'> {
  repos: ExperimentDataRepositories;
}
export type MakeExperimentDataRepos = () => Promise<ExperimentDataWorld>;

async function inWorld(make: MakeExperimentDataRepos, body: (world: ExperimentDataWorld) => Promise<void>): Promise<void> {
  const world = await make();
  try {
    await body(world);
  } finally {
    await world.close();
  }
}

type ExposureRow = Omit<Exposure, 'environmentId'>;
type EventRow = Omit<MetricEvent, 'environmentId'>;
const exposure = (contextKey: string, variantKey: string, timestampMs: number, extra: Partial<ExposureRow> = {}): ExposureRow => ({
  flagKey: 'checkout', variantKey, contextType: 'user', contextKey, timestampMs, ...extra,
});
const event = (contextKey: string, metricKey: string, value: number, timestampMs: number, extra: Partial<EventRow> = {}): EventRow => ({
  metricKey, contextType: 'user', contextKey, value, timestampMs, ...extra,
});

/** The behaviour every ExperimentDataRepository must show; run against the fake and PostgreSQL. */
export function experimentDataRepositoryContract(name: string, makeRepos: MakeExperimentDataRepos): void {
  describe(`ExperimentDataRepository contract: ${name}`, () => {
    test('aggregateMetrics of a malformed scope finds nothing, and no variant keys no arms', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await repos.exposures.insert(scopes.env, [exposure('u1', 'control', 1000)]);
        const query = { flagKey: 'checkout', ruleId: null, variantKeys: ['control'], metrics: [], valueTypes: {}, fromMs: 0, toMs: null };
        const malformed: EnvironmentScope = { ...scopes.env, environmentId: 'not-a-uuid' };
        assert.deepEqual(await repos.experimentData.aggregateMetrics(malformed, query), [{ variantKey: 'control', participants: 0, metrics: {} }]);
        assert.deepEqual(await repos.experimentData.aggregateMetrics(scopes.env, query), [{ variantKey: 'control', participants: 1, metrics: {} }]);
        assert.deepEqual(await repos.experimentData.aggregateMetrics(scopes.env, { ...query, variantKeys: [] }), []);
      }));

    test('dataArrivedSince: rows of the flag or the metrics received after the instant', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const before = Date.now() - 1;
        await repos.exposures.insert(scopes.env, [exposure('u1', 'control', 1000)]);
        await repos.events.insert(scopes.env, [event('u1', 'purchase', 1, 1000)]);
        const after = Date.now();
        const arrived = (flagKey: string, metricKeys: string[], sinceMs: number, scope = scopes.env) =>
          repos.experimentData.dataArrivedSince(scope, { flagKey, metricKeys, sinceMs });
        assert.equal(await arrived('checkout', [], before), true, 'an exposure of the flag');
        assert.equal(await arrived('missing', ['purchase'], before), true, 'an event of a metric');
        assert.equal(await arrived('missing', ['revenue'], before), false, 'neither');
        assert.equal(await arrived('checkout', ['purchase'], after), false, 'nothing after');
        assert.equal(await arrived('checkout', ['purchase'], before, scopes.otherEnvSameProject), false, 'another environment');
        assert.equal(await arrived('checkout', ['purchase'], before, foreignOrgScope(scopes.env, scopes.otherOrgEnv)), false, 'another org');
      }));
  });
  // aggregateMetrics has its own dataset and suite (metric-aggregation.contract.ts).
  metricAggregationContract(name, makeRepos);
}

/** The behaviour every StatsScheduleRepository must show; run against the fake and PostgreSQL. */
export function statsScheduleRepositoryContract(name: string, makeRepos: MakeExperimentDataRepos): void {
  const T = 10_000_000;
  const INTERVAL = 60_000;

  async function activeExperiment(repos: ExperimentDataRepositories, scope: EnvironmentScope, label: string) {
    const created = await repos.experiments.create(scope, {
      name: label, description: '', flagKey: 'checkout', variantKeys: ['a', 'b'], metrics: [], trafficAllocation: 1,
      ruleId: null, controlVariantKey: 'a', analysis: DEFAULT_ANALYSIS,
    });
    return repos.experiments.transition(scope, created.id, { from: 'EXPERIMENT_STATUS_DRAFT', to: 'EXPERIMENT_STATUS_ACTIVE', atMs: T });
  }

  describe(`StatsScheduleRepository contract: ${name}`, () => {
    test('enqueueDue: ACTIVE experiments of every org without open or recent jobs and with results due', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const mine = await activeExperiment(repos, scopes.env, 'mine');
        const theirs = await activeExperiment(repos, scopes.otherOrgEnv, 'theirs');
        await repos.experiments.create(scopes.env, { name: 'draft', description: '', flagKey: 'checkout', variantKeys: [], metrics: [], trafficAllocation: 1, ruleId: null, controlVariantKey: '', analysis: DEFAULT_ANALYSIS });
        const first = await repos.statsSchedule.enqueueDue(T, INTERVAL);
        assert.deepEqual(first.map((job) => job.experimentId).sort(), [mine.id, theirs.id].sort());
        const job = first.find((j) => j.experimentId === mine.id);
        assert.ok(job);
        assert.deepEqual({ ...job, id: '' }, {
          id: '', orgId: scopes.env.orgId, experimentId: mine.id, status: 'pending', error: '', createdAtMs: T,
          startedAtMs: 0, completedAtMs: 0, leaseExpiresAtMs: 0, attempts: 0,
        });
        assert.deepEqual(await repos.statsJobs.get({ orgId: scopes.env.orgId }, job.id), job);
        assert.deepEqual(await repos.statsSchedule.enqueueDue(T + 2 * INTERVAL, INTERVAL), [], 'pending jobs are open');
        // Finish both; a job created within the interval still holds the next one back.
        for (let claimed = await repos.statsJobs.claimNext(T + 1, 1000); claimed; claimed = await repos.statsJobs.claimNext(T + 1, 1000)) {
          await repos.statsJobs.complete(claimed.id, T + 2);
        }
        assert.deepEqual(await repos.statsSchedule.enqueueDue(T + INTERVAL - 1, INTERVAL), []);
        await repos.results.save(scopes.env, {
          experimentId: mine.id, iterationId: null, variantResults: [], srmPValue: null,
          computedAtMs: T + 2, nextRunAtMs: T + 3 * INTERVAL, computationStatus: 'completed',
        });
        const second = await repos.statsSchedule.enqueueDue(T + INTERVAL + 1, INTERVAL);
        assert.deepEqual(second.map((j) => j.experimentId), [theirs.id], 'results not due yet hold mine back');
        const third = await repos.statsSchedule.enqueueDue(T + 3 * INTERVAL, INTERVAL);
        assert.deepEqual(third.map((j) => j.experimentId), [mine.id]);
      }));

    test('enqueueDue skips an experiment whose recompute was queued by hand (one pending job per experiment)', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const queued = await activeExperiment(repos, scopes.env, 'queued-by-hand');
        const due = await activeExperiment(repos, scopes.env, 'due');
        const manual = await repos.statsJobs.create({ orgId: scopes.env.orgId }, queued.id, T - 2 * INTERVAL);
        const jobs = await repos.statsSchedule.enqueueDue(T, INTERVAL);
        assert.deepEqual(jobs.map((job) => job.experimentId), [due.id]);
        assert.equal((await repos.statsJobs.create({ orgId: scopes.env.orgId }, queued.id, T)).id, manual.id);
      }));

    test('enqueueDue: concurrent ticks enqueue one job per experiment', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const experiment = await activeExperiment(repos, scopes.env, 'raced');
        const ticks = await Promise.all(Array.from({ length: 6 }, () => repos.statsSchedule.enqueueDue(T, INTERVAL)));
        assert.deepEqual(ticks.flat().map((job) => job.experimentId), [experiment.id]);
      }));

    test('renewLease extends only the claim that holds the job', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const experiment = await activeExperiment(repos, scopes.env, 'leased');
        const job = await repos.statsJobs.create({ orgId: scopes.env.orgId }, experiment.id, T);
        const claimed = await repos.statsJobs.claimNext(T, 1000);
        assert.equal(claimed?.id, job.id);
        assert.equal(await repos.statsSchedule.renewLease(job.id, 1, T + 500, 1000), true);
        assert.equal((await repos.statsJobs.get({ orgId: scopes.env.orgId }, job.id))?.leaseExpiresAtMs, T + 1500);
        assert.equal(await repos.statsSchedule.renewLease(job.id, 2, T + 500, 1000), false, 'another claim');
        const reclaimed = await repos.statsJobs.claimNext(T + 1501, 1000);
        assert.deepEqual([reclaimed?.id, reclaimed?.attempts], [job.id, 2]);
        assert.equal(await repos.statsSchedule.renewLease(job.id, 1, T + 1600, 1000), false, 'the lost claim');
        await repos.statsJobs.complete(job.id, T + 1700);
        assert.equal(await repos.statsSchedule.renewLease(job.id, 2, T + 1800, 1000), false, 'finished');
        assert.equal(await repos.statsSchedule.renewLease('not-a-uuid', 1, T, 1000), false);
      }));

    test('pruneFinished deletes completed and failed jobs finished before the instant', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const experiment = await activeExperiment(repos, scopes.env, 'pruned');
        const org = { orgId: scopes.env.orgId };
        // One at a time: an experiment has at most one queued job.
        const done = await repos.statsJobs.create(org, experiment.id, T);
        await repos.statsJobs.claimNext(T + 10, 1000);
        await repos.statsJobs.complete(done.id, T + 100);
        const failed = await repos.statsJobs.create(org, experiment.id, T + 1);
        await repos.statsJobs.claimNext(T + 10, 1000);
        await repos.statsJobs.fail(failed.id, 'boom', T + 200);
        const recent = await repos.statsJobs.create(org, experiment.id, T + 2);
        await repos.statsJobs.claimNext(T + 10, 1000);
        await repos.statsJobs.complete(recent.id, T + 300);
        const pending = await repos.statsJobs.create(org, experiment.id, T + 3);
        assert.equal(await repos.statsSchedule.pruneFinished(T + 300), 2);
        assert.equal(await repos.statsJobs.get(org, done.id), null);
        assert.equal(await repos.statsJobs.get(org, failed.id), null);
        assert.equal((await repos.statsJobs.get(org, recent.id))?.status, 'completed');
        assert.equal((await repos.statsJobs.get(org, pending.id))?.status, 'pending');
      }));
  });
}
