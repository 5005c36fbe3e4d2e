/** One mail as the platform writes it: plain text, one recipient. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/**
 * Delivers a mail now (SMTP through nodemailer in the server). Kept behind a port so core stays
 * pure and tests can use a real SMTP server or a fake. @throws on any delivery failure.
 */
export interface MailSender {
  send(message: MailMessage): Promise<void>;
}

/** What a mail is about (for the log and the outbox listing; never secret). */
export type MailKind = 'invitation' | 'password_reset' | 'verify_email';

/**
 * A mail in the outbox: `pending` until the worker claims it (`sending`, under a lease), then
 * `sent`, or `failed` after the last attempt; `kept` when no SMTP server is configured
 * (development: the local outbox, read by system administrators).
 */
export interface OutboxMail {
  id: string;
  to: string;
  subject: string;
  /** Blanked once sent (it holds a link with a secret). */
  text: string;
  kind: MailKind;
  status: 'pending' | 'sending' | 'sent' | 'failed' | 'kept';
  attempts: number;
  nextAttemptAtMs: number;
  lastError: string;
  createdAtMs: number;
  finishedAtMs: number | null;
}

/**
 * The mail outbox: written in the transaction of what a mail announces (so a committed request
 * never waits for, or fails on, delivery) and drained by the mail worker on any instance.
 */
export interface MailOutboxRepository {
  enqueue(message: MailMessage & { kind: MailKind }, nowMs: number): Promise<OutboxMail>;
  /**
   * Claims up to `limit` mails that are due (`pending` with nextAttemptAtMs <= nowMs, or `sending`
   * with an expired lease), oldest first, skipping rows another worker is claiming this instant;
   * each claimed mail is `sending` until `nowMs + leaseMs` and its attempts grow by one.
   */
  claimDue(nowMs: number, leaseMs: number, limit: number): Promise<OutboxMail[]>;
  /** The mail went out (`sent`), or stays here as the local outbox (`kept`). */
  finish(id: string, status: 'sent' | 'kept', nowMs: number): Promise<void>;
  /** Back to `pending` until `nextAttemptAtMs`, with the error of this attempt. */
  retryLater(id: string, nextAttemptAtMs: number, error: string): Promise<void>;
  /** Given up after the last attempt. */
  fail(id: string, error: string, nowMs: number): Promise<void>;
  /** The newest `limit` mails, newest first (the local outbox view). */
  listRecent(limit: number): Promise<OutboxMail[]>;
  /** Deletes up to `limit` mails created before `beforeMs` (exclusive) that are finished; returns how many. */
  pruneFinished(beforeMs: number, limit: number): Promise<number>;
}

/** What an emailed secret lets its holder do. */
export type AccountTokenPurpose = 'password_reset' | 'verify_email';

export interface AccountToken {
  purpose: AccountTokenPurpose;
  userId: string;
  /** The address it was sent to: proof of control of exactly this address. */
  email: string;
  createdAtMs: number;
  expiresAtMs: number;
}

/** Single-use secrets sent by mail, stored as their hash only. */
export interface AccountTokenRepository {
  create(input: { tokenHash: string; purpose: AccountTokenPurpose; userId: string; email: string; expiresAtMs: number }, nowMs: number): Promise<AccountToken>;
  /** Spends the token when it is unused and unexpired at `nowMs` (of concurrent calls one wins); null otherwise. */
  consume(tokenHash: string, purpose: AccountTokenPurpose, nowMs: number): Promise<AccountToken | null>;
  /** Spends every unused token of the user for this purpose (a reset done voids the other links). */
  revokeAll(userId: string, purpose: AccountTokenPurpose, nowMs: number): Promise<number>;
  /** Deletes up to `limit` tokens expired at `nowMs`; returns how many. */
  pruneExpired(nowMs: number, limit: number): Promise<number>;
}
