-- Event retention and the per-environment row quota (docs/security.md "Ingest rate limits, row
-- quota and event retention"). Only prepares: a catalog change, no row is read or moved here.
-- The maintenance run (packages/services/src/maintenance/ingest-retention.ts) then turns the
-- rows of events_default and exposures_default into a range partition without copying them,
-- creates daily partitions ahead, drops those past retention, and counts rows per partition.

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
