import { randomBytes } from 'node:crypto';
import { connect, type Sql } from '../connect.ts';
import { migrate } from '../migrate.ts';

export interface TestDatabase {
  /** Connection URL of this test's own database. */
  url: string;
  /** A migrated pool on it. */
  sql: Sql;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

function serverUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) {
    throw new Error('TEST_DATABASE_URL is not set: run the tests with `npm test`, which starts an embedded PostgreSQL when it is unset');
  }
  return url;
}

/** Replaces the database name of a postgres:// URL. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/**
 * A fresh, migrated database on the test server (TEST_DATABASE_URL), so that test files running in
 * parallel never see each other's rows. Call drop() in an after() hook.
 */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const admin = connect(serverUrl(), { poolSize: 1 });
  const name = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } catch (error) {
    await admin.end();
    throw error;
  }
  const url = withDatabase(serverUrl(), name);
  const sql = connect(url, { poolSize: 5 });
  if (options.migrate ?? true) await migrate(sql);
  return {
    url,
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}
