-- Change history (docs/decisions.md "Change history"): who acted (type, id, email), where
-- (project, environment), and the resource before and after; read newest first per org, by
-- resource and by environment.

ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS actor_type text NOT NULL DEFAULT 'user';
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS actor_email text;
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS project_id uuid;
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS environment_id uuid;
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS before jsonb;
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS after jsonb;
-- The append order: breaks ties between equal times, so pages never skip or repeat an entry.
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS seq bigint GENERATED ALWAYS AS IDENTITY;

-- Entries written before: an SDK key acted as `sdk_key:<id>`; the environment sat in details.
UPDATE audit_log SET actor_type = 'sdk_key', actor = substr(actor, 9) WHERE actor LIKE 'sdk\_key:%';
UPDATE audit_log SET environment_id = (details->>'environment_id')::uuid
WHERE details->>'environment_id' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';

ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_type CHECK (actor_type IN ('user', 'sdk_key', 'system'));

DROP INDEX IF EXISTS audit_log_by_org;
CREATE INDEX IF NOT EXISTS audit_log_by_org ON audit_log (org_id, at_ms DESC, seq DESC);
CREATE INDEX IF NOT EXISTS audit_log_by_resource ON audit_log (org_id, resource_type, resource_id, at_ms DESC, seq DESC);
CREATE INDEX IF NOT EXISTS audit_log_by_environment ON audit_log (org_id, environment_id, at_ms DESC, seq DESC) WHERE environment_id IS NOT NULL;
