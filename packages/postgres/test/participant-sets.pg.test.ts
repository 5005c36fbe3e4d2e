import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DEFAULT_ANALYSIS, type ArmTotals, type EnvironmentScope, type EventMetric, type MetricAggregateQuery, type Repositories } from '@switchyard/core';
import { PgExperimentDataRepository } from '../src/experiment-data-repository.pg.ts';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

/**
 * The stored participants of a running iteration (experiment_participants, docs/statistics.md
 * "Incremental aggregation"): what a pass reuses and re-reads, the late-arrival margin, passes at
 * once, scope, and the rows going with their iteration. The answers themselves are checked
 * against computations from scratch by the aggregateMetrics contract.
 */
let db: TestDatabase | undefined;
before(async () => {
  db = await createTestDatabase();
});
after(async () => {
  await db?.drop();
});

const sqlOf = () => {
  if (!db) throw new Error('test database not created');
  return db.sql;
};

async function newEnvironment(label: string): Promise<EnvironmentScope> {
  const sql = sqlOf();
  const [org] = await sql<{ id: string }[]>`INSERT INTO orgs (name) VALUES (${`org-${label}`}) RETURNING id`;
  const [project] = await sql<{ id: string }[]>`INSERT INTO projects (org_id, name) VALUES (${org!.id}, 'p') RETURNING id`;
  const [environment] = await sql<{ id: string }[]>`
    INSERT INTO environments (org_id, project_id, name) VALUES (${org!.id}, ${project!.id}, 'e') RETURNING id`;
  return { orgId: org!.id, projectId: project!.id, environmentId: environment!.id };
}

const revenue: EventMetric = {
  kind: 'event', key: 'revenue', eventKey: 'revenue', aggregation: 'sum', windowMs: null, direction: 'increase', capping: null, cuped: null, guardrail: null,
};

/** An environment with a running experiment on `checkout` (iteration from 1000), A in control and B in treatment. */
async function world(label: string) {
  const repos = createPostgresRepositories(sqlOf());
  const scope = await newEnvironment(label);
  const created = await repos.experiments.create(scope, {
    name: label, description: '', flagKey: 'checkout', variantKeys: ['control', 'treatment'], metrics: [revenue], trafficAllocation: 1,
    ruleId: null, controlVariantKey: 'control', analysis: { ...DEFAULT_ANALYSIS },
  });
  await repos.experiments.transition(scope, created.id, { from: 'EXPERIMENT_STATUS_DRAFT', to: 'EXPERIMENT_STATUS_ACTIVE', atMs: 1000 });
  const [iteration] = await repos.experiments.listIterations(scope, created.id);
  assert.ok(iteration);
  await repos.exposures.insert(scope, [
    { flagKey: 'checkout', variantKey: 'control', contextType: 'user', contextKey: 'A', timestampMs: 2000 },
    { flagKey: 'checkout', variantKey: 'treatment', contextType: 'user', contextKey: 'B', timestampMs: 2000 },
  ]);
  await repos.events.insert(scope, [
    { metricKey: 'revenue', contextType: 'user', contextKey: 'A', value: 10, timestampMs: 2500 },
    { metricKey: 'revenue', contextType: 'user', contextKey: 'B', value: 20, timestampMs: 2500 },
  ]);
  // Received a second before any pass. Stamped now, they could share the millisecond of the first
  // pass's horizon, which the next pass reads again (received_at >= watermark, on purpose), and a
  // test expecting A's stored value to stand would see it recomputed: that happened in full runs.
  await sqlOf()`UPDATE exposures SET received_at_ms = received_at_ms - 1000 WHERE environment_id = ${scope.environmentId}`;
  await sqlOf()`UPDATE events SET received_at_ms = received_at_ms - 1000 WHERE environment_id = ${scope.environmentId}`;
  const query: MetricAggregateQuery = {
    flagKey: 'checkout', ruleId: null, variantKeys: ['control', 'treatment'], metrics: [revenue], valueTypes: { revenue: 'double' },
    fromMs: 1000, toMs: null, iterationId: iteration.id,
  };
  return { repos, scope, experimentId: created.id, iterationId: iteration.id, query };
}

const revenueMeans = (totals: ArmTotals[]) => totals.map((arm) => arm.metrics.revenue?.moments.means[0]);
const storedRows = async (iterationId: string) =>
  Number((await sqlOf()<{ n: string }[]>`SELECT count(*) AS n FROM experiment_participants WHERE iteration_id = ${iterationId}`)[0]?.n);

test('a pass re-reads only the participants with rows received since the last one; a changed definition rebuilds them all', async () => {
  const { repos, scope, query } = await world('reuse');
  const incremental = new PgExperimentDataRepository(sqlOf(), { lateArrivalMarginMs: 0 });
  assert.deepEqual(revenueMeans(await incremental.aggregateMetrics(scope, query)), [10, 20]);
  // An event disappears behind the store's back (as a dropped partition would): nothing new
  // arrived for A, so its stored value stands, where a computation from scratch no longer sees it.
  await sqlOf()`DELETE FROM events WHERE environment_id = ${scope.environmentId} AND context_key = 'A'`;
  assert.deepEqual(revenueMeans(await incremental.aggregateMetrics(scope, query)), [10, 20]);
  assert.deepEqual(revenueMeans(await incremental.aggregateMetrics(scope, { ...query, iterationId: null })), [0, 20]);
  // A new event of A makes it read again: only the new event is left.
  await repos.events.insert(scope, [{ metricKey: 'revenue', contextType: 'user', contextKey: 'A', value: 5, timestampMs: 3000 }]);
  assert.deepEqual(revenueMeans(await incremental.aggregateMetrics(scope, query)), [5, 20]);
  // Another window is another definition: every participant is computed again.
  await sqlOf()`DELETE FROM events WHERE environment_id = ${scope.environmentId} AND context_key = 'B'`;
  const windowed = { ...query, metrics: [{ ...revenue, windowMs: 10_000 }] };
  assert.deepEqual(revenueMeans(await incremental.aggregateMetrics(scope, windowed)), [5, 0]);
});

test('rows stamped up to the margin before a pass (a slow commit, a clock behind) are read by the next pass; with no margin they would be missed', async () => {
  for (const [marginMs, expected] of [[undefined, 30], [0, 10]] as const) {
    const { scope, query } = await world(`margin-${String(marginMs)}`);
    const repository = new PgExperimentDataRepository(sqlOf(), marginMs === undefined ? {} : { lateArrivalMarginMs: marginMs });
    assert.deepEqual(revenueMeans(await repository.aggregateMetrics(scope, query)), [10, 20]);
    // Committed now, stamped a minute ago, before the pass started.
    await sqlOf()`INSERT INTO events (org_id, environment_id, metric_key, context_type, context_key, value, timestamp_ms, received_at_ms)
      VALUES (${scope.orgId}, ${scope.environmentId}, 'revenue', 'user', 'A', 20, 3000, ${Date.now() - 60_000})`;
    assert.deepEqual(revenueMeans(await repository.aggregateMetrics(scope, query)), [expected, 20], `margin ${String(marginMs)}`);
  }
});

test('rows of a transaction still open when a pass starts are read by the next pass, however long it stayed open', async () => {
  for (const [horizon, expected] of [['with', 30], ['without', 10]] as const) {
    const { scope, query } = await world(`open-${horizon}`);
    const repository = new PgExperimentDataRepository(sqlOf(), { lateArrivalMarginMs: 0 });
    await repository.aggregateMetrics(scope, query);
    const writer = await sqlOf().reserve();
    try {
      await writer`BEGIN`;
      await writer`INSERT INTO events (org_id, environment_id, metric_key, context_type, context_key, value, timestamp_ms, received_at_ms)
        VALUES (${scope.orgId}, ${scope.environmentId}, 'revenue', 'user', 'A', 20, 3000, ${Date.now()})`;
      // The pass runs while the insert is not committed: it cannot see the row. 'without': the
      // horizon is what a pass that ignored open transactions would save, its own clock.
      await repository.aggregateMetrics(scope, query);
      if (horizon === 'without') {
        await sqlOf()`UPDATE experiment_participant_sets SET watermark_ms = (extract(epoch FROM clock_timestamp()) * 1000)::int8 WHERE iteration_id = ${query.iterationId!}`;
      }
      await writer`COMMIT`;
    } finally {
      writer.release();
    }
    assert.deepEqual(revenueMeans(await repository.aggregateMetrics(scope, query)), [expected, 20], horizon);
  }
});

test('a row stamped in the very millisecond its open transaction began is read by the next pass (the horizon is floored, not rounded)', async () => {
  const { scope, query } = await world('same-millisecond');
  const repository = new PgExperimentDataRepository(sqlOf(), { lateArrivalMarginMs: 0 });
  await repository.aggregateMetrics(scope, query);
  const writer = await sqlOf().reserve();
  try {
    // A transaction that began in the second half of a millisecond: a rounded horizon would
    // land on the next millisecond, past a row stamped (as Date.now() stamps) with this one.
    let startedMs = 0;
    for (let attempt = 0; attempt < 50; attempt += 1) {
      await writer`BEGIN`;
      const [start] = await writer<{ micros: string }[]>`SELECT (extract(epoch FROM now()) * 1000000)::int8 AS micros`;
      if (Number(start!.micros) % 1000 >= 500) {
        startedMs = Math.floor(Number(start!.micros) / 1000);
        break;
      }
      await writer`ROLLBACK`;
    }
    assert.ok(startedMs > 0, 'no transaction began in the second half of a millisecond');
    await writer`INSERT INTO events (org_id, environment_id, metric_key, context_type, context_key, value, timestamp_ms, received_at_ms)
      VALUES (${scope.orgId}, ${scope.environmentId}, 'revenue', 'user', 'A', 20, 3000, ${startedMs})`;
    await repository.aggregateMetrics(scope, query);
    await writer`COMMIT`;
  } finally {
    writer.release();
  }
  assert.deepEqual(revenueMeans(await repository.aggregateMetrics(scope, query)), [30, 20]);
});

test('passes at once over one iteration take turns; each answer equals a computation from scratch', async () => {
  const { repos, scope, query } = await world('concurrent');
  const incremental = new PgExperimentDataRepository(sqlOf(), { lateArrivalMarginMs: 0 });
  await repos.exposures.insert(scope, Array.from({ length: 200 }, (_, i) => (
    { flagKey: 'checkout', variantKey: i % 2 === 0 ? 'control' : 'treatment', contextType: 'user', contextKey: `u${i}`, timestampMs: 2000 + i })));
  await repos.events.insert(scope, Array.from({ length: 200 }, (_, i) => ({ metricKey: 'revenue', contextType: 'user', contextKey: `u${i}`, value: i, timestampMs: 3000 })));
  const fresh = await incremental.aggregateMetrics(scope, { ...query, iterationId: null });
  const answers = await Promise.all(Array.from({ length: 4 }, () => incremental.aggregateMetrics(scope, query)));
  for (const answer of answers) {
    assert.deepEqual(answer.map((arm) => arm.participants), fresh.map((arm) => arm.participants));
    answer.forEach((arm, i) => {
      const want = fresh[i]?.metrics.revenue?.moments;
      const got = arm.metrics.revenue?.moments;
      assert.ok(want && got && Math.abs(got.means[0]! - want.means[0]!) < 1e-9 && Math.abs(got.comoments[0]![0]! - want.comoments[0]![0]!) < 1e-6);
    });
  }
  assert.equal(await storedRows(query.iterationId!), 202);
});

test('another scope cannot use or disturb an iteration\'s set: NOT_FOUND, nothing stored', async () => {
  const { scope, query, iterationId } = await world('owner');
  const stranger = await newEnvironment('stranger');
  const repository = new PgExperimentDataRepository(sqlOf());
  await assert.rejects(repository.aggregateMetrics(stranger, query), { code: 'NOT_FOUND' });
  assert.equal(await storedRows(iterationId), 0);
  await assert.rejects(repository.aggregateMetrics({ ...scope, environmentId: stranger.environmentId }, query), { code: 'NOT_FOUND' });
  assert.deepEqual(revenueMeans(await repository.aggregateMetrics(scope, query)), [10, 20]);
  assert.equal(await storedRows(iterationId), 2);
});

test('stored participants go with their iteration: at its end, when a new one starts, with the experiment', async () => {
  const { repos, scope, query, experimentId, iterationId } = await world('lifecycle');
  const repository = new PgExperimentDataRepository(sqlOf());
  const sets = async () => Number((await sqlOf()<{ n: string }[]>`SELECT count(*) AS n FROM experiment_participant_sets s
    JOIN experiment_iterations i ON i.id = s.iteration_id WHERE i.experiment_id = ${experimentId}`)[0]?.n);
  await repository.aggregateMetrics(scope, query);
  assert.equal(await storedRows(iterationId), 2);
  // Ended: computed from scratch, the rows dropped.
  assert.deepEqual(revenueMeans(await repository.aggregateMetrics(scope, { ...query, toMs: 10_000 })), [10, 20]);
  assert.equal(await storedRows(iterationId), 0);
  assert.equal(await sets(), 0);
  // Paused and resumed: the new iteration's first pass drops the old one's set.
  await repository.aggregateMetrics(scope, query);
  await (repos as Repositories).experiments.transition(scope, experimentId, { from: 'EXPERIMENT_STATUS_ACTIVE', to: 'EXPERIMENT_STATUS_PAUSED', atMs: 5000 });
  await repos.experiments.transition(scope, experimentId, { from: 'EXPERIMENT_STATUS_PAUSED', to: 'EXPERIMENT_STATUS_ACTIVE', atMs: 6000 });
  const iterations = await repos.experiments.listIterations(scope, experimentId);
  const second = iterations.find((it) => it.id !== iterationId);
  assert.ok(second);
  await repository.aggregateMetrics(scope, { ...query, fromMs: 6000, iterationId: second.id });
  assert.equal(await storedRows(iterationId), 0);
  assert.equal(await sets(), 1);
  // Deleted with the experiment.
  await sqlOf()`DELETE FROM experiments WHERE id = ${experimentId}`;
  assert.equal(await storedRows(second.id), 0);
});
