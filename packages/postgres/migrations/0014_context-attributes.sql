-- Attribute names evaluated contexts used, per environment (docs/contract.md "Context attributes"):
-- the console's rule editor suggests them. Names only, never values. Written in batches with keys'
-- last uses (KeyUsageService); at most 500 rows per environment: each write drops the least
-- recently seen beyond that (docs/security.md "Limits").
CREATE TABLE IF NOT EXISTS context_attributes (
  org_id          uuid NOT NULL,
  project_id      uuid NOT NULL,
  environment_id  uuid NOT NULL,
  context_type    text NOT NULL CHECK (length(context_type) BETWEEN 1 AND 64),
  name            text NOT NULL CHECK (length(name) BETWEEN 1 AND 64),
  last_seen_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, context_type, name),
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS context_attributes_recent ON context_attributes (environment_id, last_seen_at DESC);
