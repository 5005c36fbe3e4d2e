import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { DomainError, type EnvironmentScope, type EventMetric } from '@switchyard/core';
import { PgPowerDataRepository } from '../src/power-data.pg.ts';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

/**
 * The power calculator's window reads (docs/statistics.md §14) and their bounds: the LIMIT on the
 * units kept, the statement timeout (a 503 UNAVAILABLE, not a 500), and CUPED's R² estimated from
 * the window, each against numbers worked out by hand.
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
  const [project] = await sql<{ id: string }[]>`INSERT INTO projects (org_id, name) VALUES (${org!.id}, 'p') RETURNING id`;
  const [environment] = await sql<{ id: string }[]>`INSERT INTO environments (org_id, project_id, name) VALUES (${org!.id}, ${project!.id}, 'e') RETURNING id`;
  return { orgId: org!.id, projectId: project!.id, environmentId: environment!.id };
}

const revenue = (cuped: EventMetric['cuped'] = null): EventMetric => ({
  kind: 'event', key: 'revenue', eventKey: 'revenue', aggregation: 'sum', windowMs: null, direction: 'increase', cuped, guardrail: null, capping: null,
});

test('the units kept are bounded by a LIMIT, and the answer says truncated', async () => {
  if (!db) throw new Error('test database not created');
  const scope = await newEnvironment('limit');
  await createPostgresRepositories(db.sql).events.insert(scope, [0, 1, 2, 3, 4].map((i) => ({
    metricKey: 'revenue', contextType: 'user', contextKey: `u${i}`, value: i, timestampMs: 10_000 + i,
  })));
  const query = { metrics: [revenue()], valueTypes: { revenue: 'double' as const }, fromMs: 0, toMs: 100_000 };
  const all = await new PgPowerDataRepository(db.sql).windowMoments(scope, query);
  assert.equal(all.participants, 5);
  assert.equal(all.truncated, false);
  // values 0..4: mean 2, variance 10/4.
  assert.equal(all.metrics.revenue?.moments.n, 5);
  assert.equal(all.metrics.revenue?.moments.means[0], 2);
  assert.equal(all.metrics.revenue?.moments.comoments[0]?.[0], 10);
  const bounded = await new PgPowerDataRepository(db.sql, { maxParticipants: 3 }).windowMoments(scope, query);
  assert.equal(bounded.participants, 3);
  assert.equal(bounded.truncated, true);
  assert.equal(bounded.metrics.revenue?.moments.n, 3);
  // Outside the window: nothing.
  const later = await new PgPowerDataRepository(db.sql).windowMoments(scope, { ...query, fromMs: 100_000, toMs: 200_000 });
  assert.equal(later.participants, 0);
  // Exposure counts are bounded the same way.
  await createPostgresRepositories(db.sql).exposures.insert(scope, [0, 1, 2, 3, 4].map((i) => ({
    flagKey: 'checkout', variantKey: i % 2 === 0 ? 'control' : 'treatment', contextType: 'user', contextKey: `u${i}`, timestampMs: 1000 + i,
  })));
  const arms = { flagKey: 'checkout', ruleId: null, variantKeys: ['control', 'treatment'], fromMs: 0, toMs: 100_000 };
  assert.deepEqual(await new PgPowerDataRepository(db.sql).armParticipants(scope, arms), { counts: { control: 3, treatment: 2 }, truncated: false });
  const cut = await new PgPowerDataRepository(db.sql, { maxParticipants: 2 }).armParticipants(scope, arms);
  assert.equal(cut.truncated, true);
  assert.equal(cut.counts.control! + cut.counts.treatment!, 2);
});

test('a read cut by the statement timeout is UNAVAILABLE (503), not an unhandled error', async () => {
  if (!db) throw new Error('test database not created');
  const scope = await newEnvironment('timeout');
  // 200,000 events of 50,000 contexts: far more than 1 ms of work.
  await db.sql`INSERT INTO events (org_id, environment_id, metric_key, context_type, context_key, value, timestamp_ms, received_at_ms)
    SELECT ${scope.orgId}, ${scope.environmentId}, 'revenue', 'user', 'u' || (g % 50000), g, 10000 + g, 1 FROM generate_series(1, 200000) g`;
  const repository = new PgPowerDataRepository(db.sql, { statementTimeoutMs: 1 });
  await assert.rejects(
    repository.windowMoments(scope, { metrics: [revenue()], valueTypes: { revenue: 'double' }, fromMs: 0, toMs: 1_000_000 }),
    (error: unknown) => error instanceof DomainError && error.code === 'UNAVAILABLE' && /statement timeout/.test(error.message),
  );
});

test("CUPED: each unit's pre-exposure value is read over [t0 − lookback, t0) (R² = Sxy²/(Sxx·Syy) = 121/130)", async () => {
  if (!db) throw new Error('test database not created');
  const scope = await newEnvironment('cuped');
  // Per unit: x before its first event in the window (the covariate), y in it.
  // x = [1, 2, 3, 4], y = [2, 4, 5, 9]: Sxx 5, Syy 26, Sxy 11, so R² = 121/130; mean 5, variance 26/3.
  const xs = [1, 2, 3, 4];
  const ys = [2, 4, 5, 9];
  await createPostgresRepositories(db.sql).events.insert(scope, xs.flatMap((x, i) => [
    { metricKey: 'revenue', contextType: 'user', contextKey: `u${i}`, value: x, timestampMs: 50_000 },
    { metricKey: 'revenue', contextType: 'user', contextKey: `u${i}`, value: ys[i]!, timestampMs: 100_000 + i },
  ]));
  const metric = revenue({ lookbackMs: 80_000 });
  const window = await new PgPowerDataRepository(db.sql).windowMoments(scope, { metrics: [metric], valueTypes: { revenue: 'double' }, fromMs: 100_000, toMs: 200_000 });
  assert.equal(window.participants, 4);
  // The moments the service's windowEstimates turns into mean, variance and R² (power-service.ts).
  const moments = window.metrics.revenue!.moments;
  const [c00, c01, c11] = [moments.comoments[0]![0]!, moments.comoments[0]![1]!, moments.comoments[1]![1]!];
  assert.equal(moments.n, 4);
  assert.ok(Math.abs(moments.means[0]! - 5) < 1e-12 && Math.abs(moments.means[1]! - 2.5) < 1e-12);
  assert.ok(Math.abs(c00 - 26) < 1e-9 && Math.abs(c11 - 5) < 1e-9 && Math.abs(c01 - 11) < 1e-9, JSON.stringify(moments));
});
