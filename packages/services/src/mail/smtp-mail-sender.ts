import type { Transporter } from 'nodemailer';
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
 * one at a time, so there is nothing idle to keep open or to go stale. nodemailer (~0.1 s of CPU to
 * load) is loaded by the first mail, not when the server starts (SMTP_URL was checked by the config).
 */
export class SmtpMailSender implements MailSender {
  private transport: Promise<Transporter> | null = null;

  constructor(private readonly options: SmtpMailSenderOptions) {}

  async send(message: MailMessage): Promise<void> {
    this.transport ??= this.createTransport();
    await (await this.transport).sendMail({ from: this.options.from, to: message.to, subject: message.subject, text: message.text });
  }

  close(): void {
    void this.transport?.then((transport) => transport.close(), () => {});
  }

  private async createTransport(): Promise<Transporter> {
    const [{ createTransport }, { default: SMTPTransport }] = await Promise.all([import('nodemailer'), import('nodemailer/lib/smtp-transport/index.js')]);
    const timeoutMs = this.options.timeoutMs ?? 10_000;
    return createTransport(new SMTPTransport({ url: this.options.url, connectionTimeout: timeoutMs, greetingTimeout: timeoutMs, socketTimeout: timeoutMs }));
  }
}
