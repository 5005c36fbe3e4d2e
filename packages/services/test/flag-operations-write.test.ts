import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { isDomainError, type EnvironmentScope, type Principal } from '@switchyard/core';
import { InMemoryChangeNotifier, InMemoryState, createInMemoryRepositories } from '@switchyard/core/testing';
import { FlagService, ScopeResolver, writeFlagOperations } from '../src/index.ts';

// writeFlagOperations (docs/workflow.md "Operations"): operations applied inside the caller's unit
// of work, checked as a person's write, recorded with the acting party; expectations by hand.

const NOW = Date.UTC(2030, 0, 1);
let repos: ReturnType<typeof createInMemoryRepositories>;
let environment: EnvironmentScope;
let admin: Principal;

beforeEach(async () => {
  repos = createInMemoryRepositories(new InMemoryState());
  const org = await repos.orgs.create({ name: 'acme' });
  const user = await repos.users.create({ email: 'admin@example.com', displayName: 'admin', passwordHash: 'x' });
  admin = { kind: 'user', userId: user.id, orgId: org.id, role: 'org_admin', isSystem: false };
  const project = await repos.projects.create({ orgId: org.id }, { name: 'web' });
  const created = await repos.environments.create({ orgId: org.id, projectId: project.id }, { name: 'production' });
  environment = { orgId: org.id, projectId: project.id, environmentId: created.id };
  const flags = new FlagService(repos, new ScopeResolver(repos), new InMemoryChangeNotifier(), () => NOW);
  await flags.create(admin, { environment }, {
    flag: { key: 'checkout', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [{ id: 'beta', conditions: [{ attribute: 'plan', op: 'eq', values: ['beta'] }], variant_key: 'on' }] },
  });
});

const write = (operations: unknown[], acting: Parameters<typeof writeFlagOperations>[1]['acting'] = { type: 'system', id: 'scheduler' }) =>
  repos.unitOfWork.run((tx) => writeFlagOperations(tx, { environment, flagKey: 'checkout', operations: operations as never, acting, action: 'flag.scheduled_change', details: { scheduled_by: 'someone' } }, NOW));

describe('writeFlagOperations', () => {
  test('applies the operations, bumps the version once, and records the entry with the acting party', async () => {
    const { before, after } = await write([{ op: 'set_enabled', enabled: true }, { op: 'set_rule_serve', rule_id: 'beta', variant_key: 'off' }]);
    assert.equal(before.enabled, false);
    assert.equal(after.enabled, true);
    assert.equal(after.rules[0]!.variant_key, 'off');
    assert.equal(after.version, before.version + 1);
    const entries = (await repos.audit.list({ orgId: environment.orgId }, { limit: 10 })).items.filter((entry) => entry.action === 'flag.scheduled_change');
    assert.equal(entries.length, 1);
    assert.deepEqual(entries[0]!.actor, { type: 'system', id: 'scheduler' });
    assert.deepEqual(entries[0]!.details, { scheduled_by: 'someone' });
  });

  test('a state the flag routes refuse is refused here too, and nothing is written', async () => {
    const refusedWith = async (operations: unknown[], code: string, message: RegExp) => {
      await assert.rejects(write(operations), (error: unknown) => isDomainError(error) && error.code === code && message.test(error.message));
    };
    await refusedWith([{ op: 'set_off_variant', variant_key: 'purple' }], 'INVALID_ARGUMENT', /off_variant_key must name one of the flag's variants/);
    await refusedWith([{ op: 'add_rule', rule: { id: 'seg', conditions: [], segment_keys: ['nobody'], variant_key: 'on' } }], 'INVALID_ARGUMENT', /nobody/);
    await refusedWith([{ op: 'remove_rule', rule_id: 'gone' }], 'FAILED_PRECONDITION', /no rule 'gone'/);
    const flag = (await repos.flags.get(environment, 'checkout'))!;
    assert.equal(flag.version, 1);
    assert.equal(flag.enabled, false);
  });

  test('set_prerequisites writes the list, checked as a person\'s write: the flag itself, an unknown flag or variant are refused', async () => {
    const flags = new FlagService(repos, new ScopeResolver(repos), new InMemoryChangeNotifier(), () => NOW);
    await flags.create(admin, { environment }, { flag: { key: 'gate', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], off_variant_key: 'off', rules: [] } });
    const refusedWith = async (operations: unknown[], message: RegExp) => {
      await assert.rejects(write(operations), (error: unknown) => isDomainError(error) && error.code === 'INVALID_ARGUMENT' && message.test(error.message));
    };
    await refusedWith([{ op: 'set_prerequisites', prerequisites: [{ flag_key: 'checkout', variant_keys: ['on'] }] }], /its own prerequisite/);
    await refusedWith([{ op: 'set_prerequisites', prerequisites: [{ flag_key: 'nothing', variant_keys: ['on'] }] }], /no flag 'nothing'/);
    await refusedWith([{ op: 'set_prerequisites', prerequisites: [{ flag_key: 'gate', variant_keys: ['purple'] }] }], /no variant 'purple'/);
    assert.equal((await repos.flags.get(environment, 'checkout'))!.version, 1, 'nothing written');
    const { before, after } = await write([{ op: 'set_prerequisites', prerequisites: [{ flag_key: 'gate', variant_keys: ['on'] }] }]);
    assert.deepEqual(before.prerequisites, []);
    assert.deepEqual(after.prerequisites, [{ flag_key: 'gate', variant_keys: ['on'] }]);
    assert.deepEqual(after.rules.map((rule) => rule.id), ['beta'], 'rules untouched');
    assert.equal(after.version, 2);
    assert.deepEqual((await write([{ op: 'set_prerequisites', prerequisites: [] }])).after.prerequisites, []);
  });
});
