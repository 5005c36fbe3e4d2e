-- Issue 38, a change request applied at a time (docs/workflow.md "Change requests and approvals"): a
-- request may become `scheduled` with the time it is due and who scheduled it; the scheduler claims
-- due ones (FOR UPDATE SKIP LOCKED) through the partial index.
ALTER TABLE change_requests ADD COLUMN IF NOT EXISTS execute_at_ms bigint;
ALTER TABLE change_requests ADD COLUMN IF NOT EXISTS scheduled_by jsonb;
CREATE INDEX IF NOT EXISTS change_requests_scheduled_due ON change_requests (execute_at_ms) WHERE status = 'scheduled';
