import assert from 'node:assert/strict';
import { isDomainError, type ErrorCode } from '../../errors/domain-error.ts';
import type { Repositories } from '../../ports/repositories.ts';
import type { EnvironmentScope } from '../../ports/scopes.ts';

/** The ports the event and experiment contracts exercise. */
export type EventExperimentRepositories = Pick<
  Repositories,
  'eventDefinitions' | 'events' | 'exposures' | 'idempotency' | 'experiments' | 'results' | 'statsJobs'
>;

/**
 * A clean world for one test: repositories with no events, experiments or jobs in ANY org (the
 * stats scheduler's views span orgs), and three existing environments to act in.
 */
export interface EventExperimentWorld {
  repos: EventExperimentRepositories;
  scopes: {
    /** The environment most cases act in. */
    env: EnvironmentScope;
    /** Another environment of the same org and project. */
    otherEnvSameProject: EnvironmentScope;
    /** An environment of a different org. */
    otherOrgEnv: EnvironmentScope;
  };
  close(): Promise<void>;
}

export type MakeEventExperimentRepos = () => Promise<EventExperimentWorld>;

/** Runs `body` in a fresh world and always closes it. */
export async function inWorld(
  makeRepos: MakeEventExperimentRepos,
  body: (world: EventExperimentWorld) => Promise<void>,
): Promise<void> {
  const world = await makeRepos();
  try {
    await body(world);
  } finally {
    await world.close();
  }
}

/** Asserts that `promise` rejects with a DomainError of `code` (never a raw driver error). */
export async function assertRejectsWithCode(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(isDomainError(error), `expected a DomainError ${code}, got ${String(error)}`);
    assert.equal(error.code, code, `expected ${code}, got ${error.code}: ${error.message}`);
    return true;
  });
}

/** The env's org and project with another org's id: a tenant asking for someone else's environment. */
export const foreignOrgScope = (scope: EnvironmentScope, other: EnvironmentScope): EnvironmentScope => ({
  orgId: other.orgId,
  projectId: scope.projectId,
  environmentId: scope.environmentId,
});

/** A syntactically valid id that names nothing. */
export const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
/** An id that is not a UUID at all (a path parameter a client typed). */
export const MALFORMED_ID = 'not-a-uuid';
