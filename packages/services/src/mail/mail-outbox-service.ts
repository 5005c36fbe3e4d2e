import { DomainError, type OutboxMail, type Principal, type Repositories } from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import type { MailDelivery } from './mail-settings.ts';

/** Mails one listing answers: the newest, enough for a developer following a link. */
export const LOCAL_OUTBOX_LIMIT = 100;

/** A mail of the local outbox as REST answers it. */
export interface OutboxMailRecord {
  mail_id: string;
  to: string;
  subject: string;
  text: string;
  kind: OutboxMail['kind'];
  status: OutboxMail['status'];
  created_at: string;
}

/**
 * The local outbox (development without SMTP_URL): the mails the platform would have sent, for
 * system administrators only, since they carry other people's sign-in links. Unavailable once
 * mail goes out by SMTP or in production (FAILED_PRECONDITION).
 */
export class MailOutboxService {
  constructor(
    private readonly repos: Pick<Repositories, 'mailOutbox'>,
    private readonly delivery: MailDelivery,
  ) {}

  async listLocalOutbox(principal: Principal): Promise<OutboxMailRecord[]> {
    requireAllowed(principal, 'admin.manage', { orgId: principal.orgId });
    if (this.delivery !== 'local-outbox') {
      throw new DomainError('FAILED_PRECONDITION', 'the local outbox exists only in development without SMTP_URL');
    }
    return (await this.repos.mailOutbox.listRecent(LOCAL_OUTBOX_LIMIT)).map((mail) => ({
      mail_id: mail.id,
      to: mail.to,
      subject: mail.subject,
      text: mail.text,
      kind: mail.kind,
      status: mail.status,
      created_at: new Date(mail.createdAtMs).toISOString(),
    }));
  }
}
