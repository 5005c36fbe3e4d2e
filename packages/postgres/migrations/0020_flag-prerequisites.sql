-- Issue 37, prerequisites (dependent flags): each environment's state of a flag lists the flags it
-- depends on, [{flag_key, variant_keys}] (docs/contract.md "Prerequisites"); '[]' for every
-- existing state, which is what it meant before. Checked by the flag repository on write.
ALTER TABLE flag_environment_states ADD COLUMN IF NOT EXISTS prerequisites jsonb NOT NULL DEFAULT '[]';
