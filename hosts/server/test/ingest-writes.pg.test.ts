import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isDomainError, type EnvironmentScope } from '@switchyard/core';
import { PgIngestWrites, retryingStaleSession, type Sql } from '@switchyard/postgres';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';

/** The single-statement ingest writes (PgIngestWrites) against real PostgreSQL. */

let db: TestDatabase;
let writes: PgIngestWrites;
let env: EnvironmentScope;
let other: EnvironmentScope;

async function addEnvironment(sql: Sql, label: string): Promise<EnvironmentScope> {
  const [org] = await sql<{ id: string }[]>`INSERT INTO orgs (name) VALUES (${`org-${label}`}) RETURNING id`;
  const [project] = await sql<{ id: string }[]>`INSERT INTO projects (org_id, name) VALUES (${org!.id}, 'p') RETURNING id`;
  const [environment] = await sql<{ id: string }[]>`
    INSERT INTO environments (org_id, project_id, name) VALUES (${org!.id}, ${project!.id}, 'e') RETURNING id`;
  return { orgId: org!.id, projectId: project!.id, environmentId: environment!.id };
}

const notFound = (error: unknown) => isDomainError(error) && error.code === 'NOT_FOUND';

before(async () => {
  db = await createTestDatabase();
  writes = new PgIngestWrites(db.sql);
  env = await addEnvironment(db.sql, 'a');
  other = await addEnvironment(db.sql, 'b');
});

after(async () => {
  await db.drop();
});

describe('PgIngestWrites', () => {
  test('insertEvents stores every field, scoped to the tenant, with the server receipt time', async () => {
    const before = Date.now();
    const rows = [
      { metricKey: 'buy', contextType: 'user', contextKey: 'NULL', value: 19.99, timestampMs: 1_700_000_000_000 },
      { metricKey: 'buy', contextType: 'user', contextKey: 'a,"b"\\{c}', value: 0, timestampMs: 5 },
    ];
    assert.equal(await writes.insertEvents(env, rows), 2);
    const stored = await db.sql<Array<Record<string, unknown>>>`
      SELECT org_id, metric_key, context_type, context_key, value, timestamp_ms, received_at_ms FROM events
      WHERE org_id = ${env.orgId} AND environment_id = ${env.environmentId} ORDER BY timestamp_ms`;
    assert.deepEqual(
      stored.map((row) => [row.org_id, row.context_key, row.value, row.timestamp_ms]),
      [
        [env.orgId, 'a,"b"\\{c}', 0, 5],
        [env.orgId, 'NULL', 19.99, 1_700_000_000_000],
      ],
    );
    assert.ok(stored.every((row) => (row.received_at_ms as number) >= before));
  });

  test('20,000 rows go in one statement', async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ metricKey: 'bulk', contextType: 'user', contextKey: `u${i}`, value: i, timestampMs: i + 1 }));
    assert.equal(await writes.insertEvents(env, rows), 20_000);
    const [row] = await db.sql<{ n: number; total: number }[]>`
      SELECT count(*)::int8 AS n, sum(value)::float8 AS total FROM events
      WHERE org_id = ${env.orgId} AND environment_id = ${env.environmentId} AND metric_key = 'bulk'`;
    assert.deepEqual(row, { n: 20_000, total: (19_999 * 20_000) / 2 });
  });

  test('rows in any order are all stored, and the caller\'s list keeps its order (the write sorts a copy)', async () => {
    const rows = [
      { metricKey: 'zeta', contextType: 'user', contextKey: 'b', value: 1, timestampMs: 3 },
      { metricKey: 'alpha', contextType: 'user', contextKey: 'z', value: 2, timestampMs: 2 },
      { metricKey: 'alpha', contextType: 'device', contextKey: 'a', value: 3, timestampMs: 1 },
      { metricKey: 'zeta', contextType: 'user', contextKey: 'b', value: 4, timestampMs: 3 },
    ];
    const given = rows.map((row) => row.value);
    assert.equal(await writes.insertEvents(other, rows), 4);
    assert.deepEqual(rows.map((row) => row.value), given);
    const stored = await db.sql<Array<{ metric_key: string; context_key: string; value: number }>>`
      SELECT metric_key, context_key, value FROM events
      WHERE org_id = ${other.orgId} AND environment_id = ${other.environmentId} AND metric_key IN ('alpha', 'zeta') ORDER BY value`;
    assert.deepEqual(
      stored.map((row) => [row.metric_key, row.context_key, row.value]),
      [['zeta', 'b', 1], ['alpha', 'z', 2], ['alpha', 'a', 3], ['zeta', 'b', 4]],
    );
  });

  test('insertExposures stores every field', async () => {
    assert.equal(await writes.insertExposures(env, [{ flagKey: 'f', variantKey: 'on', contextType: 'user', contextKey: 'u1', timestampMs: 7 }]), 1);
    const stored = await db.sql<Array<Record<string, unknown>>>`
      SELECT flag_key, variant_key, context_type, context_key, timestamp_ms FROM exposures
      WHERE org_id = ${env.orgId} AND environment_id = ${env.environmentId}`;
    assert.deepEqual([...stored], [{ flag_key: 'f', variant_key: 'on', context_type: 'user', context_key: 'u1', timestamp_ms: 7 }]);
  });

  test('a scope the environment is not in, or a malformed id, is NOT_FOUND and writes nothing', async () => {
    const row = { metricKey: 'planted', contextType: 'user', contextKey: 'x', value: 1, timestampMs: 1 };
    await assert.rejects(writes.insertEvents({ ...env, orgId: other.orgId }, [row]), notFound);
    await assert.rejects(writes.insertEvents({ ...env, projectId: other.projectId }, [row]), notFound);
    await assert.rejects(writes.insertEvents({ ...env, environmentId: 'not-a-uuid' }, [row]), notFound);
    await assert.rejects(
      writes.insertExposures({ ...other, environmentId: env.environmentId }, [{ flagKey: 'planted', variantKey: 'v', contextType: 'u', contextKey: 'x', timestampMs: 1 }]),
      notFound,
    );
    const [row1] = await db.sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM events WHERE metric_key = 'planted'`;
    const [row2] = await db.sql<{ n: number }[]>`SELECT count(*)::int8 AS n FROM exposures WHERE flag_key = 'planted'`;
    assert.deepEqual([row1?.n, row2?.n], [0, 0]);
  });

  test('no rows: nothing to do', async () => {
    assert.equal(await writes.insertEvents(env, []), 0);
    assert.equal(await writes.insertExposures({ ...env, orgId: 'whatever' }, []), 0);
  });
});

describe('retryingStaleSession', () => {
  test('runs a statement refused with a session-termination code once more; anything else is not retried', async () => {
    for (const code of ['57P01', '57P02', '57P03']) {
      let calls = 0;
      const result = await retryingStaleSession(async () => {
        calls += 1;
        if (calls === 1) throw Object.assign(new Error('terminating connection'), { code });
        return 'ok';
      });
      assert.deepEqual([result, calls], ['ok', 2], code);
    }
    for (const code of ['CONNECTION_CLOSED', 'ECONNRESET', '23505', undefined]) {
      let calls = 0;
      await assert.rejects(
        retryingStaleSession(async () => {
          calls += 1;
          throw Object.assign(new Error('failed'), { code });
        }),
      );
      assert.equal(calls, 1, String(code));
    }
    let calls = 0;
    await assert.rejects(
      retryingStaleSession(async () => {
        calls += 1;
        throw Object.assign(new Error('still down'), { code: '57P03' });
      }),
      /still down/,
    );
    assert.equal(calls, 2, 'only one retry');
  });
});
