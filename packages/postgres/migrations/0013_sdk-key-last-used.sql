-- When a key was last used (docs/contract.md "Last use of a key"): set when it opens a sync stream or
-- evaluates (REST evaluate, OFREP, bulk), at most once a minute per key — each process remembers
-- what it wrote, and the UPDATE itself skips a key written less than a minute ago. Null: never
-- used since this column exists. The console's getting-started checklist waits for it.
ALTER TABLE sdk_keys ADD COLUMN IF NOT EXISTS last_used_at timestamptz;
