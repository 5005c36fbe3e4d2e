import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Repositories } from '../../ports/repositories.ts';
import type { SeenContextAttribute } from '../../flags/context-attribute-ports.ts';
import type { EnvironmentScope } from '../../ports/scopes.ts';
import { assertRecentMs, createTenant, environmentScope, useRepositories, type TenancyRepositories } from './tenancy-contract-support.ts';

export type MakeContextAttributeRepositories = () => Promise<{ repos: Repositories; close(): Promise<void> }>;

const seen = (scope: EnvironmentScope, contextType: string, name: string): SeenContextAttribute => ({ ...scope, contextType, name });
const names = (rows: Array<{ contextType: string; name: string }>): string[] => rows.map((row) => `${row.contextType}.${row.name}`);

/** The behaviour every ContextAttributeRepository must show: newest first, the cap, tenant isolation. */
export function contextAttributeRepositoryContract(name: string, makeRepos: MakeContextAttributeRepositories): void {
  describe(`ContextAttributeRepository contract: ${name}`, () => {
    const repos = useRepositories<Repositories>(makeRepos);
    const tenancy = (): TenancyRepositories => repos();

    test('record then list: most recently seen first, ties by context type then name, a sighting again moves it up', async () => {
      const scope = environmentScope(await createTenant(tenancy()));
      assert.equal(await repos().contextAttributes.record([seen(scope, 'user', 'plan'), seen(scope, 'device', 'os'), seen(scope, 'user', 'country')], 500), 3);
      const first = await repos().contextAttributes.list(scope, 100);
      // One write: one time, so the order is by type then name.
      assert.deepEqual(names(first), ['device.os', 'user.country', 'user.plan']);
      for (const row of first) assertRecentMs(row.lastSeenAtMs);
      await repos().contextAttributes.record([seen(scope, 'user', 'plan')], 500);
      const second = await repos().contextAttributes.list(scope, 100);
      assert.deepEqual(names(second), ['user.plan', 'device.os', 'user.country']);
      assert.ok(second[0]!.lastSeenAtMs >= first[0]!.lastSeenAtMs);
      assert.deepEqual(names(await repos().contextAttributes.list(scope, 1)), ['user.plan']);
    });

    test('beyond maxPerEnvironment the least recently seen go, per environment', async () => {
      const scope = environmentScope(await createTenant(tenancy()));
      const other = environmentScope(await createTenant(tenancy()));
      await repos().contextAttributes.record([seen(scope, 'user', 'a'), seen(scope, 'user', 'b'), seen(other, 'user', 'z')], 3);
      await repos().contextAttributes.record([seen(scope, 'user', 'c'), seen(scope, 'user', 'd')], 3);
      // Four rows, cap 3: a and b were seen before c and d, and of that tie the later name (b) goes.
      assert.deepEqual(names(await repos().contextAttributes.list(scope, 100)), ['user.c', 'user.d', 'user.a']);
      assert.deepEqual(names(await repos().contextAttributes.list(other, 100)), ['user.z']);
    });

    test("an attribute naming another tenant's scope is not written; a list in another scope sees nothing", async () => {
      const scope = environmentScope(await createTenant(tenancy()));
      const other = environmentScope(await createTenant(tenancy()));
      assert.equal(await repos().contextAttributes.record([seen({ ...other, environmentId: scope.environmentId }, 'user', 'sneaky')], 500), 0);
      assert.deepEqual(await repos().contextAttributes.list(scope, 100), []);
      await repos().contextAttributes.record([seen(scope, 'user', 'mine')], 500);
      assert.deepEqual(await repos().contextAttributes.list({ ...other, environmentId: scope.environmentId }, 100), []);
    });
  });
}
