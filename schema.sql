-- The full current schema of the platform (PostgreSQL 14+).
--
-- A new database gets this file as its baseline (migration version 1); later changes are added
-- as numbered files in packages/postgres/migrations/ AND folded into this file, and a test checks
-- that both paths produce the same catalog. Every statement is idempotent.
--
-- Tenancy: org -> project -> environment. Every tenant-owned row carries org_id (and project_id /
-- environment_id where they apply) so that each query can be scoped in its WHERE clause, and
-- composite foreign keys make a row's ids agree with its parent's.

CREATE TABLE IF NOT EXISTS orgs (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  name        text NOT NULL UNIQUE,
  is_system   boolean NOT NULL DEFAULT false,
  created_at  timestamptz NOT NULL DEFAULT now()
);
-- At most one system org.
CREATE UNIQUE INDEX IF NOT EXISTS orgs_one_system ON orgs (is_system) WHERE is_system;

CREATE TABLE IF NOT EXISTS users (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  email          text NOT NULL,
  display_name   text NOT NULL,
  password_hash  text NOT NULL,               -- bcrypt; never returned
  created_at     timestamptz NOT NULL DEFAULT now(),
  -- Set once the holder proved control of the address (an emailed link); until then the account
  -- can be claimed by the real holder (docs/security.md).
  email_verified_at_ms bigint
);
CREATE UNIQUE INDEX IF NOT EXISTS users_email_ci ON users (lower(email));

CREATE TABLE IF NOT EXISTS memberships (
  org_id      uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  user_id     uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role        text NOT NULL CHECK (role IN ('org_admin', 'org_member')),
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- An org_member's roles per project and environment, [{role, project_id?, environment_id?}];
  -- NULL: the org role's default (docs/access.md "Roles and bindings").
  bindings    jsonb,
  PRIMARY KEY (org_id, user_id)
);
CREATE INDEX IF NOT EXISTS memberships_by_user ON memberships (user_id, created_at);

CREATE TABLE IF NOT EXISTS projects (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id      uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- The default of new flags' client_visible (docs/client-side.md).
  client_visible_default boolean NOT NULL DEFAULT false,
  -- Lifecycle thresholds in days (docs/insights.md "Statuses and lifecycle stages").
  lifecycle_status_window_days integer NOT NULL DEFAULT 7 CHECK (lifecycle_status_window_days BETWEEN 1 AND 365),
  lifecycle_code_removal_min_age_days integer NOT NULL DEFAULT 30 CHECK (lifecycle_code_removal_min_age_days BETWEEN 1 AND 365),
  lifecycle_archive_after_days integer NOT NULL DEFAULT 30 CHECK (lifecycle_archive_after_days BETWEEN 1 AND 365),
  lifecycle_unchanged_fallback_days integer NOT NULL DEFAULT 14 CHECK (lifecycle_unchanged_fallback_days BETWEEN 1 AND 365),
  UNIQUE (org_id, name),
  UNIQUE (id, org_id)
);

CREATE TABLE IF NOT EXISTS environments (
  id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id      uuid NOT NULL,
  project_id  uuid NOT NULL,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- A person's write here needs a confirmation; with require_comment every write needs a comment.
  critical         boolean NOT NULL DEFAULT false,
  require_comment  boolean NOT NULL DEFAULT false,
  UNIQUE (project_id, name),
  UNIQUE (id, project_id, org_id),
  FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS sdk_keys (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id          uuid NOT NULL,
  project_id      uuid NOT NULL,
  environment_id  uuid NOT NULL,
  key_prefix      text NOT NULL,
  key_hash        text NOT NULL UNIQUE,        -- hex SHA-256 of the plaintext; the plaintext is never stored
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  revoked_at      timestamptz,
  -- 'server' keys (sync, evaluation, ingest, list-check) or 'client' keys shipped in browsers and
  -- apps (docs/client-side.md); the settings below apply to client keys only.
  kind                  text NOT NULL DEFAULT 'server' CHECK (kind IN ('server', 'client')),
  name                  text NOT NULL DEFAULT '',
  allowed_origins       text[] NOT NULL DEFAULT '{}',
  allow_missing_origin  boolean NOT NULL DEFAULT false,
  context_signing       text NOT NULL DEFAULT 'off' CHECK (context_signing IN ('off', 'key', 'context')),
  include_disabled      boolean NOT NULL DEFAULT false,
  expires_at            timestamptz,
  -- When the key last opened a sync stream or evaluated (at most once a minute per key); null: never.
  last_used_at          timestamptz,
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS sdk_keys_active_by_env ON sdk_keys (environment_id) WHERE revoked_at IS NULL;

-- API tokens (docs/access.md "API tokens"): `swy_` + random, stored as the hex SHA-256 of the
-- plaintext like SDK keys. `scope` is {project_ids?, environment_ids?}; {} is the whole org.
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

-- Signed contexts (docs/client-side.md "4. Signed contexts"): per environment, the secrets a
-- customer's backend signs context tokens with (HS256), several at a time for rotation. Stored
-- sealed (AES-256-GCM under SSO_SECRETS_KEY, bound to the kid), since verification needs the plaintext.
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

-- Attribute names evaluated contexts used, per environment (the console's rule editor suggests
-- them): names only, never values; at most 500 per environment, the least recently seen dropped.
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

-- Flags: the definition is project-level ...
CREATE TABLE IF NOT EXISTS flags (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id       uuid NOT NULL,
  project_id   uuid NOT NULL,
  key          text NOT NULL,
  description  text NOT NULL DEFAULT '',
  value_type   text NOT NULL CHECK (value_type IN ('bool', 'int', 'double', 'string', 'json')),
  variants     jsonb NOT NULL DEFAULT '[]',
  archived     boolean NOT NULL DEFAULT false,
  version      bigint NOT NULL DEFAULT 1,
  created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- Whether client keys may evaluate it (docs/client-side.md).
  client_visible boolean NOT NULL DEFAULT false,
  -- Project-level metadata (docs/contract.md "Flags and evaluation"): tags sorted and de-duplicated.
  tags         jsonb NOT NULL DEFAULT '[]',
  lifetime     text NOT NULL DEFAULT 'permanent' CHECK (lifetime IN ('temporary', 'permanent')),
  maintainer   text,
  -- What a split's bucket depends on: 'project' leaves the environment id out of the hash input.
  bucket_by    text NOT NULL DEFAULT 'environment' CHECK (bucket_by IN ('environment', 'project')),
  UNIQUE (project_id, key),
  FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE
);

-- ... and its state per environment (rows created on first write; absent = disabled, no rules).
CREATE TABLE IF NOT EXISTS flag_environment_states (
  flag_id          uuid NOT NULL REFERENCES flags (id) ON DELETE CASCADE,
  org_id           uuid NOT NULL,
  project_id       uuid NOT NULL,
  environment_id   uuid NOT NULL,
  enabled          boolean NOT NULL DEFAULT false,
  off_variant_key  text,
  rules            jsonb NOT NULL DEFAULT '[]',
  hashing          jsonb NOT NULL DEFAULT '[]',
  version          bigint NOT NULL DEFAULT 1,
  updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- [{flag_key, variant_keys}]: the flags this one depends on here (docs/contract.md "Prerequisites").
  prerequisites    jsonb NOT NULL DEFAULT '[]',
  PRIMARY KEY (environment_id, flag_id),
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS segments (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id          uuid NOT NULL,
  project_id      uuid NOT NULL,
  environment_id  uuid NOT NULL,
  key             text NOT NULL,
  context_type    text NOT NULL,
  kind            text NOT NULL CHECK (kind IN ('list', 'rule')),
  description     text NOT NULL DEFAULT '',
  conditions      jsonb NOT NULL DEFAULT '[]',
  included_count  bigint NOT NULL DEFAULT 0,
  excluded_count  bigint NOT NULL DEFAULT 0,
  version         bigint NOT NULL DEFAULT 1,
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  UNIQUE (environment_id, key),
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);

-- List-segment members: one row per (segment, key, list). The primary key answers
-- "is key K in segment S" with one index probe; the second index pages a list in key order.
-- COLLATE "C": key order is byte (code point) order whatever the database locale, so the paging
-- index serves ORDER BY/cursor comparisons directly and every adapter pages in the same order.
CREATE TABLE IF NOT EXISTS segment_members (
  segment_id   uuid NOT NULL REFERENCES segments (id) ON DELETE CASCADE,
  context_key  text COLLATE "C" NOT NULL,
  list         text NOT NULL CHECK (list IN ('included', 'excluded')),
  PRIMARY KEY (segment_id, context_key, list)
);
CREATE INDEX IF NOT EXISTS segment_members_paging ON segment_members (segment_id, list, context_key);

CREATE TABLE IF NOT EXISTS event_definitions (
  org_id          uuid NOT NULL,
  project_id      uuid NOT NULL,
  environment_id  uuid NOT NULL,
  key             text NOT NULL,
  description     text NOT NULL DEFAULT '',
  value_type      text NOT NULL CHECK (value_type IN ('bool', 'int', 'double')),
  created_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- Whether client keys may send it (docs/client-side.md).
  client_allowed  boolean NOT NULL DEFAULT false,
  PRIMARY KEY (environment_id, key),
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);

-- Metric events: append-only, partitioned by receipt time. The maintenance run creates a
-- partition per UTC day ahead and drops whole partitions past EVENT_RETENTION_DAYS
-- (packages/services/src/maintenance/ingest-retention.ts); the default partition only catches
-- rows no day partition covers, and the next run turns those into a range partition.
-- No foreign keys (they would slow ingest and block partition detach); rows carry their tenant ids.
CREATE TABLE IF NOT EXISTS events (
  org_id          uuid NOT NULL,
  environment_id  uuid NOT NULL,
  metric_key      text NOT NULL,
  context_type    text NOT NULL,
  context_key     text NOT NULL,
  value           double precision NOT NULL,   -- bool stored as 1/0
  timestamp_ms    bigint NOT NULL,             -- client time (defaults to receipt time)
  received_at_ms  bigint NOT NULL
) PARTITION BY RANGE (received_at_ms);
CREATE TABLE IF NOT EXISTS events_default PARTITION OF events DEFAULT;
-- Per-experiment aggregation: events of one environment and metric, per context, in a time window.
-- Covering (timestamp_ms, org_id, value included): the stats aggregation reads it in order with an
-- index-only scan, checks the window on the index tuple and sums each context's events without a
-- sort or a hash table (see docs/decisions.md). The keys end at context_key, so a context's new
-- events go to the end of its run of equal keys: cheaper inserts (migration 0016).
CREATE INDEX IF NOT EXISTS events_by_metric ON events (environment_id, metric_key, context_type, context_key) INCLUDE (timestamp_ms, org_id, value);
-- "Did anything arrive after the results were computed" (is_stale): rows are appended in receipt
-- order, so a BRIN index (a few pages) finds the newest ones without reading the rest.
CREATE INDEX IF NOT EXISTS events_by_receipt ON events USING brin (received_at_ms);

CREATE TABLE IF NOT EXISTS exposures (
  org_id          uuid NOT NULL,
  environment_id  uuid NOT NULL,
  flag_key        text NOT NULL,
  variant_key     text NOT NULL,
  context_type    text NOT NULL,
  context_key     text NOT NULL,
  timestamp_ms    bigint NOT NULL,
  received_at_ms  bigint NOT NULL,
  -- The rule whose percentage allocation served the variant; '' when none did; NULL when the
  -- client did not say (older SDKs): such exposures count for any experiment on the flag.
  rule_id         text
) PARTITION BY RANGE (received_at_ms);
CREATE TABLE IF NOT EXISTS exposures_default PARTITION OF exposures DEFAULT;
-- Covering too: each context's first exposure (ties broken by variant key) straight from index order.
CREATE INDEX IF NOT EXISTS exposures_by_flag ON exposures (environment_id, flag_key, context_type, context_key, timestamp_ms, variant_key) INCLUDE (org_id, rule_id);
CREATE INDEX IF NOT EXISTS exposures_by_receipt ON exposures USING brin (received_at_ms);

-- Rows per environment per partition of events and exposures, as last counted by the
-- maintenance run (the quota reads their sum once a minute, never per request). A final count
-- (a partition whose range has passed) is never counted again; environment_id is null only on
-- the marker of a final partition that held no row.
CREATE TABLE IF NOT EXISTS ingest_row_counts (
  partition_name  text NOT NULL,
  table_name      text NOT NULL CHECK (table_name IN ('events', 'exposures')),
  environment_id  uuid,
  row_count       bigint NOT NULL,
  is_final        boolean NOT NULL
);
CREATE INDEX IF NOT EXISTS ingest_row_counts_by_partition ON ingest_row_counts (partition_name);

-- Answers to batch requests that carried an Idempotency-Key, kept 24 hours.
CREATE TABLE IF NOT EXISTS idempotency_keys (
  environment_id  uuid NOT NULL,
  key             text NOT NULL,
  answer          jsonb NOT NULL,
  expires_at_ms   bigint NOT NULL,
  PRIMARY KEY (environment_id, key)
);
-- The pruner deletes expired answers in batches, oldest expiry first.
CREATE INDEX IF NOT EXISTS idempotency_keys_by_expiry ON idempotency_keys (expires_at_ms);

CREATE TABLE IF NOT EXISTS experiments (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id              uuid NOT NULL,
  project_id          uuid NOT NULL,
  environment_id      uuid NOT NULL,
  name                text NOT NULL DEFAULT '',
  description         text NOT NULL DEFAULT '',
  flag_key            text NOT NULL DEFAULT '',
  status              text NOT NULL DEFAULT 'EXPERIMENT_STATUS_DRAFT',
  variant_keys        text[] NOT NULL DEFAULT '{}',
  metric_keys         text[] NOT NULL DEFAULT '{}',
  traffic_allocation  double precision NOT NULL DEFAULT 1 CHECK (traffic_allocation >= 0 AND traffic_allocation <= 1),
  version             bigint NOT NULL DEFAULT 1,
  created_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  -- The flag rule the experiment studies; NULL: the flag's first rule allocating over the variants.
  rule_id             text,
  control_variant_key text NOT NULL,
  -- core's ExperimentMetric[] (metric_keys are their keys) and AnalysisSettings, as jsonb.
  metrics             jsonb NOT NULL,
  analysis            jsonb NOT NULL,
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS experiments_by_env ON experiments (environment_id, created_at);
CREATE INDEX IF NOT EXISTS experiments_active ON experiments (status) WHERE status = 'EXPERIMENT_STATUS_ACTIVE';

CREATE TABLE IF NOT EXISTS experiment_iterations (
  id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  experiment_id       uuid NOT NULL REFERENCES experiments (id) ON DELETE CASCADE,
  iteration_number    integer NOT NULL,
  started_at_ms       bigint NOT NULL,
  ended_at_ms         bigint NOT NULL DEFAULT 0,   -- 0 while running
  metric_keys         text[] NOT NULL DEFAULT '{}',
  traffic_allocation  double precision NOT NULL DEFAULT 1,
  UNIQUE (experiment_id, iteration_number)
);

CREATE TABLE IF NOT EXISTS experiment_results (
  experiment_id       uuid PRIMARY KEY REFERENCES experiments (id) ON DELETE CASCADE,
  org_id              uuid NOT NULL,
  environment_id      uuid NOT NULL,
  iteration_id        uuid,
  variant_results     jsonb NOT NULL DEFAULT '[]',
  srm_p_value         double precision,
  computed_at_ms      bigint NOT NULL,
  next_run_at_ms      bigint NOT NULL DEFAULT 0,
  computation_status  text NOT NULL,
  -- NULL in results computed before metric definitions.
  srm_warning         boolean,
  analysis            jsonb,
  -- What the stats worker carries across its looks at the running iteration (sequential states,
  -- guardrails, sequential SRM; core's ExperimentRunningState); never sent to clients.
  running_state       jsonb,
  -- The sequential SRM check's always-valid p-value; NULL in results stored before it.
  sequential_srm_p_value double precision
);

-- Each running iteration's participants with their metric values, kept between
-- recomputes by the stats worker so that a recompute reads again only the participants whose
-- exposures or events arrived since the last one (docs/statistics.md "Incremental aggregation").
-- Derived data: dropping a set (or its rows) only makes the next recompute rebuild it.

-- One row per maintained iteration: what its participant rows were computed for (`definition`:
-- the flag, rule, variants, window start and metric sources, as text) and the database clock at
-- the start of the pass that last brought them up to date.
CREATE TABLE IF NOT EXISTS experiment_participant_sets (
  iteration_id    uuid PRIMARY KEY REFERENCES experiment_iterations (id) ON DELETE CASCADE,
  org_id          uuid NOT NULL,
  environment_id  uuid NOT NULL,
  definition      text NOT NULL,
  watermark_ms    bigint NOT NULL
);

-- A participant (the context of a first exposure by the studied rule in the window), the variant
-- of that exposure and its metric variables in the set's layout (NULL: a `mean` without events).
-- No foreign key: checking one per row would cost seconds per million participants; the trigger
-- below removes the rows with their set.
CREATE TABLE IF NOT EXISTS experiment_participants (
  iteration_id  uuid NOT NULL,
  context_type  text NOT NULL,
  context_key   text NOT NULL,
  variant_key   text NOT NULL,
  vals          double precision[] NOT NULL,
  PRIMARY KEY (iteration_id, context_type, context_key)
);

CREATE OR REPLACE FUNCTION experiment_participant_sets_drop_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM experiment_participants WHERE iteration_id = OLD.iteration_id;
  RETURN OLD;
END $$;
DROP TRIGGER IF EXISTS experiment_participant_sets_drop_rows ON experiment_participant_sets;
CREATE TRIGGER experiment_participant_sets_drop_rows AFTER DELETE ON experiment_participant_sets
  FOR EACH ROW EXECUTE FUNCTION experiment_participant_sets_drop_rows();

-- Recompute jobs. No foreign key to experiments: a job for a deleted experiment must still be
-- readable, and fails with an error text.
CREATE TABLE IF NOT EXISTS stats_jobs (
  id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id               uuid NOT NULL,
  experiment_id        uuid NOT NULL,
  status               text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'completed', 'failed')),
  error                text NOT NULL DEFAULT '',
  created_at_ms        bigint NOT NULL,
  started_at_ms        bigint NOT NULL DEFAULT 0,
  completed_at_ms      bigint NOT NULL DEFAULT 0,
  lease_expires_at_ms  bigint NOT NULL DEFAULT 0,
  attempts             integer NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS stats_jobs_claimable ON stats_jobs (created_at_ms) WHERE status IN ('pending', 'running');
-- The scheduler's "does this experiment have an open or recent job" probe.
CREATE INDEX IF NOT EXISTS stats_jobs_by_experiment ON stats_jobs (experiment_id, created_at_ms);
-- At most one queued (pending) job per experiment: a recompute while one is queued gets it back.
CREATE UNIQUE INDEX IF NOT EXISTS stats_jobs_one_pending ON stats_jobs (experiment_id) WHERE status = 'pending';
-- Whose turn it is: workers claim the oldest job of the org whose jobs were claimed least
-- recently (round robin across orgs), so one org's long queue cannot starve another org's job.
CREATE TABLE IF NOT EXISTS stats_job_turns (
  org_id     uuid PRIMARY KEY,
  last_turn  bigint NOT NULL
);

-- Scheduled flag changes (docs/workflow.md "Scheduled changes", migration 0023): applied by the
-- services' scheduler at execute_at_ms, the row locked (FOR UPDATE SKIP LOCKED) in the transaction
-- that applies and ends it. A flag's delete or archive cancels its pending ones.
CREATE TABLE IF NOT EXISTS scheduled_changes (
  id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id          uuid NOT NULL,
  project_id      uuid NOT NULL,
  environment_id  uuid NOT NULL,
  flag_key        text NOT NULL,
  execute_at_ms   bigint NOT NULL,
  operations      jsonb NOT NULL,
  comment         text NOT NULL DEFAULT '',
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'applied', 'failed', 'cancelled')),
  reason          text,
  created_by      jsonb NOT NULL,
  created_at_ms   bigint NOT NULL,
  updated_at_ms   bigint NOT NULL,
  applied_at_ms   bigint,
  version         bigint NOT NULL DEFAULT 1,
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS scheduled_changes_due ON scheduled_changes (execute_at_ms) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS scheduled_changes_by_environment ON scheduled_changes (environment_id, execute_at_ms);
CREATE INDEX IF NOT EXISTS scheduled_changes_by_flag ON scheduled_changes (project_id, flag_key) WHERE status = 'pending';

-- Who changed what (docs/decisions.md "Change history"): appended in the transaction of the write
-- it describes. No foreign keys: the history outlives what it describes.
CREATE TABLE IF NOT EXISTS audit_log (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  -- The append order: breaks ties between equal times, so pages never skip or repeat an entry.
  seq            bigint GENERATED ALWAYS AS IDENTITY,
  org_id         uuid NOT NULL,
  actor_type     text NOT NULL DEFAULT 'user',
  -- The user id, SDK key id or system part that acted.
  actor          text NOT NULL,
  actor_email    text,
  -- An API token's name (its id is in actor).
  actor_name     text,
  action         text NOT NULL,
  resource_type  text NOT NULL,
  resource_id    text NOT NULL,
  project_id     uuid,
  environment_id uuid,
  at_ms          bigint NOT NULL,
  -- The resource as the API shows it, never a secret; null before a creation, after a deletion.
  before         jsonb,
  after          jsonb,
  details        jsonb NOT NULL DEFAULT '{}',
  -- The comment a write gave (required in environments with require_comment).
  comment        text,
  CONSTRAINT audit_log_actor_type CHECK (actor_type IN ('user', 'sdk_key', 'system', 'api_token'))
);
CREATE INDEX IF NOT EXISTS audit_log_by_org ON audit_log (org_id, at_ms DESC, seq DESC);
CREATE INDEX IF NOT EXISTS audit_log_by_resource ON audit_log (org_id, resource_type, resource_id, at_ms DESC, seq DESC);
CREATE INDEX IF NOT EXISTS audit_log_by_environment ON audit_log (org_id, environment_id, at_ms DESC, seq DESC) WHERE environment_id IS NOT NULL;
-- The pruner's retention (oldest entries of any org) and per-org cap (an org's entries in append
-- order), a batch at a time (migration 0006).
CREATE INDEX IF NOT EXISTS audit_log_by_age ON audit_log (at_ms);
CREATE INDEX IF NOT EXISTS audit_log_by_org_seq ON audit_log (org_id, seq);

-- Login sessions (docs/decisions.md "Sessions"): access tokens name their session, refresh tokens
-- rotate inside it, and ending it ends both.
CREATE TABLE IF NOT EXISTS sessions (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  org_id         uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  created_at_ms  bigint NOT NULL,
  expires_at_ms  bigint NOT NULL,
  ended_at_ms    bigint,
  -- Set when an identity provider opened it: the session stays in that provider's org.
  provider_id    uuid
);
CREATE INDEX IF NOT EXISTS sessions_live_by_user ON sessions (user_id) WHERE ended_at_ms IS NULL;
CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (expires_at_ms);
-- Disabling or deleting a provider ends the live sessions it opened.
CREATE INDEX IF NOT EXISTS sessions_live_by_provider ON sessions (provider_id) WHERE ended_at_ms IS NULL AND provider_id IS NOT NULL;

-- Refresh tokens (hash only), single use: consuming one revokes it; presenting it again ends its session.
CREATE TABLE IF NOT EXISTS refresh_tokens (
  id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  user_id        uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  org_id         uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  token_hash     text NOT NULL UNIQUE,
  created_at_ms  bigint NOT NULL,
  expires_at_ms  bigint NOT NULL,
  revoked_at_ms  bigint,
  session_id     uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS refresh_tokens_by_user ON refresh_tokens (user_id) WHERE revoked_at_ms IS NULL;
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
  accepted_at_ms  bigint,
  -- Who created it (its email as it was then); NULL for invitations from before migration 0008.
  created_by_user_id  uuid,
  created_by_email    text,
  -- Accepting it proves control of the address: its link was mailed and handed to no one else.
  proves_address      boolean NOT NULL DEFAULT false
);
CREATE INDEX IF NOT EXISTS invitations_by_org ON invitations (org_id, created_at_ms DESC);
-- A demoted or removed admin's pending invitations are withdrawn (docs/security.md).
CREATE INDEX IF NOT EXISTS invitations_pending_by_creator ON invitations (org_id, created_by_user_id) WHERE accepted_at_ms IS NULL;

-- Failed logins per subject ('account:<lowercased email>|<address>' or 'ip:<address>') for throttling.
CREATE TABLE IF NOT EXISTS login_failures (
  subject  text NOT NULL,
  at_ms    bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS login_failures_by_subject ON login_failures (subject, at_ms);

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
  updated_at_ms             bigint NOT NULL,
  -- May bind an existing member by its email (docs/sso.md "Accounts").
  link_existing_accounts    boolean NOT NULL DEFAULT true,
  -- Set while the provider waits for a second org admin's confirmation (enabled is false then).
  enable_requested_by_user_id  uuid,
  enable_requested_by_email    text,
  created_by_user_id        uuid,
  created_by_email          text,
  updated_by_user_id        uuid,
  updated_by_email          text,
  -- Every account that created or changed its settings: removing or demoting one disables it.
  written_by_user_ids       uuid[] NOT NULL DEFAULT '{}',
  last_used_at_ms           bigint,
  -- [{group, bindings: [{role, project_id?, environment_id?}]}]: applied at each sign-in (docs/access.md).
  group_bindings            jsonb NOT NULL DEFAULT '[]'
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

-- The states of browser sign-ins an identity provider's answer has spent (the login itself is
-- sealed in the browser's cookie); kept until that login would have expired. Single use.
CREATE TABLE IF NOT EXISTS sso_spent_states (
  state_hash     text PRIMARY KEY,
  expires_at_ms  bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS sso_spent_states_by_expiry ON sso_spent_states (expires_at_ms);

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

-- Signed webhooks (docs/workflow.md "Webhooks"; migration 0022).
CREATE TABLE IF NOT EXISTS webhook_endpoints (
  id                             uuid PRIMARY KEY,
  org_id                         uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
  name                           text NOT NULL,
  url                            text NOT NULL,
  enabled                        boolean NOT NULL,
  event_types                    jsonb NOT NULL,
  project_ids                    jsonb NOT NULL,
  environment_ids                jsonb NOT NULL,
  format                         text NOT NULL CHECK (format IN ('standard', 'slack')),
  sealed_secret                  text NOT NULL,
  sealed_previous_secret         text,
  previous_secret_expires_at_ms  bigint,
  consecutive_failures           integer NOT NULL DEFAULT 0,
  disabled_reason                text,
  created_at_ms                  bigint NOT NULL,
  updated_at_ms                  bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_endpoints_by_org ON webhook_endpoints (org_id, created_at_ms);

-- One row per (entry, endpoint): its payload (the bytes signed), and the outcome of its last attempt
-- (the delivery log: status code, duration, error, the first 1 KiB of the answer).
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  endpoint_id           uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  org_id                uuid NOT NULL,
  message_id            text NOT NULL,
  event_type            text NOT NULL,
  payload               text NOT NULL,
  status                text NOT NULL CHECK (status IN ('pending', 'sending', 'delivered', 'failed')),
  attempts              integer NOT NULL DEFAULT 0,
  next_attempt_at_ms    bigint NOT NULL,
  lease_expires_at_ms   bigint NOT NULL DEFAULT 0,
  last_status_code      integer,
  last_duration_ms      integer,
  last_error            text,
  last_response         text,
  created_at_ms         bigint NOT NULL,
  finished_at_ms        bigint
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at_ms) WHERE status IN ('pending', 'sending');
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, created_at_ms DESC, id);
CREATE INDEX IF NOT EXISTS webhook_deliveries_by_age ON webhook_deliveries (created_at_ms);

-- Change requests and approvals (docs/workflow.md "Change requests and approvals"; migration 0024).
CREATE TABLE IF NOT EXISTS approval_policies (
  environment_id       uuid PRIMARY KEY,
  org_id               uuid NOT NULL,
  project_id           uuid NOT NULL,
  required             boolean NOT NULL DEFAULT false,
  min_approvals        integer NOT NULL DEFAULT 1 CHECK (min_approvals BETWEEN 1 AND 5),
  allow_self_approval  boolean NOT NULL DEFAULT false,
  reset_on_change      boolean NOT NULL DEFAULT true,
  kill_switch_exempt   boolean NOT NULL DEFAULT false,
  updated_at_ms        bigint NOT NULL,
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS change_requests (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  org_id           uuid NOT NULL,
  project_id       uuid NOT NULL,
  environment_id   uuid NOT NULL,
  title            text NOT NULL,
  description      text NOT NULL DEFAULT '',
  changes          jsonb NOT NULL,
  content_hash     text NOT NULL,
  status           text NOT NULL CHECK (status IN ('draft', 'open', 'applied', 'cancelled', 'conflicted', 'scheduled')),
  author_id        uuid NOT NULL,
  author_email     text,
  revision         integer NOT NULL DEFAULT 1,
  conflict         text,
  applied_by       jsonb,
  created_at_ms    bigint NOT NULL,
  updated_at_ms    bigint NOT NULL,
  submitted_at_ms  bigint,
  applied_at_ms    bigint,
  execute_at_ms    bigint,
  scheduled_by     jsonb,
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS change_requests_by_environment ON change_requests (environment_id, created_at_ms DESC);
CREATE INDEX IF NOT EXISTS change_requests_scheduled_due ON change_requests (execute_at_ms) WHERE status = 'scheduled';

CREATE TABLE IF NOT EXISTS change_request_reviews (
  id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  change_request_id  uuid NOT NULL REFERENCES change_requests (id) ON DELETE CASCADE,
  reviewer_id        uuid NOT NULL,
  reviewer_email     text,
  verdict            text NOT NULL CHECK (verdict IN ('approve', 'reject', 'comment')),
  comment            text,
  content_hash       text NOT NULL,
  at_ms              bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS change_request_reviews_by_request ON change_request_reviews (change_request_id, at_ms);

-- Evaluation counts (docs/insights.md; migration 0028 says why each column is there).
CREATE TABLE IF NOT EXISTS flag_evaluation_hours (
  environment_id  uuid NOT NULL,
  flag_id         uuid NOT NULL REFERENCES flags (id) ON DELETE CASCADE,
  hour            timestamptz NOT NULL,
  variant_key     text NOT NULL CHECK (length(variant_key) <= 256),
  reason          text NOT NULL CHECK (length(reason) BETWEEN 1 AND 32),
  org_id          uuid NOT NULL,
  project_id      uuid NOT NULL,
  count           bigint NOT NULL CHECK (count >= 0),
  rolled          bigint NOT NULL DEFAULT 0 CHECK (rolled >= 0 AND rolled <= count),
  PRIMARY KEY (environment_id, flag_id, hour, variant_key, reason),
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS flag_evaluation_hours_by_hour ON flag_evaluation_hours (hour);
CREATE INDEX IF NOT EXISTS flag_evaluation_hours_flag ON flag_evaluation_hours (flag_id);

CREATE TABLE IF NOT EXISTS flag_evaluation_days (
  environment_id  uuid NOT NULL,
  flag_id         uuid NOT NULL REFERENCES flags (id) ON DELETE CASCADE,
  day             timestamptz NOT NULL,
  variant_key     text NOT NULL CHECK (length(variant_key) <= 256),
  reason          text NOT NULL CHECK (length(reason) BETWEEN 1 AND 32),
  org_id          uuid NOT NULL,
  project_id      uuid NOT NULL,
  count           bigint NOT NULL CHECK (count >= 0),
  PRIMARY KEY (environment_id, flag_id, day, variant_key, reason),
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS flag_evaluation_days_by_day ON flag_evaluation_days (day);
CREATE INDEX IF NOT EXISTS flag_evaluation_days_flag ON flag_evaluation_days (flag_id);

CREATE TABLE IF NOT EXISTS flag_evaluation_last (
  environment_id     uuid NOT NULL,
  flag_id            uuid NOT NULL REFERENCES flags (id) ON DELETE CASCADE,
  org_id             uuid NOT NULL,
  project_id         uuid NOT NULL,
  last_evaluated_at  timestamptz NOT NULL,
  PRIMARY KEY (environment_id, flag_id),
  FOREIGN KEY (environment_id, project_id, org_id) REFERENCES environments (id, project_id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS flag_evaluation_last_flag ON flag_evaluation_last (flag_id);

-- The stage the daily lifecycle job last saw per flag (it records flag.lifecycle_stage_changed once
-- when a flag enters a cleanup stage; docs/insights.md).
CREATE TABLE IF NOT EXISTS flag_lifecycle_stages (
  flag_id     uuid PRIMARY KEY REFERENCES flags (id) ON DELETE CASCADE,
  org_id      uuid NOT NULL,
  project_id  uuid NOT NULL,
  stage       text NOT NULL CHECK (stage IN ('live', 'ready_for_code_removal', 'ready_to_archive', 'archived')),
  changed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS flag_lifecycle_stages_project ON flag_lifecycle_stages (project_id);
