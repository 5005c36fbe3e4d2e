-- Issue 39 (docs/statistics.md §9–§13): analysis settings gain engine, sequential, hybrid and
-- prior; a guardrail gains a margin. Stored rows are rewritten once, so every row reads the same
-- way afterwards (readers still normalise, for a row an older instance writes during an upgrade):
-- - analysis: engine "frequentist", sequential null, hybrid false, prior null where absent;
-- - metrics: guardrail true -> {margin: 0, marginKind: "relative"}, false -> null.
UPDATE experiments x SET
  analysis = jsonb_build_object('engine', 'frequentist', 'sequential', NULL, 'hybrid', false, 'prior', NULL) || x.analysis
WHERE NOT (x.analysis ? 'engine');
UPDATE experiments x SET
  metrics = (
    SELECT coalesce(jsonb_agg(
      CASE
        WHEN m.metric -> 'guardrail' = 'true'::jsonb THEN m.metric || '{"guardrail": {"margin": 0, "marginKind": "relative"}}'::jsonb
        WHEN m.metric -> 'guardrail' = 'false'::jsonb THEN m.metric || '{"guardrail": null}'::jsonb
        ELSE m.metric
      END ORDER BY m.position), '[]'::jsonb)
    FROM jsonb_array_elements(x.metrics) WITH ORDINALITY AS m(metric, position)
  )
WHERE jsonb_path_exists(x.metrics, '$[*].guardrail ? (@.type() == "boolean")');

-- The results carry what the stats worker folds across its looks at the running iteration: per
-- treatment and metric the running minimum p-value and interval intersection of the always-valid
-- test, the guardrails' running tests, the sequential SRM e-value's running maximum and which
-- guardrails were announced failing (core's ExperimentRunningState). Derived data, never sent to
-- clients; NULL in results stored before it (the next look starts the states).
ALTER TABLE experiment_results ADD COLUMN IF NOT EXISTS running_state jsonb;
-- The sequential SRM check's always-valid p-value beside the chi-squared srm_p_value.
ALTER TABLE experiment_results ADD COLUMN IF NOT EXISTS sequential_srm_p_value double precision;
