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

/** The behaviour every OrgRepository must show; run against the fake and against PostgreSQL. */
export function orgRepositoryContract(name: string, makeRepos: MakeTenancyRepositories): void {
  describe(`OrgRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('findSystemOrg is null until a system org exists, and a second system org is refused', async () => {
      assert.equal(await repos().orgs.findSystemOrg(), null);
      const system = await repos().orgs.create({ name: 'system', isSystem: true });
      assert.equal(system.isSystem, true);
      assert.deepEqual(await repos().orgs.findSystemOrg(), system);
      await rejectsWithCode(repos().orgs.create({ name: unique('other-system'), isSystem: true }), 'ALREADY_EXISTS');
      assert.deepEqual(await repos().orgs.findSystemOrg(), system);
    });

    test('create then get returns every field', async () => {
      const orgName = unique('acme');
      const org = await repos().orgs.create({ name: orgName });
      assert.match(org.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      assert.equal(org.name, orgName);
      assert.equal(org.isSystem, false);
      assertRecentMs(org.createdAtMs);
      assert.deepEqual(await repos().orgs.get(org.id), org);
    });

    test('a taken name is ALREADY_EXISTS and creates nothing', async () => {
      const orgName = unique('dup');
      await repos().orgs.create({ name: orgName });
      const before = (await repos().orgs.list()).length;
      await rejectsWithCode(repos().orgs.create({ name: orgName }), 'ALREADY_EXISTS');
      assert.equal((await repos().orgs.list()).length, before);
    });

    test('unknown and malformed ids read as null', async () => {
      assert.equal(await repos().orgs.get(UNKNOWN_ID), null);
      assert.equal(await repos().orgs.get(MALFORMED_ID), null);
    });

    test('list holds every org, oldest first', async () => {
      const first = await repos().orgs.create({ name: unique('b-first') });
      const second = await repos().orgs.create({ name: unique('a-second') });
      const listed = await repos().orgs.list();
      const ids = listed.map((o) => o.id);
      assert.ok(ids.indexOf(first.id) >= 0 && ids.indexOf(first.id) < ids.indexOf(second.id));
      assert.deepEqual(listed.find((o) => o.id === second.id), second);
      const times = listed.map((o) => o.createdAtMs);
      assert.deepEqual(times, [...times].sort((a, b) => a - b));
    });
  });
}
