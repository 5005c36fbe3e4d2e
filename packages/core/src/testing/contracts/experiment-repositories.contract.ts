import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_ANALYSIS, metricFromKey, type ExperimentMetric } from '../../experiments/analysis-model.ts';
import type { ExperimentResults } from '../../model/entities.ts';
import type { ExperimentInput } from '../../ports/experiment-ports.ts';
import {
  assertRejectsWithCode,
  foreignOrgScope,
  inWorld,
  MALFORMED_ID,
  UNKNOWN_ID,
  type MakeEventExperimentRepos,
} from './event-experiment-fixture.ts';

const DRAFT = 'EXPERIMENT_STATUS_DRAFT';
const ACTIVE = 'EXPERIMENT_STATUS_ACTIVE';
const PAUSED = 'EXPERIMENT_STATUS_PAUSED';
const CONCLUDED = 'EXPERIMENT_STATUS_CONCLUDED';

const input = (overrides: Partial<ExperimentInput> = {}): ExperimentInput => ({
  name: 'Checkout test',
  description: 'Does the new checkout sell more?',
  flagKey: 'checkout',
  variantKeys: ['control', 'treatment'],
  metrics: [metricFromKey('purchase', 'bool'), metricFromKey('revenue', 'double')],
  trafficAllocation: 0.5,
  ruleId: null,
  controlVariantKey: 'control',
  analysis: DEFAULT_ANALYSIS,
  ...overrides,
});

/** Every kind of metric definition and non-default settings: all of it must round-trip. */
const RICH_METRICS: ExperimentMetric[] = [
  {
    kind: 'event', key: 'capped-revenue', eventKey: 'revenue', aggregation: 'mean', windowMs: 86_400_000, direction: 'decrease',
    capping: { kind: 'percentile', lower: null, upper: 0.99, ignoreZeros: true }, cuped: { lookbackMs: 604_800_000 }, guardrail: { margin: 0.02, marginKind: 'relative' },
  },
  {
    kind: 'ratio', key: 'revenue-per-click', numerator: { eventKey: 'revenue', aggregation: 'sum', windowMs: null },
    denominator: { eventKey: 'clicks', aggregation: 'count', windowMs: 3_600_000 }, direction: 'increase', cuped: null, guardrail: null,
  },
];
const RICH_ANALYSIS = {
  alpha: 0.1, sides: 'one', relativeInterval: 'fieller', correction: 'holm', correctionFamily: 'per_metric', srmThreshold: 0.01, srmMinExpected: 0,
  engine: 'bayesian', sequential: { tuningN: 10_000 }, hybrid: true, prior: { mean: 0, sd: 0.05 },
} as const;

/** The stored form of an input: metricKeys are the metrics' keys. */
const stored = (value: ExperimentInput) => ({ ...value, metricKeys: value.metrics.map((metric) => metric.key) });

/** The behaviour every ExperimentRepository must show; run against the fake and PostgreSQL. */
export function experimentRepositoryContract(name: string, makeRepos: MakeEventExperimentRepos): void {
  describe(`ExperimentRepository contract: ${name}`, () => {
    test('create starts in DRAFT at version 1 and every field round-trips', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.experiments.create(scopes.env, input());
        assert.match(created.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        assert.deepEqual(
          { ...created, id: '', createdAtMs: 0, updatedAtMs: 0 },
          { ...stored(input()), id: '', environmentId: scopes.env.environmentId, status: DRAFT, version: 1, createdAtMs: 0, updatedAtMs: 0 },
        );
        assert.ok(Number.isInteger(created.createdAtMs) && created.createdAtMs > 0);
        assert.equal(created.updatedAtMs, created.createdAtMs);
        assert.deepEqual(await repos.experiments.get(scopes.env, created.id), created);
        const bare = await repos.experiments.create(scopes.env, input({ variantKeys: [], metrics: [], trafficAllocation: 1 }));
        assert.deepEqual((await repos.experiments.get(scopes.env, bare.id))?.metricKeys, []);
        assert.equal(bare.trafficAllocation, 1);
      }));

    test('list is in created order and per environment; get outside the scope is null', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const names = ['first', 'second', 'third'];
        const created = [];
        for (const n of names) created.push(await repos.experiments.create(scopes.env, input({ name: n })));
        assert.deepEqual(await repos.experiments.list(scopes.env), created);
        assert.deepEqual(await repos.experiments.list(scopes.otherEnvSameProject), []);
        assert.deepEqual(await repos.experiments.list(scopes.otherOrgEnv), []);
        const id = created[0]?.id ?? '';
        assert.equal(await repos.experiments.get(scopes.otherEnvSameProject, id), null);
        assert.equal(await repos.experiments.get(foreignOrgScope(scopes.env, scopes.otherOrgEnv), id), null);
        assert.equal(await repos.experiments.get(scopes.env, UNKNOWN_ID), null);
        assert.equal(await repos.experiments.get(scopes.env, MALFORMED_ID), null);
        await assertRejectsWithCode(repos.experiments.create(foreignOrgScope(scopes.env, scopes.otherOrgEnv), input()), 'NOT_FOUND');
        assert.deepEqual(await repos.experiments.list(scopes.env), created);
      }));

    test('findInOrg finds by id within the org only and returns the scope', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.experiments.create(scopes.otherEnvSameProject, input());
        const found = await repos.experiments.findInOrg({ orgId: scopes.env.orgId }, created.id);
        assert.deepEqual(found, { experiment: created, scope: scopes.otherEnvSameProject });
        assert.equal(await repos.experiments.findInOrg({ orgId: scopes.otherOrgEnv.orgId }, created.id), null);
        assert.equal(await repos.experiments.findInOrg({ orgId: scopes.env.orgId }, UNKNOWN_ID), null);
        assert.equal(await repos.experiments.findInOrg({ orgId: scopes.env.orgId }, MALFORMED_ID), null);
        assert.equal(await repos.experiments.findInOrg({ orgId: MALFORMED_ID }, created.id), null);
      }));

    test('update applies the patch, bumps the version and refuses a stale expectedVersion', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.experiments.create(scopes.env, input());
        const renamed = await repos.experiments.update(scopes.env, created.id, { name: 'Renamed', description: '' });
        assert.deepEqual(renamed, { ...created, name: 'Renamed', description: '', version: 2, updatedAtMs: renamed.updatedAtMs });
        assert.ok(renamed.updatedAtMs > created.updatedAtMs);
        const patch = { variantKeys: ['a', 'b', 'c'], metrics: [metricFromKey('clicks', 'int')], trafficAllocation: 0.25, flagKey: 'other' };
        const reshaped = await repos.experiments.update(scopes.env, created.id, patch, 2);
        assert.deepEqual(reshaped, { ...renamed, ...patch, metricKeys: ['clicks'], version: 3, updatedAtMs: reshaped.updatedAtMs });
        await assertRejectsWithCode(repos.experiments.update(scopes.env, created.id, { name: 'stale' }, 2), 'ABORTED');
        assert.deepEqual(await repos.experiments.get(scopes.env, created.id), reshaped);
      }));

    test('metric definitions, analysis settings, the rule and the control round-trip through create and update', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const rich = input({ metrics: RICH_METRICS, analysis: RICH_ANALYSIS, ruleId: 'split', controlVariantKey: 'treatment' });
        const created = await repos.experiments.create(scopes.env, rich);
        assert.deepEqual({ ...created, id: '', createdAtMs: 0, updatedAtMs: 0 }, {
          ...stored(rich), id: '', environmentId: scopes.env.environmentId, status: DRAFT, version: 1, createdAtMs: 0, updatedAtMs: 0,
        });
        assert.deepEqual(created.metricKeys, ['capped-revenue', 'revenue-per-click']);
        assert.deepEqual(await repos.experiments.get(scopes.env, created.id), created);
        // Each field on its own; the others keep their values. ruleId null is a value (the default rule), not "unchanged".
        const cleared = await repos.experiments.update(scopes.env, created.id, { ruleId: null });
        assert.deepEqual([cleared.ruleId, cleared.controlVariantKey, cleared.metrics, cleared.analysis], [null, 'treatment', RICH_METRICS, RICH_ANALYSIS]);
        const reset = await repos.experiments.update(scopes.env, created.id, { metrics: [RICH_METRICS[1] as ExperimentMetric], analysis: DEFAULT_ANALYSIS, controlVariantKey: 'control' });
        assert.deepEqual([reset.ruleId, reset.controlVariantKey, reset.metricKeys, reset.metrics, reset.analysis], [null, 'control', ['revenue-per-click'], [RICH_METRICS[1]], DEFAULT_ANALYSIS]);
        assert.deepEqual(await repos.experiments.get(scopes.env, created.id), reset);
        const [listed] = (await repos.experiments.list(scopes.env)).filter((experiment) => experiment.id === created.id);
        assert.deepEqual(listed, reset);
      }));

    test('update of an unknown, malformed or foreign experiment is NOT_FOUND', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.experiments.create(scopes.env, input());
        await assertRejectsWithCode(repos.experiments.update(scopes.env, UNKNOWN_ID, { name: 'x' }), 'NOT_FOUND');
        await assertRejectsWithCode(repos.experiments.update(scopes.env, MALFORMED_ID, { name: 'x' }), 'NOT_FOUND');
        await assertRejectsWithCode(repos.experiments.update(scopes.otherEnvSameProject, created.id, { name: 'x' }), 'NOT_FOUND');
        await assertRejectsWithCode(
          repos.experiments.update(foreignOrgScope(scopes.env, scopes.otherOrgEnv), created.id, { name: 'x' }),
          'NOT_FOUND',
        );
        assert.deepEqual(await repos.experiments.get(scopes.env, created.id), created);
      }));

    test('delete returns the experiment and removes it with its iterations and results', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.experiments.create(scopes.env, input());
        const active = await repos.experiments.transition(scopes.env, created.id, { from: DRAFT, to: ACTIVE, atMs: 1_000 });
        const [iteration] = await repos.experiments.listIterations(scopes.env, created.id);
        await repos.results.save(scopes.env, {
          experimentId: created.id, iterationId: iteration?.id ?? null, variantResults: [], srmPValue: null,
          computedAtMs: 2_000, nextRunAtMs: 0, computationStatus: 'ok',
        });
        await assertRejectsWithCode(repos.experiments.delete(scopes.env, created.id, 1), 'ABORTED');
        await assertRejectsWithCode(repos.experiments.delete(scopes.otherEnvSameProject, created.id), 'NOT_FOUND');
        assert.deepEqual(await repos.experiments.delete(scopes.env, created.id, 2), active);
        assert.equal(await repos.experiments.get(scopes.env, created.id), null);
        assert.deepEqual(await repos.experiments.listIterations(scopes.env, created.id), []);
        assert.equal(await repos.results.get(scopes.env, created.id), null);
        assert.deepEqual(await repos.experiments.listActive(), []);
        await assertRejectsWithCode(repos.experiments.delete(scopes.env, created.id), 'NOT_FOUND');
        await assertRejectsWithCode(repos.experiments.delete(scopes.env, MALFORMED_ID), 'NOT_FOUND');
      }));

    test('each entry into ACTIVE opens an iteration and each exit closes it', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.experiments.create(scopes.env, input());
        const active = await repos.experiments.transition(scopes.env, created.id, { from: DRAFT, to: ACTIVE, atMs: 1_000 });
        assert.equal(active.status, ACTIVE);
        assert.equal(active.version, 2);
        assert.ok(active.updatedAtMs > created.updatedAtMs);
        const [opened] = await repos.experiments.listIterations(scopes.env, created.id);
        assert.ok(opened);
        assert.deepEqual({ ...opened, id: '' }, {
          id: '', experimentId: created.id, iterationNumber: 1, startedAtMs: 1_000, endedAtMs: 0,
          metricKeys: ['purchase', 'revenue'], trafficAllocation: 0.5,
        });
        const paused = await repos.experiments.transition(scopes.env, created.id, { from: ACTIVE, to: PAUSED, atMs: 2_000 }, 2);
        assert.equal(paused.status, PAUSED);
        assert.equal(paused.version, 3);
        assert.deepEqual(await repos.experiments.listIterations(scopes.env, created.id), [{ ...opened, endedAtMs: 2_000 }]);
        // A change while paused is what the next iteration runs with; the closed one keeps its own.
        await repos.experiments.update(scopes.env, created.id, { metrics: [metricFromKey('revenue', 'double')], trafficAllocation: 0.8 });
        await repos.experiments.transition(scopes.env, created.id, { from: PAUSED, to: ACTIVE, atMs: 3_000 });
        const concluded = await repos.experiments.transition(scopes.env, created.id, { from: ACTIVE, to: CONCLUDED, atMs: 4_000 }, 5);
        assert.equal(concluded.status, CONCLUDED);
        assert.equal(concluded.version, 6);
        const iterations = await repos.experiments.listIterations(scopes.env, created.id);
        assert.deepEqual(iterations.map((i) => [i.iterationNumber, i.startedAtMs, i.endedAtMs, i.metricKeys, i.trafficAllocation]), [
          [1, 1_000, 2_000, ['purchase', 'revenue'], 0.5],
          [2, 3_000, 4_000, ['revenue'], 0.8],
        ]);
        assert.notEqual(iterations[0]?.id, iterations[1]?.id);
        assert.deepEqual(await repos.experiments.get(scopes.env, created.id), concluded);
      }));

    test('a transition from a status that is not stored, or at a stale version, is ABORTED and changes nothing', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.experiments.create(scopes.env, input());
        await assertRejectsWithCode(
          repos.experiments.transition(scopes.env, created.id, { from: PAUSED, to: ACTIVE, atMs: 1_000 }),
          'ABORTED',
        );
        await assertRejectsWithCode(
          repos.experiments.transition(scopes.env, created.id, { from: DRAFT, to: ACTIVE, atMs: 1_000 }, 7),
          'ABORTED',
        );
        assert.deepEqual(await repos.experiments.get(scopes.env, created.id), created);
        assert.deepEqual(await repos.experiments.listIterations(scopes.env, created.id), []);
        const move = { from: DRAFT, to: ACTIVE, atMs: 1_000 } as const;
        await assertRejectsWithCode(repos.experiments.transition(scopes.env, UNKNOWN_ID, move), 'NOT_FOUND');
        await assertRejectsWithCode(repos.experiments.transition(scopes.env, MALFORMED_ID, move), 'NOT_FOUND');
        await assertRejectsWithCode(
          repos.experiments.transition(foreignOrgScope(scopes.env, scopes.otherOrgEnv), created.id, move),
          'NOT_FOUND',
        );
        assert.deepEqual(await repos.experiments.listIterations(scopes.env, MALFORMED_ID), []);
        assert.deepEqual(await repos.experiments.listIterations(scopes.otherOrgEnv, created.id), []);
      }));

    test('concurrent transitions from the same status: exactly one wins', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const created = await repos.experiments.create(scopes.env, input());
        const outcomes = await Promise.allSettled(
          [1, 2, 3, 4].map((n) => repos.experiments.transition(scopes.env, created.id, { from: DRAFT, to: ACTIVE, atMs: n * 1_000 })),
        );
        const won = outcomes.filter((o) => o.status === 'fulfilled');
        assert.equal(won.length, 1);
        for (const lost of outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected')) {
          await assertRejectsWithCode(Promise.reject(lost.reason), 'ABORTED');
        }
        const stored = await repos.experiments.get(scopes.env, created.id);
        assert.equal(stored?.version, 2);
        assert.equal((await repos.experiments.listIterations(scopes.env, created.id)).length, 1);
      }));

    test('listActive spans every org and returns each ACTIVE experiment with its scope', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        assert.deepEqual(await repos.experiments.listActive(), []);
        const mine = await repos.experiments.create(scopes.env, input({ name: 'mine' }));
        const theirs = await repos.experiments.create(scopes.otherOrgEnv, input({ name: 'theirs' }));
        await repos.experiments.create(scopes.env, input({ name: 'draft' }));
        const mineActive = await repos.experiments.transition(scopes.env, mine.id, { from: DRAFT, to: ACTIVE, atMs: 1 });
        const theirsActive = await repos.experiments.transition(scopes.otherOrgEnv, theirs.id, { from: DRAFT, to: ACTIVE, atMs: 1 });
        const listed = await repos.experiments.listActive();
        assert.deepEqual(
          [...listed].sort((a, b) => a.experiment.name.localeCompare(b.experiment.name)),
          [{ experiment: mineActive, scope: scopes.env }, { experiment: theirsActive, scope: scopes.otherOrgEnv }],
        );
        await repos.experiments.transition(scopes.env, mine.id, { from: ACTIVE, to: PAUSED, atMs: 2 });
        assert.deepEqual(await repos.experiments.listActive(), [{ experiment: theirsActive, scope: scopes.otherOrgEnv }]);
      }));
  });
}

/** The behaviour every ResultsRepository must show; run against the fake and PostgreSQL. */
export function resultsRepositoryContract(name: string, makeRepos: MakeEventExperimentRepos): void {
  describe(`ResultsRepository contract: ${name}`, () => {
    const resultsFor = (experimentId: string, iterationId: string | null): ExperimentResults => ({
      experimentId,
      iterationId,
      variantResults: [
        {
          variantKey: 'control', participantCount: 120, metricValues: { purchase: 0.25, revenue: 12.5 },
          metricStats: { purchase: { mean: 0.25, variance: 0.1890756302521008, lift: null, ci_low: null, ci_high: null, p_value: null } },
          pValue: 0, pValuePresent: false,
        },
        {
          variantKey: 'treatment', participantCount: 118, metricValues: { purchase: 0.3305084745762712, revenue: 14.1 },
          metricStats: { purchase: { mean: 0.3305084745762712, variance: 0.2231, lift: 0.32203389830508466, ci_low: -0.03, ci_high: 0.19, p_value: 0.1706 } },
          pValue: 0.1706, pValuePresent: true,
        },
      ],
      srmPValue: 0.8966,
      computedAtMs: 1_700_000_000_123,
      nextRunAtMs: 1_700_000_600_000,
      computationStatus: 'completed',
    });

    test('get is null before a save and returns exactly what was saved; a save replaces', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const experiment = await repos.experiments.create(scopes.env, input());
        assert.equal(await repos.results.get(scopes.env, experiment.id), null);
        const bare: ExperimentResults = {
          experimentId: experiment.id, iterationId: null, variantResults: [], srmPValue: null,
          computedAtMs: 5, nextRunAtMs: 0, computationStatus: 'no_data',
        };
        await repos.results.save(scopes.env, bare);
        assert.deepEqual(await repos.results.get(scopes.env, experiment.id), bare);
        await repos.experiments.transition(scopes.env, experiment.id, { from: DRAFT, to: ACTIVE, atMs: 10 });
        const [iteration] = await repos.experiments.listIterations(scopes.env, experiment.id);
        const full = resultsFor(experiment.id, iteration?.id ?? null);
        await repos.results.save(scopes.env, full);
        assert.deepEqual(await repos.results.get(scopes.env, experiment.id), full);
      }));

    test('saveIfUnchanged writes only over the results it names (none: only when none are stored); another scope is NOT_FOUND', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const experiment = await repos.experiments.create(scopes.env, input());
        const at = (computedAtMs: number): ExperimentResults => ({ ...resultsFor(experiment.id, null), computedAtMs });
        assert.equal(await repos.results.saveIfUnchanged(scopes.env, at(10), null), true, 'nothing stored: written');
        assert.equal(await repos.results.saveIfUnchanged(scopes.env, at(20), null), false, 'something stored since');
        assert.equal(await repos.results.saveIfUnchanged(scopes.env, at(20), 11), false, 'not the stored results');
        assert.equal((await repos.results.get(scopes.env, experiment.id))?.computedAtMs, 10);
        assert.equal(await repos.results.saveIfUnchanged(scopes.env, at(20), 10), true, 'over the stored results');
        assert.deepEqual(await repos.results.get(scopes.env, experiment.id), at(20));
        await assertRejectsWithCode(repos.results.saveIfUnchanged(foreignOrgScope(scopes.env, scopes.otherOrgEnv), at(30), 20), 'NOT_FOUND');
        await assertRejectsWithCode(repos.results.saveIfUnchanged(scopes.env, { ...at(30), experimentId: UNKNOWN_ID }, null), 'NOT_FOUND');
        assert.equal((await repos.results.get(scopes.env, experiment.id))?.computedAtMs, 20);
      }));

    test('srmWarning and analysis round-trip; a save without them reads back without them', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const experiment = await repos.experiments.create(scopes.env, input());
        const withSettings: ExperimentResults = { ...resultsFor(experiment.id, null), srmWarning: true, analysis: RICH_ANALYSIS };
        await repos.results.save(scopes.env, withSettings);
        assert.deepEqual(await repos.results.get(scopes.env, experiment.id), withSettings);
        const without = resultsFor(experiment.id, null);
        await repos.results.save(scopes.env, without);
        const read = await repos.results.get(scopes.env, experiment.id);
        assert.deepEqual(read, without);
        assert.ok(read && !('srmWarning' in read) && !('analysis' in read));
      }));

    test('the running state and the sequential SRM p-value round-trip; null reads back absent', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const experiment = await repos.experiments.create(scopes.env, input());
        await repos.experiments.transition(scopes.env, experiment.id, { from: DRAFT, to: ACTIVE, atMs: 10 });
        const [iteration] = await repos.experiments.listIterations(scopes.env, experiment.id);
        const runningState = {
          iterationId: iteration!.id,
          settings: 'a=0.05',
          sequential: { treatment: { revenue: { looks: 2, estimate: 0.1, p_value: 0.01, ci_low: 0.02, ci_high: null, disjoint: false } } },
          guardrails: { treatment: { latency: { estimate: -0.1, harm_p_value: 0.3, non_inferiority_p_value: 0.2, bound: -0.4, status: 'warning' as const } } },
          srm: { looks: 2, max_log_e_value: 1.5, p_value: Math.exp(-1.5) },
          failingAnnounced: ['treatment/latency'],
        };
        const saved: ExperimentResults = { ...resultsFor(experiment.id, iteration!.id), sequentialSrmPValue: 0.25, runningState };
        await repos.results.save(scopes.env, saved);
        assert.deepEqual(await repos.results.get(scopes.env, experiment.id), saved);
        await repos.results.save(scopes.env, { ...saved, sequentialSrmPValue: null, runningState: null });
        assert.deepEqual(await repos.results.get(scopes.env, experiment.id), resultsFor(experiment.id, iteration!.id));
      }));

    test('results are invisible outside the scope and cannot be saved for a foreign experiment', () =>
      inWorld(makeRepos, async ({ repos, scopes }) => {
        const experiment = await repos.experiments.create(scopes.env, input());
        await repos.results.save(scopes.env, resultsFor(experiment.id, null));
        assert.equal(await repos.results.get(scopes.otherEnvSameProject, experiment.id), null);
        assert.equal(await repos.results.get(scopes.otherOrgEnv, experiment.id), null);
        assert.equal(await repos.results.get(foreignOrgScope(scopes.env, scopes.otherOrgEnv), experiment.id), null);
        assert.equal(await repos.results.get(scopes.env, MALFORMED_ID), null);
        const tampered = { ...resultsFor(experiment.id, null), computationStatus: 'tampered' };
        await assertRejectsWithCode(repos.results.save(scopes.otherOrgEnv, tampered), 'NOT_FOUND');
        await assertRejectsWithCode(repos.results.save(scopes.env, { ...tampered, experimentId: UNKNOWN_ID }), 'NOT_FOUND');
        await assertRejectsWithCode(repos.results.save(scopes.env, { ...tampered, experimentId: MALFORMED_ID }), 'NOT_FOUND');
        await assertRejectsWithCode(repos.results.save(scopes.env, { ...tampered, iterationId: MALFORMED_ID }), 'NOT_FOUND');
        assert.equal((await repos.results.get(scopes.env, experiment.id))?.computationStatus, 'completed');
      }));
  });
}
