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
  type TenancyRepositories,
} from './tenancy-contract-support.ts';

const newUser = (repos: TenancyRepositories, label = 'user') =>
  repos.users.create({ email: `${unique(label)}@example.com`, displayName: `The ${label}`, passwordHash: '$2b$10$hash' });

/** The behaviour every UserRepository (users and memberships) must show. */
export function userRepositoryContract(name: string, makeRepos: MakeTenancyRepositories): void {
  describe(`UserRepository contract: ${name}`, () => {
    const repos = useRepositories(makeRepos);

    test('create then getById and getByEmail (any case) return every field', async () => {
      const email = `${unique('Ada')}@Example.com`;
      const user = await repos().users.create({ email, displayName: 'Ada Lovelace', passwordHash: '$2b$10$abc' });
      assert.equal(user.email, email);
      assert.equal(user.displayName, 'Ada Lovelace');
      assert.equal(user.passwordHash, '$2b$10$abc');
      assertRecentMs(user.createdAtMs);
      assert.deepEqual(await repos().users.getById(user.id), user);
      assert.deepEqual(await repos().users.getByEmail(email.toUpperCase()), user);
      assert.deepEqual(await repos().users.getByEmail(email.toLowerCase()), user);
    });

    test('an email taken in another case is ALREADY_EXISTS', async () => {
      const email = `${unique('grace')}@example.com`;
      await repos().users.create({ email, displayName: 'Grace', passwordHash: 'h' });
      await rejectsWithCode(
        repos().users.create({ email: email.toUpperCase(), displayName: 'Grace again', passwordHash: 'h' }),
        'ALREADY_EXISTS',
      );
    });

    test('unknown, malformed ids and unknown emails read as null', async () => {
      assert.equal(await repos().users.getById(UNKNOWN_ID), null);
      assert.equal(await repos().users.getById(MALFORMED_ID), null);
      assert.equal(await repos().users.getByEmail(`${unique('nobody')}@example.com`), null);
    });

    test('addMembership then getMembership; a second membership in the same org is ALREADY_EXISTS', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const user = await newUser(repos());
      const membership = await repos().users.addMembership({ orgId: org.id, userId: user.id, role: 'org_admin' });
      assert.deepEqual({ ...membership, createdAtMs: 0 }, { orgId: org.id, userId: user.id, role: 'org_admin', createdAtMs: 0 });
      assertRecentMs(membership.createdAtMs);
      assert.deepEqual(await repos().users.getMembership(org.id, user.id), membership);
      await rejectsWithCode(repos().users.addMembership({ orgId: org.id, userId: user.id, role: 'org_member' }), 'ALREADY_EXISTS');
      assert.equal((await repos().users.getMembership(org.id, user.id))?.role, 'org_admin');
    });

    test('a membership needs an existing org and user: NOT_FOUND otherwise, malformed ids included', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const user = await newUser(repos());
      await rejectsWithCode(repos().users.addMembership({ orgId: UNKNOWN_ID, userId: user.id, role: 'org_member' }), 'NOT_FOUND');
      await rejectsWithCode(repos().users.addMembership({ orgId: org.id, userId: UNKNOWN_ID, role: 'org_member' }), 'NOT_FOUND');
      await rejectsWithCode(repos().users.addMembership({ orgId: MALFORMED_ID, userId: user.id, role: 'org_member' }), 'NOT_FOUND');
      await rejectsWithCode(repos().users.addMembership({ orgId: org.id, userId: MALFORMED_ID, role: 'org_member' }), 'NOT_FOUND');
      assert.deepEqual(await repos().users.listMemberships(user.id), []);
    });

    test('getMembership is per org: another org, unknown or malformed ids read as null', async () => {
      const [orgA, orgB] = [await repos().orgs.create({ name: unique('a') }), await repos().orgs.create({ name: unique('b') })];
      const user = await newUser(repos());
      await repos().users.addMembership({ orgId: orgA.id, userId: user.id, role: 'org_member' });
      assert.equal(await repos().users.getMembership(orgB.id, user.id), null);
      assert.equal(await repos().users.getMembership(orgA.id, UNKNOWN_ID), null);
      assert.equal(await repos().users.getMembership(MALFORMED_ID, user.id), null);
      assert.equal(await repos().users.getMembership(orgA.id, MALFORMED_ID), null);
    });

    test('listMemberships is oldest first, whatever the order of the orgs themselves', async () => {
      const first = await repos().orgs.create({ name: unique('first') });
      const second = await repos().orgs.create({ name: unique('second') });
      const third = await repos().orgs.create({ name: unique('third') });
      const user = await newUser(repos());
      const other = await newUser(repos(), 'other');
      await repos().users.addMembership({ orgId: third.id, userId: user.id, role: 'org_member' });
      await repos().users.addMembership({ orgId: first.id, userId: other.id, role: 'org_admin' });
      await repos().users.addMembership({ orgId: first.id, userId: user.id, role: 'org_admin' });
      await repos().users.addMembership({ orgId: second.id, userId: user.id, role: 'org_member' });
      const listed = await repos().users.listMemberships(user.id);
      assert.deepEqual(listed.map((m) => [m.orgId, m.role]), [
        [third.id, 'org_member'],
        [first.id, 'org_admin'],
        [second.id, 'org_member'],
      ]);
      assert.ok(listed.every((m) => m.userId === user.id));
      assert.deepEqual(await repos().users.listMemberships(UNKNOWN_ID), []);
      assert.deepEqual(await repos().users.listMemberships(MALFORMED_ID), []);
    });

    test('listOrgUsers gives the members of that org only, with their user records, oldest first', async () => {
      const org = await repos().orgs.create({ name: unique('org') });
      const elsewhere = await repos().orgs.create({ name: unique('elsewhere') });
      const late = await newUser(repos(), 'late');
      const early = await newUser(repos(), 'early');
      const outsider = await newUser(repos(), 'outsider');
      const m1 = await repos().users.addMembership({ orgId: org.id, userId: early.id, role: 'org_admin' });
      await repos().users.addMembership({ orgId: elsewhere.id, userId: outsider.id, role: 'org_admin' });
      const m2 = await repos().users.addMembership({ orgId: org.id, userId: late.id, role: 'org_member' });
      assert.deepEqual(await repos().users.listOrgUsers({ orgId: org.id }), [
        { user: early, membership: m1 },
        { user: late, membership: m2 },
      ]);
      assert.deepEqual((await repos().users.listOrgUsers({ orgId: elsewhere.id })).map((r) => r.user.id), [outsider.id]);
      assert.deepEqual(await repos().users.listOrgUsers({ orgId: UNKNOWN_ID }), []);
      assert.deepEqual(await repos().users.listOrgUsers({ orgId: MALFORMED_ID }), []);
    });
  });
}
