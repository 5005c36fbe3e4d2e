-- Issue 36, who is in an experiment: an exposure records the rule whose percentage allocation
-- served its variant ('' when none did: a targeted variant, the default, the off variant), so that
-- an experiment counts only the contexts its rule's allocation served. NULL: an exposure from a
-- client that does not report it (recorded before this column, or by an older SDK); those count
-- for any experiment on the flag, as all exposures did before.
-- rule_id joins org_id among exposures_by_flag's included columns, so the participants of an
-- experiment are still read with an index-only scan. The index is rebuilt inside the migration
-- transaction: reads and writes of exposures wait until the build has read the table.
ALTER TABLE exposures ADD COLUMN IF NOT EXISTS rule_id text;
DROP INDEX IF EXISTS exposures_by_flag;
CREATE INDEX IF NOT EXISTS exposures_by_flag ON exposures (environment_id, flag_key, context_type, context_key, timestamp_ms, variant_key) INCLUDE (org_id, rule_id);
