import type { Api } from '../api.ts';
import { formatTime, useLoad } from '../components/common.tsx';

interface OutboxMail {
  mail_id: string;
  to: string;
  subject: string;
  text: string;
  status: string;
  created_at: string;
}

/**
 * The local outbox (development without SMTP_URL): the mails the platform would have sent, for
 * system administrators (GET /v1/admin/mail-outbox). Shows nothing when mail goes out by SMTP.
 */
export function MailOutbox({ api }: { api: Api }) {
  const outbox = useLoad(() => api.get<{ mails: OutboxMail[] }>('/v1/admin/mail-outbox').catch(() => null), []);
  if (!outbox.data) return null;
  return (
    <section aria-label="Local outbox">
      <h2>Local outbox</h2>
      <p class="muted">No SMTP server is configured (SMTP_URL): these are the mails the platform would have sent, newest first.</p>
      {outbox.data.mails.length === 0 && <p>No mail yet.</p>}
      {outbox.data.mails.map((mail) => (
        <details>
          <summary>
            {formatTime(mail.created_at)} · to {mail.to} · {mail.subject}
          </summary>
          <pre>{mail.text}</pre>
        </details>
      ))}
    </section>
  );
}
