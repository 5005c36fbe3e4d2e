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

/** A database name no other test run picks: the prefix, the time and random hex. */
const uniqueDatabaseName = (prefix: string): string => `${prefix}_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;

/**
 * Creates a migrated template database for a test run and answers its name: `npm test` calls it
 * once and passes the name to every test file as TEST_TEMPLATE_DATABASE, so that each test
 * database is a copy (CREATE DATABASE ... TEMPLATE, tens of milliseconds) instead of a fresh
 * migration (most of a second, hundreds of times per run). The name is the run's own, so runs
 * sharing a server never copy each other's template while it is being written.
 */
export async function prepareTemplateDatabase(url: string): Promise<string> {
  const admin = connect(url, { poolSize: 1 });
  const name = uniqueDatabaseName('t_template');
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const sql = connect(withDatabase(url, name), { poolSize: 1 });
    try {
      await migrate(sql);
    } finally {
      // A template must have no connection left when it is copied.
      await sql.end({ timeout: 5 });
    }
  } finally {
    await admin.end();
  }
  return name;
}

/** Drops a database of the test server: a test database, or the run's template (the end of `npm test`). */
export async function dropDatabase(url: string, name: string): Promise<void> {
  const admin = connect(url, { poolSize: 1 });
  try {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

/**
 * A fresh database on the test server (TEST_DATABASE_URL), so that test files running in parallel
 * never see each other's rows: migrated (a copy of the run's template, TEST_TEMPLATE_DATABASE, when
 * `npm test` made one), or empty with `migrate: false`. Call drop() in an after() hook.
 */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const admin = connect(serverUrl(), { poolSize: 1 });
  const name = uniqueDatabaseName('t');
  const migrated = options.migrate ?? true;
  const template = migrated ? process.env.TEST_TEMPLATE_DATABASE : undefined;
  if (template !== undefined && !/^[a-z0-9_]+$/.test(template)) {
    await admin.end();
    throw new Error(`TEST_TEMPLATE_DATABASE is not a database name: ${template}`);
  }
  try {
    await admin.unsafe(template ? `CREATE DATABASE ${name} TEMPLATE ${template}` : `CREATE DATABASE ${name}`);
  } finally {
    // Not held while the database lives: a run has a dozen at once, against max_connections.
    await admin.end();
  }
  const url = withDatabase(serverUrl(), name);
  const sql = connect(url, { poolSize: 5 });
  if (migrated && !template) await migrate(sql);
  // postgres.js learns the server's array types on a pool's first connection; a query racing
  // that (several at once on a new pool) sends a JS array as a plain string. A server never
  // meets it (its first query is the migration), so neither does a copy of the template.
  else await sql`SELECT 1`;
  return {
    url,
    sql,
    async drop() {
      await sql.end({ timeout: 5 });
      await dropDatabase(serverUrl(), name);
    },
  };
}
