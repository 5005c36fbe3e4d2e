import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import { isDomainError, type ErrorCode } from '../../errors/domain-error.ts';
import type { Environment, Org, Project } from '../../model/entities.ts';
import type { Repositories } from '../../ports/repositories.ts';

/** The ports the tenancy contracts exercise; parents are created through the other ports. */
export type TenancyRepositories = Pick<Repositories, 'orgs' | 'users' | 'projects' | 'environments' | 'sdkKeys' | 'apiTokens' | 'audit' | 'unitOfWork'>;

/**
 * Builds the repositories a suite runs against. Each call must give an empty store (a fresh
 * in-memory state, a fresh database), because some rules — one system org — are global.
 */
export type MakeTenancyRepositories = () => Promise<{ repos: TenancyRepositories; close(): Promise<void> }>;

/** A well-formed id that names nothing. */
export const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
/** An id no uuid column can hold: must give null / NOT_FOUND, never a driver error. */
export const MALFORMED_ID = 'not-a-uuid';

/** A name no other test of the run uses. */
export const unique = (label: string): string => `${label}-${randomUUID().slice(0, 8)}`;

/**
 * Registers before/after hooks in the current describe and returns a getter for its repositories
 * (any bundle: each contract file names the ports it exercises).
 */
export function useRepositories<R = TenancyRepositories>(makeRepos: () => Promise<{ repos: R; close(): Promise<void> }>): () => R {
  let handle: { repos: R; close(): Promise<void> } | undefined;
  before(async () => {
    handle = await makeRepos();
  });
  after(async () => {
    await handle?.close();
  });
  return () => {
    if (!handle) throw new Error('repositories used before the suite started');
    return handle.repos;
  };
}

/** Asserts the promise rejects with a DomainError of this code (not a raw driver error). */
export async function rejectsWithCode(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(isDomainError(error), `expected a DomainError ${code}, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  });
}

/** Asserts an epoch-millisecond timestamp taken just now (server and test share one clock). */
export function assertRecentMs(value: unknown): void {
  assert.equal(typeof value, 'number');
  assert.ok(Number.isInteger(value), `${String(value)} is whole milliseconds`);
  assert.ok(Math.abs((value as number) - Date.now()) < 60_000, `${String(value)} is close to now`);
}

export interface Tenant {
  org: Org;
  project: Project;
  environment: Environment;
}

/** A new org with one project and one environment, created through the ports. */
export async function createTenant(repos: TenancyRepositories): Promise<Tenant> {
  const org = await repos.orgs.create({ name: unique('org') });
  const project = await repos.projects.create({ orgId: org.id }, { name: unique('project') });
  const environment = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: unique('env') });
  return { org, project, environment };
}

/** The scope object of a tenant's environment. */
export const environmentScope = (tenant: Tenant) => ({
  orgId: tenant.org.id,
  projectId: tenant.project.id,
  environmentId: tenant.environment.id,
});
