import type { MailKind, MailMessage, MailOutboxRepository, OutboxMail } from '@switchyard/core';
import type { Sql } from './connect.ts';
import { isUuid } from './pg-errors.ts';

interface OutboxRow {
  id: string;
  recipient: string;
  subject: string;
  body: string;
  kind: MailKind;
  status: OutboxMail['status'];
  attempts: number;
  next_attempt_at_ms: number;
  last_error: string;
  created_at_ms: number;
  finished_at_ms: number | null;
}

const toMail = (row: OutboxRow): OutboxMail => ({
  id: row.id,
  to: row.recipient,
  subject: row.subject,
  text: row.body,
  kind: row.kind,
  status: row.status,
  attempts: row.attempts,
  nextAttemptAtMs: Number(row.next_attempt_at_ms),
  lastError: row.last_error,
  createdAtMs: Number(row.created_at_ms),
  finishedAtMs: row.finished_at_ms === null ? null : Number(row.finished_at_ms),
});

/**
 * The mail outbox in `mail_outbox`. Platform-wide, not an org's data: only the mail worker and the
 * system administrators' local outbox read it. claimDue is one UPDATE over a FOR UPDATE SKIP
 * LOCKED sub-select (as stats jobs are claimed), so workers on every instance share the queue and
 * never send one mail twice while its lease holds.
 */
export class PgMailOutboxRepository implements MailOutboxRepository {
  constructor(private readonly sql: Sql) {}

  private columns() {
    return this.sql`id, recipient, subject, body, kind, status, attempts, next_attempt_at_ms, last_error, created_at_ms, finished_at_ms`;
  }

  async enqueue(message: MailMessage & { kind: MailKind }, nowMs: number): Promise<OutboxMail> {
    const [row] = await this.sql<OutboxRow[]>`
      INSERT INTO mail_outbox (recipient, subject, body, kind, status, next_attempt_at_ms, created_at_ms)
      VALUES (${message.to}, ${message.subject}, ${message.text}, ${message.kind}, 'pending', ${nowMs}, ${nowMs})
      RETURNING ${this.columns()}`;
    if (!row) throw new Error('INSERT ... RETURNING gave no row');
    return toMail(row);
  }

  async claimDue(nowMs: number, leaseMs: number, limit: number): Promise<OutboxMail[]> {
    const rows = await this.sql<OutboxRow[]>`
      WITH due AS (
        SELECT id FROM mail_outbox
        WHERE (status = 'pending' AND next_attempt_at_ms <= ${nowMs}) OR (status = 'sending' AND lease_expires_at_ms < ${nowMs})
        ORDER BY created_at_ms, id
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED
      )
      UPDATE mail_outbox SET status = 'sending', lease_expires_at_ms = ${nowMs + leaseMs}, attempts = attempts + 1
      WHERE id IN (SELECT id FROM due)
      RETURNING ${this.columns()}`;
    return rows.map(toMail).sort((a, b) => a.createdAtMs - b.createdAtMs);
  }

  async finish(id: string, status: 'sent' | 'kept', nowMs: number): Promise<void> {
    if (!isUuid(id)) return;
    // A sent mail's body is blanked: the secret it carried is the recipient's alone.
    await this.sql`
      UPDATE mail_outbox SET status = ${status}, finished_at_ms = ${nowMs},
        body = CASE WHEN ${status} = 'sent' THEN '' ELSE body END
      WHERE id = ${id} AND status = 'sending'`;
  }

  async retryLater(id: string, nextAttemptAtMs: number, error: string): Promise<void> {
    if (!isUuid(id)) return;
    await this.sql`
      UPDATE mail_outbox SET status = 'pending', next_attempt_at_ms = ${nextAttemptAtMs}, last_error = ${error}, lease_expires_at_ms = 0
      WHERE id = ${id} AND status = 'sending'`;
  }

  async fail(id: string, error: string, nowMs: number): Promise<void> {
    if (!isUuid(id)) return;
    await this.sql`
      UPDATE mail_outbox SET status = 'failed', last_error = ${error}, finished_at_ms = ${nowMs}, body = ''
      WHERE id = ${id} AND status = 'sending'`;
  }

  async listRecent(limit: number): Promise<OutboxMail[]> {
    const rows = await this.sql<OutboxRow[]>`
      SELECT ${this.columns()} FROM mail_outbox ORDER BY created_at_ms DESC, id LIMIT ${limit}`;
    return rows.map(toMail);
  }

  async pruneFinished(beforeMs: number, limit: number): Promise<number> {
    const result = await this.sql`
      DELETE FROM mail_outbox WHERE id IN (
        SELECT id FROM mail_outbox
        WHERE created_at_ms < ${beforeMs} AND status IN ('sent', 'failed', 'kept')
        ORDER BY created_at_ms LIMIT ${limit}
        FOR UPDATE SKIP LOCKED)`;
    return result.count;
  }
}
