import type { EnvironmentScope } from '../src/ports/scopes.ts';
import { createInMemoryRepositories, InMemoryState } from '../src/testing/index.ts';
import {
  experimentDataRepositoryContract,
  statsScheduleRepositoryContract,
  type MakeExperimentDataRepos,
} from '../src/testing/contracts/experiment-data-repositories.contract.ts';

/** Parents go straight into the state's maps: these suites test the experiment data ports only. */
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

const makeRepos: MakeExperimentDataRepos = async () => {
  const state = new InMemoryState();
  const [env, otherEnvSameProject] = addOrgWithEnvironments(state, 'a', 2);
  const [otherOrgEnv] = addOrgWithEnvironments(state, 'b', 1);
  if (!env || !otherEnvSameProject || !otherOrgEnv) throw new Error('fixture environments missing');
  return { repos: createInMemoryRepositories(state), scopes: { env, otherEnvSameProject, otherOrgEnv }, close: async () => {} };
};

experimentDataRepositoryContract('in-memory', makeRepos);
statsScheduleRepositoryContract('in-memory', makeRepos);
