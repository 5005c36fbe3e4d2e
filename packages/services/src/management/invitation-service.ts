import {
  DomainError,
  alreadyExists,
  isDomainError,
  notFound,
  permissionDenied,
  unauthenticated,
  type ChangeNotifier,
  type Invitation,
  type PasswordHasher,
  type Principal,
  type Repositories,
} from '@switchyard/core';
import { requireAllowed, requireStillOrgAdmin } from '../authorization.ts';
import { recordChange, type Acting } from '../audit/audit-trail.ts';
import type { AuthService, Session } from '../auth/auth-service.ts';
import { generateInvitationToken, sha256Hex } from '../auth/secrets.ts';
import { announceSessionChanges } from '../auth/session-registry.ts';
import { proveAddress } from '../accounts/address-claim.ts';
import type { MailSettings } from '../mail/mail-settings.ts';
import { invitationMail } from '../mail/mail-texts.ts';
import { optionalRole, requireEmail, requireName, requirePassword } from './input-checks.ts';
import { userRecord, type UserRecord } from './records.ts';
import { invitationRecord, type InvitationRecord } from './invitation-records.ts';

export type { InvitationRecord } from './invitation-records.ts';

/** Invitations are single use and expire after 7 days. */
const INVITATION_TTL_MS = 7 * 24 * 3600_000;

/**
 * Pending invitations one org may hold at once: an org admin cannot fill the table (or the
 * inviter's list) without bound; accepted, withdrawn and expired ones free their place.
 */
export const MAX_PENDING_INVITATIONS = 1_000;

const sameEmail = (a: string, b: string): boolean => a.trim().toLowerCase() === b.trim().toLowerCase();

/**
 * Invitations (docs/decisions.md "Invitations"): the only way an existing account joins another
 * org, because only the account's holder can accept one. An org_admin invites into its org; a
 * system administrator into any org. The token is shown once and stored as a SHA-256 hash.
 */
export class InvitationService {
  constructor(
    private readonly repos: Pick<Repositories, 'orgs' | 'users' | 'invitations' | 'unitOfWork'>,
    private readonly hasher: PasswordHasher,
    private readonly auth: Pick<AuthService, 'openSessionFor'>,
    private readonly now: () => number = Date.now,
    /**
     * How mail leaves (docs/security.md "Email delivery") and where ended sessions are announced
     * (a claim ends the account's sessions); null: nothing is mailed (unit tests).
     */
    private readonly addressProof: { mail: MailSettings; notifier: ChangeNotifier } | null = null,
  ) {}

  private get mail(): MailSettings | null {
    return this.addressProof?.mail ?? null;
  }

  /**
   * With SMTP the link is mailed and handed to no one else: accepting it proves control of the
   * address (docs/security.md "Invitations prove the address"). Without, the inviter gets the token.
   * Read when an invitation is created and stored with it (Invitation.provesAddress): what proves
   * the address at acceptance is how that invitation's link travelled, not today's setting.
   */
  private get mailsOnly(): boolean {
    return this.mail?.delivery === 'smtp';
  }

  async create(principal: Principal, orgId: string, input: { email: string | undefined; orgRole?: string | null | undefined }): Promise<InvitationRecord> {
    await this.requireInviter(principal, orgId);
    const email = requireEmail(input.email);
    const role = optionalRole(input.orgRole, 'org_member');
    if ((await this.repos.invitations.listPending({ orgId }, this.now())).length >= MAX_PENDING_INVITATIONS) {
      throw new DomainError('RESOURCE_EXHAUSTED', `the organisation already has ${MAX_PENDING_INVITATIONS} pending invitations; withdraw some first`);
    }
    const token = generateInvitationToken();
    const mail = this.mail !== null && this.mail.delivery !== 'off' ? this.mail : null;
    const orgName = mail ? ((await this.repos.orgs.get(orgId))?.name ?? orgId) : '';
    const createdBy = principal.kind === 'user' ? { userId: principal.userId, email: (await this.repos.users.getById(principal.userId))?.email ?? null } : null;
    const invitation = await this.repos.unitOfWork.run(async (tx) => {
      await requireStillOrgAdmin(tx, principal, orgId);
      const created = await tx.invitations.create(
        { orgId },
        { email, role, tokenHash: sha256Hex(token), expiresAtMs: this.now() + INVITATION_TTL_MS, createdBy, provesAddress: this.mailsOnly },
      );
      // The record without its token: the token is shown once, in the create response.
      await this.record(tx, principal, orgId, 'invitation.create', created.id, { after: invitationRecord(created) });
      // Queued with the invitation: delivery never blocks or fails it (the mail worker sends).
      if (mail) await tx.mailOutbox.enqueue({ kind: 'invitation', ...invitationMail({ to: email, orgName, role, link: `${mail.publicUrl()}/#/accept-invitation/${encodeURIComponent(token)}` }) }, this.now());
      return created;
    });
    if (mail) mail.onQueued();
    return { ...invitationRecord(invitation, invitation.provesAddress ? undefined : token), mailed: mail !== null };
  }

  async list(principal: Principal, orgId: string): Promise<InvitationRecord[]> {
    await this.requireInviter(principal, orgId);
    return (await this.repos.invitations.listPending({ orgId }, this.now())).map((invitation) => invitationRecord(invitation));
  }

  async delete(principal: Principal, orgId: string, invitationId: string): Promise<void> {
    await this.requireInviter(principal, orgId);
    await this.repos.unitOfWork.run(async (tx) => {
      const pending = (await tx.invitations.listPending({ orgId }, this.now())).find((invitation) => invitation.id === invitationId);
      await tx.invitations.delete({ orgId }, invitationId);
      await this.record(tx, principal, orgId, 'invitation.delete', invitationId, { before: pending ? invitationRecord(pending) : null });
    });
  }

  /**
   * The signed-in invitee joins the org. Its account's email must be the invited one, so a
   * leaked token is no use to anyone else; the invitation is spent only once that holds.
   */
  async acceptAsUser(principal: Principal, token: string): Promise<{ org_id: string; org_role: Invitation['role'] }> {
    if (principal.kind !== 'user') throw unauthenticated('a user bearer token is required');
    const user = await this.repos.users.getById(principal.userId);
    if (!user) throw unauthenticated('the user no longer exists');
    const invitation = await this.repos.invitations.findActive(sha256Hex(token), this.now());
    if (!invitation) throw notFound('invitation');
    if (!sameEmail(invitation.email, user.email)) throw permissionDenied('this invitation is for another email address');
    if (await this.repos.users.getMembership(invitation.orgId, user.id)) throw alreadyExists('membership', user.email);
    const membership = await this.repos.unitOfWork.run(async (tx) => {
      const accepted = await this.spend(tx, token);
      const joined = await tx.users.addMembership({ orgId: accepted.orgId, userId: user.id, role: accepted.role });
      await this.recordAcceptance(tx, principal, accepted, user.id);
      return joined;
    });
    return { org_id: membership.orgId, org_role: membership.role };
  }

  /**
   * An invitee without an account creates one with the invited email and signs in. An email that
   * already has an account must sign in and accept with its bearer (ALREADY_EXISTS), except when
   * the link was mailed (SMTP) and the account's address was never verified: accepting then proves
   * the address and claims the account someone else made for it (`proveAddress`: the password
   * becomes the invitee's, other sessions end, it leaves the orgs not in `keepOrgIds`).
   */
  async acceptAsNewUser(input: { token: string; displayName: string | undefined; password: string | undefined; keepOrgIds?: readonly string[] | undefined }): Promise<{ user: UserRecord; session: Session }> {
    const displayName = requireName(input.displayName, 'display_name');
    const password = requirePassword(input.password);
    const invitation = await this.repos.invitations.findActive(sha256Hex(input.token), this.now());
    if (!invitation) throw notFound('invitation');
    const existing = await this.repos.users.getByEmail(invitation.email);
    if (existing) {
      if (!invitation.provesAddress || existing.emailVerifiedAtMs !== null) throw alreadyExists('user', invitation.email);
      return this.claimByInvitation(input.token, existing.id, password, input.keepOrgIds ?? []);
    }
    const passwordHash = await this.hasher.hash(password);
    // The account, its membership, the spent invitation and the entry commit together: an
    // account created concurrently with the same email undoes all of it (the invitation stays usable).
    const joined = await this.repos.unitOfWork.run(async (tx) => {
      const accepted = await this.spend(tx, input.token);
      let user;
      try {
        user = await tx.users.create({ email: accepted.email, displayName, passwordHash, emailVerifiedAtMs: accepted.provesAddress ? this.now() : null });
      } catch (error) {
        if (isDomainError(error) && error.code === 'ALREADY_EXISTS') throw alreadyExists('user', accepted.email);
        throw error;
      }
      const membership = await tx.users.addMembership({ orgId: accepted.orgId, userId: user.id, role: accepted.role });
      await this.recordAcceptance(tx, { type: 'user', id: user.id, email: user.email }, accepted, user.id);
      return userRecord(user, membership);
    });
    const session = await this.auth.openSessionFor(joined.user_id, joined.org_id);
    return { user: joined, session };
  }

  private async claimByInvitation(token: string, userId: string, password: string, keepOrgIds: readonly string[]): Promise<{ user: UserRecord; session: Session }> {
    const passwordHash = await this.hasher.hash(password);
    const nowMs = this.now();
    const joined = await this.repos.unitOfWork.run(async (tx) => {
      const accepted = await this.spend(tx, token);
      if (!accepted.provesAddress) throw alreadyExists('user', accepted.email);
      const user = await tx.users.getById(userId);
      // Verified meanwhile (its holder proved it another way): no claim any more.
      if (!user || user.emailVerifiedAtMs !== null || !sameEmail(user.email, accepted.email)) throw alreadyExists('user', accepted.email);
      const { sessionsEndedFor } = await proveAddress(tx, user, { passwordHash, keepOrgIds: keepOrgIds.filter((orgId) => orgId !== accepted.orgId), how: 'invitation', nowMs, publicUrl: this.addressProof?.mail.publicUrl() });
      const membership = await tx.users.addMembership({ orgId: accepted.orgId, userId: user.id, role: accepted.role });
      await this.recordAcceptance(tx, { type: 'user', id: user.id, email: user.email }, accepted, user.id);
      return { record: userRecord(user, membership), sessionsEndedFor };
    });
    if (this.addressProof) await announceSessionChanges(this.addressProof.notifier, joined.sessionsEndedFor);
    const session = await this.auth.openSessionFor(joined.record.user_id, joined.record.org_id);
    return { user: joined.record, session };
  }

  private async spend(tx: Repositories, token: string): Promise<Invitation> {
    // Single use: of two concurrent acceptances, one spends it and the other finds nothing.
    const accepted = await tx.invitations.accept(sha256Hex(token), this.now());
    if (!accepted) throw notFound('invitation');
    return accepted;
  }

  /** An org_admin of the org, or a system administrator for any org that exists. */
  private async requireInviter(principal: Principal, orgId: string): Promise<void> {
    if (principal.kind === 'user' && principal.isSystem) {
      requireAllowed(principal, 'admin.manage', { orgId: principal.orgId });
      if (!(await this.repos.orgs.get(orgId).catch(() => null))) throw notFound('organisation', orgId);
      return;
    }
    requireAllowed(principal, 'user.manage', { orgId });
  }

  /** Spent: `before` is the pending invitation; who joined, and with which role, is in details. */
  private async recordAcceptance(tx: Repositories, acting: Acting, invitation: Invitation, userId: string): Promise<void> {
    await this.record(tx, acting, invitation.orgId, 'invitation.accept', invitation.id, {
      before: invitationRecord(invitation),
      details: { user_id: userId, email: invitation.email, org_role: invitation.role },
    });
  }

  private async record(tx: Repositories, acting: Acting, orgId: string, action: string, invitationId: string, change: { before?: unknown; after?: unknown; details?: Record<string, unknown> }): Promise<void> {
    await recordChange(tx, acting, { orgId, action, resourceType: 'invitation', resourceId: invitationId, ...change }, this.now());
  }
}
