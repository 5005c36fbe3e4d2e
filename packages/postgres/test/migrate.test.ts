import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';
import { isMigrated, migrate } from '../src/migrate.ts';

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase({ migrate: false });
});
after(async () => db.drop());

test('a new database is created from schema.sql and marked current', async () => {
  assert.equal(await isMigrated(db.sql), false);
  const report = await migrate(db.sql);
  assert.deepEqual(report.applied, ['schema.sql']);
  assert.equal(await isMigrated(db.sql), true);
  const tables = await db.sql<{ table_name: string }[]>`
    SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`;
  const names = tables.map((t) => t.table_name);
  for (const expected of ['orgs', 'users', 'memberships', 'projects', 'environments', 'sdk_keys', 'flags',
    'flag_environment_states', 'segments', 'segment_members', 'event_definitions', 'events', 'exposures',
    'experiments', 'experiment_iterations', 'experiment_results', 'stats_jobs', 'audit_log']) {
    assert.ok(names.includes(expected), `table ${expected} exists`);
  }
});

test('migrating again changes nothing', async () => {
  const report = await migrate(db.sql);
  assert.deepEqual(report.applied, []);
});

test('instances migrating at once serialise on the advisory lock', async () => {
  const fresh = await createTestDatabase({ migrate: false });
  try {
    const reports = await Promise.all([migrate(fresh.sql), migrate(fresh.sql), migrate(fresh.sql)]);
    assert.equal(reports.filter((r) => r.applied.length > 0).length, 1);
    const [row] = await fresh.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM schema_migrations`;
    assert.equal(row?.n, 1);
  } finally {
    await fresh.drop();
  }
});
