-- Bounds on the stats queue and on tables that only grew (docs/security.md).

-- 1. At most one queued (pending) recompute job per experiment: a trigger while one is queued
--    gets that job back. Jobs already queued twice keep their oldest; the others are failed with
--    a text naming the job that does the work (their ids stay readable).
UPDATE stats_jobs j SET
  status = 'failed',
  error = 'superseded by job ' || keep.id || ' of the same experiment',
  completed_at_ms = floor(extract(epoch FROM clock_timestamp()) * 1000)::int8
FROM (
  SELECT DISTINCT ON (experiment_id) experiment_id, id FROM stats_jobs
  WHERE status = 'pending' ORDER BY experiment_id, created_at_ms, id
) keep
WHERE j.status = 'pending' AND j.experiment_id = keep.experiment_id AND j.id <> keep.id;
CREATE UNIQUE INDEX IF NOT EXISTS stats_jobs_one_pending ON stats_jobs (experiment_id) WHERE status = 'pending';

-- 2. Whose turn it is: workers claim the oldest job of the org whose jobs were claimed least
--    recently, so one org's long queue cannot starve another org's job.
CREATE TABLE IF NOT EXISTS stats_job_turns (
  org_id     uuid PRIMARY KEY,
  last_turn  bigint NOT NULL
);

-- 3. The pruner deletes expired Idempotency-Key answers in batches, oldest expiry first.
CREATE INDEX IF NOT EXISTS idempotency_keys_by_expiry ON idempotency_keys (expires_at_ms);
