import { SMTPServer } from 'smtp-server';

/** One mail as the SMTP server received it, its text decoded. */
export interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
}

export interface SmtpInbox {
  /** `smtp://127.0.0.1:PORT` for SMTP_URL. */
  url: string;
  mails: ReceivedMail[];
  /** The first mail to `to` (with a subject matching `subject`) from the `since`-th on, waiting up to 10 s. */
  waitFor(to: string, since?: number, subject?: RegExp): Promise<ReceivedMail>;
  close(): Promise<void>;
}

/** Quoted-printable as nodemailer writes long lines: soft breaks and =XX escapes. */
const decodeQuotedPrintable = (text: string): string =>
  Buffer.from(text.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8');

function parse(raw: string, from: string, to: string[]): ReceivedMail {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ');
  const body = raw.slice(split + 4);
  const header = (name: string) => new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1] ?? '';
  const encoding = header('Content-Transfer-Encoding').toLowerCase();
  const text = encoding === 'quoted-printable' ? decodeQuotedPrintable(body) : encoding === 'base64' ? Buffer.from(body, 'base64').toString('utf8') : body;
  return { from, to, subject: header('Subject'), text: text.replace(/\r\n/g, '\n') };
}

/**
 * A real SMTP server (the `smtp-server` package) on an ephemeral loopback port, keeping every mail
 * it accepts. No STARTTLS and no authentication: the tests check what the platform sends.
 */
export async function startSmtpInbox(): Promise<SmtpInbox> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const from = session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address;
        mails.push(parse(Buffer.concat(chunks).toString('utf8'), from, session.envelope.rcptTo.map((r) => r.address)));
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const port = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    async waitFor(to, since = 0, subject = /./) {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const found = mails.slice(since).find((mail) => subject.test(mail.subject) && mail.to.some((address) => address.toLowerCase() === to.toLowerCase()));
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no mail to ${to} within 10 s (received: ${mails.map((m) => m.to.join()).join('; ') || 'none'})`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The secret at the end of a console link in a mail: `<PUBLIC_URL>/#/<page>/<token>`. */
export function linkIn(mail: ReceivedMail, publicUrl: string, page: string): { link: string; token: string } {
  const escaped = publicUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`(${escaped}/#/${page}/([A-Za-z0-9_%-]+))`).exec(mail.text);
  if (!match) throw new Error(`no ${page} link on ${publicUrl} in the mail:\n${mail.text}`);
  return { link: match[1]!, token: decodeURIComponent(match[2]!) };
}
