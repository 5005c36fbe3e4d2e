-- Email delivery and proof of address control (docs/security.md "Email addresses belong to whoever
-- proves control of them").

-- An address is verified once its holder proved control of it (an emailed link); until then an
-- account made by an admin or an identity provider can be claimed by the real holder.
ALTER TABLE users ADD COLUMN IF NOT EXISTS email_verified_at_ms bigint;
-- The platform's administrators (system org members) were configured by the operator: verified,
-- so that no reset or claim can take the system org from them.
UPDATE users SET email_verified_at_ms = floor(extract(epoch FROM clock_timestamp()) * 1000)::int8
WHERE email_verified_at_ms IS NULL
  AND id IN (SELECT m.user_id FROM memberships m JOIN orgs o ON o.id = m.org_id WHERE o.is_system);

-- Whether accepting an invitation proves control of its address: decided when it is created (its
-- link mailed to the invitee only). Invitations from before were handed to their inviters.
ALTER TABLE invitations ADD COLUMN IF NOT EXISTS proves_address boolean NOT NULL DEFAULT false;

-- Mails waiting to be sent, written in the same transaction as what they announce and drained by
-- the mail worker (leases, SKIP LOCKED, retries with backoff). Without SMTP_URL (development) they
-- are kept here as the local outbox. The body holds a link with a secret: it is blanked once sent.
CREATE TABLE IF NOT EXISTS mail_outbox (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  recipient            text NOT NULL,
  subject              text NOT NULL,
  body                 text NOT NULL,
  kind                 text NOT NULL,
  status               text NOT NULL CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'kept')),
  attempts             integer NOT NULL DEFAULT 0,
  next_attempt_at_ms   bigint NOT NULL,
  lease_expires_at_ms  bigint NOT NULL DEFAULT 0,
  last_error           text NOT NULL DEFAULT '',
  created_at_ms        bigint NOT NULL,
  finished_at_ms       bigint
);
CREATE INDEX IF NOT EXISTS mail_outbox_due ON mail_outbox (next_attempt_at_ms) WHERE status IN ('pending', 'sending');
CREATE INDEX IF NOT EXISTS mail_outbox_by_age ON mail_outbox (created_at_ms);

-- Single-use secrets sent by mail (password reset, address verification), hash only.
CREATE TABLE IF NOT EXISTS account_tokens (
  token_hash     text PRIMARY KEY,
  purpose        text NOT NULL CHECK (purpose IN ('password_reset', 'verify_email')),
  user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  email          text NOT NULL,
  created_at_ms  bigint NOT NULL,
  expires_at_ms  bigint NOT NULL,
  used_at_ms     bigint
);
CREATE INDEX IF NOT EXISTS account_tokens_by_user ON account_tokens (user_id, purpose);
CREATE INDEX IF NOT EXISTS account_tokens_by_expiry ON account_tokens (expires_at_ms);

-- Domains an org proved it controls (a DNS TXT record): its identity providers' assertions about
-- addresses of a verified domain count as proof of those addresses. A domain is verified for one
-- org at a time.
CREATE TABLE IF NOT EXISTS org_domains (
  org_id          uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  domain          text NOT NULL,
  challenge       text NOT NULL,
  created_at_ms   bigint NOT NULL,
  verified_at_ms  bigint,
  PRIMARY KEY (org_id, domain)
);
CREATE UNIQUE INDEX IF NOT EXISTS org_domains_verified_once ON org_domains (domain) WHERE verified_at_ms IS NOT NULL;
