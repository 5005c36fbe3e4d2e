import {
  DomainError,
  RateLimitedError,
  notFound,
  type ChangeNotifier,
  type PasswordHasher,
  type Repositories,
} from '@switchyard/core';
import { randomBytes } from 'node:crypto';
import { proveAddress } from './address-claim.ts';
import { announceSessionChanges } from '../auth/session-registry.ts';
import { addressBlocks } from '../auth/address-blocks.ts';
import { sha256Hex } from '../auth/secrets.ts';
import { requirePassword } from '../management/input-checks.ts';
import type { MailSettings } from '../mail/mail-settings.ts';
import { passwordResetMail } from '../mail/mail-texts.ts';

/** A reset link works for 30 minutes, once. */
export const PASSWORD_RESET_TTL_MS = 30 * 60_000;

/**
 * Reset requests counted per email address (so per account: addresses are unique), per client (an
 * IPv4 address or an IPv6 /64, as login throttling counts clients: addressBlocks) and per IPv6
 * site (/48), in the login throttle's table and window (its pruner keeps the table bounded). The
 * counts are kept whether or not an account exists, so the answer never tells.
 */
export const PASSWORD_RESET_LIMITS = { perEmail: 3, perClientAddress: 20, perSite: 60, windowMs: 15 * 60_000 };

/** What a completed reset did: the orgs the account is in now, and whether it was removed (claimed, kept in none). */
export interface PasswordResetOutcome {
  org_ids: string[];
  account_removed: boolean;
}

const generateResetToken = (): string => `pr_${randomBytes(32).toString('base64url')}`;

/**
 * Password reset by emailed link (docs/security.md "Password reset"). The request answers the same
 * whether or not the address has an account; the link's token is 256 random bits, stored as
 * SHA-256, single use, 30 minutes. Completing it sets the password, marks the address verified,
 * ends every session of the account and voids its other reset links.
 *
 * It is also how the real holder of an address claims an account someone else made for it (an
 * admin with a password, an identity provider): for an account whose address was never verified,
 * the reset removes it from every org except those the holder names in `keepOrgIds`
 * (docs/security.md "Email addresses belong to whoever proves control of them"); audited. An
 * account claimed that way and kept in no org is removed, which frees the address.
 */
export class PasswordResetService {
  constructor(
    private readonly repos: Pick<Repositories, 'users' | 'orgs' | 'sessions' | 'accountTokens' | 'mailOutbox' | 'loginThrottle' | 'unitOfWork'>,
    private readonly hasher: PasswordHasher,
    private readonly notifier: ChangeNotifier,
    private readonly mail: MailSettings,
    private readonly now: () => number = Date.now,
  ) {}

  /** Mails a reset link when the address has an account; answers alike when it has none. */
  async requestPasswordReset(input: { email: string; clientAddress?: string | undefined }): Promise<void> {
    if (this.mail.delivery === 'off') {
      throw new DomainError('FAILED_PRECONDITION', 'password reset is not available: the server has no SMTP_URL to send the link');
    }
    const email = input.email.trim();
    await this.throttle(email, input.clientAddress);
    const user = await this.repos.users.getByEmail(email);
    if (!user) return;
    const nowMs = this.now();
    const token = generateResetToken();
    const orgs = user.emailVerifiedAtMs === null ? await this.orgsOf(user.id) : [];
    await this.repos.unitOfWork.run(async (tx) => {
      await tx.accountTokens.create({ tokenHash: sha256Hex(token), purpose: 'password_reset', userId: user.id, email: user.email, expiresAtMs: nowMs + PASSWORD_RESET_TTL_MS }, nowMs);
      await tx.mailOutbox.enqueue({ kind: 'password_reset', ...passwordResetMail({ to: user.email, link: this.link(token), unverifiedIn: orgs }) }, nowMs);
    });
    this.mail.onQueued();
  }

  /** Sets the password from a reset link; see the class comment for what else it does. */
  resetPassword(input: { token: string; newPassword: string | undefined; keepOrgIds?: readonly string[] | undefined }): Promise<PasswordResetOutcome> {
    return this.complete(input, 'password_reset');
  }

  /**
   * Confirms an account an org made for the address, from the link mailed at its creation
   * (accounts/address-verification.ts): the same as a reset (the holder's password, the orgs it keeps).
   */
  confirmAddress(input: { token: string; newPassword: string | undefined; keepOrgIds?: readonly string[] | undefined }): Promise<PasswordResetOutcome> {
    return this.complete(input, 'verify_email');
  }

  private async complete(input: { token: string; newPassword: string | undefined; keepOrgIds?: readonly string[] | undefined }, purpose: 'password_reset' | 'verify_email'): Promise<PasswordResetOutcome> {
    const password = requirePassword(input.newPassword);
    const passwordHash = await this.hasher.hash(password);
    const nowMs = this.now();
    const outcome = await this.repos.unitOfWork.run(async (tx) => {
      const token = await tx.accountTokens.consume(sha256Hex(input.token), purpose, nowMs);
      if (!token) throw notFound(purpose === 'password_reset' ? 'password reset link' : 'verification link');
      const user = await tx.users.getById(token.userId);
      // The address the link went to must still be the account's: it is what was proved.
      if (!user || user.email.toLowerCase() !== token.email.toLowerCase()) throw notFound(purpose === 'password_reset' ? 'password reset link' : 'verification link');
      const { claimed, memberships, released, sessionsEndedFor } = await proveAddress(tx, user, { passwordHash, keepOrgIds: input.keepOrgIds ?? [], how: purpose, nowMs, publicUrl: this.mail.publicUrl() });
      // Claimed and in no org any more: the account goes and the address is free, so the holder
      // can join its own org as a new account (invitation, creation, single sign-on).
      const removed = claimed && (await tx.users.deleteIfOrgless(user.id));
      return { sessionsEndedFor, result: { org_ids: memberships.filter((m) => !released.some((r) => r.orgId === m.orgId)).map((m) => m.orgId), account_removed: removed } };
    });
    await announceSessionChanges(this.notifier, outcome.sessionsEndedFor);
    return outcome.result;
  }

  private link(token: string): string {
    return `${this.mail.publicUrl()}/#/reset-password/${encodeURIComponent(token)}`;
  }

  private async orgsOf(userId: string): Promise<Array<{ id: string; name: string }>> {
    const result: Array<{ id: string; name: string }> = [];
    for (const membership of await this.repos.users.listMemberships(userId)) {
      const org = await this.repos.orgs.get(membership.orgId);
      if (org && !org.isSystem) result.push({ id: org.id, name: org.name });
    }
    return result;
  }

  /** Counts the request first, then reads the counts (as LoginThrottle does), so parallel requests cannot all slip under. */
  private async throttle(email: string, clientAddress: string | undefined): Promise<void> {
    const emailSubject = `reset-email:${email.toLowerCase()}`;
    // Rotating addresses inside one IPv6 /64 (or /48) is one client (or site), as for logins.
    const blocks = addressBlocks(clientAddress);
    const clientSubject = `reset-ip:${blocks.client}`;
    const siteSubject = blocks.site === undefined ? undefined : `reset-site:${blocks.site}`;
    const subjects = siteSubject === undefined ? [emailSubject, clientSubject] : [emailSubject, clientSubject, siteSubject];
    const nowMs = this.now();
    await this.repos.loginThrottle.recordFailure(subjects, nowMs);
    const counts = await this.repos.loginThrottle.failuresSince(subjects, nowMs - PASSWORD_RESET_LIMITS.windowMs);
    let retryAfterMs = 0;
    for (const { subject, count, oldestAtMs } of counts) {
      const limit = subject === emailSubject ? PASSWORD_RESET_LIMITS.perEmail : subject === siteSubject ? PASSWORD_RESET_LIMITS.perSite : PASSWORD_RESET_LIMITS.perClientAddress;
      if (count > limit) retryAfterMs = Math.max(retryAfterMs, oldestAtMs + PASSWORD_RESET_LIMITS.windowMs - nowMs);
    }
    if (retryAfterMs > 0) {
      await this.repos.loginThrottle.forgetOne(subjects, nowMs);
      throw new RateLimitedError('too many password reset requests; try again later', Math.max(1, Math.ceil(retryAfterMs / 1000)));
    }
  }
}
