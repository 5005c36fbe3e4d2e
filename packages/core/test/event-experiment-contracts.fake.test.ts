import type { EnvironmentScope } from '../src/ports/scopes.ts';
import { InMemoryState } from '../src/testing/in-memory-state.ts';
import { InMemoryEventDefinitionRepository } from '../src/testing/in-memory-event-definition-repository.ts';
import { InMemoryEventRepository } from '../src/testing/in-memory-event-repository.ts';
import { InMemoryExposureRepository } from '../src/testing/in-memory-exposure-repository.ts';
import { InMemoryIdempotencyRepository } from '../src/testing/in-memory-idempotency-repository.ts';
import { InMemoryExperimentRepository } from '../src/testing/in-memory-experiment-repository.ts';
import { InMemoryResultsRepository } from '../src/testing/in-memory-results-repository.ts';
import { InMemoryStatsJobRepository } from '../src/testing/in-memory-stats-job-repository.ts';
import type { MakeEventExperimentRepos } from '../src/testing/contracts/event-experiment-fixture.ts';
import { eventRepositoriesContract } from '../src/testing/contracts/event-repositories.contract.ts';
import { experimentRepositoryContract, resultsRepositoryContract } from '../src/testing/contracts/experiment-repositories.contract.ts';
import { statsJobRepositoryContract } from '../src/testing/contracts/stats-job-repository.contract.ts';

/** Parents go straight into the state's maps: these suites test the event and experiment ports only. */
function addOrgWithEnvironments(state: InMemoryState, label: string, environmentCount: number): EnvironmentScope[] {
  const createdAtMs = state.now();
  const org = { id: state.newId(), name: `org-${label}`, isSystem: false, createdAtMs };
  const project = { id: state.newId(), orgId: org.id, name: `project-${label}`, createdAtMs, clientVisibleDefault: false, lifecycle: { statusWindowDays: 7, codeRemovalMinAgeDays: 30, archiveAfterDays: 30, unchangedFallbackDays: 14 } };
  state.orgs.set(org.id, org);
  state.projects.set(project.id, project);
  return Array.from({ length: environmentCount }, (_, i) => {
    const environment = { id: state.newId(), orgId: org.id, projectId: project.id, name: `env-${i}`, createdAtMs, critical: false, requireComment: false };
    state.environments.set(environment.id, environment);
    return { orgId: org.id, projectId: project.id, environmentId: environment.id };
  });
}

const makeRepos: MakeEventExperimentRepos = async () => {
  const state = new InMemoryState();
  const [env, otherEnvSameProject] = addOrgWithEnvironments(state, 'a', 2);
  const [otherOrgEnv] = addOrgWithEnvironments(state, 'b', 1);
  if (!env || !otherEnvSameProject || !otherOrgEnv) throw new Error('fixture environments missing');
  return {
    repos: {
      eventDefinitions: new InMemoryEventDefinitionRepository(state),
      events: new InMemoryEventRepository(state),
      exposures: new InMemoryExposureRepository(state),
      idempotency: new InMemoryIdempotencyRepository(state),
      experiments: new InMemoryExperimentRepository(state),
      results: new InMemoryResultsRepository(state),
      statsJobs: new InMemoryStatsJobRepository(state),
    },
    scopes: { env, otherEnvSameProject, otherOrgEnv },
    close: async () => {},
  };
};

eventRepositoriesContract('in-memory', makeRepos);
experimentRepositoryContract('in-memory', makeRepos);
resultsRepositoryContract('in-memory', makeRepos);
statsJobRepositoryContract('in-memory', makeRepos);
