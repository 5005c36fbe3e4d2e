-- Login sessions (docs/decisions.md "Sessions"): access tokens name their session, refresh tokens
-- rotate inside it, and ending it ends both. Refresh tokens issued before sessions existed belong
-- to none and are dropped: their holders sign in again once.
CREATE TABLE IF NOT EXISTS sessions (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  org_id         uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  created_at_ms  bigint NOT NULL,
  expires_at_ms  bigint NOT NULL,
  ended_at_ms    bigint
);
CREATE INDEX IF NOT EXISTS sessions_live_by_user ON sessions (user_id) WHERE ended_at_ms IS NULL;
CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (expires_at_ms);

DELETE FROM refresh_tokens;
ALTER TABLE refresh_tokens ADD COLUMN IF NOT EXISTS session_id uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE;
CREATE INDEX IF NOT EXISTS refresh_tokens_by_session ON refresh_tokens (session_id);

-- Invitations to join an org, accepted by the account holder (docs/decisions.md "Invitations").
CREATE TABLE IF NOT EXISTS invitations (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id          uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  email           text NOT NULL,
  role            text NOT NULL CHECK (role IN ('org_admin', 'org_member')),
  token_hash      text NOT NULL UNIQUE,
  created_at_ms   bigint NOT NULL,
  expires_at_ms   bigint NOT NULL,
  accepted_at_ms  bigint
);
CREATE INDEX IF NOT EXISTS invitations_by_org ON invitations (org_id, created_at_ms DESC);
