import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import type { EnvironmentScope, EventMetric } from '@switchyard/core';
import { PgExperimentDataRepository } from '../src/experiment-data-repository.pg.ts';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

/**
 * Percentile capping pooled over the arms, in PostgreSQL, against NumPy: the fixture comes from
 * test/fixtures/generate_percentiles.py (numpy.percentile, method "linear"; np.clip; mean and M2).
 */
interface Fixture {
  cases: Array<{
    name: string;
    lower: number | null;
    upper: number | null;
    ignore_zeros: boolean;
    /** Per arm, each participant's revenue; null: no event (value 0). */
    arms: Record<string, Array<number | null>>;
    expected: {
      lower_bound: number | null;
      upper_bound: number | null;
      arms: Record<string, { n: number; uncapped_mean: number; mean: number; m2: number }>;
    };
  }>;
}

const fixture = JSON.parse(readFileSync(new URL('./fixtures/percentile-capping.json', import.meta.url), 'utf8')) as Fixture;

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

const close = (actual: number, expected: number): boolean => Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected));

for (const [index, fixtureCase] of fixture.cases.entries()) {
  test(`percentile capping pooled over the arms matches NumPy: ${fixtureCase.name}`, async () => {
    if (!db) throw new Error('test database not created');
    const repos = createPostgresRepositories(db.sql);
    const scope = await newEnvironment(`case-${index}`);
    // Each participant exposed at 1000 + i; its value is one revenue event after that (none for null).
    const arms = Object.entries(fixtureCase.arms);
    await repos.exposures.insert(scope, arms.flatMap(([variantKey, values]) => values.map((_, i) => ({
      flagKey: 'checkout', variantKey, contextType: 'user', contextKey: `${variantKey}-${i}`, timestampMs: 1000 + i,
    }))));
    await repos.events.insert(scope, arms.flatMap(([variantKey, values]) => values.flatMap((value, i) => (value === null ? [] : [{
      metricKey: 'revenue', contextType: 'user', contextKey: `${variantKey}-${i}`, value, timestampMs: 2000 + i,
    }]))));
    const metric: EventMetric = {
      kind: 'event', key: 'revenue', eventKey: 'revenue', aggregation: 'sum', windowMs: null, direction: 'increase', cuped: null, guardrail: null,
      capping: { kind: 'percentile', lower: fixtureCase.lower, upper: fixtureCase.upper, ignoreZeros: fixtureCase.ignore_zeros },
    };
    const totals = await new PgExperimentDataRepository(db.sql).aggregateMetrics(scope, {
      flagKey: 'checkout', ruleId: null, variantKeys: arms.map(([key]) => key), metrics: [metric], valueTypes: { revenue: 'double' }, fromMs: 0, toMs: null,
    });
    for (const [variantKey, want] of Object.entries(fixtureCase.expected.arms)) {
      const data = totals.find((arm) => arm.variantKey === variantKey)?.metrics.revenue;
      assert.ok(data, `${variantKey}: present`);
      const got = { n: data.moments.n, uncapped_mean: data.uncappedMean, mean: data.moments.means[0] ?? NaN, m2: data.moments.comoments[0]?.[0] ?? NaN };
      const shown = `${variantKey}: expected ${JSON.stringify(want)}, got ${JSON.stringify(got)} (bounds ${fixtureCase.expected.lower_bound}, ${fixtureCase.expected.upper_bound})`;
      assert.equal(got.n, want.n, shown);
      assert.ok(close(got.uncapped_mean, want.uncapped_mean) && close(got.mean, want.mean) && close(got.m2, want.m2), shown);
    }
  });
}
