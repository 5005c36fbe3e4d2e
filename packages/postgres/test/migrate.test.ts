import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';
import { BASELINE_FILE, MIGRATIONS_PATH, isMigrated, listMigrations, migrate } from '../src/migrate.ts';

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
    assert.equal(row?.n, 1 + listMigrations().length, 'every version recorded once');
  } finally {
    await fresh.drop();
  }
});

/** Columns, indexes and constraints of the public schema, as comparable text. */
async function catalog(sql: TestDatabase['sql']): Promise<string[]> {
  const columns = await sql<{ line: string }[]>`
    SELECT table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') AS line
    FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> 'schema_migrations' ORDER BY 1`;
  const indexes = await sql<{ line: string }[]>`
    SELECT indexname || ' ' || indexdef AS line FROM pg_indexes WHERE schemaname = 'public' AND tablename <> 'schema_migrations' ORDER BY 1`;
  const constraints = await sql<{ line: string }[]>`
    SELECT conrelid::regclass::text || ' ' || pg_get_constraintdef(oid) AS line
    FROM pg_constraint WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text <> 'schema_migrations' ORDER BY 1`;
  return [...columns, ...indexes, ...constraints].map((row) => row.line);
}

test('baseline + migrations give the same catalog as schema.sql', async () => {
  // The frozen baseline replayed with every numbered migration, step by step, must describe the same
  // schema as schema.sql; a change folded into one and not the other fails here.
  const migrations = listMigrations();
  const baselinePath = path.join(MIGRATIONS_PATH, BASELINE_FILE);
  assert.ok(existsSync(baselinePath), `${BASELINE_FILE} is the frozen schema the migrations start from`);
  const replayed = await createTestDatabase({ migrate: false });
  try {
    await replayed.sql.unsafe(readFileSync(baselinePath, 'utf8'));
    for (const migration of migrations) await replayed.sql.unsafe(migration.sql);
    const fromHistory = await catalog(replayed.sql);
    assert.ok(fromHistory.length > 100, 'the catalog query sees the schema');
    assert.deepEqual(fromHistory, await catalog(db.sql));
  } finally {
    await replayed.drop();
  }
});

test('the drift check notices a change made in schema.sql only', async () => {
  // The comparison above must be able to fail: a database with one extra column differs.
  const drifted = await createTestDatabase({ migrate: false });
  try {
    await drifted.sql.unsafe(readFileSync(path.join(MIGRATIONS_PATH, BASELINE_FILE), 'utf8'));
    for (const migration of listMigrations()) await drifted.sql.unsafe(migration.sql);
    await drifted.sql.unsafe('ALTER TABLE orgs ADD COLUMN drift_probe integer');
    assert.notDeepEqual(await catalog(drifted.sql), await catalog(db.sql));
  } finally {
    await drifted.drop();
  }
});

test('0003 keeps the oldest queued stats job of an experiment queued twice and fails the others, naming it', async () => {
  // Before 0003 every recompute queued a job; the unique index on pending jobs needs one each.
  const old = await createTestDatabase({ migrate: false });
  try {
    await old.sql.unsafe(readFileSync(path.join(MIGRATIONS_PATH, BASELINE_FILE), 'utf8'));
    const org = '11111111-1111-4111-8111-111111111111';
    const twice = '22222222-2222-4222-8222-222222222222';
    const once = '33333333-3333-4333-8333-333333333333';
    const [first, second, third, single] = await old.sql<{ id: string }[]>`
      INSERT INTO stats_jobs (org_id, experiment_id, created_at_ms)
      VALUES (${org}, ${twice}, 100), (${org}, ${twice}, 200), (${org}, ${twice}, 300), (${org}, ${once}, 150)
      RETURNING id`;
    for (const migration of listMigrations()) await old.sql.unsafe(migration.sql);
    const rows = await old.sql<{ id: string; status: string; error: string }[]>`SELECT id, status, error FROM stats_jobs`;
    const byId = new Map(rows.map((row) => [row.id, row]));
    assert.deepEqual([byId.get(first!.id)?.status, byId.get(single!.id)?.status], ['pending', 'pending']);
    for (const duplicate of [second!, third!]) {
      assert.deepEqual(byId.get(duplicate.id), { id: duplicate.id, status: 'failed', error: `superseded by job ${first!.id} of the same experiment` });
    }
  } finally {
    await old.drop();
  }
});
