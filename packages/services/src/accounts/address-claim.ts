import type { Membership, Repositories, User } from '@switchyard/core';
import { recordChange } from '../audit/audit-trail.ts';
import { AdminGrantWithdrawal } from '../management/admin-grant-withdrawal.ts';
import { authProviderRecord } from '../sso/provider-records.ts';

/** Orgs a claimant may name to keep (the requests' `keep_org_ids`). */
export const MAX_KEPT_ORGS = 100;

/** What proving control of the address did to the account. */
export interface AddressProofOutcome {
  /** True when the address had never been verified: the account was someone else's making. */
  claimed: boolean;
  /** The memberships it had, and those it lost (the orgs the holder did not keep). */
  memberships: Membership[];
  released: Membership[];
  /**
   * Every user whose sessions the proof ended, to be announced on every instance once the unit of
   * work commits: the account itself, and the users of the providers withdrawn from the orgs where
   * it was an `org_admin` and that it left.
   */
  sessionsEndedFor: string[];
}

/**
 * The holder of `user`'s address proved control of it (an emailed link: a password reset, a mailed
 * invitation). Inside the caller's unit of work: the password becomes the holder's, the address is
 * verified, every session of the account ends (the caller announces it after the commit), its
 * other reset links are void, and, when the address had never been verified, the account leaves
 * every org but those in `keepOrgIds` (docs/security.md "Email addresses belong to whoever proves
 * control of them"). Each org the account was in gets an entry in its change history.
 *
 * An `org_admin` membership the claim ends is a removal like any other (docs/security.md "Removed
 * and demoted admins"): in the same unit of work, the account's pending invitations in that org are
 * withdrawn, the providers it created or changed there are disabled and their sessions end (reason
 * `member_claimed`). The orgs it leaves are locked first (their org rows, in id order, as a removal
 * and an admin's write of an invitation or a provider lock them), so such a write racing the claim
 * either waits and is then refused, or comes first and is withdrawn.
 */
export async function proveAddress(
  tx: Repositories,
  user: User,
  input: {
    passwordHash: string;
    keepOrgIds: readonly string[];
    how: 'password_reset' | 'verify_email' | 'invitation' | 'sso_domain';
    nowMs: number;
    /** The public URL providers are described with in the change history (the host's). */
    publicUrl?: string | undefined;
  },
): Promise<AddressProofOutcome> {
  const claimed = user.emailVerifiedAtMs === null;
  const keep = [...new Set(input.keepOrgIds)].slice(0, MAX_KEPT_ORGS);
  if (claimed) {
    // The org rows of the orgs it leaves, before its memberships (one lock order with removals).
    const leaving = (await tx.users.listMemberships(user.id)).map((m) => m.orgId).filter((orgId) => !keep.includes(orgId));
    for (const orgId of [...new Set(leaving)].sort()) await tx.users.lockMembership(orgId, user.id);
  }
  const memberships = await tx.users.listMemberships(user.id);
  const released = claimed ? await tx.users.releaseMemberships(user.id, keep) : [];
  await tx.users.setPasswordHash(user.id, input.passwordHash);
  await tx.users.markEmailVerified(user.id, input.nowMs);
  await tx.accountTokens.revokeAll(user.id, 'password_reset', input.nowMs);
  await tx.accountTokens.revokeAll(user.id, 'verify_email', input.nowMs);
  await tx.sessions.end({ userId: user.id }, input.nowMs);
  const actor = { type: 'user' as const, id: user.id, email: user.email };
  const sessionsEndedFor = [user.id];
  const admin = released.filter((membership) => membership.role === 'org_admin');
  if (admin.length > 0) {
    const publicUrl = input.publicUrl ?? 'http://localhost';
    const grants = new AdminGrantWithdrawal((provider) => authProviderRecord(provider, publicUrl));
    for (const membership of admin) {
      sessionsEndedFor.push(...(await grants.withdraw(tx, actor, membership.orgId, user.id, 'member_claimed', input.nowMs)));
    }
  }
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
  return { claimed, memberships, released, sessionsEndedFor: [...new Set(sessionsEndedFor)] };
}
