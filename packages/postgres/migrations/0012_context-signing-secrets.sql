-- Signed contexts (docs/client-side.md "4. Signed contexts"): per environment, the secrets a
-- customer's backend signs context tokens with (HS256). Several at a time, so a secret can be
-- rotated with overlap. HS256 needs the plaintext to verify, so the secret is stored sealed
-- (AES-256-GCM under SSO_SECRETS_KEY, bound to its kid: services/src/sso/secret-box.ts), never hashed.
CREATE TABLE IF NOT EXISTS context_signing_secrets (
  kid             text PRIMARY KEY,             -- '<environment_id>.<random>': names its environment
  org_id          uuid NOT NULL,
  project_id      uuid NOT NULL,
  environment_id  uuid NOT NULL,
  sealed_secret   text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS context_signing_secrets_by_env ON context_signing_secrets (environment_id);
