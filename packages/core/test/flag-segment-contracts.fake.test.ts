import { InMemoryState } from '../src/testing/in-memory-state.ts';
import { InMemoryFlagRepository } from '../src/testing/in-memory-flag-repository.ts';
import { InMemorySegmentRepository } from '../src/testing/in-memory-segment-repository.ts';
import { flagRepositoryContract } from '../src/testing/contracts/flag-repository.contract.ts';
import { segmentRepositoryContract } from '../src/testing/contracts/segment-repository.contract.ts';
import type { FlagSegmentFixture } from '../src/testing/contracts/flag-segment-fixture.ts';
import type { EnvironmentScope } from '../src/ports/scopes.ts';

/**
 * A fresh state per test with two orgs written straight into its maps (not through the tenancy
 * fakes, so these suites stand on their own): org A has one project with two environments, org B
 * one project with one environment.
 */
async function makeRepos(): Promise<FlagSegmentFixture> {
  const state = new InMemoryState();
  const environmentIn = (orgId: string, projectId: string, name: string): EnvironmentScope => {
    const id = state.newId();
    state.environments.set(id, { id, orgId, projectId, name, createdAtMs: state.now(), critical: false, requireComment: false });
    return { orgId, projectId, environmentId: id };
  };
  const projectIn = (orgName: string): { orgId: string; projectId: string } => {
    const orgId = state.newId();
    state.orgs.set(orgId, { id: orgId, name: orgName, isSystem: false, createdAtMs: state.now() });
    const projectId = state.newId();
    state.projects.set(projectId, { id: projectId, orgId, name: 'web', createdAtMs: state.now(), clientVisibleDefault: false, lifecycle: { statusWindowDays: 7, codeRemovalMinAgeDays: 30, archiveAfterDays: 30, unchangedFallbackDays: 14 } });
    return { orgId, projectId };
  };
  const a = projectIn('org-a');
  const b = projectIn('org-b');
  return {
    repos: { flags: new InMemoryFlagRepository(state), segments: new InMemorySegmentRepository(state) },
    scopes: {
      env: environmentIn(a.orgId, a.projectId, 'production'),
      otherEnvSameProject: environmentIn(a.orgId, a.projectId, 'staging'),
      otherOrgEnv: environmentIn(b.orgId, b.projectId, 'production'),
    },
    close: async () => {},
  };
}

flagRepositoryContract('in-memory', makeRepos);
segmentRepositoryContract('in-memory', makeRepos);
