-- Experiments gain metric definitions, analysis settings, a studied rule and an explicit control
-- (docs/decisions.md "Experiments and statistics"). Existing rows are filled here, once, so every
-- row reads the same way afterwards (no NULL meaning "derive it in code"):
-- - metrics: each metric_keys entry as core's metricFromKey makes it (analysis-model.ts): the
--   event's values summed per participant, a bool event as a conversion; a key whose event
--   definition is gone is summed, as the computation has always treated it (a double);
-- - analysis: DEFAULT_ANALYSIS as it is at this migration;
-- - control_variant_key: the first of variant_keys (what "the control" meant before);
-- - rule_id: NULL, the default (the flag's first rule allocating over the variants).
-- metric_keys stays, always the keys of `metrics` in order, for the readers that predate them.
ALTER TABLE experiments ADD COLUMN IF NOT EXISTS rule_id text;
ALTER TABLE experiments ADD COLUMN IF NOT EXISTS control_variant_key text;
ALTER TABLE experiments ADD COLUMN IF NOT EXISTS metrics jsonb;
ALTER TABLE experiments ADD COLUMN IF NOT EXISTS analysis jsonb;
UPDATE experiments x SET
  control_variant_key = coalesce(x.variant_keys[1], ''),
  metrics = (
    SELECT coalesce(jsonb_agg(jsonb_build_object(
        'kind', 'event', 'key', m.key, 'eventKey', m.key,
        'aggregation', CASE WHEN d.value_type = 'bool' THEN 'conversion' ELSE 'sum' END,
        'windowMs', NULL, 'direction', 'increase', 'capping', NULL, 'cuped', NULL, 'guardrail', false
      ) ORDER BY m.position), '[]'::jsonb)
    FROM unnest(x.metric_keys) WITH ORDINALITY AS m(key, position)
    LEFT JOIN event_definitions d ON d.environment_id = x.environment_id AND d.key = m.key
  ),
  analysis = '{"alpha": 0.05, "sides": "two", "relativeInterval": "delta", "correction": "none", "correctionFamily": "all", "srmThreshold": 0.001, "srmMinExpected": 5}'::jsonb
WHERE x.metrics IS NULL;
ALTER TABLE experiments ALTER COLUMN control_variant_key SET NOT NULL;
ALTER TABLE experiments ALTER COLUMN metrics SET NOT NULL;
ALTER TABLE experiments ALTER COLUMN analysis SET NOT NULL;

-- Results computed with metric definitions say whether SRM warns and which settings they used;
-- NULL in results stored before (they map without them).
ALTER TABLE experiment_results ADD COLUMN IF NOT EXISTS srm_warning boolean;
ALTER TABLE experiment_results ADD COLUMN IF NOT EXISTS analysis jsonb;
