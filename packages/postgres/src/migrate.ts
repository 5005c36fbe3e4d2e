import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Sql } from './connect.ts';

/** Any fixed number: every instance must use the same one so they serialise on it. */
const MIGRATION_LOCK_KEY = 7_243_110_001;

/**
 * True only in the built server (scripts/build-server.ts defines it), a single bundled file with
 * schema.sql and migrations/ copied beside it; from source the repository layout applies.
 */
declare const SWITCHYARD_BUNDLE: boolean | undefined;
const BUNDLED = typeof SWITCHYARD_BUNDLE !== 'undefined' && SWITCHYARD_BUNDLE;

/** The full current schema: a new database is created from it directly (as version 1). */
const SCHEMA_FILE = fileURLToPath(new URL(BUNDLED ? './schema.sql' : '../../../schema.sql', import.meta.url));
/** Numbered changes since the baseline, `0002_what.sql`, ...; each is also folded into schema.sql. */
const MIGRATIONS_DIR = fileURLToPath(new URL(BUNDLED ? './migrations/' : '../migrations/', import.meta.url));

/** A frozen copy of the schema the first migration started from; never applied by migrate(). */
export const BASELINE_FILE = '0001_baseline.sql';
export const MIGRATIONS_PATH = MIGRATIONS_DIR;

interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(): Migration[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d{4}_[\w-]+\.sql$/.test(file) && file !== BASELINE_FILE)
    .sort()
    .map((file) => ({
      version: Number(file.slice(0, 4)),
      name: file,
      sql: readFileSync(MIGRATIONS_DIR + file, 'utf8'),
    }));
}

export interface MigrationReport {
  applied: string[];
  version: number;
}

/**
 * Brings the database to the current schema. Runs in one transaction under an advisory lock, so
 * several instances starting at once apply it exactly once and the others wait, then see it done.
 * A new database gets schema.sql and is recorded at every known version; an existing one gets the
 * migrations it lacks, in order.
 */
export async function migrate(sql: Sql): Promise<MigrationReport> {
  const migrations = listMigrations();
  const latest = Math.max(1, ...migrations.map((m) => m.version));
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`;
    const done = new Set((await tx<{ version: number }[]>`SELECT version FROM schema_migrations`).map((r) => r.version));
    const applied: string[] = [];
    if (done.size === 0) {
      await tx.unsafe(readFileSync(SCHEMA_FILE, 'utf8'));
      const rows = [{ version: 1, name: 'schema.sql' }, ...migrations.map(({ version, name }) => ({ version, name }))];
      await tx`INSERT INTO schema_migrations ${tx(rows, 'version', 'name')}`;
      applied.push('schema.sql');
    } else {
      for (const migration of migrations) {
        if (done.has(migration.version)) continue;
        await tx.unsafe(migration.sql);
        await tx`INSERT INTO schema_migrations (version, name) VALUES (${migration.version}, ${migration.name})`;
        applied.push(migration.name);
      }
    }
    return { applied, version: latest };
  });
}

/** True when the database is at the latest version (what /readyz reports). */
export async function isMigrated(sql: Sql): Promise<boolean> {
  const migrations = listMigrations();
  const latest = Math.max(1, ...migrations.map((m) => m.version));
  const [row] = await sql<{ version: number | null }[]>`
    SELECT max(version) AS version FROM schema_migrations`.catch(() => [{ version: null }]);
  return row?.version === latest;
}
