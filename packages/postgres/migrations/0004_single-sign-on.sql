-- Single sign-on (docs/sso.md): identity providers per org, the logins in flight, the one-time
-- codes that hand a finished login to the browser app, and which provider subject is which user.

-- A provider's non-secret settings are JSON (oidc: issuer_url, client_id, scopes; saml:
-- idp_metadata_url or idp_metadata_xml, name_id_format, sp_entity_id). The OIDC client secret is
-- kept apart, encrypted (AES-256-GCM under SSO_SECRETS_KEY, bound to the provider's id).
CREATE TABLE IF NOT EXISTS auth_providers (
  id                        uuid PRIMARY KEY,
  org_id                    uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  provider_type             text NOT NULL CHECK (provider_type IN ('oidc', 'saml')),
  display_name              text NOT NULL,
  enabled                   boolean NOT NULL,
  default_role              text NOT NULL CHECK (default_role IN ('org_admin', 'org_member')),
  redirect_uris             jsonb NOT NULL,
  settings                  jsonb NOT NULL,
  client_secret_ciphertext  text,
  created_at_ms             bigint NOT NULL,
  updated_at_ms             bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS auth_providers_by_org ON auth_providers (org_id, created_at_ms);

-- A login between "start" and the provider's answer, found by the hash of its state (OIDC) or
-- RelayState (SAML); single use, minutes long.
CREATE TABLE IF NOT EXISTS sso_pending_logins (
  state_hash       text PRIMARY KEY,
  provider_id      uuid NOT NULL REFERENCES auth_providers (id) ON DELETE CASCADE,
  org_id           uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  redirect_uri     text NOT NULL,
  return_uri       text,
  app_state        text,
  nonce            text,
  code_verifier    text,
  saml_request_id  text,
  created_at_ms    bigint NOT NULL,
  expires_at_ms    bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS sso_pending_logins_by_provider ON sso_pending_logins (provider_id, expires_at_ms);
CREATE INDEX IF NOT EXISTS sso_pending_logins_by_expiry ON sso_pending_logins (expires_at_ms);

-- One-time codes (hash only) exchanged for a login response; 60 seconds, single use.
CREATE TABLE IF NOT EXISTS sso_codes (
  code_hash      text PRIMARY KEY,
  provider_id    uuid NOT NULL REFERENCES auth_providers (id) ON DELETE CASCADE,
  user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  org_id         uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  expires_at_ms  bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS sso_codes_by_expiry ON sso_codes (expires_at_ms);

-- (provider, subject) → account: how a returning user is recognised.
CREATE TABLE IF NOT EXISTS sso_identities (
  provider_id    uuid NOT NULL REFERENCES auth_providers (id) ON DELETE CASCADE,
  subject        text NOT NULL,
  user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at_ms  bigint NOT NULL,
  PRIMARY KEY (provider_id, subject)
);
CREATE INDEX IF NOT EXISTS sso_identities_by_user ON sso_identities (user_id);

-- A session opened by a provider stays in that provider's org (no switching): the org's admins
-- control the provider, so what it vouches for must not reach the account's other orgs.
ALTER TABLE sessions ADD COLUMN IF NOT EXISTS provider_id uuid;
