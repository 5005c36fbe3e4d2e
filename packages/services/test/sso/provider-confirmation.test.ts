import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AuthProvider, AuthProviderInput } from '@switchyard/core';
import { changesTrust, enableState, needsSecondAdmin } from '../../src/sso/provider-confirmation.ts';

// When enabling a provider takes a second admin (docs/sso.md "Confirmation"), as pure rules.

const ada = { userId: 'ada', email: 'ada@example.com' };

const input = (overrides: Partial<AuthProviderInput> = {}): AuthProviderInput => ({
  id: 'p',
  type: 'oidc',
  displayName: 'Corp',
  enabled: true,
  defaultRole: 'org_member',
  redirectUris: ['https://app.example.com/done'],
  oidc: { issuerUrl: 'https://idp.example.com', clientId: 'c', scopes: ['openid', 'email'] },
  saml: null,
  clientSecretCiphertext: 'v1.sealed',
  linkExistingAccounts: false,
  enableRequestedBy: null,
  updatedBy: ada,
  ...overrides,
});

/** The provider as stored, its settings read back with jsonb's own key order. */
const stored = (from: AuthProviderInput): AuthProvider => ({
  ...from,
  oidc: from.oidc && { scopes: from.oidc.scopes, clientId: from.oidc.clientId, issuerUrl: from.oidc.issuerUrl },
  groupBindings: from.groupBindings ?? [],
  orgId: 'o',
  createdBy: ada,
  writtenByUserIds: ['ada'],
  lastUsedAtMs: null,
  createdAtMs: 1,
  updatedAtMs: 1,
});

describe('provider confirmation rules', () => {
  test('org_admin by default, or linking existing accounts, needs a second admin; members only without linking does not', () => {
    assert.equal(needsSecondAdmin({ defaultRole: 'org_admin', linkExistingAccounts: false }), true);
    assert.equal(needsSecondAdmin({ defaultRole: 'org_member', linkExistingAccounts: true }), true);
    assert.equal(needsSecondAdmin({ defaultRole: 'org_member', linkExistingAccounts: false }), false);
  });

  test('a group mapping that gives admin anywhere needs a second admin; one giving viewer or editor only does not', () => {
    const mapping = (role: 'viewer' | 'editor' | 'admin') => [
      { group: 'devs', bindings: [{ role: 'editor' as const }] },
      { group: 'leads', bindings: [{ role, projectId: 'p1' }] },
    ];
    assert.equal(needsSecondAdmin({ defaultRole: 'org_member', linkExistingAccounts: false, groupBindings: mapping('admin') }), true);
    assert.equal(needsSecondAdmin({ defaultRole: 'org_member', linkExistingAccounts: false, groupBindings: mapping('viewer') }), false);
    assert.equal(needsSecondAdmin({ defaultRole: 'org_member', linkExistingAccounts: false, groupBindings: mapping('editor') }), false);
  });

  test('changing the group mapping changes what the provider vouches for; the same mapping read back does not', () => {
    const mapped = input({ groupBindings: [{ group: 'devs', bindings: [{ role: 'editor', projectId: 'p1' }] }] });
    assert.equal(changesTrust(stored(input()), mapped), true);
    assert.equal(changesTrust(stored(mapped), mapped), false);
    assert.equal(changesTrust(stored(mapped), input({ groupBindings: [{ group: 'devs', bindings: [{ role: 'admin', projectId: 'p1' }] }] })), true);
  });

  test('only a change of what it vouches for counts: not a rename, nor the key order settings come back in', () => {
    const current = stored(input());
    assert.equal(changesTrust(current, input({ displayName: 'Renamed' })), false);
    assert.equal(changesTrust(current, input({ defaultRole: 'org_admin' })), true);
    assert.equal(changesTrust(current, input({ linkExistingAccounts: true })), true);
    assert.equal(changesTrust(current, input({ redirectUris: ['https://evil.example/'] })), true);
    assert.equal(changesTrust(current, input({ oidc: { issuerUrl: 'https://other.example', clientId: 'c', scopes: ['openid', 'email'] } })), true);
    assert.equal(changesTrust(current, input({ clientSecretCiphertext: 'v1.resealed' })), true);
  });

  test('the state a write leaves', () => {
    const writer = ada;
    const risky = { defaultRole: 'org_admin' as const, linkExistingAccounts: false };
    const plain = { defaultRole: 'org_member' as const, linkExistingAccounts: false };
    assert.deepEqual(enableState({ requested: false, next: risky, unchangedLiveProvider: false, orgAdmins: 3, writer }), { enabled: false, enableRequestedBy: null });
    assert.deepEqual(enableState({ requested: true, next: plain, unchangedLiveProvider: false, orgAdmins: 3, writer }), { enabled: true, enableRequestedBy: null });
    assert.deepEqual(enableState({ requested: true, next: risky, unchangedLiveProvider: false, orgAdmins: 1, writer }), { enabled: true, enableRequestedBy: null });
    assert.deepEqual(enableState({ requested: true, next: risky, unchangedLiveProvider: true, orgAdmins: 3, writer }), { enabled: true, enableRequestedBy: null });
    assert.deepEqual(enableState({ requested: true, next: risky, unchangedLiveProvider: false, orgAdmins: 2, writer }), { enabled: false, enableRequestedBy: writer });
  });
});
