import type { AccountToken, AccountTokenPurpose, AccountTokenRepository, MailKind, MailMessage, MailOutboxRepository, OutboxMail } from '../ports/mail-ports.ts';
import type { InMemoryState } from './in-memory-state.ts';

const copy = ({ leaseExpiresAtMs: _lease, ...mail }: OutboxMail & { leaseExpiresAtMs: number }): OutboxMail => ({ ...mail });

/** MailOutboxRepository over the shared in-memory tables (no await between check and write: atomic). */
export class InMemoryMailOutboxRepository implements MailOutboxRepository {
  constructor(private readonly state: InMemoryState) {}

  async enqueue(message: MailMessage & { kind: MailKind }, nowMs: number): Promise<OutboxMail> {
    const mail = {
      id: this.state.newId(),
      to: message.to,
      subject: message.subject,
      text: message.text,
      kind: message.kind,
      status: 'pending' as const,
      attempts: 0,
      nextAttemptAtMs: nowMs,
      lastError: '',
      createdAtMs: nowMs,
      finishedAtMs: null,
      leaseExpiresAtMs: 0,
    };
    this.state.mailOutbox.set(mail.id, mail);
    return copy(mail);
  }

  async claimDue(nowMs: number, leaseMs: number, limit: number): Promise<OutboxMail[]> {
    const due = [...this.state.mailOutbox.values()]
      .filter((m) => (m.status === 'pending' && m.nextAttemptAtMs <= nowMs) || (m.status === 'sending' && m.leaseExpiresAtMs < nowMs))
      .sort((a, b) => a.createdAtMs - b.createdAtMs)
      .slice(0, Math.max(0, limit));
    for (const mail of due) {
      mail.status = 'sending';
      mail.leaseExpiresAtMs = nowMs + leaseMs;
      mail.attempts += 1;
    }
    return due.map(copy);
  }

  async finish(id: string, status: 'sent' | 'kept', nowMs: number): Promise<void> {
    const mail = this.state.mailOutbox.get(id);
    if (!mail) return;
    mail.status = status;
    mail.finishedAtMs = nowMs;
    if (status === 'sent') mail.text = '';
  }

  async retryLater(id: string, nextAttemptAtMs: number, error: string): Promise<void> {
    const mail = this.state.mailOutbox.get(id);
    if (!mail) return;
    Object.assign(mail, { status: 'pending', nextAttemptAtMs, lastError: error, leaseExpiresAtMs: 0 });
  }

  async fail(id: string, error: string, nowMs: number): Promise<void> {
    const mail = this.state.mailOutbox.get(id);
    if (!mail) return;
    Object.assign(mail, { status: 'failed', lastError: error, finishedAtMs: nowMs, text: '' });
  }

  async listRecent(limit: number): Promise<OutboxMail[]> {
    return [...this.state.mailOutbox.values()].sort((a, b) => b.createdAtMs - a.createdAtMs).slice(0, Math.max(0, limit)).map(copy);
  }

  async pruneFinished(beforeMs: number, limit: number): Promise<number> {
    const gone = [...this.state.mailOutbox.values()]
      .filter((m) => m.createdAtMs < beforeMs && (m.status === 'sent' || m.status === 'failed' || m.status === 'kept'))
      .slice(0, Math.max(0, limit));
    for (const mail of gone) this.state.mailOutbox.delete(mail.id);
    return gone.length;
  }
}

/** AccountTokenRepository over the shared in-memory tables; only hashes are stored. */
export class InMemoryAccountTokenRepository implements AccountTokenRepository {
  constructor(private readonly state: InMemoryState) {}

  async create(input: { tokenHash: string; purpose: AccountTokenPurpose; userId: string; email: string; expiresAtMs: number }, nowMs: number): Promise<AccountToken> {
    const token = { purpose: input.purpose, userId: input.userId, email: input.email, createdAtMs: nowMs, expiresAtMs: input.expiresAtMs, usedAtMs: null };
    this.state.accountTokens.set(input.tokenHash, token);
    const { usedAtMs: _used, ...answer } = token;
    return answer;
  }

  async consume(tokenHash: string, purpose: AccountTokenPurpose, nowMs: number): Promise<AccountToken | null> {
    const token = this.state.accountTokens.get(tokenHash);
    if (!token || token.purpose !== purpose || token.usedAtMs !== null || token.expiresAtMs <= nowMs) return null;
    token.usedAtMs = nowMs;
    const { usedAtMs: _used, ...answer } = token;
    return answer;
  }

  async revokeAll(userId: string, purpose: AccountTokenPurpose, nowMs: number): Promise<number> {
    let count = 0;
    for (const token of this.state.accountTokens.values()) {
      if (token.userId === userId && token.purpose === purpose && token.usedAtMs === null) {
        token.usedAtMs = nowMs;
        count += 1;
      }
    }
    return count;
  }

  async pruneExpired(nowMs: number, limit: number): Promise<number> {
    const gone = [...this.state.accountTokens.entries()].filter(([, t]) => t.expiresAtMs <= nowMs).slice(0, Math.max(0, limit));
    for (const [hash] of gone) this.state.accountTokens.delete(hash);
    return gone.length;
  }
}
