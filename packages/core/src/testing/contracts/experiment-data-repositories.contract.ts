import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_ANALYSIS } from '../../experiments/analysis-model.ts';
import type { Exposure, MetricEvent } from '../../model/entities.ts';
import type { AggregateQuery, VariantTotals } from '../../ports/experiment-data-ports.ts';
import type { Repositories } from '../../ports/repositories.ts';
import type { EnvironmentScope } from '../../ports/scopes.ts';
import { foreignOrgScope, type EventExperimentRepositories, type EventExperimentWorld } from './event-experiment-fixture.ts';

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

/**
 * A hand-computed dataset, window [1000, 5000):
 * - control: u1, u2 (twice), u5 (tie with treatment at 3000: the smaller variant key wins),
 *   device:u1 (another context type, so another context) → 4 participants;
 * - treatment: u3, u4 (later also control: first exposure wins), u6 (an earlier exposure before the
 *   window does not count), u9 (first exposed to `other`, not an experiment variant) → 4;
 * - ignored: u7 (before the window), u8 (at 5000, the exclusive end), another flag, another env.
 * purchase (bool, 1 if any true): control u1 = 1, u2 = 0 → n 2, mean 0.5, var 0.5, 1 non-zero;
 *   treatment u3 = 1, u4 = 1 → n 2, mean 1, var 0, 2 non-zero (u6's event at 5000 is outside).
 * revenue (double, summed): control u1 = 15, u5 = 20, device:u1 = 7 → n 3, mean 14, var 43;
 *   treatment u3 = 30, u4 = -4 + 4 = 0, u9 = 12.5 → n 3, mean 85/6, var 16350/72, 2 non-zero.
 */
async function seedDataset(repos: ExperimentDataRepositories, scopes: ExperimentDataWorld['scopes']): Promise<void> {
  await repos.exposures.insert(scopes.env, [
    exposure('u1', 'control', 1000), exposure('u1', 'control', 1000, { contextType: 'device' }),
    exposure('u2', 'control', 1100), exposure('u2', 'control', 1200),
    exposure('u3', 'treatment', 1500),
    exposure('u4', 'treatment', 2000), exposure('u4', 'control', 2500),
    exposure('u5', 'treatment', 3000), exposure('u5', 'control', 3000),
    exposure('u6', 'control', 900), exposure('u6', 'treatment', 1600),
    exposure('u7', 'control', 900), exposure('u8', 'treatment', 5000),
    exposure('u9', 'other', 1000), exposure('u9', 'treatment', 2000),
    exposure('u10', 'control', 1000, { flagKey: 'another-flag' }),
  ]);
  await repos.exposures.insert(scopes.otherEnvSameProject, [exposure('u11', 'control', 1000)]);
  await repos.events.insert(scopes.env, [
    event('u1', 'purchase', 1, 1000), event('u1', 'purchase', 0, 2000), event('u2', 'purchase', 0, 1500),
    event('u3', 'purchase', 1, 1500), event('u3', 'purchase', 1, 1600), event('u4', 'purchase', 1, 4999),
    event('u6', 'purchase', 1, 5000), event('u7', 'purchase', 1, 1000),
    event('u1', 'revenue', 10, 1000), event('u1', 'revenue', 5, 1200), event('u5', 'revenue', 20, 3000),
    event('u1', 'revenue', 7, 1100, { contextType: 'device' }), event('u3', 'revenue', 30, 2000),
    event('u4', 'revenue', -4, 2000), event('u4', 'revenue', 4, 2100), event('u9', 'revenue', 12.5, 1000),
    event('u6', 'revenue', 100, 999), event('u3', 'page_view', 1, 1000),
  ]);
  await repos.events.insert(scopes.otherEnvSameProject, [event('u3', 'purchase', 1, 1500)]);
}

const QUERY: AggregateQuery = {
  flagKey: 'checkout',
  variantKeys: ['control', 'treatment'],
  metrics: [
    { key: 'purchase', valueType: 'bool' },
    { key: 'revenue', valueType: 'double' },
    { key: 'clicks', valueType: 'int' },
  ],
  fromMs: 1000,
  toMs: 5000,
};

function assertClose(actual: number | null | undefined, expected: number, what: string): void {
  assert.ok(typeof actual === 'number', `${what}: expected ${expected}, got ${actual}`);
  assert.ok(Math.abs(actual - expected) <= 1e-12 * Math.max(1, Math.abs(expected)), `${what}: expected ${expected}, got ${actual}`);
}

function variant(totals: VariantTotals[], key: string): VariantTotals {
  const found = totals.find((v) => v.variantKey === key);
  assert.ok(found, `variant ${key}`);
  return found;
}

/** The behaviour every ExperimentDataRepository must show; run against the fake and PostgreSQL. */
export function experimentDataRepositoryContract(name: string, makeRepos: MakeExperimentDataRepos): void {
  describe(`ExperimentDataRepository contract: ${name}`, () => {
    test('participants: distinct contexts, first exposure wins, window [from, to) on timestamp_ms', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await seedDataset(repos, scopes);
        const totals = await repos.experimentData.aggregate(scopes.env, QUERY);
        assert.deepEqual(totals.map((v) => [v.variantKey, v.participants]), [['control', 4], ['treatment', 4]]);
        const open = await repos.experimentData.aggregate(scopes.env, { ...QUERY, toMs: null });
        assert.deepEqual(open.map((v) => [v.variantKey, v.participants]), [['control', 4], ['treatment', 5]]);
        const withOther = await repos.experimentData.aggregate(scopes.env, { ...QUERY, variantKeys: ['treatment', 'control', 'other'], metrics: [] });
        // u9 now belongs to `other` (its first exposure); the order of variantKeys is kept.
        assert.deepEqual(withOther.map((v) => [v.variantKey, v.participants]), [['treatment', 3], ['control', 4], ['other', 1]]);
      }));

    test('metrics: per participant sums (bool: any true), n, mean, var_samp and non-zero over those with events', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await seedDataset(repos, scopes);
        const totals = await repos.experimentData.aggregate(scopes.env, QUERY);
        const control = variant(totals, 'control');
        const treatment = variant(totals, 'treatment');
        assert.deepEqual(Object.keys(control.metrics).sort(), ['purchase', 'revenue'], 'a metric without events is absent');
        const cp = control.metrics.purchase;
        assert.deepEqual([cp?.contributors, cp?.nonZero], [2, 1]);
        assertClose(cp?.mean, 0.5, 'control purchase mean');
        assertClose(cp?.variance, 0.5, 'control purchase variance');
        const tp = treatment.metrics.purchase;
        assert.deepEqual([tp?.contributors, tp?.nonZero], [2, 2]);
        assertClose(tp?.mean, 1, 'treatment purchase mean');
        assertClose(tp?.variance, 0, 'treatment purchase variance');
        const cr = control.metrics.revenue;
        assert.deepEqual([cr?.contributors, cr?.nonZero], [3, 3]);
        assertClose(cr?.mean, 14, 'control revenue mean');
        assertClose(cr?.variance, 43, 'control revenue variance');
        const tr = treatment.metrics.revenue;
        assert.deepEqual([tr?.contributors, tr?.nonZero], [3, 2]);
        assertClose(tr?.mean, 85 / 6, 'treatment revenue mean');
        assertClose(tr?.variance, 16350 / 72, 'treatment revenue variance');
      }));

    test('one contributor has no variance; nothing exposed gives zeros; other scopes see nothing', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        await seedDataset(repos, scopes);
        const late = await repos.experimentData.aggregate(scopes.env, { ...QUERY, fromMs: 4000, toMs: null });
        // From 4000: u8 (treatment at 5000) only, and its purchase... none; u6's purchase is not u8's.
        assert.deepEqual(late.map((v) => [v.variantKey, v.participants, Object.keys(v.metrics).length]), [['control', 0, 0], ['treatment', 1, 0]]);
        const u4Only = await repos.experimentData.aggregate(scopes.env, { ...QUERY, fromMs: 2000, toMs: 2001 });
        assert.deepEqual(u4Only.map((v) => v.participants), [0, 2]);
        const revenue = variant(u4Only, 'treatment').metrics.revenue;
        // u4's -4 at 2000 and u3's 30 at 2000 are in; u3 is not a participant of this window (exposed at 1500).
        assert.deepEqual([revenue?.contributors, revenue?.mean, revenue?.variance ?? null, revenue?.nonZero], [1, -4, null, 1]);
        const empty = [['control', 0], ['treatment', 0]];
        const project = (totals: VariantTotals[]) => totals.map((v) => [v.variantKey, v.participants]);
        assert.deepEqual(project(await repos.experimentData.aggregate(scopes.otherOrgEnv, QUERY)), empty);
        assert.deepEqual(project(await repos.experimentData.aggregate(foreignOrgScope(scopes.env, scopes.otherOrgEnv), QUERY)), empty);
        assert.deepEqual(project(await repos.experimentData.aggregate(scopes.env, { ...QUERY, flagKey: 'missing' })), empty);
        assert.deepEqual(await repos.experimentData.aggregate(scopes.env, { ...QUERY, variantKeys: [] }), []);
        const malformed: EnvironmentScope = { ...scopes.env, environmentId: 'not-a-uuid' };
        assert.deepEqual(project(await repos.experimentData.aggregate(malformed, QUERY)), empty);
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
