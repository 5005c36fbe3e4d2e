import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { DEFAULT_ANALYSIS, metricFromKey } from '@switchyard/core';
import { BASELINE_FILE, MIGRATIONS_PATH, listMigrations } from '../src/migrate.ts';
import { PgExperimentRepository } from '../src/experiment-repository.pg.ts';
import { PgResultsRepository } from '../src/results-repository.pg.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

/**
 * Migration 0017 fills the new experiment columns of rows written before it: metrics from
 * metric_keys as metricFromKey makes them (by the event definition's value type; a deleted
 * definition sums), the default analysis, the first variant as the control, no rule.
 */

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase({ migrate: false });
  await db.sql.unsafe(readFileSync(path.join(MIGRATIONS_PATH, BASELINE_FILE), 'utf8'));
  for (const migration of listMigrations().filter((m) => m.version < 17)) await db.sql.unsafe(migration.sql);
});
after(async () => db.drop());

test('rows from before 0017 read back with derived metrics, default analysis, the first variant as control', async () => {
  const sql = db.sql;
  const [org] = await sql<{ id: string }[]>`INSERT INTO orgs (name) VALUES ('legacy') RETURNING id`;
  const [project] = await sql<{ id: string }[]>`INSERT INTO projects (org_id, name) VALUES (${org!.id}, 'p') RETURNING id`;
  const [environment] = await sql<{ id: string }[]>`INSERT INTO environments (org_id, project_id, name) VALUES (${org!.id}, ${project!.id}, 'e') RETURNING id`;
  const scope = { orgId: org!.id, projectId: project!.id, environmentId: environment!.id };
  for (const [key, valueType] of [['purchase', 'bool'], ['revenue', 'double'], ['clicks', 'int']] as const) {
    await sql`INSERT INTO event_definitions (org_id, project_id, environment_id, key, value_type) VALUES (${scope.orgId}, ${scope.projectId}, ${scope.environmentId}, ${key}, ${valueType})`;
  }
  const insert = async (variantKeys: string[], metricKeys: string[]) => {
    const [row] = await sql<{ id: string }[]>`
      INSERT INTO experiments (org_id, project_id, environment_id, name, flag_key, variant_keys, metric_keys)
      VALUES (${scope.orgId}, ${scope.projectId}, ${scope.environmentId}, 'old', 'checkout', ${sql.array(variantKeys)}::text[], ${sql.array(metricKeys)}::text[])
      RETURNING id`;
    return row!.id;
  };
  // 'gone' was never (or is no longer) an event definition: summed as a double.
  const full = await insert(['treatment', 'control'], ['revenue', 'purchase', 'gone', 'clicks']);
  const bare = await insert(['a', 'b'], []);
  await sql`INSERT INTO experiment_results (experiment_id, org_id, environment_id, variant_results, computed_at_ms, computation_status)
    VALUES (${full}, ${scope.orgId}, ${scope.environmentId}, '[]', 5, 'completed')`;

  const [migration] = listMigrations().filter((m) => m.version === 17);
  assert.ok(migration, 'migration 0017 exists');
  await sql.unsafe(migration.sql);
  // The later migrations too: the repositories read today's columns.
  for (const later of listMigrations().filter((m) => m.version > 17)) await sql.unsafe(later.sql);

  const experiments = new PgExperimentRepository(sql);
  const old = await experiments.get(scope, full);
  assert.deepEqual(old && [old.metricKeys, old.metrics, old.analysis, old.controlVariantKey, old.ruleId], [
    ['revenue', 'purchase', 'gone', 'clicks'],
    [metricFromKey('revenue', 'double'), metricFromKey('purchase', 'bool'), metricFromKey('gone', 'double'), metricFromKey('clicks', 'int')],
    DEFAULT_ANALYSIS,
    'treatment',
    null,
  ]);
  // By hand: bool converts, the rest sums.
  assert.deepEqual(old?.metrics.map((m) => (m.kind === 'event' ? m.aggregation : m.kind)), ['sum', 'conversion', 'sum', 'sum']);
  const empty = await experiments.get(scope, bare);
  assert.deepEqual(empty && [empty.metrics, empty.controlVariantKey, empty.analysis], [[], 'a', DEFAULT_ANALYSIS]);
  // Results stored before carry neither srm_warning nor analysis.
  const results = await new PgResultsRepository(sql).get(scope, full);
  assert.ok(results);
  assert.equal('srmWarning' in results, false);
  assert.equal('analysis' in results, false);
});
