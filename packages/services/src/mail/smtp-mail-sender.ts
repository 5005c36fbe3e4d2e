import { createTransport, type Transporter } from 'nodemailer';
import SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { MailMessage, MailSender } from '@switchyard/core';

export interface SmtpMailSenderOptions {
  /** SMTP_URL: `smtp://user:password@host:587` (STARTTLS when offered) or `smtps://...:465`. */
  url: string;
  /** SMTP_FROM: the sender address of every mail. */
  from: string;
  /** Connect, greeting and idle-socket limit of one delivery (default 10 s): a stuck server never holds the worker. */
  timeoutMs?: number;
}

/**
 * MailSender over SMTP with nodemailer: the adapter of the mail port (packages/core
 * ports/mail-ports.ts). One connection per mail (no pool): mails are few and the worker sends them
 * one at a time, so there is nothing idle to keep open or to go stale.
 */
export class SmtpMailSender implements MailSender {
  private readonly transport: Transporter;

  constructor(private readonly options: SmtpMailSenderOptions) {
    const timeoutMs = options.timeoutMs ?? 10_000;
    this.transport = createTransport(
      new SMTPTransport({ url: options.url, connectionTimeout: timeoutMs, greetingTimeout: timeoutMs, socketTimeout: timeoutMs }),
    );
  }

  async send(message: MailMessage): Promise<void> {
    await this.transport.sendMail({ from: this.options.from, to: message.to, subject: message.subject, text: message.text });
  }

  close(): void {
    this.transport.close();
  }
}
