import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { isDomainError, type AuthProvider } from '@switchyard/core';
import { createInMemoryRepositories } from '@switchyard/core/testing';
import { SsoAccounts } from '../../src/sso/sso-accounts.ts';

// A verified domain makes a provider's word about the domain's addresses proof (docs/sso.md
// "Accounts"): here with a SAML provider (which always vouches), on the in-memory fakes.

async function world() {
  const repos = createInMemoryRepositories();
  const [owner, squatter] = [await repos.orgs.create({ name: 'owner' }), await repos.orgs.create({ name: 'squatter' })];
  const provider = await repos.authProviders.create(
    { orgId: owner.id },
    {
      id: randomUUID(),
      type: 'saml',
      displayName: 'Owner SAML',
      enabled: true,
      defaultRole: 'org_member',
      redirectUris: ['https://app.example/'],
      oidc: null,
      saml: { idpMetadataUrl: null, idpMetadataXml: '<x/>', nameIdFormat: null, spEntityId: 'sp' },
      clientSecretCiphertext: null,
      linkExistingAccounts: true,
      enableRequestedBy: null,
      updatedBy: null,
    },
    20,
  );
  const ended: string[] = [];
  const hasher = { hash: async (p: string) => `hashed:${p}`, verify: async () => false };
  const sso = new SsoAccounts(repos, hasher, Date.now, async (userId) => void ended.push(userId));
  return { repos, owner, squatter, provider: provider as AuthProvider, sso, ended };
}

const refusal = async (promise: Promise<unknown>): Promise<string> => {
  try {
    await promise;
  } catch (error) {
    if (isDomainError(error)) return error.code;
    throw error;
  }
  return 'none';
};

test('a verified domain: the account someone else made is claimed (other org left, sessions ended); a verified account is not', async () => {
  const { repos, owner, squatter, provider, sso, ended } = await world();
  const squatted = await repos.users.create({ email: 'ceo@victim.example', displayName: 'CEO', passwordHash: 'squatter-knows' });
  await repos.users.addMembership({ orgId: squatter.id, userId: squatted.id, role: 'org_admin' });
  const session = await repos.sessions.create({ userId: squatted.id, orgId: squatter.id, expiresAtMs: Date.now() + 3_600_000 });
  const identity = { subject: 'ceo', email: 'CEO@victim.example', emailVerified: true, displayName: 'CEO' };

  assert.equal(await refusal(sso.resolve(provider, identity)), 'PERMISSION_DENIED', 'refused while the domain is not verified');
  await repos.orgDomains.add({ orgId: owner.id }, { domain: 'victim.example', challenge: 'c' }, 1);
  await repos.orgDomains.markVerified({ orgId: owner.id }, 'victim.example', 2);

  assert.equal(await sso.resolve(provider, identity), squatted.id);
  assert.deepEqual((await repos.users.listMemberships(squatted.id)).map((m) => m.orgId), [owner.id]);
  const claimed = await repos.users.getById(squatted.id);
  assert.notEqual(claimed?.passwordHash, 'squatter-knows');
  assert.ok(claimed?.emailVerifiedAtMs);
  assert.notEqual((await repos.sessions.get(session.id))?.endedAtMs, null);
  assert.deepEqual(ended, [squatted.id], 'announced to every instance');

  // Verified (its holder proved it): another org's provider with the domain verified cannot take it.
  const other = await repos.users.create({ email: 'cfo@victim.example', displayName: 'CFO', passwordHash: 'x', emailVerifiedAtMs: 1 });
  await repos.users.addMembership({ orgId: squatter.id, userId: other.id, role: 'org_member' });
  assert.equal(await refusal(sso.resolve(provider, { ...identity, subject: 'cfo', email: 'cfo@victim.example' })), 'PERMISSION_DENIED');
  // An unvouched address (OIDC email_verified false) proves nothing either.
  const third = await repos.users.create({ email: 'cto@victim.example', displayName: 'CTO', passwordHash: 'x' });
  await repos.users.addMembership({ orgId: squatter.id, userId: third.id, role: 'org_member' });
  assert.equal(await refusal(sso.resolve(provider, { subject: 'cto', email: 'cto@victim.example', emailVerified: false, displayName: null })), 'PERMISSION_DENIED');
});

test('a first sign-in with the domain verified creates a verified account; without, an unverified one', async () => {
  const { repos, owner, provider, sso } = await world();
  const unverified = await sso.resolve(provider, { subject: 'a', email: 'a@elsewhere.example', emailVerified: true, displayName: null });
  assert.equal((await repos.users.getById(unverified))?.emailVerifiedAtMs, null);
  await repos.orgDomains.add({ orgId: owner.id }, { domain: 'corp.example', challenge: 'c' }, 1);
  await repos.orgDomains.markVerified({ orgId: owner.id }, 'corp.example', 2);
  const verified = await sso.resolve(provider, { subject: 'b', email: 'b@corp.example', emailVerified: true, displayName: null });
  assert.ok((await repos.users.getById(verified))?.emailVerifiedAtMs);
});

test('a provider that links no existing accounts claims none either, verified domain or not', async () => {
  // Such a provider is enabled by one admin without a second's confirmation (docs/sso.md
  // "Confirmation"), so it must not take over accounts: a claim is a link and more.
  const { repos, owner, squatter, provider, sso } = await world();
  const nonLinking = { ...provider, linkExistingAccounts: false };
  await repos.orgDomains.add({ orgId: owner.id }, { domain: 'victim.example', challenge: 'c' }, 1);
  await repos.orgDomains.markVerified({ orgId: owner.id }, 'victim.example', 2);
  const squatted = await repos.users.create({ email: 'ceo@victim.example', displayName: 'CEO', passwordHash: 'squatter-knows' });
  await repos.users.addMembership({ orgId: squatter.id, userId: squatted.id, role: 'org_admin' });
  const identity = { subject: 'ceo', email: 'ceo@victim.example', emailVerified: true, displayName: 'CEO' };
  assert.equal(await refusal(sso.resolve(nonLinking, identity)), 'PERMISSION_DENIED');
  assert.equal((await repos.users.getById(squatted.id))?.passwordHash, 'squatter-knows');
  assert.deepEqual((await repos.users.listMemberships(squatted.id)).map((m) => m.orgId), [squatter.id]);
});
