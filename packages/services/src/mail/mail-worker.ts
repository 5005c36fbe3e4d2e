import type { AccountTokenRepository, MailOutboxRepository, MailSender, OutboxMail } from '@switchyard/core';

/** Timing and bounds of a MailWorker; every field has a production default. */
export interface MailWorkerOptions {
  /** Pause between looks for due mails when there are none (default 5 s; a new mail wakes it at once). */
  pollMs?: number;
  /** A claimed mail is the claimer's for this long; a worker that crashed leaves it to another after it. */
  leaseMs?: number;
  /** Mails claimed per statement (default 10). */
  batchSize?: number;
  /** Delivery attempts before a mail is given up (default 6). */
  maxAttempts?: number;
  /** Wait after the first failed attempt, doubled after each further one (default 30 s). */
  firstRetryAfterMs?: number;
  /** The longest wait between two attempts (default 1 h). */
  maxRetryAfterMs?: number;
  /** Finished mails (sent, failed, kept) are deleted this long after they were written (default 7 days). */
  keepFinishedMs?: number;
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
  now?: () => number;
}

/** What one pass did. */
export interface MailPassReport {
  sent: number;
  kept: number;
  retried: number;
  failed: number;
}

const DEFAULTS = {
  pollMs: 5_000,
  leaseMs: 60_000,
  batchSize: 10,
  maxAttempts: 6,
  firstRetryAfterMs: 30_000,
  maxRetryAfterMs: 3_600_000,
  keepFinishedMs: 7 * 24 * 3_600_000,
};
const PRUNE_EVERY_MS = 3_600_000;
const PRUNE_BATCH = 1_000;
const MAX_ERROR_LENGTH = 500;

/**
 * Drains the mail outbox (the worker pattern of StatsWorker): claims due mails with a lease (FOR
 * UPDATE SKIP LOCKED, so every instance's worker shares the queue), sends each, and marks it sent;
 * a failure is retried after a doubling wait, up to `maxAttempts`, then the mail is failed. A
 * request that queued a mail has committed already: delivery never blocks or fails it.
 *
 * It also deletes, hourly, finished mails older than `keepFinishedMs` and expired emailed links.
 *
 * Without a sender (no SMTP_URL, development) each mail is `kept`: it stays in the outbox, where
 * system administrators read it (GET /v1/admin/mail-outbox), and the log names it.
 */
export class MailWorker {
  readonly pollMs: number;
  private readonly options: Required<Omit<MailWorkerOptions, 'log' | 'now'>>;
  private readonly log: NonNullable<MailWorkerOptions['log']>;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<MailPassReport> | null = null;
  private stopping = false;
  private started = false;
  private nextPruneAtMs = 0;
  /** A mail was queued while a pass ran (after its last claim, maybe): look again right after it. */
  private wokenDuringPass = false;

  constructor(
    private readonly repos: { mailOutbox: MailOutboxRepository; accountTokens: AccountTokenRepository },
    private readonly sender: MailSender | null,
    options: MailWorkerOptions = {},
  ) {
    this.options = {
      pollMs: options.pollMs ?? DEFAULTS.pollMs,
      leaseMs: options.leaseMs ?? DEFAULTS.leaseMs,
      batchSize: options.batchSize ?? DEFAULTS.batchSize,
      maxAttempts: options.maxAttempts ?? DEFAULTS.maxAttempts,
      firstRetryAfterMs: options.firstRetryAfterMs ?? DEFAULTS.firstRetryAfterMs,
      maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs,
      keepFinishedMs: options.keepFinishedMs ?? DEFAULTS.keepFinishedMs,
    };
    this.pollMs = this.options.pollMs;
    this.log = options.log ?? (() => {});
    this.now = options.now ?? Date.now;
    if (!Number.isInteger(this.options.batchSize) || this.options.batchSize < 1) throw new RangeError('batchSize must be a positive integer');
    if (!Number.isInteger(this.options.maxAttempts) || this.options.maxAttempts < 1) throw new RangeError('maxAttempts must be a positive integer');
  }

  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.schedule(0);
  }

  /** A mail was queued: look now instead of at the next poll (this instance only; others poll). */
  wake(): void {
    if (!this.started || this.stopping) return;
    if (this.current !== null) {
      this.wokenDuringPass = true;
      return;
    }
    this.schedule(0);
  }

  /** Stops scheduling and waits for the pass in progress (its mails are finished or left to their lease). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.current?.catch(() => {});
  }

  /** One pass, now: claims and sends until nothing is due (at most `batchSize` per claim). */
  runOnce(): Promise<MailPassReport> {
    const pass = this.pass();
    this.current = pass;
    return pass.finally(() => {
      if (this.current === pass) this.current = null;
    });
  }

  private schedule(delayMs: number): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.runOnce()
        .catch((error: unknown) => this.log('warn', 'mail: a pass failed; retrying at the next poll', { err: { message: (error as Error).message } }))
        .finally(() => {
          const again = this.wokenDuringPass;
          this.wokenDuringPass = false;
          if (!this.stopping) this.schedule(again ? 0 : this.options.pollMs);
        });
    }, delayMs);
    this.timer.unref?.();
  }

  private async pass(): Promise<MailPassReport> {
    const report: MailPassReport = { sent: 0, kept: 0, retried: 0, failed: 0 };
    // Bounded: each claim takes at most batchSize, and a pass ends when a claim finds fewer.
    for (;;) {
      if (this.stopping) break;
      const claimed = await this.repos.mailOutbox.claimDue(this.now(), this.options.leaseMs, this.options.batchSize);
      for (const mail of claimed) {
        if (this.stopping) break;
        report[await this.deliver(mail)] += 1;
      }
      if (claimed.length < this.options.batchSize) break;
    }
    await this.pruneWhenDue();
    return report;
  }

  private async deliver(mail: OutboxMail): Promise<keyof MailPassReport> {
    const fields = { mail_id: mail.id, kind: mail.kind, to: mail.to, attempt: mail.attempts };
    if (this.sender === null) {
      await this.repos.mailOutbox.finish(mail.id, 'kept', this.now());
      this.log('info', 'mail: no SMTP_URL, kept in the local outbox (GET /v1/admin/mail-outbox)', fields);
      return 'kept';
    }
    try {
      await this.sender.send({ to: mail.to, subject: mail.subject, text: mail.text });
    } catch (error) {
      const reason = String((error as Error).message ?? error).slice(0, MAX_ERROR_LENGTH);
      if (mail.attempts >= this.options.maxAttempts) {
        await this.repos.mailOutbox.fail(mail.id, reason, this.now());
        this.log('warn', 'mail: delivery failed for the last time; given up', { ...fields, err: { message: reason } });
        return 'failed';
      }
      const waitMs = Math.min(this.options.maxRetryAfterMs, this.options.firstRetryAfterMs * 2 ** (mail.attempts - 1));
      await this.repos.mailOutbox.retryLater(mail.id, this.now() + waitMs, reason);
      this.log('warn', 'mail: delivery failed; will retry', { ...fields, retry_in_ms: waitMs, err: { message: reason } });
      return 'retried';
    }
    await this.repos.mailOutbox.finish(mail.id, 'sent', this.now());
    this.log('info', 'mail: sent', fields);
    return 'sent';
  }

  private async pruneWhenDue(): Promise<void> {
    const nowMs = this.now();
    if (nowMs < this.nextPruneAtMs) return;
    this.nextPruneAtMs = nowMs + PRUNE_EVERY_MS;
    const cutoff = nowMs - this.options.keepFinishedMs;
    // Batch by batch: each statement holds its locks briefly. The emailed links the mails carried
    // go too once expired (they can never be used again).
    while (!this.stopping && (await this.repos.mailOutbox.pruneFinished(cutoff, PRUNE_BATCH)) === PRUNE_BATCH);
    while (!this.stopping && (await this.repos.accountTokens.pruneExpired(nowMs, PRUNE_BATCH)) === PRUNE_BATCH);
  }
}
