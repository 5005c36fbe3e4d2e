-- Browser and mobile apps (docs/client-side.md): client keys beside server keys, what a client may
-- see of a flag, and which events a client may send.

-- A key's kind: 'server' (every key so far: sync, evaluation, ingest, list-check) or 'client'
-- (ships inside a browser page or an app binary: OFREP for client-visible flags only, and
-- restricted exposures and events). Client settings are meaningless on server keys and stay default.
ALTER TABLE sdk_keys ADD COLUMN IF NOT EXISTS kind text NOT NULL DEFAULT 'server' CHECK (kind IN ('server', 'client'));
ALTER TABLE sdk_keys ADD COLUMN IF NOT EXISTS name text NOT NULL DEFAULT '';
ALTER TABLE sdk_keys ADD COLUMN IF NOT EXISTS allowed_origins text[] NOT NULL DEFAULT '{}';
ALTER TABLE sdk_keys ADD COLUMN IF NOT EXISTS allow_missing_origin boolean NOT NULL DEFAULT false;
ALTER TABLE sdk_keys ADD COLUMN IF NOT EXISTS context_signing text NOT NULL DEFAULT 'off' CHECK (context_signing IN ('off', 'key', 'context'));
ALTER TABLE sdk_keys ADD COLUMN IF NOT EXISTS include_disabled boolean NOT NULL DEFAULT false;
ALTER TABLE sdk_keys ADD COLUMN IF NOT EXISTS expires_at timestamptz;

-- Whether client keys may evaluate the flag (project-level, like the rest of the definition).
-- Existing flags stay hidden: nothing reaches a browser that was not chosen to.
ALTER TABLE flags ADD COLUMN IF NOT EXISTS client_visible boolean NOT NULL DEFAULT false;
-- The project's default for new flags' client_visible.
ALTER TABLE projects ADD COLUMN IF NOT EXISTS client_visible_default boolean NOT NULL DEFAULT false;
-- Whether client keys may send this event.
ALTER TABLE event_definitions ADD COLUMN IF NOT EXISTS client_allowed boolean NOT NULL DEFAULT false;
