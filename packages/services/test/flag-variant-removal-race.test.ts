import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDomainError, type FlagRepository, type Principal, type Repositories } from '@switchyard/core';
import { InMemoryChangeNotifier, InMemoryState, createInMemoryRepositories } from '@switchyard/core/testing';
import { FlagService, ScopeResolver } from '../src/index.ts';

/**
 * A variant removed between a state writer's check and its write (another member's PATCH, landing
 * in that instant): the writer's unit of work sees the variants as they are once it holds the
 * flag, and refuses rules naming a variant that is gone. Simulated deterministically: the
 * repositories' state write first lets the removal happen, as a concurrent writer would.
 */
test('a rules write whose variant is removed before it lands is refused and leaves nothing behind', async () => {
  const state = new InMemoryState();
  const repos = createInMemoryRepositories(state);
  const org = await repos.orgs.create({ name: 'acme' });
  const project = await repos.projects.create({ orgId: org.id }, { name: 'shop' });
  const environment = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'prod' });
  const admin: Principal = { kind: 'user', userId: 'u-admin', orgId: org.id, role: 'org_admin', isSystem: false };

  let removeFirst = false;
  const flags: FlagRepository = Object.create(repos.flags, {
    updateState: {
      value: async (...args: Parameters<FlagRepository['updateState']>) => {
        if (removeFirst) {
          removeFirst = false;
          // The concurrent removal: nothing served b when it checked, so it is allowed.
          await repos.flags.updateDefinition({ orgId: org.id, projectId: project.id }, 'tri', { variants: [{ key: 'a', value: 'A' }, { key: 'c', value: 'C' }] });
        }
        return repos.flags.updateState(...args);
      },
    },
  });
  const raced: Repositories = { ...repos, flags };
  const service = new FlagService({ ...raced, unitOfWork: { run: (work) => repos.unitOfWork.run(() => work(raced)) } }, new ScopeResolver(repos), new InMemoryChangeNotifier());
  const target = await service.target(admin, environment.id, 'environment');
  const variants = [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }, { key: 'c', value: 'C' }];
  await service.create(admin, target, { flag: { key: 'tri', value_type: 'string', variants, rules: [] } });
  const before = await service.get(admin, target, 'tri');

  for (const write of [
    () => service.replaceRules(admin, target, 'tri', [{ id: 'r', conditions: [], variant_key: 'b' }]),
    () => service.update(admin, target, 'tri', { flag: { enabled: true, off_variant_key: 'b' } }),
  ]) {
    removeFirst = true;
    await assert.rejects(write(), (error: unknown) => isDomainError(error) && error.code === 'FAILED_PRECONDITION');
    // Put b back for the next write (nothing serves it).
    await repos.flags.updateDefinition({ orgId: org.id, projectId: project.id }, 'tri', { variants });
  }
  const after = await service.get(admin, target, 'tri');
  assert.deepEqual([after.rules, after.off_variant_key, after.enabled, after.version], [before.rules, before.off_variant_key, before.enabled, before.version], 'no state was written');
});
