import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import type { EnvironmentScope } from '@switchyard/core';
import { PgSegmentRepository } from '../src/segment-repository.pg.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

let db: TestDatabase;
let scope: EnvironmentScope;
before(async () => {
  db = await createTestDatabase();
  const [org] = await db.sql<{ id: string }[]>`INSERT INTO orgs (name) VALUES ('replace') RETURNING id`;
  const [project] = await db.sql<{ id: string }[]>`INSERT INTO projects (org_id, name) VALUES (${org!.id}, 'p') RETURNING id`;
  const [environment] = await db.sql<{ id: string }[]>`
    INSERT INTO environments (org_id, project_id, name) VALUES (${org!.id}, ${project!.id}, 'e') RETURNING id`;
  scope = { orgId: org!.id, projectId: project!.id, environmentId: environment!.id };
});
after(async () => {
  await db?.drop();
});

test('replaceMembers sends no statement that reads the stored members back (50,000 stored, 1,000 new)', async () => {
  const segment = await new PgSegmentRepository(db.sql).create(scope, { key: 'big', context_type: 'user', kind: 'list' });
  await db.sql`
    INSERT INTO segment_members (segment_id, context_key, list)
    SELECT ${segment.id}::uuid, 'old-' || lpad(g::text, 6, '0'), 'included' FROM generate_series(0, 49999) AS g`;
  await db.sql`UPDATE segments SET included_count = 50000 WHERE id = ${segment.id}`;

  // A pool like connect()'s (int8 as numbers) that records the text of every statement it sends.
  const statements: string[] = [];
  const watched = postgres(db.url, {
    max: 2,
    onnotice: () => {},
    debug: (_connection, query) => statements.push(query),
    types: { bigint: { to: 20, from: [20], serialize: (value: number) => value.toString(), parse: (value: string) => Number(value) } },
  });
  try {
    const next = Array.from({ length: 1_000 }, (_, i) => `old-${String(i * 50).padStart(6, '0')}`);
    const replaced = await new PgSegmentRepository(watched).replaceMembers(scope, 'big', { included: next });
    assert.equal(replaced.included_count, 1_000);
    assert.ok(statements.length > 0, 'statements were recorded');
    const reads = statements.filter((text) => /\bSELECT\b[\s\S]*?\bFROM\s+segment_members\b/i.test(text));
    assert.deepEqual(reads, [], 'no SELECT ... FROM segment_members');
  } finally {
    await watched.end({ timeout: 5 });
  }
  const stored = await db.sql<{ context_key: string }[]>`
    SELECT context_key FROM segment_members WHERE segment_id = ${segment.id} AND list = 'included' ORDER BY context_key`;
  assert.equal(stored.length, 1_000);
  assert.equal(stored[0]?.context_key, 'old-000000');
  assert.equal(stored[999]?.context_key, 'old-049950');
});
