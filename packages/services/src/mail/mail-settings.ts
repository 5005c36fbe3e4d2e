/**
 * How mail leaves this platform (docs/security.md "Email delivery"):
 * - `smtp`: SMTP_URL is set; the mail worker delivers;
 * - `local-outbox`: development without SMTP_URL; mails stay in the outbox for system
 *   administrators to read (GET /v1/admin/mail-outbox);
 * - `off`: APP_ENV=production without SMTP_URL; nothing is queued, and what needs a mail (password
 *   reset, mailed invitation links) is unavailable.
 */
export type MailDelivery = 'smtp' | 'local-outbox' | 'off';

export interface MailSettings {
  delivery: MailDelivery;
  /** Where browsers reach the console and REST API (PUBLIC_URL, the base of SSO redirect addresses): links are built on it. */
  publicUrl(): string;
  /** Told after a mail was queued and committed: the worker looks at once instead of at its next poll. */
  onQueued(): void;
}
