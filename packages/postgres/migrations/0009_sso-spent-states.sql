-- Browser sign-ins keep their login in flight in the browser, sealed in a cookie (docs/sso.md
-- "The browser flow"), so a flood of starts stores nothing here. What the server keeps is the
-- hash of each state an identity provider's answer has spent, until the sealed login would have
-- expired anyway: that makes every answer single use. The pruner deletes the expired ones.
CREATE TABLE IF NOT EXISTS sso_spent_states (
  state_hash     text PRIMARY KEY,
  expires_at_ms  bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS sso_spent_states_by_expiry ON sso_spent_states (expires_at_ms);
