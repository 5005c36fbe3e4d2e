import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDomainError, type Principal } from '@switchyard/core';
import { createInMemoryRepositories } from '@switchyard/core/testing';
import { BcryptPasswordHasher, InvitationService, MAX_PENDING_INVITATIONS } from '../src/index.ts';

test('an org holds at most MAX_PENDING_INVITATIONS pending invitations; withdrawing one frees a place; other orgs are unaffected', async () => {
  const repos = createInMemoryRepositories();
  const orgA = await repos.orgs.create({ name: 'A' });
  const orgB = await repos.orgs.create({ name: 'B' });
  // Each org's admin is a member: creating an invitation checks the creator still is an org_admin.
  const admins = new Map<string, string>();
  for (const org of [orgA, orgB]) {
    const user = await repos.users.create({ email: `admin@${org.name}.example`, displayName: 'admin', passwordHash: 'x' });
    await repos.users.addMembership({ orgId: org.id, userId: user.id, role: 'org_admin' });
    admins.set(org.id, user.id);
  }
  const adminOf = (orgId: string): Principal => ({ kind: 'user', userId: admins.get(orgId)!, orgId, role: 'org_admin', isSystem: false, sessionId: 's' });
  const invitations = new InvitationService(repos, new BcryptPasswordHasher(4), { openSessionFor: async () => assert.fail('not used') });

  let last;
  for (let i = 0; i < MAX_PENDING_INVITATIONS; i++) last = await invitations.create(adminOf(orgA.id), orgA.id, { email: `user-${i}@example.com` });
  await assert.rejects(invitations.create(adminOf(orgA.id), orgA.id, { email: 'one-too-many@example.com' }), (error: unknown) => {
    assert.ok(isDomainError(error));
    assert.equal(error.code, 'RESOURCE_EXHAUSTED');
    return true;
  });
  assert.equal((await invitations.create(adminOf(orgB.id), orgB.id, { email: 'elsewhere@example.com' })).org_id, orgB.id, 'another org is not affected');
  await invitations.delete(adminOf(orgA.id), orgA.id, last!.invitation_id);
  assert.equal((await invitations.create(adminOf(orgA.id), orgA.id, { email: 'after-withdrawal@example.com' })).org_id, orgA.id);
});
