import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { EnvironmentScope, EventMetric, MetricQuantile } from '@switchyard/core';
import { clusteredOrderStatistics, orderStatistics } from '@switchyard/stats';
import { PgExperimentDataRepository } from '../src/experiment-data-repository.pg.ts';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

/**
 * Quantile metrics' order statistics selected in PostgreSQL (quantile-statistics.pg.ts;
 * docs/statistics.md §15), against values derived by hand in the comments, then against the
 * reference in @switchyard/stats (itself checked against NumPy/SciPy) on larger random arms.
 */

let db: TestDatabase | undefined;
before(async () => {
  db = await createTestDatabase();
});
after(async () => {
  await db?.drop();
});

async function newEnvironment(label: string): Promise<EnvironmentScope> {
  if (!db) throw new Error('test database not created');
  const sql = db.sql;
  const [org] = await sql<{ id: string }[]>`INSERT INTO orgs (name) VALUES (${`org-${label}`}) RETURNING id`;
  if (!org) throw new Error('no org row');
  const [project] = await sql<{ id: string }[]>`INSERT INTO projects (org_id, name) VALUES (${org.id}, 'p') RETURNING id`;
  if (!project) throw new Error('no project row');
  const [environment] = await sql<{ id: string }[]>`
    INSERT INTO environments (org_id, project_id, name) VALUES (${org.id}, ${project.id}, 'e') RETURNING id`;
  if (!environment) throw new Error('no environment row');
  return { orgId: org.id, projectId: project.id, environmentId: environment.id };
}

const quantileMetric = (key: string, quantile: MetricQuantile, windowMs: number | null = null): EventMetric => ({
  kind: 'event', key, eventKey: 'latency', aggregation: quantile.unit === 'event' ? 'count' : 'sum', windowMs, direction: 'decrease',
  capping: null, cuped: null, guardrail: null, quantile,
});

/**
 * Seeds participants: per arm, per participant its events' values, each exposed at 1000 and its
 * events at 1001, 1002, … (one ms apart).
 */
async function seed(scope: EnvironmentScope, arms: Record<string, number[][]>): Promise<void> {
  if (!db) throw new Error('test database not created');
  const repos = createPostgresRepositories(db.sql);
  const entries = Object.entries(arms);
  await repos.exposures.insert(scope, entries.flatMap(([variantKey, participants]) => participants.map((_, i) => ({
    flagKey: 'checkout', variantKey, contextType: 'user', contextKey: `${variantKey}-${i}`, timestampMs: 1000,
  }))));
  const events = entries.flatMap(([variantKey, participants]) => participants.flatMap((values, i) => values.map((value, j) => ({
    metricKey: 'latency', contextType: 'user', contextKey: `${variantKey}-${i}`, value, timestampMs: 1001 + j,
  }))));
  for (let start = 0; start < events.length; start += 5000) await repos.events.insert(scope, events.slice(start, start + 5000));
}

async function aggregate(scope: EnvironmentScope, metrics: EventMetric[], quantileZ?: number) {
  if (!db) throw new Error('test database not created');
  return new PgExperimentDataRepository(db.sql).aggregateMetrics(scope, {
    flagKey: 'checkout', ruleId: null, variantKeys: ['control', 'treatment'], metrics, valueTypes: { latency: 'double' }, fromMs: 0, toMs: null,
    ...(quantileZ === undefined ? {} : { quantileZ }),
  });
}

test('participant quantiles: the estimate X_(⌈np⌉) and the outer interval, per arm, by hand', async () => {
  const scope = await newEnvironment('participant');
  // control: 10 participants, one event each, values 1..10; treatment: 20 participants with two
  // events i and i each, summed to 2i: 2, 4, …, 40.
  await seed(scope, {
    control: Array.from({ length: 10 }, (_, i) => [i + 1]),
    treatment: Array.from({ length: 20 }, (_, i) => [i + 1, i + 1]),
  });
  // An event before a participant's exposure does not count (attribution from t0).
  await createPostgresRepositories((db as TestDatabase).sql).events.insert(scope, [{ metricKey: 'latency', contextType: 'user', contextKey: 'control-0', value: 1000, timestampMs: 999 }]);
  const median = quantileMetric('p50', { p: 0.5, unit: 'participant' });

  // z = 1.96. control n = 10: np = 5 → X_(5) = 5; 1.96·√(10·¼) = 3.099 → L = ⌊1.90⌋ = 1, U = ⌈8.10⌉ = 9.
  // treatment n = 20: np = 10 → X_(10) = 20; 1.96·√(20·¼) = 4.383 → L = ⌊5.62⌋ = 5 (10), U = ⌈14.38⌉ = 15 (30).
  let arms = await aggregate(scope, [median], 1.96);
  assert.deepEqual(arms[0]?.metrics.p50?.quantile, { n: 10, clusters: 10, estimate: 5, lower: 1, upper: 9, lowerRank: 1, upperRank: 9, z: 1.96 });
  assert.deepEqual(arms[1]?.metrics.p50?.quantile, { n: 20, clusters: 20, estimate: 20, lower: 10, upper: 30, lowerRank: 5, upperRank: 15, z: 1.96 });
  // The moments are the per-participant sums' as for any event metric.
  assert.equal(arms[1]?.metrics.p50?.moments.means[0], 21);

  // z = 0.8: control 0.8·1.581 = 1.265 → L = ⌊3.74⌋ = 3, U = ⌈6.26⌉ = 7; treatment 0.8·2.236 = 1.789
  // → L = ⌊8.21⌋ = 8 (16), U = ⌈11.79⌉ = 12 (24).
  arms = await aggregate(scope, [median], 0.8);
  assert.deepEqual(arms[0]?.metrics.p50?.quantile, { n: 10, clusters: 10, estimate: 5, lower: 3, upper: 7, lowerRank: 3, upperRank: 7, z: 0.8 });
  assert.deepEqual(arms[1]?.metrics.p50?.quantile, { n: 20, clusters: 20, estimate: 20, lower: 16, upper: 24, lowerRank: 8, upperRank: 12, z: 0.8 });
});

test('n·p is taken in decimals: the 7th percentile of 100 values is X_(7), not X_(8)', async () => {
  const scope = await newEnvironment('decimal');
  await seed(scope, { control: Array.from({ length: 100 }, (_, i) => [i + 1]), treatment: [] });
  // 1.96·√(100·0.07·0.93) = 5.0009 → L = ⌊1.999⌋ = 1, U = ⌈12.0009⌉ = 13.
  const arms = await aggregate(scope, [quantileMetric('p7', { p: 0.07, unit: 'participant' })], 1.96);
  assert.deepEqual(arms[0]?.metrics.p7?.quantile, { n: 100, clusters: 100, estimate: 7, lower: 1, upper: 13, lowerRank: 1, upperRank: 13, z: 1.96 });
  // No participant in the treatment arm: no order statistics.
  assert.equal(arms[1]?.metrics.p7?.quantile ?? null, null);
});

test('event quantiles: clustered events, the delta-method ranks, the window, by hand', async () => {
  const scope = await newEnvironment('event');
  // control: A [1, 2, 3], B [4, 5], C [6]; treatment: D [10, 20], E [30], F [40, 50, 60, 70], G none.
  await seed(scope, { control: [[1, 2, 3], [4, 5], [6]], treatment: [[10, 20], [30], [40, 50, 60, 70], []] });
  // F's event at t0 + 1000 is outside the 1,000 ms window: it does not count.
  await createPostgresRepositories((db as TestDatabase).sql).events.insert(scope, [{ metricKey: 'latency', contextType: 'user', contextKey: 'treatment-2', value: 5, timestampMs: 2000 }]);
  const metric = quantileMetric('p50_event', { p: 0.5, unit: 'event' }, 1000);
  const arms = await aggregate(scope, [metric], 0.8);
  // control: N = 6, np = 3 → Q̂ = 3. S = (3, 0, 0), N_i = (3, 2, 1), K = 3: S̄ = 1, N̄ = 2, s²_S = 3,
  // s²_N = 1, s_SN = 1.5; σ² = 3/2 − 2·1·1.5/4 + 1·1/8 = 0.875; 0.8·√(0.875·6) = 1.833
  // → L = ⌊1.17⌋ = 1 (1), U = ⌈4.83⌉ = 5 (5).
  assert.deepEqual(arms[0]?.metrics.p50_event?.quantile, { n: 6, clusters: 3, estimate: 3, lower: 1, upper: 5, lowerRank: 1, upperRank: 5, z: 0.8 });
  // treatment: N = 7 (G has none), np = 3.5 → Q̂ = X_(4) = 40. S = (2, 1, 1), N_i = (2, 1, 4), K = 3:
  // S̄ = 4/3, N̄ = 7/3, s²_S = 1/3, s²_N = 7/3, s_SN = −1/6; σ² = 1/7 + 4/49 + 16/49 = 27/49;
  // 0.8·√(27/49·7) = 1.571 → L = ⌊1.93⌋ = 1 (10), U = ⌈5.07⌉ = 6 (60). (Independent events would
  // give σ² = ¼: 0.8·√1.75 = 1.058 → [2, 5], narrower: the clustering widens it.)
  assert.deepEqual(arms[1]?.metrics.p50_event?.quantile, { n: 7, clusters: 3, estimate: 40, lower: 10, upper: 60, lowerRank: 1, upperRank: 6, z: 0.8 });
});

test('larger arms: PostgreSQL selects the same order statistics as the reference implementation', async () => {
  const scope = await newEnvironment('random');
  let state = 12345;
  const random = (): number => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  const participants = (count: number, scale: number) => Array.from({ length: count }, () =>
    Array.from({ length: Math.floor(random() * 6) }, () => Math.round(-Math.log(1 - random()) * scale * 1000) / 1000));
  const arms = { control: participants(700, 100), treatment: participants(800, 90) };
  await seed(scope, arms);
  const metrics = [
    quantileMetric('p90', { p: 0.9, unit: 'participant' }),
    quantileMetric('p50e', { p: 0.5, unit: 'event' }),
    quantileMetric('p99e', { p: 0.99, unit: 'event' }),
  ];
  const z = 1.959963984540054;
  const got = await aggregate(scope, metrics);
  for (const [index, [variantKey, values]] of Object.entries(arms).entries()) {
    const data = got[index]?.metrics;
    const sums = values.map((events) => events.reduce((a, b) => a + b, 0));
    assert.deepEqual(data?.p90?.quantile, orderStatistics(sums, 0.9, z), `${variantKey} p90`);
    assert.deepEqual(data?.p50e?.quantile, clusteredOrderStatistics(values, 0.5, z), `${variantKey} p50 per event`);
    assert.deepEqual(data?.p99e?.quantile, clusteredOrderStatistics(values, 0.99, z), `${variantKey} p99 per event`);
  }
});

test('per-event quantiles are scoped to the environment', async () => {
  const scope = await newEnvironment('scoped');
  const other = await newEnvironment('other');
  await seed(scope, { control: [[1], [2]], treatment: [[3]] });
  // The same contexts and flag in another environment, with far larger values.
  await seed(other, { control: [[100], [200]], treatment: [[300]] });
  const arms = await aggregate(scope, [quantileMetric('p50e', { p: 0.5, unit: 'event' })]);
  assert.equal(arms[0]?.metrics.p50e?.quantile?.estimate, 1);
  assert.equal(arms[1]?.metrics.p50e?.quantile?.estimate, 3);
});
