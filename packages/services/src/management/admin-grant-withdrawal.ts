import type { AuthProvider, Repositories } from '@switchyard/core';
import { recordChange, type Acting } from '../audit/audit-trail.ts';
import { invitationRecord } from './invitation-records.ts';

/**
 * Why a member's grants were withdrawn: recorded in each audit entry's details. `member_claimed`:
 * the holder of the account's address proved it and the account left the org (accounts/address-claim.ts).
 */
export type WithdrawalReason = 'member_removed' | 'member_demoted' | 'member_claimed';

/**
 * What an admin leaves behind that would keep working after it lost the role (docs/security.md
 * "Removed and demoted admins"): its pending invitations (an `org_admin` invitation to an address
 * it controls is accepted with no credential) and the identity providers it created or changed (a
 * provider pointing at its own identity provider signs in anyone it likes). Run inside the unit of
 * work that removes or demotes the member (or in which a claim of its address ends its membership),
 * so they go together or not at all, each audited.
 * Bounded: an org holds at most 1,000 pending invitations and 20 providers.
 */
export class AdminGrantWithdrawal {
  /** `describeProvider`: the provider as the API shows it (for the audit entries). */
  constructor(private readonly describeProvider: (provider: AuthProvider) => unknown) {}

  /**
   * Withdraws the member's pending invitations, disables its providers and ends the sessions those
   * opened. Returns the users whose sessions ended, to be announced once the work commits.
   */
  async withdraw(tx: Repositories, acting: Acting, orgId: string, userId: string, reason: WithdrawalReason, nowMs: number): Promise<string[]> {
    const details = { reason, member_user_id: userId };
    for (const invitation of await tx.invitations.withdrawCreatedBy({ orgId }, userId)) {
      await recordChange(tx, acting, {
        orgId,
        action: 'invitation.delete',
        resourceType: 'invitation',
        resourceId: invitation.id,
        before: invitationRecord(invitation),
        details,
      }, nowMs);
    }
    const disabled = await tx.authProviders.disableWrittenBy({ orgId }, userId);
    for (const provider of disabled) {
      await recordChange(tx, acting, {
        orgId,
        action: 'auth_provider.disable',
        resourceType: 'auth_provider',
        resourceId: provider.id,
        before: this.describeProvider(provider),
        after: this.describeProvider({ ...provider, enabled: false, enableRequestedBy: null }),
        details,
      }, nowMs);
    }
    return disabled.length === 0 ? [] : tx.sessions.endOpenedBy(disabled.map((provider) => provider.id), nowMs);
  }
}
