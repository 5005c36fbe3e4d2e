import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { EvaluationCount } from '@switchyard/core';
import { connect, type Sql } from '../src/connect.ts';
import { PgIdempotencyRepository } from '../src/idempotency-repository.pg.ts';
import { PgInsightsRepository } from '../src/insights-repository.pg.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

// Evaluation counts in PostgreSQL (migration 0028, docs/insights.md). Every expected number is
// derived by hand in the comments from the counts each test writes.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

let db: TestDatabase;
let repo: PgInsightsRepository;
interface Env { orgId: string; projectId: string; environmentId: string }
let a: Env;
let b: Env;

async function seed(sql: Sql, name: string): Promise<Env> {
  const [org] = await sql<{ id: string }[]>`INSERT INTO orgs (name) VALUES (${name}) RETURNING id`;
  const [project] = await sql<{ id: string }[]>`INSERT INTO projects (org_id, name) VALUES (${org!.id}, 'p') RETURNING id`;
  const [environment] = await sql<{ id: string }[]>`INSERT INTO environments (org_id, project_id, name) VALUES (${org!.id}, ${project!.id}, 'production') RETURNING id`;
  for (const key of ['f', 'g']) await sql`INSERT INTO flags (org_id, project_id, key, value_type) VALUES (${org!.id}, ${project!.id}, ${key}, 'bool')`;
  return { orgId: org!.id, projectId: project!.id, environmentId: environment!.id };
}

const count = (env: Env, flagKey: string, variantKey: string, hourMs: number, n: number, reason = 'TARGETING_MATCH'): EvaluationCount => ({ ...env, flagKey, variantKey, reason, hourMs, count: n });
const hourOf = (ms: number) => ms - (ms % HOUR);

before(async () => {
  db = await createTestDatabase();
  repo = new PgInsightsRepository(db.sql);
  a = await seed(db.sql, 'insights-a');
  b = await seed(db.sql, 'insights-b');
});
after(() => db.drop());

describe('PgInsightsRepository', () => {
  test('two instances flushing the same hour at once add up exactly (upsert-add, one statement per flush)', async () => {
    const hour = hourOf(Date.now()) - 5 * HOUR;
    // Two pools: two server instances' connections.
    const other = connect(db.url, { poolSize: 5 });
    await other`SELECT 1`;
    try {
      const second = new PgInsightsRepository(other);
      // Each flush: f/on 3, f/off 1, g/on 2 (two reasons: 1 + 1). 20 flushes per instance, all at once.
      const flush = (target: PgInsightsRepository, i: number) =>
        target.addCounts({
          counts: [count(a, 'f', 'on', hour, 3), count(a, 'f', 'off', hour, 1), count(a, 'g', 'on', hour, 1), count(a, 'g', 'on', hour, 1, 'DEFAULT')],
          lastEvaluated: [{ ...a, flagKey: 'f', atMs: hour + i * 1000 }],
        });
      await Promise.all(Array.from({ length: 20 }, (_, i) => [flush(repo, i), flush(second, 20 + i)]).flat());
    } finally {
      await other.end({ timeout: 5 });
    }
    // 40 flushes: f/on 40 × 3 = 120, f/off 40 × 1 = 40, g/on 40 × 2 = 80 (both reasons summed).
    const series = await repo.series(a, 'f', 'hour', hour, hour + HOUR);
    assert.deepEqual(series, [{ atMs: hour, variants: { off: 40, on: 120 } }]);
    assert.deepEqual(await repo.series(a, 'g', 'hour', hour, hour + HOUR), [{ atMs: hour, variants: { on: 80 } }]);
    const [rows] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM flag_evaluation_hours WHERE environment_id = ${a.environmentId} AND hour = to_timestamp(${hour / 1000}::float8)`;
    assert.equal(rows!.n, 4, 'one row per (flag, variant, reason)');
    // The latest of the 40 instants: flush 39 (hour + 39 s).
    assert.deepEqual([...(await repo.lastEvaluated(a, ['f', 'g']))], [['f', hour + 39_000]]);
  });

  test('a count is written only into the environment and a flag of the scope it names', async () => {
    const hour = hourOf(Date.now()) - 10 * HOUR;
    const written = await repo.addCounts({
      counts: [
        count(a, 'f', 'on', hour, 7),
        count({ ...a, orgId: b.orgId }, 'f', 'on', hour, 100), // a's environment named with b's org
        count({ ...b, environmentId: a.environmentId }, 'f', 'on', hour, 100), // a's environment in b's project
        count(a, 'no-such-flag', 'on', hour, 100),
        count({ ...a, environmentId: 'not-a-uuid' }, 'f', 'on', hour, 100),
      ],
      lastEvaluated: [{ ...b, environmentId: a.environmentId, flagKey: 'g', atMs: Date.now() }],
    });
    assert.equal(written, 1);
    assert.deepEqual(await repo.series(a, 'f', 'hour', hour, hour + HOUR), [{ atMs: hour, variants: { on: 7 } }]);
    assert.deepEqual(await repo.series(b, 'f', 'hour', hour, hour + HOUR), []);
    assert.equal((await repo.lastEvaluated(a, ['g'])).size, 0);
    // Reading names the scope too: b's scope with a's environment sees nothing.
    assert.deepEqual(await repo.series({ ...b, environmentId: a.environmentId }, 'f', 'hour', hour, hour + HOUR), []);
  });

  test('retention: hours rolled into days (late additions too), hours deleted past 30 days once rolled, days past a year', async () => {
    const now = hourOf(Date.now());
    const dayStart = (ms: number) => ms - (ms % DAY);
    const h40d = dayStart(now - 40 * DAY) + 3 * HOUR; // past hourly retention
    const h3dA = dayStart(now - 3 * DAY) + 1 * HOUR;
    const h3dB = dayStart(now - 3 * DAY) + 5 * HOUR; // the same day as h3dA
    const recent = now - 2 * HOUR; // not rolled (younger than a day)
    const old = dayStart(now - 400 * DAY) + HOUR; // rolled, then its day is past daily retention
    await repo.addCounts({
      counts: [count(b, 'f', 'on', h40d, 4), count(b, 'f', 'on', h3dA, 5), count(b, 'f', 'off', h3dB, 6), count(b, 'f', 'on', h3dB, 2), count(b, 'f', 'on', recent, 9), count(b, 'g', 'on', old, 8)],
      lastEvaluated: [],
    });
    const cutoffs = { rollBeforeMs: now - DAY, hoursBeforeMs: now - 30 * DAY, daysBeforeMs: now - 365 * DAY };
    // Rolled: h40d, h3dA, h3dB (two rows), old = 5 rows. Then deleted hours: h40d and old (past 30 days) = 2; days: old's = 1.
    const first = await repo.prune(cutoffs, 2, () => false);
    assert.deepEqual(first, { hoursRolled: 5, hoursDeleted: 2, daysDeleted: 1 });
    const daysFrom = dayStart(now - 60 * DAY);
    // Days: h40d's day on 4; h3d's day on 5 + 2 = 7, off 6; today (or yesterday) on 9 from the unrolled hour.
    const expected = [
      { atMs: dayStart(h40d), variants: { on: 4 } },
      { atMs: dayStart(h3dA), variants: { off: 6, on: 7 } },
      { atMs: dayStart(recent), variants: { on: 9 } },
    ];
    assert.deepEqual(await repo.series(b, 'f', 'day', daysFrom, now + HOUR), expected);
    // A late flush to an hour already rolled: its new part is added to the day by the next run, once.
    await repo.addCounts({ counts: [count(b, 'f', 'off', h3dB, 10)], lastEvaluated: [] });
    expected[1] = { atMs: dayStart(h3dA), variants: { off: 16, on: 7 } };
    assert.deepEqual(await repo.series(b, 'f', 'day', daysFrom, now + HOUR), expected, 'before the roll-up: the day row plus the hour\'s unrolled part');
    assert.deepEqual(await repo.prune(cutoffs, 2, () => false), { hoursRolled: 1, hoursDeleted: 0, daysDeleted: 0 });
    assert.deepEqual(await repo.series(b, 'f', 'day', daysFrom, now + HOUR), expected, 'after it: the same totals');
    assert.deepEqual(await repo.prune(cutoffs, 2, () => false), { hoursRolled: 0, hoursDeleted: 0, daysDeleted: 0 }, 'nothing rolled twice');
    // The hourly series still has the 3-day-old hours (kept 30 days), not the 40-day-old one.
    assert.deepEqual(await repo.series(b, 'f', 'hour', dayStart(h3dA), dayStart(h3dA) + DAY), [
      { atMs: h3dA, variants: { on: 5 } },
      { atMs: h3dB, variants: { off: 16, on: 2 } },
    ]);
    assert.deepEqual(await repo.series(b, 'f', 'hour', h40d, h40d + HOUR), []);
    assert.deepEqual(await repo.series(b, 'g', 'day', dayStart(old), dayStart(old) + DAY), [], 'past daily retention');
  });
});

describe('PgIdempotencyRepository.storeCountsOnce (a gateway\'s report, applied once per id)', () => {
  const EXPIRES = Date.now() + 4 * DAY;
  const onHour = (env: Env, flagKey: string, hour: number) => repo.series(env, flagKey, 'hour', hour, hour + HOUR);

  test('a report sent again (even at once, from two pools) adds nothing; another id with the same counts adds again', async () => {
    const ids = new PgIdempotencyRepository(db.sql);
    const hour = hourOf(Date.now()) - 20 * HOUR;
    // A report across two tenants: a f/on 4, b g/off 3, and b's last evaluation of g.
    const report = { counts: [count(a, 'f', 'on', hour, 4), count(b, 'g', 'off', hour, 3)], lastEvaluated: [{ ...b, flagKey: 'g', atMs: hour + 60_000 }] };
    assert.equal(await ids.storeCountsOnce('report:one', report, EXPIRES), 2);
    assert.equal(await ids.storeCountsOnce('report:one', report, EXPIRES), 0, 'the retry writes nothing');
    const other = connect(db.url, { poolSize: 5 });
    await other`SELECT 1`;
    try {
      const second = new PgIdempotencyRepository(other);
      const racing = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? ids : second).storeCountsOnce('report:two', report, EXPIRES)));
      // Of six concurrent sends of one report, one writes its two rows.
      assert.deepEqual(racing.sort(), [0, 0, 0, 0, 0, 2]);
    } finally {
      await other.end({ timeout: 5 });
    }
    // report:one once (4, 3) + report:two once (4, 3): 8 and 6.
    assert.deepEqual(await onHour(a, 'f', hour), [{ atMs: hour, variants: { on: 8 } }]);
    assert.deepEqual(await onHour(b, 'g', hour), [{ atMs: hour, variants: { off: 6 } }]);
    assert.deepEqual([...(await repo.lastEvaluated(b, ['g']))], [['g', hour + 60_000]]);
  });

  test('the id is claimed per environment, in the scope each count names; an expired claim counts again', async () => {
    const ids = new PgIdempotencyRepository(db.sql);
    const hour = hourOf(Date.now()) - 22 * HOUR;
    // First: only a's part of the report got through under this id.
    assert.equal(await ids.storeCountsOnce('report:split', { counts: [count(a, 'g', 'on', hour, 5)], lastEvaluated: [] }, EXPIRES), 1);
    // The same id naming a and b: a's environment is claimed already, so only b's 2 is written.
    const both = { counts: [count(a, 'g', 'on', hour, 5), count(b, 'f', 'on', hour, 2)], lastEvaluated: [] };
    assert.equal(await ids.storeCountsOnce('report:split', both, EXPIRES), 1);
    assert.deepEqual(await onHour(a, 'g', hour), [{ atMs: hour, variants: { on: 5 } }]);
    assert.deepEqual(await onHour(b, 'f', hour), [{ atMs: hour, variants: { on: 2 } }]);
    // a's environment named with b's org: no claim and no count in a (nor in b).
    assert.equal(await ids.storeCountsOnce('report:foreign', { counts: [count({ ...a, orgId: b.orgId }, 'g', 'on', hour, 100)], lastEvaluated: [] }, EXPIRES), 0);
    const [claims] = await db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM idempotency_keys WHERE key = 'report:foreign'`;
    assert.equal(claims!.n, 0);
    // A claim past its expiry is taken again: 5 more in a (10).
    const expiresSoon = Date.now() + 1_000;
    assert.equal(await ids.storeCountsOnce('report:expiring', { counts: [count(a, 'g', 'on', hour, 5)], lastEvaluated: [] }, expiresSoon), 1);
    assert.equal(await ids.storeCountsOnce('report:expiring', { counts: [count(a, 'g', 'on', hour, 5)], lastEvaluated: [] }, expiresSoon + DAY, expiresSoon), 1);
    assert.deepEqual(await onHour(a, 'g', hour), [{ atMs: hour, variants: { on: 15 } }]);
  });
});
