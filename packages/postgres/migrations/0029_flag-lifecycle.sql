-- Issue 40 (docs/insights.md "Statuses and lifecycle stages"):
-- - projects.lifecycle_*: the project's lifecycle thresholds, in days (project settings, PATCH
--   /v1/management/projects/{id} `lifecycle`), each 1..365; the defaults are core's
--   DEFAULT_LIFECYCLE_THRESHOLDS.
-- - flag_lifecycle_stages: the stage the daily lifecycle job last saw for each flag, so it records
--   `flag.lifecycle_stage_changed` once when a flag enters a cleanup stage, not every day.
ALTER TABLE projects
  ADD COLUMN IF NOT EXISTS lifecycle_status_window_days integer NOT NULL DEFAULT 7 CHECK (lifecycle_status_window_days BETWEEN 1 AND 365),
  ADD COLUMN IF NOT EXISTS lifecycle_code_removal_min_age_days integer NOT NULL DEFAULT 30 CHECK (lifecycle_code_removal_min_age_days BETWEEN 1 AND 365),
  ADD COLUMN IF NOT EXISTS lifecycle_archive_after_days integer NOT NULL DEFAULT 30 CHECK (lifecycle_archive_after_days BETWEEN 1 AND 365),
  ADD COLUMN IF NOT EXISTS lifecycle_unchanged_fallback_days integer NOT NULL DEFAULT 14 CHECK (lifecycle_unchanged_fallback_days BETWEEN 1 AND 365);

CREATE TABLE IF NOT EXISTS flag_lifecycle_stages (
  flag_id     uuid PRIMARY KEY REFERENCES flags (id) ON DELETE CASCADE,
  org_id      uuid NOT NULL,
  project_id  uuid NOT NULL,
  stage       text NOT NULL CHECK (stage IN ('live', 'ready_for_code_removal', 'ready_to_archive', 'archived')),
  changed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  FOREIGN KEY (project_id, org_id) REFERENCES projects (id, org_id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS flag_lifecycle_stages_project ON flag_lifecycle_stages (project_id);
