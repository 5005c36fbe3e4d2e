-- Issue 36, scale: each running iteration's participants with their metric values, kept between
-- recomputes by the stats worker so that a recompute reads again only the participants whose
-- exposures or events arrived since the last one (docs/statistics.md "Incremental aggregation").
-- Derived data: dropping a set (or its rows) only makes the next recompute rebuild it.

-- One row per maintained iteration: what its participant rows were computed for (`definition`:
-- the flag, rule, variants, window start and metric sources, as text) and the database clock at
-- the start of the pass that last brought them up to date.
CREATE TABLE IF NOT EXISTS experiment_participant_sets (
  iteration_id    uuid PRIMARY KEY REFERENCES experiment_iterations (id) ON DELETE CASCADE,
  org_id          uuid NOT NULL,
  environment_id  uuid NOT NULL,
  definition      text NOT NULL,
  watermark_ms    bigint NOT NULL
);

-- A participant (the context of a first exposure by the studied rule in the window), the variant
-- of that exposure and its metric variables in the set's layout (NULL: a `mean` without events).
-- No foreign key: checking one per row would cost seconds per million participants; the trigger
-- below removes the rows with their set.
CREATE TABLE IF NOT EXISTS experiment_participants (
  iteration_id  uuid NOT NULL,
  context_type  text NOT NULL,
  context_key   text NOT NULL,
  variant_key   text NOT NULL,
  vals          double precision[] NOT NULL,
  PRIMARY KEY (iteration_id, context_type, context_key)
);

CREATE OR REPLACE FUNCTION experiment_participant_sets_drop_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM experiment_participants WHERE iteration_id = OLD.iteration_id;
  RETURN OLD;
END $$;
DROP TRIGGER IF EXISTS experiment_participant_sets_drop_rows ON experiment_participant_sets;
CREATE TRIGGER experiment_participant_sets_drop_rows AFTER DELETE ON experiment_participant_sets
  FOR EACH ROW EXECUTE FUNCTION experiment_participant_sets_drop_rows();
