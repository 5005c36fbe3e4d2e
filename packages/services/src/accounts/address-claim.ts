import type { Membership, Repositories, User } from '@switchyard/core';
import { recordChange } from '../audit/audit-trail.ts';

/** Orgs a claimant may name to keep (the requests' `keep_org_ids`). */
export const MAX_KEPT_ORGS = 100;

/** What proving control of the address did to the account. */
export interface AddressProofOutcome {
  /** True when the address had never been verified: the account was someone else's making. */
  claimed: boolean;
  /** The memberships it had, and those it lost (the orgs the holder did not keep). */
  memberships: Membership[];
  released: Membership[];
}

/**
 * The holder of `user`'s address proved control of it (an emailed link: a password reset, a mailed
 * invitation). Inside the caller's unit of work: the password becomes the holder's, the address is
 * verified, every session of the account ends (the caller announces it after the commit), its
 * other reset links are void, and, when the address had never been verified, the account leaves
 * every org but those in `keepOrgIds` (docs/security.md "Email addresses belong to whoever proves
 * control of them"). Each org the account was in gets an entry in its change history.
 */
export async function proveAddress(
  tx: Repositories,
  user: User,
  input: { passwordHash: string; keepOrgIds: readonly string[]; how: 'password_reset' | 'verify_email' | 'invitation' | 'sso_domain'; nowMs: number },
): Promise<AddressProofOutcome> {
  const claimed = user.emailVerifiedAtMs === null;
  const memberships = await tx.users.listMemberships(user.id);
  const keep = [...new Set(input.keepOrgIds)].slice(0, MAX_KEPT_ORGS);
  const released = claimed ? await tx.users.releaseMemberships(user.id, keep) : [];
  await tx.users.setPasswordHash(user.id, input.passwordHash);
  await tx.users.markEmailVerified(user.id, input.nowMs);
  await tx.accountTokens.revokeAll(user.id, 'password_reset', input.nowMs);
  await tx.accountTokens.revokeAll(user.id, 'verify_email', input.nowMs);
  await tx.sessions.end({ userId: user.id }, input.nowMs);
  const actor = { type: 'user' as const, id: user.id, email: user.email };
  for (const membership of memberships) {
    const left = released.some((r) => r.orgId === membership.orgId);
    await recordChange(tx, actor, {
      orgId: membership.orgId,
      action: left ? 'user.claimed_and_left' : claimed ? 'user.claimed' : 'user.password_reset',
      resourceType: 'user',
      resourceId: user.id,
      before: { user_id: user.id, email: user.email, org_id: membership.orgId, org_role: membership.role },
      details: { proof: input.how, address_was_verified: !claimed, membership_kept: !left },
    }, input.nowMs);
  }
  return { claimed, memberships, released };
}
