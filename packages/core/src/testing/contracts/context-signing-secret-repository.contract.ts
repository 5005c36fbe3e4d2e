import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Repositories } from '../../ports/repositories.ts';
import { assertRecentMs, createTenant, environmentScope, rejectsWithCode, useRepositories, type TenancyRepositories } from './tenancy-contract-support.ts';

export type MakeContextSigningRepositories = () => Promise<{ repos: Repositories; close(): Promise<void> }>;

/** The behaviour every ContextSigningSecretRepository must show, tenant isolation and the cap included. */
export function contextSigningSecretRepositoryContract(name: string, makeRepos: MakeContextSigningRepositories): void {
  describe(`ContextSigningSecretRepository contract: ${name}`, () => {
    const repos = useRepositories<Repositories>(makeRepos);
    const tenancy = (): TenancyRepositories => repos();

    test('create, list (oldest first) and delete, every field kept', async () => {
      const scope = environmentScope(await createTenant(tenancy()));
      const first = await repos().contextSigningSecrets.create(scope, { kid: `${scope.environmentId}.one`, sealedSecret: 'v1.sealed-one' }, 10);
      assert.deepEqual({ ...first, createdAtMs: 0 }, { ...scope, kid: `${scope.environmentId}.one`, sealedSecret: 'v1.sealed-one', createdAtMs: 0 });
      assertRecentMs(first.createdAtMs);
      const second = await repos().contextSigningSecrets.create(scope, { kid: `${scope.environmentId}.two`, sealedSecret: 'v1.sealed-two' }, 10);
      assert.deepEqual(await repos().contextSigningSecrets.list(scope), [first, second]);
      assert.deepEqual(await repos().contextSigningSecrets.delete(scope, first.kid), first);
      assert.deepEqual(await repos().contextSigningSecrets.list(scope), [second]);
      await rejectsWithCode(repos().contextSigningSecrets.delete(scope, first.kid), 'NOT_FOUND');
    });

    test('at most maxPerEnvironment per environment (FAILED_PRECONDITION), per environment', async () => {
      const scope = environmentScope(await createTenant(tenancy()));
      const other = environmentScope(await createTenant(tenancy()));
      await repos().contextSigningSecrets.create(scope, { kid: `${scope.environmentId}.a`, sealedSecret: 's' }, 2);
      await repos().contextSigningSecrets.create(scope, { kid: `${scope.environmentId}.b`, sealedSecret: 's' }, 2);
      await rejectsWithCode(repos().contextSigningSecrets.create(scope, { kid: `${scope.environmentId}.c`, sealedSecret: 's' }, 2), 'FAILED_PRECONDITION');
      await repos().contextSigningSecrets.create(other, { kid: `${other.environmentId}.a`, sealedSecret: 's' }, 2);
    });

    test("another tenant's scope sees, deletes and creates nothing there", async () => {
      const scope = environmentScope(await createTenant(tenancy()));
      const other = environmentScope(await createTenant(tenancy()));
      const secret = await repos().contextSigningSecrets.create(scope, { kid: `${scope.environmentId}.mine`, sealedSecret: 's' }, 10);
      assert.deepEqual(await repos().contextSigningSecrets.list({ ...other, environmentId: scope.environmentId }), []);
      await rejectsWithCode(repos().contextSigningSecrets.delete(other, secret.kid), 'NOT_FOUND');
      await rejectsWithCode(repos().contextSigningSecrets.create({ ...other, environmentId: scope.environmentId }, { kid: 'x.y', sealedSecret: 's' }, 10), 'NOT_FOUND');
      assert.deepEqual(await repos().contextSigningSecrets.list(scope), [secret]);
    });
  });
}
