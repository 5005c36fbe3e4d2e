import type { Invitation } from '@switchyard/core';

/** An invitation as answered by REST; `token` only in the create response. */
export interface InvitationRecord {
  invitation_id: string;
  org_id: string;
  email: string;
  org_role: Invitation['role'];
  /** Who created it (its email as it was then); null for invitations from before creators were recorded. */
  created_by: { user_id: string; email: string | null } | null;
  created_at: string;
  expires_at: string;
  token?: string;
  /** Create response only: the link was queued for the invitee (with SMTP it goes nowhere else, so no `token`). */
  mailed?: boolean;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export const invitationRecord = (invitation: Invitation, token?: string): InvitationRecord => ({
  invitation_id: invitation.id,
  org_id: invitation.orgId,
  email: invitation.email,
  org_role: invitation.role,
  created_by: invitation.createdBy ? { user_id: invitation.createdBy.userId, email: invitation.createdBy.email } : null,
  created_at: iso(invitation.createdAtMs),
  expires_at: iso(invitation.expiresAtMs),
  ...(token === undefined ? {} : { token }),
});
