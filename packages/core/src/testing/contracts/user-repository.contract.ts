import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isDomainError } from '../../errors/domain-error.ts';
import type { Org, OrgRole, User } from '../../model/entities.ts';
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

/** An org with one member per role given, in that order (the first joins first). */
async function orgWithMembers(repos: TenancyRepositories, roles: OrgRole[]): Promise<{ org: Org; members: User[] }> {
  const org = await repos.orgs.create({ name: unique('org') });
  const members: User[] = [];
  for (const role of roles) {
    const user = await newUser(repos, role);
    await repos.users.addMembership({ orgId: org.id, userId: user.id, role });
    members.push(user);
  }
  return { org, members };
}

/** The roles of the org's members, in membership order. */
const rolesOf = async (repos: TenancyRepositories, org: Org): Promise<OrgRole[]> =>
  (await repos.users.listOrgUsers({ orgId: org.id })).map((row) => row.membership.role);

/** Runs the promises to completion: how many fulfilled, and the codes of the rejections. */
async function settle(promises: Array<Promise<unknown>>): Promise<{ fulfilled: number; codes: string[] }> {
  const results = await Promise.allSettled(promises);
  const codes = results.flatMap((result) =>
    result.status === 'rejected' ? [isDomainError(result.reason) ? result.reason.code : String(result.reason)] : [],
  );
  return { fulfilled: results.filter((result) => result.status === 'fulfilled').length, codes };
}

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
      assert.deepEqual({ ...membership, createdAtMs: 0 }, { orgId: org.id, userId: user.id, role: 'org_admin', createdAtMs: 0, bindings: null });
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

    test('lockMembership reads like getMembership, in a unit of work and outside one', async () => {
      const [orgA, orgB] = [await repos().orgs.create({ name: unique('a') }), await repos().orgs.create({ name: unique('b') })];
      const user = await newUser(repos());
      const membership = await repos().users.addMembership({ orgId: orgA.id, userId: user.id, role: 'org_admin' });
      assert.deepEqual(await repos().users.lockMembership(orgA.id, user.id), membership);
      assert.deepEqual(await repos().unitOfWork.run((tx) => tx.users.lockMembership(orgA.id, user.id)), membership);
      assert.equal(await repos().users.lockMembership(orgB.id, user.id), null);
      assert.equal(await repos().users.lockMembership(orgA.id, UNKNOWN_ID), null);
      assert.equal(await repos().users.lockMembership(MALFORMED_ID, user.id), null);
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

    test('setPasswordHash replaces the hash, visible to getById and getByEmail; nothing else changes', async () => {
      const user = await newUser(repos());
      const other = await newUser(repos(), 'other');
      await repos().users.setPasswordHash(user.id, '$2b$10$changed');
      assert.deepEqual(await repos().users.getById(user.id), { ...user, passwordHash: '$2b$10$changed' });
      assert.deepEqual(await repos().users.getByEmail(user.email), { ...user, passwordHash: '$2b$10$changed' });
      assert.deepEqual(await repos().users.getById(other.id), other, 'another user is untouched');
    });

    test('setPasswordHash of an unknown or malformed user is NOT_FOUND', async () => {
      await rejectsWithCode(repos().users.setPasswordHash(UNKNOWN_ID, 'h'), 'NOT_FOUND');
      await rejectsWithCode(repos().users.setPasswordHash(MALFORMED_ID, 'h'), 'NOT_FOUND');
    });

    test('setMembershipRole changes the role and returns the membership; other orgs are untouched', async () => {
      const { org, members } = await orgWithMembers(repos(), ['org_admin', 'org_member']);
      const [admin, member] = members as [User, User];
      const elsewhere = await repos().orgs.create({ name: unique('elsewhere') });
      await repos().users.addMembership({ orgId: elsewhere.id, userId: member.id, role: 'org_member' });
      const before = await repos().users.getMembership(org.id, member.id);
      const promoted = await repos().users.setMembershipRole({ orgId: org.id }, member.id, 'org_admin');
      assert.deepEqual(promoted, { ...before, role: 'org_admin' });
      assert.deepEqual(await repos().users.getMembership(org.id, member.id), promoted);
      assert.equal((await repos().users.getMembership(elsewhere.id, member.id))?.role, 'org_member');
      // Now there are two admins: either may step down, the other stays.
      assert.equal((await repos().users.setMembershipRole({ orgId: org.id }, admin.id, 'org_member')).role, 'org_member');
      assert.deepEqual(await rolesOf(repos(), org), ['org_member', 'org_admin']);
      // Setting a role a member already has is allowed, even for the only admin.
      assert.equal((await repos().users.setMembershipRole({ orgId: org.id }, member.id, 'org_admin')).role, 'org_admin');
      assert.equal((await repos().users.setMembershipRole({ orgId: org.id }, admin.id, 'org_member')).role, 'org_member');
    });

    test('setMembershipRole cannot demote the only org_admin: FAILED_PRECONDITION, nothing changes', async () => {
      const { org, members } = await orgWithMembers(repos(), ['org_admin', 'org_member', 'org_member']);
      await rejectsWithCode(repos().users.setMembershipRole({ orgId: org.id }, members[0]!.id, 'org_member'), 'FAILED_PRECONDITION');
      assert.deepEqual(await rolesOf(repos(), org), ['org_admin', 'org_member', 'org_member']);
    });

    test('setMembershipRole of a non-member, unknown or malformed ids is NOT_FOUND', async () => {
      const { org } = await orgWithMembers(repos(), ['org_admin']);
      const { org: otherOrg, members } = await orgWithMembers(repos(), ['org_admin', 'org_member']);
      const outsider = members[1]!;
      const stranger = await newUser(repos(), 'stranger');
      for (const [orgId, userId] of [
        [org.id, outsider.id],
        [org.id, stranger.id],
        [org.id, UNKNOWN_ID],
        [org.id, MALFORMED_ID],
        [UNKNOWN_ID, outsider.id],
        [MALFORMED_ID, outsider.id],
      ] as const) {
        await rejectsWithCode(repos().users.setMembershipRole({ orgId }, userId, 'org_admin'), 'NOT_FOUND');
      }
      assert.equal(await repos().users.getMembership(org.id, outsider.id), null, 'no membership was created');
      assert.deepEqual(await rolesOf(repos(), otherOrg), ['org_admin', 'org_member']);
    });

    test('removeMembership removes the member from that org only; the account remains', async () => {
      const { org, members } = await orgWithMembers(repos(), ['org_admin', 'org_member']);
      const [admin, member] = members as [User, User];
      const elsewhere = await repos().orgs.create({ name: unique('elsewhere') });
      await repos().users.addMembership({ orgId: elsewhere.id, userId: member.id, role: 'org_admin' });
      await repos().users.removeMembership({ orgId: org.id }, member.id);
      assert.equal(await repos().users.getMembership(org.id, member.id), null);
      assert.deepEqual((await repos().users.listOrgUsers({ orgId: org.id })).map((row) => row.user.id), [admin.id]);
      assert.deepEqual((await repos().users.listMemberships(member.id)).map((m) => m.orgId), [elsewhere.id]);
      assert.deepEqual(await repos().users.getById(member.id), member, 'the account remains');
      await rejectsWithCode(repos().users.removeMembership({ orgId: org.id }, member.id), 'NOT_FOUND');
      // The removed user may be added again later.
      await repos().users.addMembership({ orgId: org.id, userId: member.id, role: 'org_member' });
      assert.equal((await repos().users.getMembership(org.id, member.id))?.role, 'org_member');
    });

    test('removeMembership of the only org_admin is FAILED_PRECONDITION; with another admin it is allowed', async () => {
      const { org, members } = await orgWithMembers(repos(), ['org_admin', 'org_member']);
      const [admin, member] = members as [User, User];
      await rejectsWithCode(repos().users.removeMembership({ orgId: org.id }, admin.id), 'FAILED_PRECONDITION');
      assert.deepEqual(await rolesOf(repos(), org), ['org_admin', 'org_member']);
      await repos().users.setMembershipRole({ orgId: org.id }, member.id, 'org_admin');
      await repos().users.removeMembership({ orgId: org.id }, admin.id);
      assert.deepEqual((await repos().users.listOrgUsers({ orgId: org.id })).map((row) => [row.user.id, row.membership.role]), [[member.id, 'org_admin']]);
      await rejectsWithCode(repos().users.removeMembership({ orgId: org.id }, member.id), 'FAILED_PRECONDITION');
    });

    test('removeMembership of a non-member, unknown or malformed ids is NOT_FOUND', async () => {
      const { org, members } = await orgWithMembers(repos(), ['org_admin', 'org_member']);
      const { members: others } = await orgWithMembers(repos(), ['org_admin', 'org_member']);
      for (const [orgId, userId] of [
        [org.id, others[1]!.id],
        [org.id, UNKNOWN_ID],
        [org.id, MALFORMED_ID],
        [UNKNOWN_ID, members[1]!.id],
        [MALFORMED_ID, members[1]!.id],
      ] as const) {
        await rejectsWithCode(repos().users.removeMembership({ orgId }, userId), 'NOT_FOUND');
      }
      assert.deepEqual(await rolesOf(repos(), org), ['org_admin', 'org_member']);
    });

    test('setBindings replaces an org_member\'s bindings and null restores the default; an org_admin is FAILED_PRECONDITION; a promotion drops them', async () => {
      const { org, members } = await orgWithMembers(repos(), ['org_admin', 'org_member']);
      const member = members[1]!;
      const bindings = [{ role: 'viewer' as const }, { role: 'editor' as const, projectId: 'p-1' }, { role: 'admin' as const, projectId: 'p-1', environmentId: 'e-1' }];
      const set = await repos().users.setBindings({ orgId: org.id }, member.id, bindings);
      assert.deepEqual(set.bindings, bindings);
      assert.deepEqual((await repos().users.getMembership(org.id, member.id))!.bindings, bindings);
      assert.deepEqual((await repos().users.listMemberships(member.id))[0]!.bindings, bindings);
      assert.deepEqual((await repos().users.listOrgUsers({ orgId: org.id })).find((row) => row.user.id === member.id)!.membership.bindings, bindings);
      assert.deepEqual((await repos().users.setBindings({ orgId: org.id }, member.id, [])).bindings, [], 'an empty list is no rights, not the default');
      assert.equal((await repos().users.setBindings({ orgId: org.id }, member.id, null)).bindings, null);
      await rejectsWithCode(repos().users.setBindings({ orgId: org.id }, members[0]!.id, bindings), 'FAILED_PRECONDITION');
      await repos().users.setBindings({ orgId: org.id }, member.id, bindings);
      await repos().users.setMembershipRole({ orgId: org.id }, member.id, 'org_admin');
      assert.equal((await repos().users.getMembership(org.id, member.id))!.bindings, null);
    });

    test('setBindings of another org\'s member, an unknown or malformed id is NOT_FOUND', async () => {
      const { members } = await orgWithMembers(repos(), ['org_admin', 'org_member']);
      const other = await repos().orgs.create({ name: unique('other') });
      await rejectsWithCode(repos().users.setBindings({ orgId: other.id }, members[1]!.id, []), 'NOT_FOUND');
      await rejectsWithCode(repos().users.setBindings({ orgId: other.id }, UNKNOWN_ID, []), 'NOT_FOUND');
      await rejectsWithCode(repos().users.setBindings({ orgId: other.id }, MALFORMED_ID, []), 'NOT_FOUND');
    });

    test('concurrent removals or demotions of the last two admins: exactly one succeeds, the org keeps an admin', async () => {
      // Several rounds and every pairing, so that an implementation racing between its count and its write is caught.
      type Change = (orgId: string, userId: string) => Promise<unknown>;
      const remove: Change = (orgId, userId) => repos().users.removeMembership({ orgId }, userId);
      const demote: Change = (orgId, userId) => repos().users.setMembershipRole({ orgId }, userId, 'org_member');
      for (const [label, first, second] of [
        ['remove + remove', remove, remove],
        ['demote + demote', demote, demote],
        ['remove + demote', remove, demote],
      ] as const) {
        for (let round = 0; round < 3; round += 1) {
          const { org, members } = await orgWithMembers(repos(), ['org_admin', 'org_admin', 'org_member']);
          const outcome = await settle([first(org.id, members[0]!.id), second(org.id, members[1]!.id)]);
          assert.deepEqual(outcome, { fulfilled: 1, codes: ['FAILED_PRECONDITION'] }, `${label}, round ${round}`);
          const admins = (await repos().users.listOrgUsers({ orgId: org.id })).filter((row) => row.membership.role === 'org_admin');
          assert.equal(admins.length, 1, `${label}, round ${round}: the org keeps one admin`);
        }
      }
    });
  });
}
