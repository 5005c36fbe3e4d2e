-- Issue 37, flag metadata and bucket_by (docs/contract.md "Flags and evaluation"): project-level
-- tags (a JSON array of strings, sorted and de-duplicated by the writers), lifetime, maintainer
-- (free text or null) and bucket_by (what a split's bucket depends on). Existing flags get the
-- defaults, which is what they meant before: no tags, permanent, no maintainer, by environment.
ALTER TABLE flags ADD COLUMN IF NOT EXISTS tags jsonb NOT NULL DEFAULT '[]';
ALTER TABLE flags ADD COLUMN IF NOT EXISTS lifetime text NOT NULL DEFAULT 'permanent' CHECK (lifetime IN ('temporary', 'permanent'));
ALTER TABLE flags ADD COLUMN IF NOT EXISTS maintainer text;
ALTER TABLE flags ADD COLUMN IF NOT EXISTS bucket_by text NOT NULL DEFAULT 'environment' CHECK (bucket_by IN ('environment', 'project'));
