import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { BASELINE_FILE, MIGRATIONS_PATH, listMigrations } from '../src/migrate.ts';
import { PgExperimentRepository } from '../src/experiment-repository.pg.ts';
import { PgResultsRepository } from '../src/results-repository.pg.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

/**
 * Migration 0026 rewrites rows from before issue 39: a boolean guardrail becomes a margin-0
 * relative one (true) or null (false); analysis settings gain engine, sequential, hybrid, prior.
 */

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase({ migrate: false });
  await db.sql.unsafe(readFileSync(path.join(MIGRATIONS_PATH, BASELINE_FILE), 'utf8'));
  for (const migration of listMigrations().filter((m) => m.version < 26)) await db.sql.unsafe(migration.sql);
});
after(async () => db.drop());

test('experiments and results from before 0026 read with margins and the default engine', async () => {
  const sql = db.sql;
  const [org] = await sql<{ id: string }[]>`INSERT INTO orgs (name) VALUES ('legacy') RETURNING id`;
  const [project] = await sql<{ id: string }[]>`INSERT INTO projects (org_id, name) VALUES (${org!.id}, 'p') RETURNING id`;
  const [environment] = await sql<{ id: string }[]>`INSERT INTO environments (org_id, project_id, name) VALUES (${org!.id}, ${project!.id}, 'e') RETURNING id`;
  const scope = { orgId: org!.id, projectId: project!.id, environmentId: environment!.id };
  const oldAnalysis = { alpha: 0.1, sides: 'one', relativeInterval: 'delta', correction: 'holm', correctionFamily: 'all', srmThreshold: 0.001, srmMinExpected: 5 };
  const metric = (key: string, guardrail: boolean) =>
    ({ kind: 'event', key, eventKey: key, aggregation: 'sum', windowMs: null, direction: 'decrease', capping: null, cuped: null, guardrail });
  const [row] = await sql<{ id: string }[]>`
    INSERT INTO experiments (org_id, project_id, environment_id, name, flag_key, variant_keys, metric_keys, control_variant_key, metrics, analysis)
    VALUES (${scope.orgId}, ${scope.projectId}, ${scope.environmentId}, 'old', 'checkout', '{a,b}', '{latency,revenue}', 'a',
      ${sql.json([metric('latency', true), metric('revenue', false)])}, ${sql.json(oldAnalysis)})
    RETURNING id`;
  await sql`INSERT INTO experiment_results (experiment_id, org_id, environment_id, variant_results, computed_at_ms, computation_status, analysis)
    VALUES (${row!.id}, ${scope.orgId}, ${scope.environmentId}, '[]', 5, 'completed', ${sql.json(oldAnalysis)})`;

  const [migration] = listMigrations().filter((m) => m.version === 26);
  assert.ok(migration, 'migration 0026 exists');
  await sql.unsafe(migration.sql);

  // The stored jsonb itself is rewritten (not only normalised on read).
  const [raw] = await sql<{ metrics: Array<{ guardrail: unknown }>; analysis: Record<string, unknown> }[]>`SELECT metrics, analysis FROM experiments WHERE id = ${row!.id}`;
  assert.deepEqual(raw!.metrics.map((m) => m.guardrail), [{ margin: 0, marginKind: 'relative' }, null]);
  assert.deepEqual(raw!.analysis, { ...oldAnalysis, engine: 'frequentist', sequential: null, hybrid: false, prior: null });

  const experiment = await new PgExperimentRepository(sql).get(scope, row!.id);
  assert.deepEqual(experiment?.metrics.map((m) => m.guardrail), [{ margin: 0, marginKind: 'relative' }, null]);
  assert.deepEqual(experiment?.analysis, { ...oldAnalysis, engine: 'frequentist', sequential: null, hybrid: false, prior: null });
  // Results keep their jsonb as computed; the reader fills the defaults; no running state yet.
  const results = await new PgResultsRepository(sql).get(scope, row!.id);
  assert.deepEqual(results?.analysis, { ...oldAnalysis, engine: 'frequentist', sequential: null, hybrid: false, prior: null });
  assert.ok(results && !('runningState' in results) && !('sequentialSrmPValue' in results));
});
