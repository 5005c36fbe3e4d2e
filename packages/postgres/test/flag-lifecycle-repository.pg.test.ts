import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Sql } from '../src/connect.ts';
import { PgFlagLifecycleRepository } from '../src/flag-lifecycle-repository.pg.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

// The lifecycle's reads and the job's recorded stages (migration 0029, docs/insights.md).

const DAY = 86_400_000;
let db: TestDatabase;
let repo: PgFlagLifecycleRepository;
interface Env { orgId: string; projectId: string; environmentId: string; flagIds: Record<string, string> }
let a: Env;
let b: Env;

async function seed(sql: Sql, name: string): Promise<Env> {
  const [org] = await sql<{ id: string }[]>`INSERT INTO orgs (name) VALUES (${name}) RETURNING id`;
  const [project] = await sql<{ id: string }[]>`INSERT INTO projects (org_id, name) VALUES (${org!.id}, 'p') RETURNING id`;
  const [environment] = await sql<{ id: string }[]>`INSERT INTO environments (org_id, project_id, name) VALUES (${org!.id}, ${project!.id}, 'production') RETURNING id`;
  const flagIds: Record<string, string> = {};
  for (const key of ['c', 'a', 'b']) {
    const [flag] = await sql<{ id: string }[]>`INSERT INTO flags (org_id, project_id, key, value_type) VALUES (${org!.id}, ${project!.id}, ${key}, 'bool') RETURNING id`;
    flagIds[key] = flag!.id;
  }
  return { orgId: org!.id, projectId: project!.id, environmentId: environment!.id, flagIds };
}

before(async () => {
  db = await createTestDatabase();
  repo = new PgFlagLifecycleRepository(db.sql);
  a = await seed(db.sql, 'lifecycle-a');
  b = await seed(db.sql, 'lifecycle-b');
});
after(() => db.drop());

describe('PgFlagLifecycleRepository', () => {
  test('a snapshot reads at most maxFlags flags (by key) and says so', async () => {
    const two = await repo.snapshot(a, Date.now() - 7 * DAY, 2);
    assert.deepEqual(two.flags.map((flag) => flag.key), ['a', 'b']);
    assert.equal(two.truncated, true);
    const all = await repo.snapshot(a, Date.now() - 7 * DAY, 3);
    assert.deepEqual(all.flags.map((flag) => flag.key), ['a', 'b', 'c']);
    assert.equal(all.truncated, false);
  });

  test("a snapshot names another org's project: nothing", async () => {
    const crossed = await repo.snapshot({ orgId: b.orgId, projectId: a.projectId }, 0, 10);
    assert.deepEqual([crossed.environments, crossed.flags], [[], []]);
  });

  test('moveStage records a stage once; the callback runs only on a change, with the previous stage', async () => {
    const seen: Array<string | null> = [];
    const then = async (_repos: unknown, previous: string | null) => void seen.push(previous);
    assert.equal(await repo.moveStage(a, a.flagIds.a!, 'live', then), true);
    assert.equal(await repo.moveStage(a, a.flagIds.a!, 'live', then), false);
    assert.equal(await repo.moveStage(a, a.flagIds.a!, 'ready_to_archive', then), true);
    assert.deepEqual(seen, [null, 'live']);
    assert.deepEqual([...(await repo.recordedStages(a))], [[a.flagIds.a!, 'ready_to_archive']]);
    // Another org's flag through a's scope: refused, nothing recorded.
    assert.equal(await repo.moveStage(a, b.flagIds.a!, 'live', then), false);
    assert.equal((await repo.recordedStages(b)).size, 0);
  });
});
