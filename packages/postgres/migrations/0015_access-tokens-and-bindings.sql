-- Issue 34, access for teams and automation (docs/access.md).

-- A member's roles per project and environment: a JSON list of {role, project_id?, environment_id?}.
-- NULL: the org role's default (org_admin: admin everywhere, org_member: editor everywhere), which
-- is every existing member, so nothing changes for existing orgs. Only org_member rows carry one.
ALTER TABLE memberships ADD COLUMN IF NOT EXISTS bindings jsonb;

-- API tokens (service accounts): `swy_` + random, stored as the hex SHA-256 of the plaintext like
-- SDK keys. `scope` is {project_ids?, environment_ids?}; {} is the whole org.
CREATE TABLE IF NOT EXISTS api_tokens (
  id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id        uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  name          text NOT NULL,
  role          text NOT NULL CHECK (role IN ('viewer', 'editor', 'admin')),
  scope         jsonb NOT NULL DEFAULT '{}',
  token_prefix  text NOT NULL,
  token_hash    text NOT NULL UNIQUE,
  created_by    uuid REFERENCES users (id) ON DELETE SET NULL,
  created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at    timestamptz,
  revoked_at    timestamptz,
  last_used_at  timestamptz
);
CREATE INDEX IF NOT EXISTS api_tokens_active_by_org ON api_tokens (org_id, created_at) WHERE revoked_at IS NULL;

-- Critical environments: a person's write there needs a confirmation; with require_comment every
-- write needs a comment, kept in the change history entry.
ALTER TABLE environments ADD COLUMN IF NOT EXISTS critical boolean NOT NULL DEFAULT false;
ALTER TABLE environments ADD COLUMN IF NOT EXISTS require_comment boolean NOT NULL DEFAULT false;

-- The change history names an API token as actor (its id in actor, its name in actor_name) and
-- keeps a write's comment.
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS actor_name text;
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS comment text;
ALTER TABLE audit_log DROP CONSTRAINT IF EXISTS audit_log_actor_type;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_actor_type CHECK (actor_type IN ('user', 'sdk_key', 'system', 'api_token'));

-- Identity-provider group mapping: [{group, bindings: [{role, project_id?, environment_id?}]}],
-- applied to the member's bindings at each sign-in through the provider. [] maps nothing.
ALTER TABLE auth_providers ADD COLUMN IF NOT EXISTS group_bindings jsonb NOT NULL DEFAULT '[]';
