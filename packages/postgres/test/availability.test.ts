import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import { connect } from '../src/connect.ts';
import { isDatabaseUnavailable } from '../src/availability.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

/**
 * A PostgreSQL that has no connection to give ("too many clients", SQLSTATE 53300: max_connections,
 * or a role's or database's connection limit reached) cannot be reached right now: the caller
 * answers UNAVAILABLE (HTTP 503) and may retry, as for a stopped server, not an internal error.
 * Here a role with CONNECTION LIMIT 0 is refused by the real server; superusers are exempt from
 * the limit, so the role is an ordinary one.
 */

let db: TestDatabase;
const role = `sy_limited_${randomBytes(6).toString('hex')}`;
const password = randomBytes(12).toString('hex');

before(async () => {
  db = await createTestDatabase({ migrate: false });
  await db.sql.unsafe(`CREATE ROLE ${role} LOGIN PASSWORD '${password}' CONNECTION LIMIT 0`);
});

after(async () => {
  await db.sql.unsafe(`DROP ROLE IF EXISTS ${role}`);
  await db.drop();
});

test('a connection refused for too many clients is the database being unavailable, not a bad statement', async () => {
  const url = new URL(db.url);
  url.username = role;
  url.password = password;
  const sql = connect(url.toString(), { poolSize: 1 });
  try {
    const error = await sql`SELECT 1`.then(
      () => assert.fail('the role has no connection to make'),
      (refused: unknown) => refused,
    );
    assert.equal((error as { code?: string }).code, '53300', String(error));
    assert.equal(isDatabaseUnavailable(error), true);
  } finally {
    await sql.end({ timeout: 1 });
  }
});

test('errors of a statement stay what they are', () => {
  // 53100 disk full and 53200 out of memory are not cured by retrying the same request soon.
  for (const code of ['23505', '42601', '22P02', '53100', '53200']) assert.equal(isDatabaseUnavailable({ code }), false, code);
  for (const code of ['08006', '57P01', '57P03', '53300', 'ECONNREFUSED']) assert.equal(isDatabaseUnavailable({ code }), true, code);
});
