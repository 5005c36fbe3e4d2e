import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  assertRecentMs,
  createTenant,
  MALFORMED_ID,
  rejectsWithCode,
  unique,
  UNKNOWN_ID,
  useRepositories,
  type MakeTenancyRepositories,
} from './tenancy-contract-support.ts';

/** The behaviour every EnvironmentRepository must show, tenant isolation included. */
export function environmentRepositoryContract(name: string, makeRepos: MakeTenancyRepositories): void {
  describe(`EnvironmentRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('create then get and list return every field', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const project = await repos().projects.create({ orgId: org.id }, { name: unique('project') });
      const scope = { orgId: org.id, projectId: project.id };
      const environment = await repos().environments.create(scope, { name: 'production' });
      assert.equal(environment.orgId, org.id);
      assert.equal(environment.projectId, project.id);
      assert.equal(environment.name, 'production');
      assertRecentMs(environment.createdAtMs);
      assert.deepEqual(await repos().environments.get({ orgId: org.id }, environment.id), environment);
      assert.deepEqual(await repos().environments.list(scope), [environment]);
    });

    test('updateProtection sets critical and require_comment (both false at creation); another org\'s environment is NOT_FOUND', async () => {
      const { org, project } = await createTenant(repos());
      const environment = await repos().environments.create({ orgId: org.id, projectId: project.id }, { name: unique('production') });
      assert.deepEqual([environment.critical, environment.requireComment], [false, false]);
      const updated = await repos().environments.updateProtection({ orgId: org.id }, environment.id, { critical: true, requireComment: true });
      assert.deepEqual({ ...updated }, { ...environment, critical: true, requireComment: true });
      assert.deepEqual(await repos().environments.get({ orgId: org.id }, environment.id), updated);
      const attacker = await repos().orgs.create({ name: unique('attacker') });
      await rejectsWithCode(repos().environments.updateProtection({ orgId: attacker.id }, environment.id, { critical: false, requireComment: false }), 'NOT_FOUND');
      await rejectsWithCode(repos().environments.updateProtection({ orgId: org.id }, MALFORMED_ID, { critical: false, requireComment: false }), 'NOT_FOUND');
      assert.equal((await repos().environments.get({ orgId: org.id }, environment.id))!.critical, true);
    });

    test('a name taken in the project is ALREADY_EXISTS; the same name in another project is fine', async () => {
      const { org, project } = await createTenant(repos());
      const other = await repos().projects.create({ orgId: org.id }, { name: unique('other') });
      await repos().environments.create({ orgId: org.id, projectId: project.id }, { name: 'staging' });
      await rejectsWithCode(repos().environments.create({ orgId: org.id, projectId: project.id }, { name: 'staging' }), 'ALREADY_EXISTS');
      const inOther = await repos().environments.create({ orgId: org.id, projectId: other.id }, { name: 'staging' });
      assert.equal(inOther.projectId, other.id);
      assert.deepEqual(
        (await repos().environments.list({ orgId: org.id, projectId: project.id })).map((e) => e.name).filter((n) => n === 'staging'),
        ['staging'],
      );
    });

    test("an environment for another org's project, an unknown or a malformed project is NOT_FOUND", async () => {
      const victim = await createTenant(repos());
      const attacker = await repos().orgs.create({ name: unique('attacker') });
      await rejectsWithCode(
        repos().environments.create({ orgId: attacker.id, projectId: victim.project.id }, { name: unique('env') }),
        'NOT_FOUND',
      );
      await rejectsWithCode(repos().environments.create({ orgId: victim.org.id, projectId: UNKNOWN_ID }, { name: 'x' }), 'NOT_FOUND');
      await rejectsWithCode(repos().environments.create({ orgId: victim.org.id, projectId: MALFORMED_ID }, { name: 'x' }), 'NOT_FOUND');
      await rejectsWithCode(repos().environments.create({ orgId: MALFORMED_ID, projectId: victim.project.id }, { name: 'x' }), 'NOT_FOUND');
      assert.deepEqual(await repos().environments.list({ orgId: victim.org.id, projectId: victim.project.id }), [victim.environment]);
    });

    test("another org's environment reads as null and its list is empty under a foreign scope", async () => {
      const victim = await createTenant(repos());
      const attacker = await createTenant(repos());
      assert.equal(await repos().environments.get({ orgId: attacker.org.id }, victim.environment.id), null);
      assert.deepEqual(await repos().environments.list({ orgId: attacker.org.id, projectId: victim.project.id }), []);
      // A project of the caller's org does not unlock another project's environments either.
      assert.deepEqual(
        (await repos().environments.list({ orgId: victim.org.id, projectId: attacker.project.id })),
        [],
      );
    });

    test('unknown and malformed ids read as null or empty', async () => {
      const { org, project } = await createTenant(repos());
      assert.equal(await repos().environments.get({ orgId: org.id }, UNKNOWN_ID), null);
      assert.equal(await repos().environments.get({ orgId: org.id }, MALFORMED_ID), null);
      assert.equal(await repos().environments.get({ orgId: MALFORMED_ID }, UNKNOWN_ID), null);
      assert.deepEqual(await repos().environments.list({ orgId: org.id, projectId: MALFORMED_ID }), []);
      assert.deepEqual(await repos().environments.list({ orgId: MALFORMED_ID, projectId: project.id }), []);
    });

    test('list is oldest first', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const project = await repos().projects.create({ orgId: org.id }, { name: unique('project') });
      const scope = { orgId: org.id, projectId: project.id };
      const created = [];
      for (const envName of ['production', 'dev', 'staging']) created.push(await repos().environments.create(scope, { name: envName }));
      assert.deepEqual(await repos().environments.list(scope), created);
    });
  });
}
