import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDomainError, type ErrorCode } from '../../errors/domain-error.ts';
import type { Repositories } from '../../ports/repositories.ts';
import type { EnvironmentScope, ProjectScope } from '../../ports/scopes.ts';

/**
 * What the flag and segment contract suites need from a runner: the two repositories, and three
 * environments the runner created itself (directly in its store, so the suites do not depend on
 * the tenancy ports): `env` and `otherEnvSameProject` share one project of one org; `otherOrgEnv`
 * lives in a project of a different org.
 */
export interface FlagSegmentFixture {
  repos: Pick<Repositories, 'flags' | 'segments'>;
  scopes: {
    env: EnvironmentScope;
    otherEnvSameProject: EnvironmentScope;
    otherOrgEnv: EnvironmentScope;
  };
  /** Releases what makeRepos created (called after every test). */
  close(): Promise<void>;
}

/** Called once per test, so every test starts from empty tenants of its own. */
export type MakeFlagSegmentRepos = () => Promise<FlagSegmentFixture>;

/** Registers one contract case; the suites bind contractTest to their makeRepos as this. */
export type ContractCheck = (title: string, body: (fixture: FlagSegmentFixture) => Promise<void>) => void;

/** Registers a node:test case that runs `body` against a fresh fixture and always closes it. */
export function contractTest(
  makeRepos: MakeFlagSegmentRepos,
  title: string,
  body: (fixture: FlagSegmentFixture) => Promise<void>,
): void {
  test(title, async () => {
    const fixture = await makeRepos();
    try {
      await body(fixture);
    } finally {
      await fixture.close();
    }
  });
}

/** Asserts the promise rejects with a DomainError of this code (never a raw driver error). */
export async function rejectsWith(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(isDomainError(error), `expected a DomainError ${code}, got ${String(error)}`);
    assert.equal(error.code, code);
    return true;
  });
}

/** Runs both promises to completion and returns how many fulfilled and the codes of the rejections. */
export async function settleRace(promises: Array<Promise<unknown>>): Promise<{ fulfilled: number; codes: string[] }> {
  const results = await Promise.allSettled(promises);
  const codes = results.flatMap((result) =>
    result.status === 'rejected' ? [isDomainError(result.reason) ? result.reason.code : String(result.reason)] : [],
  );
  return { fulfilled: results.filter((result) => result.status === 'fulfilled').length, codes };
}

export const projectOf = (scope: EnvironmentScope): ProjectScope => ({ orgId: scope.orgId, projectId: scope.projectId });

/** Lets the clock move so a later write gets a later millisecond timestamp. */
export const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5));

/** Well-formed ids that exist nowhere, and an id that is not a UUID at all. */
export const MISSING_ID = '00000000-0000-4000-8000-000000000000';
export const MALFORMED_ID = 'not-a-uuid';

/** Keys whose code-point order differs from UTF-16 order and from most locales' order. */
export const ORDERED_KEYS = ['B', 'a', 'b', 'é', '\uFFFD', '😀'];

/** Asserts an epoch-millisecond timestamp of a record written during this test run. */
export function assertRecentMs(value: number, label: string): void {
  assert.equal(typeof value, 'number', `${label} is a number`);
  assert.ok(Number.isInteger(value), `${label} is whole milliseconds`);
  assert.ok(Math.abs(Date.now() - value) < 60_000, `${label} is about now (${value})`);
}
