import { after, before } from 'node:test';
import type { EnvironmentScope } from '@switchyard/core';
import {
  experimentDataRepositoryContract,
  metricAggregationContract,
  statsScheduleRepositoryContract,
  type MakeExperimentDataRepos,
} from '@switchyard/core/testing/contracts';
import type { Sql } from '../src/connect.ts';
import { PgExperimentDataRepository } from '../src/experiment-data-repository.pg.ts';
import { createPostgresRepositories } from '../src/repositories.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

// One database for the file; each world empties it first, because the scheduler sees every org.
let db: TestDatabase | undefined;
before(async () => {
  db = await createTestDatabase();
});
after(async () => {
  await db?.drop();
});

async function addOrgWithEnvironments(sql: Sql, label: string, environmentCount: number): Promise<EnvironmentScope[]> {
  const [org] = await sql<{ id: string }[]>`INSERT INTO orgs (name) VALUES (${`org-${label}`}) RETURNING id`;
  if (!org) throw new Error('no org row');
  const [project] = await sql<{ id: string }[]>`
    INSERT INTO projects (org_id, name) VALUES (${org.id}, ${`project-${label}`}) RETURNING id`;
  if (!project) throw new Error('no project row');
  const scopes: EnvironmentScope[] = [];
  for (let i = 0; i < environmentCount; i += 1) {
    const [environment] = await sql<{ id: string }[]>`
      INSERT INTO environments (org_id, project_id, name) VALUES (${org.id}, ${project.id}, ${`env-${i}`}) RETURNING id`;
    if (!environment) throw new Error('no environment row');
    scopes.push({ orgId: org.id, projectId: project.id, environmentId: environment.id });
  }
  return scopes;
}

const makeRepos: MakeExperimentDataRepos = async () => {
  if (!db) throw new Error('test database not created');
  const sql = db.sql;
  await sql`TRUNCATE orgs, events, exposures, idempotency_keys, stats_jobs, stats_job_turns CASCADE`;
  const [env, otherEnvSameProject] = await addOrgWithEnvironments(sql, 'a', 2);
  const [otherOrgEnv] = await addOrgWithEnvironments(sql, 'b', 1);
  if (!env || !otherEnvSameProject || !otherOrgEnv) throw new Error('fixture environments missing');
  return { repos: createPostgresRepositories(sql), scopes: { env, otherEnvSameProject, otherOrgEnv }, close: async () => {} };
};

experimentDataRepositoryContract('postgres', makeRepos);
statsScheduleRepositoryContract('postgres', makeRepos);
// Again with no late-arrival margin: each call re-reads only the participants with rows received
// since the previous call, so the contract's "brought up to date" test exercises the reuse (with
// the default margin every row of a test is recent, and everything is re-read).
metricAggregationContract('postgres, incremental with no margin', async () => {
  const world = await makeRepos();
  if (!db) throw new Error('test database not created');
  return { ...world, repos: { ...world.repos, experimentData: new PgExperimentDataRepository(db.sql, { lateArrivalMarginMs: 0 }) } };
});
