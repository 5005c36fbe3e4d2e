import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isDomainError } from '../../errors/domain-error.ts';
import type { Repositories } from '../../ports/repositories.ts';
import type { EnvironmentScope } from '../../ports/scopes.ts';
import { createTenant, environmentScope, useRepositories, type TenancyRepositories } from './tenancy-contract-support.ts';

export type MakeScheduledChangeRepositories = () => Promise<{ repos: Repositories; close(): Promise<void> }>;

const draft = (scope: EnvironmentScope, flagKey: string, executeAtMs: number) => ({
  scope,
  flagKey,
  executeAtMs,
  operations: [{ op: 'set_enabled' as const, enabled: true }],
  comment: 'c',
  createdBy: { type: 'user' as const, id: 'u1', email: 'u1@example.com' },
  atMs: 1_000,
});

/** The behaviour every ScheduledChangeRepository must show (docs/workflow.md "Scheduled changes"). */
export function scheduledChangeRepositoryContract(name: string, makeRepos: MakeScheduledChangeRepositories): void {
  describe(`ScheduledChangeRepository contract: ${name}`, () => {
    const repos = useRepositories<Repositories>(makeRepos);
    const tenancy = (): TenancyRepositories => repos();

    test('create, get and list by time (a calendar), per flag and status; another tenant sees nothing', async () => {
      const scope = environmentScope(await createTenant(tenancy()));
      const other = environmentScope(await createTenant(tenancy()));
      const late = await repos().scheduledChanges.create(draft(scope, 'a', 3_000));
      const early = await repos().scheduledChanges.create(draft(scope, 'b', 2_000));
      assert.deepEqual(
        { status: late.status, version: late.version, reason: late.reason, appliedAtMs: late.appliedAtMs, createdAtMs: late.createdAtMs, createdBy: late.createdBy },
        { status: 'pending', version: 1, reason: null, appliedAtMs: null, createdAtMs: 1_000, createdBy: { type: 'user', id: 'u1', email: 'u1@example.com' } },
      );
      assert.deepEqual(await repos().scheduledChanges.get(scope, late.id), late);
      assert.equal(await repos().scheduledChanges.get(other, late.id), null);
      assert.equal(await repos().scheduledChanges.get(scope, 'not-a-uuid'), null);
      const ids = async (query: Parameters<Repositories['scheduledChanges']['list']>[1], at = scope) => (await repos().scheduledChanges.list(at, query)).map((c) => c.id);
      assert.deepEqual(await ids({ limit: 10 }), [early.id, late.id]);
      assert.deepEqual(await ids({ limit: 10, fromMs: 2_001, toMs: 3_001 }), [late.id]);
      assert.deepEqual(await ids({ limit: 10, toMs: 3_000 }), [early.id]);
      assert.deepEqual(await ids({ limit: 10, flagKey: 'a' }), [late.id]);
      assert.deepEqual(await ids({ limit: 1 }), [early.id]);
      assert.deepEqual(await ids({ limit: 10 }, other), []);
      await repos().scheduledChanges.finish(early.id, { status: 'cancelled', reason: null, atMs: 1_500 });
      assert.deepEqual(await ids({ limit: 10, statuses: ['pending'] }), [late.id]);
    });

    test('update only while pending and at the expected version; finish only once', async () => {
      const scope = environmentScope(await createTenant(tenancy()));
      const change = await repos().scheduledChanges.create(draft(scope, 'a', 3_000));
      const updated = await repos().scheduledChanges.update(scope, change.id, { executeAtMs: 4_000, comment: 'later' }, 1, 1_100);
      assert.deepEqual([updated.executeAtMs, updated.comment, updated.version, updated.updatedAtMs, updated.operations], [4_000, 'later', 2, 1_100, change.operations]);
      await assert.rejects(repos().scheduledChanges.update(scope, change.id, { comment: 'x' }, 1, 1_200), (e: unknown) => isDomainError(e) && e.code === 'ABORTED');
      const done = await repos().scheduledChanges.finish(change.id, { status: 'applied', reason: null, atMs: 5_000, appliedAtMs: 5_000 });
      assert.deepEqual([done?.status, done?.appliedAtMs, done?.version], ['applied', 5_000, 3]);
      assert.equal(await repos().scheduledChanges.finish(change.id, { status: 'failed', reason: 'x', atMs: 5_001 }), null);
      await assert.rejects(repos().scheduledChanges.update(scope, change.id, { comment: 'x' }, undefined, 1_200), (e: unknown) => isDomainError(e) && e.code === 'FAILED_PRECONDITION');
    });

    test("cancelPendingForFlag ends the flag's pending schedules in every environment of the project, no other", async () => {
      const scope = environmentScope(await createTenant(tenancy()));
      const a = await repos().scheduledChanges.create(draft(scope, 'gone', 3_000));
      const kept = await repos().scheduledChanges.create(draft(scope, 'kept', 3_000));
      const cancelled = await repos().scheduledChanges.cancelPendingForFlag({ orgId: scope.orgId, projectId: scope.projectId }, 'gone', 'the flag was deleted', 2_000);
      assert.deepEqual(cancelled.map((c) => [c.id, c.status, c.reason]), [[a.id, 'cancelled', 'the flag was deleted']]);
      assert.equal((await repos().scheduledChanges.get(scope, kept.id))?.status, 'pending');
    });
  });
}
