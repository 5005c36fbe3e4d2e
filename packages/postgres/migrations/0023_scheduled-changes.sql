-- Issue 38, scheduled changes (docs/workflow.md "Scheduled changes"): operations on one
-- environment's flag, applied by the services' scheduler at execute_at_ms. The flag is named by
-- key (its delete or archive cancels its pending schedules in the same transaction); the
-- environment's removal removes them. The worker locks a due row (FOR UPDATE SKIP LOCKED) in the
-- transaction that applies it and ends it, so two workers never apply one twice.
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
