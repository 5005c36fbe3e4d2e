import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import type { EnvironmentScope } from '@switchyard/core';
// The contract suites by path: the @switchyard/core/testing entry point also loads every other
// in-memory fake, and these suites need only their own files.
import { flagRepositoryContract } from '@switchyard/core/testing/contracts';
import { segmentRepositoryContract } from '@switchyard/core/testing/contracts';
import type { FlagSegmentFixture } from '@switchyard/core/testing/contracts';
import { PgFlagRepository } from '../src/flag-repository.pg.ts';
import { PgSegmentRepository } from '../src/segment-repository.pg.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

let db: TestDatabase;
before(async () => {
  db = await createTestDatabase();
});
after(async () => {
  await db?.drop();
});

/**
 * One database for the file; each test gets two new orgs of its own, inserted with plain SQL (not
 * through the tenancy adapters, so these suites stand on their own): org A has one project with two
 * environments, org B one project with one environment. close() deletes both orgs, and every flag,
 * segment and member with them (ON DELETE CASCADE).
 */
async function makeRepos(): Promise<FlagSegmentFixture> {
  const { sql } = db;
  const orgIds: string[] = [];
  const projectIn = async (): Promise<{ orgId: string; projectId: string }> => {
    const [org] = await sql<{ id: string }[]>`INSERT INTO orgs (name) VALUES (${`org-${randomUUID()}`}) RETURNING id`;
    if (!org) throw new Error('org insert returned nothing');
    orgIds.push(org.id);
    const [project] = await sql<{ id: string }[]>`INSERT INTO projects (org_id, name) VALUES (${org.id}, 'web') RETURNING id`;
    if (!project) throw new Error('project insert returned nothing');
    return { orgId: org.id, projectId: project.id };
  };
  const environmentIn = async (parent: { orgId: string; projectId: string }, name: string): Promise<EnvironmentScope> => {
    const [environment] = await sql<{ id: string }[]>`
      INSERT INTO environments (org_id, project_id, name) VALUES (${parent.orgId}, ${parent.projectId}, ${name}) RETURNING id`;
    if (!environment) throw new Error('environment insert returned nothing');
    return { ...parent, environmentId: environment.id };
  };
  const a = await projectIn();
  const b = await projectIn();
  return {
    repos: { flags: new PgFlagRepository(sql), segments: new PgSegmentRepository(sql) },
    scopes: {
      env: await environmentIn(a, 'production'),
      otherEnvSameProject: await environmentIn(a, 'staging'),
      otherOrgEnv: await environmentIn(b, 'production'),
    },
    close: async () => {
      await sql`DELETE FROM orgs WHERE id = ANY(${orgIds}::uuid[])`;
    },
  };
}

flagRepositoryContract('postgres', makeRepos);
segmentRepositoryContract('postgres', makeRepos);
