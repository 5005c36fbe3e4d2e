import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  assertRecentMs,
  MALFORMED_ID,
  rejectsWithCode,
  unique,
  UNKNOWN_ID,
  useRepositories,
  type MakeTenancyRepositories,
} from './tenancy-contract-support.ts';

/** The behaviour every ProjectRepository must show, tenant isolation included. */
export function projectRepositoryContract(name: string, makeRepos: MakeTenancyRepositories): void {
  describe(`ProjectRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('create then get and list return every field', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const projectName = unique('web');
      const project = await repos().projects.create({ orgId: org.id }, { name: projectName });
      assert.equal(project.orgId, org.id);
      assert.equal(project.name, projectName);
      assertRecentMs(project.createdAtMs);
      assert.deepEqual(await repos().projects.get({ orgId: org.id }, project.id), project);
      assert.deepEqual(await repos().projects.list({ orgId: org.id }), [project]);
    });

    test('a name taken in the org is ALREADY_EXISTS; the same name in another org is fine', async () => {
      const orgA = await repos().orgs.create({ name: unique('a') });
      const orgB = await repos().orgs.create({ name: unique('b') });
      const projectName = unique('shared');
      await repos().projects.create({ orgId: orgA.id }, { name: projectName });
      await rejectsWithCode(repos().projects.create({ orgId: orgA.id }, { name: projectName }), 'ALREADY_EXISTS');
      const inB = await repos().projects.create({ orgId: orgB.id }, { name: projectName });
      assert.equal(inB.orgId, orgB.id);
      assert.equal((await repos().projects.list({ orgId: orgA.id })).length, 1);
      assert.deepEqual(await repos().projects.list({ orgId: orgB.id }), [inB]);
    });

    test('a project for an unknown or malformed org is NOT_FOUND', async () => {
      await rejectsWithCode(repos().projects.create({ orgId: UNKNOWN_ID }, { name: unique('p') }), 'NOT_FOUND');
      await rejectsWithCode(repos().projects.create({ orgId: MALFORMED_ID }, { name: unique('p') }), 'NOT_FOUND');
    });

    test("another org's project reads as null and is absent from its list", async () => {
      const owner = await repos().orgs.create({ name: unique('owner') });
      const intruder = await repos().orgs.create({ name: unique('intruder') });
      const project = await repos().projects.create({ orgId: owner.id }, { name: unique('secret') });
      assert.equal(await repos().projects.get({ orgId: intruder.id }, project.id), null);
      assert.deepEqual(await repos().projects.list({ orgId: intruder.id }), []);
    });

    test('updateSettings changes client_visible_default (false at first); another org cannot', async () => {
      const owner = await repos().orgs.create({ name: unique('owner') });
      const intruder = await repos().orgs.create({ name: unique('intruder') });
      const project = await repos().projects.create({ orgId: owner.id }, { name: unique('web') });
      assert.equal(project.clientVisibleDefault, false);
      await rejectsWithCode(repos().projects.updateSettings({ orgId: intruder.id }, project.id, { clientVisibleDefault: true }), 'NOT_FOUND');
      await rejectsWithCode(repos().projects.updateSettings({ orgId: owner.id }, UNKNOWN_ID, { clientVisibleDefault: true }), 'NOT_FOUND');
      await rejectsWithCode(repos().projects.updateSettings({ orgId: owner.id }, MALFORMED_ID, { clientVisibleDefault: true }), 'NOT_FOUND');
      const updated = await repos().projects.updateSettings({ orgId: owner.id }, project.id, { clientVisibleDefault: true });
      assert.deepEqual(updated, { ...project, clientVisibleDefault: true });
      assert.deepEqual(await repos().projects.get({ orgId: owner.id }, project.id), updated);
    });

    test('unknown and malformed ids read as null or empty', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      assert.equal(await repos().projects.get({ orgId: org.id }, UNKNOWN_ID), null);
      assert.equal(await repos().projects.get({ orgId: org.id }, MALFORMED_ID), null);
      assert.equal(await repos().projects.get({ orgId: MALFORMED_ID }, UNKNOWN_ID), null);
      assert.deepEqual(await repos().projects.list({ orgId: MALFORMED_ID }), []);
    });

    test('list is oldest first', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const names = ['zeta', 'alpha', 'mu'];
      const created = [];
      for (const projectName of names) created.push(await repos().projects.create({ orgId: org.id }, { name: projectName }));
      assert.deepEqual(await repos().projects.list({ orgId: org.id }), created);
    });
  });
}
