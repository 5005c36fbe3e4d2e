-- Who created and changed invitations and identity providers, so that removing or demoting an
-- admin withdraws what it left behind (docs/security.md "Removed and demoted admins"), and the
-- second admin's confirmation a provider that grants org_admin or links existing accounts needs.
-- Rows from before this migration have no recorded author (NULL, an empty list).

-- The creator of an invitation (its email as it was then, as the audit log keeps it).
ALTER TABLE invitations ADD COLUMN IF NOT EXISTS created_by_user_id uuid;
ALTER TABLE invitations ADD COLUMN IF NOT EXISTS created_by_email text;
-- A demoted or removed admin's pending invitations, found without a scan of the org's.
CREATE INDEX IF NOT EXISTS invitations_pending_by_creator ON invitations (org_id, created_by_user_id) WHERE accepted_at_ms IS NULL;

-- link_existing_accounts: whether the provider may bind an existing member by its email (it did
-- always before; it stays so for existing providers). enable_requested_by_*: set while the
-- provider waits for a second admin's confirmation (enabled is then false). written_by_user_ids:
-- every account that created or changed the provider's settings.
ALTER TABLE auth_providers ADD COLUMN IF NOT EXISTS link_existing_accounts boolean NOT NULL DEFAULT true;
ALTER TABLE auth_providers ADD COLUMN IF NOT EXISTS enable_requested_by_user_id uuid;
ALTER TABLE auth_providers ADD COLUMN IF NOT EXISTS enable_requested_by_email text;
ALTER TABLE auth_providers ADD COLUMN IF NOT EXISTS created_by_user_id uuid;
ALTER TABLE auth_providers ADD COLUMN IF NOT EXISTS created_by_email text;
ALTER TABLE auth_providers ADD COLUMN IF NOT EXISTS updated_by_user_id uuid;
ALTER TABLE auth_providers ADD COLUMN IF NOT EXISTS updated_by_email text;
ALTER TABLE auth_providers ADD COLUMN IF NOT EXISTS written_by_user_ids uuid[] NOT NULL DEFAULT '{}';
ALTER TABLE auth_providers ADD COLUMN IF NOT EXISTS last_used_at_ms bigint;

-- Disabling or deleting a provider ends the live sessions it opened.
CREATE INDEX IF NOT EXISTS sessions_live_by_provider ON sessions (provider_id) WHERE ended_at_ms IS NULL AND provider_id IS NOT NULL;
