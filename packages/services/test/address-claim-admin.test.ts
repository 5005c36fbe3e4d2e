import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { AuthProvider } from '@switchyard/core';
import { createInMemoryRepositories } from '@switchyard/core/testing';
import { proveAddress } from '../src/accounts/address-claim.ts';
import { SsoAccounts } from '../src/sso/sso-accounts.ts';

// A claim of an account's address ends its memberships (docs/security.md "Email addresses belong to
// whoever proves control of them"); an org_admin membership ended that way is a removal like any
// other (docs/security.md "Removed and demoted admins"): what the admin left behind in that org is
// withdrawn in the same unit of work, and the sessions it ends are reported for announcement.

const providerInput = (over: Partial<AuthProvider> = {}) => ({
  id: randomUUID(),
  type: 'saml' as const,
  displayName: 'P',
  enabled: true,
  defaultRole: 'org_member' as const,
  redirectUris: ['https://app.example/'],
  oidc: null,
  saml: { idpMetadataUrl: null, idpMetadataXml: '<x/>', nameIdFormat: null, spEntityId: 'sp' },
  clientSecretCiphertext: null,
  linkExistingAccounts: true,
  enableRequestedBy: null,
  updatedBy: null,
  ...over,
});

/** Org A, where the never-verified account U is an org_admin that left an invitation and a provider (with a session open through it). */
async function world() {
  const repos = createInMemoryRepositories();
  const a = await repos.orgs.create({ name: 'victim-org' });
  const u = await repos.users.create({ email: 'boss@corp.example', displayName: 'U', passwordHash: 'x' });
  const v = await repos.users.create({ email: 'v@else.example', displayName: 'V', passwordHash: 'x', emailVerifiedAtMs: 1 });
  const w = await repos.users.create({ email: 'w@else.example', displayName: 'W', passwordHash: 'x', emailVerifiedAtMs: 1 });
  await repos.users.addMembership({ orgId: a.id, userId: u.id, role: 'org_admin' });
  await repos.users.addMembership({ orgId: a.id, userId: v.id, role: 'org_admin' });
  await repos.users.addMembership({ orgId: a.id, userId: w.id, role: 'org_member' });
  const author = { userId: u.id, email: u.email };
  const invitation = await repos.invitations.create({ orgId: a.id }, { email: 'x@evil.example', role: 'org_admin', tokenHash: 'h', expiresAtMs: Date.now() + 1e9, createdBy: author });
  const provider = await repos.authProviders.create({ orgId: a.id }, providerInput({ defaultRole: 'org_admin', updatedBy: author }), 20);
  const session = await repos.sessions.create({ userId: w.id, orgId: a.id, expiresAtMs: Date.now() + 3_600_000, providerId: provider.id });
  return { repos, a, u, w, invitation, provider, session };
}

async function assertWithdrawn(w: Awaited<ReturnType<typeof world>>): Promise<void> {
  const { repos, a, u, invitation, provider, session } = w;
  assert.deepEqual((await repos.users.listMemberships(u.id)).filter((m) => m.orgId === a.id), [], 'the claimed account left A');
  assert.deepEqual((await repos.invitations.listPending({ orgId: a.id }, Date.now())).map((i) => i.id), [], 'its pending invitation is withdrawn');
  assert.equal((await repos.authProviders.get({ orgId: a.id }, provider.id))?.enabled, false, 'its provider is disabled');
  assert.notEqual((await repos.sessions.get(session.id))?.endedAtMs ?? null, null, "the provider's session ended");
  const entries = (await repos.audit.list({ orgId: a.id }, { limit: 100 } as never)).items;
  const withdrawal = entries.filter((e) => (e.details as { reason?: string } | null)?.reason === 'member_claimed');
  assert.deepEqual(withdrawal.map((e) => `${e.action}:${e.resourceId}`).sort(), [`auth_provider.disable:${provider.id}`, `invitation.delete:${invitation.id}`].sort());
}

test('a claim (proveAddress) that ends an org_admin membership withdraws its invitations and providers and reports the ended sessions', async () => {
  const w = await world();
  const outcome = await w.repos.unitOfWork.run((tx) => proveAddress(tx, w.u, { passwordHash: 'holder', keepOrgIds: [], how: 'password_reset', nowMs: Date.now() }));
  assert.deepEqual(outcome.released.map((m) => m.role), ['org_admin']);
  assert.deepEqual(new Set(outcome.sessionsEndedFor), new Set([w.u.id, w.w.id]), 'the account and the users of its providers are announced');
  await assertWithdrawn(w);
});

test('a kept org_admin membership withdraws nothing', async () => {
  const w = await world();
  const outcome = await w.repos.unitOfWork.run((tx) => proveAddress(tx, w.u, { passwordHash: 'holder', keepOrgIds: [w.a.id], how: 'password_reset', nowMs: Date.now() }));
  assert.deepEqual(outcome.released, []);
  assert.deepEqual(outcome.sessionsEndedFor, [w.u.id]);
  assert.equal((await w.repos.invitations.listPending({ orgId: w.a.id }, Date.now())).length, 1);
  assert.equal((await w.repos.authProviders.get({ orgId: w.a.id }, w.provider.id))?.enabled, true);
});

test('an SSO claim by verified domain withdraws the claimed admin\'s grants in the orgs it left and announces every ended session', async () => {
  const w = await world();
  const p = await w.repos.orgs.create({ name: 'claimer' });
  await w.repos.orgDomains.add({ orgId: p.id }, { domain: 'corp.example', challenge: 'c' }, 1);
  await w.repos.orgDomains.markVerified({ orgId: p.id }, 'corp.example', 2);
  const claimer = (await w.repos.authProviders.create({ orgId: p.id }, providerInput(), 20)) as AuthProvider;
  const announced: string[] = [];
  const sso = new SsoAccounts(w.repos, { hash: async (s: string) => `h:${s}`, verify: async () => false }, Date.now, async (userId) => void announced.push(userId));
  assert.equal(await sso.resolve(claimer, { subject: 'boss', email: 'boss@corp.example', emailVerified: true, displayName: null }), w.u.id);
  assert.deepEqual(new Set(announced), new Set([w.u.id, w.w.id]));
  await assertWithdrawn(w);
});
