-- Issue 40 (docs/insights.md): how often each flag is evaluated, per environment.
-- - flag_evaluation_hours: one row per (environment, flag, variant, reason, UTC hour) with its
--   count; every flush adds to it (INSERT ... ON CONFLICT DO UPDATE SET count = count + excluded),
--   so instances flushing the same hour add up. `rolled` is how much of `count` the pruner has
--   already added to flag_evaluation_days (a flush after the roll-up leaves count > rolled, and
--   the next roll-up adds the difference), so a day's total is days.count + sum(count - rolled).
-- - flag_evaluation_days: the same per UTC day, kept longer than the hours.
-- - flag_evaluation_last: when each flag was last evaluated in each environment (statuses read it:
--   never evaluated = new or inactive, evaluated in the window = active or launched).
-- Rows name the flag by id (a deleted flag's counts go with it; a new flag of the same key starts at 0).
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
