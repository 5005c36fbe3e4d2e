import type { AuthProvider, AuthProviderInput, Author } from '@switchyard/core';

/**
 * A provider that creates org admins, that may sign in as an existing member by asserting its
 * email, or whose group mapping gives admin somewhere, hands whoever controls the identity
 * provider an admin's or a member's account or admin rights: in an org with more than one admin,
 * enabling one takes two of them (docs/sso.md "Confirmation").
 */
export const needsSecondAdmin = (provider: Pick<AuthProviderInput, 'defaultRole' | 'linkExistingAccounts' | 'groupBindings'>): boolean =>
  provider.defaultRole === 'org_admin' ||
  provider.linkExistingAccounts ||
  (provider.groupBindings ?? []).some((entry) => entry.bindings.some((binding) => binding.role === 'admin'));

/**
 * Whether a write changes what the provider vouches for or where it sends people: anything but its
 * display name. A new client secret counts (it is sealed afresh, so its ciphertext differs).
 */
export function changesTrust(current: AuthProvider, next: AuthProviderInput): boolean {
  const trusted = (provider: AuthProvider | AuthProviderInput) =>
    canonicalJson([
      provider.defaultRole,
      provider.linkExistingAccounts,
      provider.redirectUris,
      provider.groupBindings ?? [],
      provider.oidc,
      provider.saml,
      provider.clientSecretCiphertext,
    ]);
  return trusted(current) !== trusted(next);
}

/** JSON with every object's keys sorted: settings read back from jsonb come in another key order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}

/**
 * The state a write leaves the provider in, when its writer asked for `enabled`:
 * 1. disabled when not asked for;
 * 2. enabled when it needs no second admin, or when it was enabled and the write changes nothing
 *    it vouches for (a rename), or when the org has a single admin (nobody could confirm);
 * 3. otherwise waiting for another admin's confirmation, requested by the writer.
 */
export function enableState(input: {
  requested: boolean;
  next: Pick<AuthProviderInput, 'defaultRole' | 'linkExistingAccounts' | 'groupBindings'>;
  unchangedLiveProvider: boolean;
  orgAdmins: number;
  writer: Author;
}): { enabled: boolean; enableRequestedBy: Author | null } {
  if (!input.requested) return { enabled: false, enableRequestedBy: null };
  if (!needsSecondAdmin(input.next) || input.unchangedLiveProvider || input.orgAdmins < 2) return { enabled: true, enableRequestedBy: null };
  return { enabled: false, enableRequestedBy: input.writer };
}
