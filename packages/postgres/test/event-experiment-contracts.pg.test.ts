import { after, before } from 'node:test';
import type { EnvironmentScope } from '@switchyard/core';
import type { MakeEventExperimentRepos } from '@switchyard/core/testing/contracts';
import { eventRepositoriesContract } from '@switchyard/core/testing/contracts';
import {
  experimentRepositoryContract,
  resultsRepositoryContract,
} from '@switchyard/core/testing/contracts';
import { statsJobRepositoryContract } from '@switchyard/core/testing/contracts';
import type { Sql } from '../src/connect.ts';
import { PgEventDefinitionRepository } from '../src/event-definition-repository.pg.ts';
import { PgEventRepository } from '../src/event-repository.pg.ts';
import { PgExposureRepository } from '../src/exposure-repository.pg.ts';
import { PgIdempotencyRepository } from '../src/idempotency-repository.pg.ts';
import { PgExperimentRepository } from '../src/experiment-repository.pg.ts';
import { PgResultsRepository } from '../src/results-repository.pg.ts';
import { PgStatsJobRepository } from '../src/stats-job-repository.pg.ts';
import { createTestDatabase, type TestDatabase } from '../src/testing/test-database.ts';

// One database for the file (creating one per test would dominate the run time); each world
// empties it first, because listActive and claimNext see every org.
let db: TestDatabase | undefined;
before(async () => {
  db = await createTestDatabase();
});
after(async () => {
  await db?.drop();
});

/** Parents by plain INSERTs: these suites test the event and experiment ports only. */
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

const makeRepos: MakeEventExperimentRepos = async () => {
  if (!db) throw new Error('test database not created');
  const sql = db.sql;
  // orgs cascades to projects, environments, event definitions, experiments and their
  // iterations and results; the tables without foreign keys are named.
  await sql`TRUNCATE orgs, events, exposures, idempotency_keys, stats_jobs, stats_job_turns CASCADE`;
  const [env, otherEnvSameProject] = await addOrgWithEnvironments(sql, 'a', 2);
  const [otherOrgEnv] = await addOrgWithEnvironments(sql, 'b', 1);
  if (!env || !otherEnvSameProject || !otherOrgEnv) throw new Error('fixture environments missing');
  return {
    repos: {
      eventDefinitions: new PgEventDefinitionRepository(sql),
      events: new PgEventRepository(sql),
      exposures: new PgExposureRepository(sql),
      idempotency: new PgIdempotencyRepository(sql),
      experiments: new PgExperimentRepository(sql),
      results: new PgResultsRepository(sql),
      statsJobs: new PgStatsJobRepository(sql),
    },
    scopes: { env, otherEnvSameProject, otherOrgEnv },
    close: async () => {},
  };
};

eventRepositoriesContract('postgres', makeRepos);
experimentRepositoryContract('postgres', makeRepos);
resultsRepositoryContract('postgres', makeRepos);
statsJobRepositoryContract('postgres', makeRepos);
