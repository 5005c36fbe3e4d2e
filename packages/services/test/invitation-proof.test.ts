import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isDomainError, type Principal } from '@switchyard/core';
import { createInMemoryRepositories, InMemoryChangeNotifier } from '@switchyard/core/testing';
import { InvitationService } from '../src/management/invitation-service.ts';
import type { MailSettings } from '../src/mail/mail-settings.ts';

// Whether accepting an invitation proves control of its address is decided when the invitation is
// made (its link mailed to the invitee only), never by the mail setting at acceptance
// (docs/security.md "Invitations prove the address"). Otherwise an inviter handed the token (no
// SMTP) could, once SMTP is configured, accept it as a "new account" and claim the existing,
// never-verified account of that address: its password, its orgs kept at the inviter's choice.

const auth = { openSessionFor: async (userId: string, orgId: string) => ({ userId, orgId }) as never };
const hasher = { hash: async (password: string) => `hashed:${password}`, verify: async () => false };
const mail = (delivery: MailSettings['delivery']): MailSettings => ({ delivery, publicUrl: () => 'https://flags.example.com', onQueued: () => {} });

async function world() {
  const repos = createInMemoryRepositories();
  const victimOrg = await repos.orgs.create({ name: 'victim' });
  const inviterOrg = await repos.orgs.create({ name: 'inviter' });
  // An account someone made for the address, never verified (every account from before mail).
  const ceo = await repos.users.create({ email: 'ceo@victim.example', displayName: 'CEO', passwordHash: 'ceo-own' });
  await repos.users.addMembership({ orgId: victimOrg.id, userId: ceo.id, role: 'org_admin' });
  const inviterUser = await repos.users.create({ email: 'admin@inviter.example', displayName: 'A', passwordHash: 'x', emailVerifiedAtMs: 1 });
  await repos.users.addMembership({ orgId: inviterOrg.id, userId: inviterUser.id, role: 'org_admin' });
  const inviter: Principal = { kind: 'user', userId: inviterUser.id, orgId: inviterOrg.id, role: 'org_admin', isSystem: false };
  const service = (delivery: MailSettings['delivery']) => new InvitationService(repos, hasher, auth, Date.now, { mail: mail(delivery), notifier: new InMemoryChangeNotifier() });
  return { repos, victimOrg, inviterOrg, ceo, inviter, service };
}

test('a token handed to the inviter (no SMTP then) claims nothing once SMTP is configured: 409, the account unchanged', async () => {
  const { repos, victimOrg, inviterOrg, ceo, inviter, service } = await world();
  const created = await service('off').create(inviter, inviterOrg.id, { email: 'ceo@victim.example' });
  assert.ok(created.token, 'without SMTP the inviter is given the token');
  await assert.rejects(
    service('smtp').acceptAsNewUser({ token: created.token!, displayName: 'x', password: 'inviter-chosen-pw', keepOrgIds: [victimOrg.id] }),
    (error: unknown) => isDomainError(error) && error.code === 'ALREADY_EXISTS',
  );
  const after = await repos.users.getById(ceo.id);
  assert.equal(after?.passwordHash, 'ceo-own');
  assert.equal(after?.emailVerifiedAtMs, null);
  assert.deepEqual((await repos.users.listMemberships(ceo.id)).map((m) => [m.orgId, m.role]), [[victimOrg.id, 'org_admin']]);
});

test('an invitation mailed with SMTP records that it proves the address (the setting at acceptance does not matter)', async () => {
  const { repos, inviterOrg, ceo, inviter, service } = await world();
  const created = await service('smtp').create(inviter, inviterOrg.id, { email: 'ceo@victim.example' });
  assert.equal(created.token, undefined, 'with SMTP the token goes only to the invitee');
  const invitation = (await repos.invitations.listPending({ orgId: inviterOrg.id }, Date.now()))[0]!;
  assert.equal(invitation.provesAddress, true);
  assert.equal((await repos.users.getById(ceo.id))?.emailVerifiedAtMs, null);
  // Handed to the inviter: recorded as proving nothing.
  const handed = await service('off').create(inviter, inviterOrg.id, { email: 'someone@else.example' });
  assert.ok(handed.token);
  const pending = await repos.invitations.listPending({ orgId: inviterOrg.id }, Date.now());
  assert.equal(pending.find((i) => i.email === 'someone@else.example')?.provesAddress, false);
});
