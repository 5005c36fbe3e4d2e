import { randomBytes } from 'node:crypto';
import type { Repositories, User } from '@switchyard/core';
import { sha256Hex } from '../auth/secrets.ts';
import type { MailSettings } from '../mail/mail-settings.ts';
import { addressVerificationMail } from '../mail/mail-texts.ts';

/** A verification link works for 7 days, once (as long as an invitation). */
export const ADDRESS_VERIFICATION_TTL_MS = 7 * 24 * 3_600_000;

/**
 * Verification mails one org may cause per window (accounts its admins make): an admin cannot
 * turn account creation into a mail cannon. Beyond it the account is still made, unmailed (its
 * address's holder can still claim it with a password reset). Counted in the login throttle's
 * table and window, which its pruner keeps bounded.
 */
export const ADDRESS_VERIFICATION_LIMIT = { perOrg: 100, windowMs: 15 * 60_000 };

/**
 * Tells the holder of an address that an org made an account for it, with a link to confirm it
 * (docs/security.md "Email addresses belong to whoever proves control of them"): confirming sets
 * the holder's own password and keeps the org only if the holder says so. Runs inside the unit
 * of work that made the account; returns whether a mail was queued (the caller then wakes the worker).
 */
export async function queueAddressVerification(
  tx: Repositories,
  mail: MailSettings,
  input: { user: User; orgId: string; orgName: string; nowMs: number },
): Promise<boolean> {
  if (mail.delivery === 'off') return false;
  const subject = `verify-org:${input.orgId}`;
  await tx.loginThrottle.recordFailure([subject], input.nowMs);
  const [count] = await tx.loginThrottle.failuresSince([subject], input.nowMs - ADDRESS_VERIFICATION_LIMIT.windowMs);
  if ((count?.count ?? 0) > ADDRESS_VERIFICATION_LIMIT.perOrg) return false;
  const token = `av_${randomBytes(32).toString('base64url')}`;
  await tx.accountTokens.create(
    { tokenHash: sha256Hex(token), purpose: 'verify_email', userId: input.user.id, email: input.user.email, expiresAtMs: input.nowMs + ADDRESS_VERIFICATION_TTL_MS },
    input.nowMs,
  );
  const link = `${mail.publicUrl()}/#/verify-email/${encodeURIComponent(token)}`;
  await tx.mailOutbox.enqueue({ kind: 'verify_email', ...addressVerificationMail({ to: input.user.email, orgName: input.orgName, orgId: input.orgId, link }) }, input.nowMs);
  return true;
}
