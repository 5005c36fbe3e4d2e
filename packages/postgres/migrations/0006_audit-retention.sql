-- Change history retention and per-org cap (docs/contract.md "Change history"), both enforced by
-- the pruner a batch at a time; each index makes a batch one short range instead of a scan of the
-- whole log.

-- Retention: entries older than the retention period, of any org, oldest first.
CREATE INDEX IF NOT EXISTS audit_log_by_age ON audit_log (at_ms);
-- The cap: the orgs holding entries (walked one index probe per org), the cap-th most recently
-- appended entry of each, and the org's excess in append order.
CREATE INDEX IF NOT EXISTS audit_log_by_org_seq ON audit_log (org_id, seq);
