import {
  CORRECTION_FAMILIES,
  MAX_METRICS,
  METRIC_AGGREGATIONS,
  METRIC_DIRECTIONS,
  MULTIPLE_TESTING_CORRECTIONS,
} from '@switchyard/core';
import { MAX_EXPERIMENT_DESCRIPTION, MAX_EXPERIMENT_NAME, MAX_METRIC_KEYS, MAX_TRANSITION_REASON, MAX_VARIANT_KEYS } from '@switchyard/services';
import { uuidParam } from '../../http/schemas.ts';

/**
 * JSON schemas of the experiment and stats routes (docs/contract.md "Experiments", "Stats jobs", "Experiments and statistics").
 * Response schemas are also Fastify's serialisers: every field of a record is listed. The meaning
 * of a body (the flag exists, the variants are its variants, the metrics are registered) is
 * checked by the ExperimentService, whose messages name the field.
 */

const key = { type: 'string', minLength: 1, maxLength: 128 } as const;
const keyList = (max: number, description: string) => ({ type: ['array', 'null'], maxItems: max, items: key, description }) as const;
const nullableNumber = { type: ['number', 'null'] } as const;
const STATUS_NAMES = ['EXPERIMENT_STATUS_DRAFT', 'EXPERIMENT_STATUS_ACTIVE', 'EXPERIMENT_STATUS_PAUSED', 'EXPERIMENT_STATUS_CONCLUDED'] as const;

/**
 * Metric definitions and analysis settings (docs/contract.md "Experiments"). The request schemas
 * check the JSON types only: core's parser (analysis-input.ts) checks the meaning for REST and gRPC
 * alike and names the field (`metrics[1].capping.lower`). The answer schemas list every field, as
 * Fastify serialises with them.
 */
const metricSourceSchema = {
  type: 'object',
  required: ['event_key', 'aggregation', 'window_ms'],
  properties: {
    event_key: { type: 'string', description: 'A registered event definition key.' },
    aggregation: { type: 'string', enum: [...METRIC_AGGREGATIONS], description: "How a participant's events become its value." },
    window_ms: { type: ['integer', 'null'], description: 'Only events within this long after the first exposure count; null: to the iteration end.' },
  },
} as const;

const metricRecordSchema = {
  type: 'object',
  required: ['key', 'direction', 'cuped', 'guardrail'],
  description: 'An event metric (event_key, aggregation, window_ms, capping) or a ratio metric (ratio).',
  properties: {
    key: { type: 'string', description: 'Unique in the experiment; names the metric in results.' },
    event_key: { type: 'string' },
    aggregation: { type: ['string', 'null'], enum: [...METRIC_AGGREGATIONS, null], description: 'null for a per-event quantile metric (its events are not aggregated).' },
    window_ms: { type: ['integer', 'null'] },
    quantile: {
      type: 'object',
      required: ['p', 'unit'],
      description: "Present on a quantile metric only (docs/statistics.md §15): the p-th quantile of the participants' values (unit participant) or of the events' values (unit event).",
      properties: { p: { type: 'number' }, unit: { type: 'string', enum: ['participant', 'event'] } },
    },
    direction: { type: 'string', enum: [...METRIC_DIRECTIONS] },
    capping: {
      type: ['object', 'null'],
      required: ['kind', 'lower', 'upper', 'ignore_zeros'],
      properties: { kind: { type: 'string', enum: ['absolute', 'percentile'] }, lower: nullableNumber, upper: nullableNumber, ignore_zeros: { type: 'boolean' } },
    },
    cuped: { type: ['object', 'null'], required: ['lookback_ms'], properties: { lookback_ms: { type: 'integer' } } },
    guardrail: {
      type: ['object', 'null'],
      required: ['margin', 'margin_kind'],
      description: 'null: not a guardrail. A guardrail is tested for harm beyond `margin` (≥ 0) on the relative (0.02 = 2 %) or absolute effect; requests also accept `true` (margin 0, relative) and `false`.',
      properties: { margin: { type: 'number' }, margin_kind: { type: 'string', enum: ['relative', 'absolute'] } },
    },
    ratio: { type: 'object', required: ['numerator', 'denominator'], properties: { numerator: metricSourceSchema, denominator: metricSourceSchema } },
  },
} as const;

const analysisRecordSchema = {
  type: 'object',
  required: ['alpha', 'sides', 'relative_interval', 'correction', 'correction_family', 'srm_threshold', 'srm_min_expected', 'engine', 'sequential', 'hybrid', 'prior'],
  properties: {
    engine: { type: 'string', enum: ['frequentist', 'bayesian'], description: 'Which engine the verdicts read (docs/statistics.md §8, §12).' },
    sequential: {
      type: ['object', 'null'],
      required: ['tuning_n'],
      description: 'Always-valid (sequential) testing tuned for a planned sample of tuning_n participants (both arms); null: fixed-horizon only.',
      properties: { tuning_n: { type: 'integer' } },
    },
    hybrid: { type: 'boolean', description: 'With sequential: α/2 sequential while running plus α/2 fixed-horizon once the iteration ended.' },
    prior: {
      type: ['object', 'null'],
      required: ['mean', 'sd'],
      description: 'Bayesian engine: a N(mean, sd²) prior on the relative effect; null: flat.',
      properties: { mean: { type: 'number' }, sd: { type: 'number' } },
    },
    alpha: { type: 'number' },
    sides: { type: 'string', enum: ['two', 'one'] },
    relative_interval: { type: 'string', enum: ['delta', 'fieller'] },
    correction: { type: 'string', enum: [...MULTIPLE_TESTING_CORRECTIONS] },
    correction_family: { type: 'string', enum: [...CORRECTION_FAMILIES] },
    srm_threshold: { type: 'number' },
    srm_min_expected: { type: 'number' },
  },
} as const;

const metricBodySchema = {
  type: 'object',
  description:
    '`{key?, event_key, aggregation, window_ms?, direction?, capping?: {kind, lower?, upper?, ignore_zeros?}, cuped?: {lookback_ms?}, guardrail?}` ' +
    '(key defaults to event_key) or `{key, ratio: {numerator: {event_key, aggregation, window_ms?}, denominator: {...}}, direction?, cuped?, guardrail?}`; ' +
    '`guardrail` is a boolean or `{margin?, margin_kind?: "relative" | "absolute"}`. ' +
    'A quantile metric: an event metric with `quantile: {p (0.001..0.999), unit?: "participant" (default) | "event"}`; aggregation defaults to sum ' +
    '(unit participant) and is not given for unit event; no capping, no cuped (docs/statistics.md §15).',
} as const;

const analysisBodySchema = {
  type: ['object', 'null'],
  description:
    'Analysis settings; a missing field takes its default (alpha 0.05, sides two, relative_interval delta, correction none, correction_family all, ' +
    'srm_threshold 0.001, srm_min_expected 5, engine frequentist, sequential null (`{}`: tuning_n 5000), hybrid false, prior null). ' +
    'Replaces the stored settings as a whole. Changes in any status.',
} as const;

export const experimentParams = {
  type: 'object',
  required: ['env_id', 'experiment_id'],
  properties: { env_id: uuidParam, experiment_id: { ...uuidParam, description: 'The experiment id (UUID).' } },
} as const;

export const experimentSchema = {
  type: 'object',
  required: [
    'id', 'name', 'description', 'flag_key', 'status', 'variant_keys', 'metric_keys', 'traffic_allocation', 'rule_id', 'control_variant_key', 'metrics', 'analysis',
    'version', 'created_at_ms', 'updated_at_ms', 'environment_id',
  ],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    flag_key: { type: 'string' },
    status: { type: 'string', enum: [...STATUS_NAMES] },
    variant_keys: { type: 'array', items: { type: 'string' }, description: 'The compared variants of the flag.' },
    metric_keys: { type: 'array', items: { type: 'string' }, description: 'The keys of `metrics`, in order; the first is the primary metric (its p-value is `p_value`).' },
    traffic_allocation: { type: 'number' },
    rule_id: { type: ['string', 'null'], description: "The flag rule whose allocation the experiment studies; null: the flag's first rule allocating over the variants." },
    control_variant_key: { type: 'string', description: 'The arm every other variant is compared with.' },
    metrics: { type: 'array', items: metricRecordSchema },
    analysis: analysisRecordSchema,
    version: { type: 'integer' },
    created_at_ms: { type: 'integer' },
    updated_at_ms: { type: 'integer' },
    environment_id: { type: 'string' },
  },
} as const;

const bodyProperties = {
  name: { type: ['string', 'null'], maxLength: MAX_EXPERIMENT_NAME },
  description: { type: ['string', 'null'], maxLength: MAX_EXPERIMENT_DESCRIPTION },
  flag_key: { type: ['string', 'null'], maxLength: 128, description: 'A flag of the environment. Changes only in DRAFT.' },
  variant_keys: keyList(MAX_VARIANT_KEYS, "At least 2 of the flag's variant keys, the control first (default: all its variants). Change only in DRAFT."),
  metric_keys: keyList(MAX_METRIC_KEYS, 'Old style: registered event definition keys, each summed per participant (a bool event: converted or not). Not with `metrics`, unless it lists exactly their keys.'),
  metrics: { type: ['array', 'null'], maxItems: MAX_METRICS, items: metricBodySchema, description: 'Metric definitions (default: none). Change in any status.' },
  analysis: analysisBodySchema,
  rule_id: { type: ['string', 'null'], maxLength: 128, description: "A rule of the flag whose allocation the experiment studies; null: the flag's first rule allocating over the variants. Changes only in DRAFT." },
  control_variant_key: { type: ['string', 'null'], maxLength: 128, description: 'One of variant_keys (default: the first). Changes only in DRAFT.' },
  traffic_allocation: { type: ['number', 'null'], minimum: 0, maximum: 1, description: 'Share of traffic in the experiment, 0..1 (default 1); frozen into each iteration.' },
} as const;

export const experimentCreateBody = {
  type: 'object',
  description: 'Starts in EXPERIMENT_STATUS_DRAFT. flag_key is required in practice (400 without it).',
  properties: bodyProperties,
} as const;

export const experimentUpdateBody = {
  type: 'object',
  description: 'PATCH and PUT alike: the fields given change, the others keep their value.',
  properties: {
    ...bodyProperties,
    version: { type: ['integer', 'null'], minimum: 0, description: 'Expected version (optimistic locking); a stale one answers 409 ABORTED.' },
  },
} as const;

export const transitionBody = {
  type: 'object',
  required: ['new_status'],
  description:
    'Legal moves: DRAFT→ACTIVE, ACTIVE→PAUSED, PAUSED→ACTIVE, DRAFT|ACTIVE|PAUSED→CONCLUDED; anything else is 409 FAILED_PRECONDITION. ' +
    'Entering ACTIVE opens a new iteration, leaving it closes the running one.',
  properties: {
    new_status: { type: 'string', minLength: 1, maxLength: 64, description: 'EXPERIMENT_STATUS_ACTIVE etc., or the short form: draft, active, paused, concluded.' },
    reason: { type: ['string', 'null'], maxLength: MAX_TRANSITION_REASON, description: 'Why; kept in the audit log.' },
    version: { type: ['integer', 'null'], minimum: 0, description: 'Expected version; a stale one answers 409 ABORTED.' },
  },
} as const;

export const iterationSchema = {
  type: 'object',
  required: ['id', 'experiment_id', 'iteration_number', 'started_at_ms', 'ended_at_ms', 'traffic_allocation', 'metric_keys'],
  properties: {
    id: { type: 'string' },
    experiment_id: { type: 'string' },
    iteration_number: { type: 'integer', description: 'From 1, one per entry into ACTIVE.' },
    started_at_ms: { type: 'integer' },
    ended_at_ms: { type: 'integer', description: '0 while the iteration runs.' },
    traffic_allocation: { type: 'number' },
    metric_keys: { type: 'array', items: { type: 'string' } },
  },
} as const;

const effectSchema = {
  type: ['object', 'null'],
  required: ['estimate', 'ci_low', 'ci_high', 'p_value'],
  properties: { estimate: { type: 'number' }, ci_low: nullableNumber, ci_high: nullableNumber, p_value: nullableNumber },
} as const;

const metricStatsSchema = {
  type: 'object',
  required: ['mean', 'variance', 'lift', 'ci_low', 'ci_high', 'p_value'],
  description:
    "lift, the 95% CI of the difference to the control and Welch's p-value; null for the control and where not computable. " +
    'The other fields come with metric definitions and are absent from results computed before them.',
  properties: {
    mean: { type: 'number' },
    variance: { type: 'number' },
    lift: nullableNumber,
    ci_low: nullableNumber,
    ci_high: nullableNumber,
    p_value: nullableNumber,
    absolute: { ...effectSchema, description: 'Treatment − control (CUPED-adjusted with CUPED); null for the control.' },
    relative: { ...effectSchema, description: '(treatment − control) / |control|; null for the control.' },
    adjusted_p_value: { ...nullableNumber, description: "The relative effect's p-value after the multiple-testing correction." },
    capped_mean: { type: 'number' },
    uncapped_mean: { type: 'number' },
    cuped: {
      type: ['object', 'null'],
      required: ['theta', 'variance_reduction', 'balance_p_value'],
      properties: { theta: { type: 'number' }, variance_reduction: { type: 'number' }, balance_p_value: nullableNumber },
    },
    verdict: { type: 'string', enum: ['better', 'worse', 'inconclusive', 'not_enough_data'] },
    sequential: {
      type: ['object', 'null'],
      required: ['estimate', 'ci_low', 'ci_high', 'p_value', 'adjusted_p_value'],
      description: "With analysis.sequential: the relative effect's running always-valid test (the running minimum p-value and interval intersection over the iteration's looks).",
      properties: { estimate: { type: 'number' }, ci_low: nullableNumber, ci_high: nullableNumber, p_value: { type: 'number' }, adjusted_p_value: nullableNumber },
    },
    bayesian: {
      type: ['object', 'null'],
      required: ['chance_to_win', 'risk_control', 'risk_treatment', 'ci_low', 'ci_high'],
      description: 'With the bayesian engine: the relative effect\'s posterior: chance to win, expected losses of keeping the control and of shipping the treatment, credible interval.',
      properties: { chance_to_win: { type: 'number' }, risk_control: { type: 'number' }, risk_treatment: { type: 'number' }, ci_low: { type: 'number' }, ci_high: { type: 'number' } },
    },
    guardrail_status: { type: ['string', 'null'], enum: ['ok', 'warning', 'failing', null], description: 'A guardrail metric\'s status against its margin.' },
    guardrail: {
      type: ['object', 'null'],
      required: ['estimate', 'harm_p_value', 'non_inferiority_p_value', 'bound'],
      description: 'A guardrail metric\'s one-sided tests against its margin (running values when sequential).',
      properties: { estimate: { type: 'number' }, harm_p_value: { type: 'number' }, non_inferiority_p_value: { type: 'number' }, bound: nullableNumber },
    },
    quantile: {
      type: ['object', 'null'],
      required: ['p', 'unit', 'n', 'estimate', 'ci_low', 'ci_high', 'se'],
      description: "A quantile metric: the arm's quantile with its outer (order-statistic) interval at the experiment's alpha and the standard error read off it; null when the arm has no values (docs/statistics.md §15).",
      properties: {
        p: { type: 'number' }, unit: { type: 'string', enum: ['participant', 'event'] }, n: { type: 'integer' },
        estimate: { type: 'number' }, ci_low: { type: 'number' }, ci_high: { type: 'number' }, se: { type: 'number' },
      },
    },
  },
} as const;

const variantResultSchema = {
  type: 'object',
  required: ['variant_key', 'participant_count', 'metric_values', 'p_value', 'p_value_present', 'metric_stats'],
  properties: {
    variant_key: { type: 'string' },
    participant_count: { type: 'integer', description: 'Distinct contexts exposed to the variant in the current iteration (first exposure wins).' },
    metric_values: { type: 'object', additionalProperties: { type: 'number' }, description: 'Per metric: the mean per participant (bool: the conversion rate).' },
    p_value: { type: 'number', description: 'Primary metric, Welch two-sided against the control; 0 when p_value_present is false.' },
    p_value_present: { type: 'boolean' },
    metric_stats: { type: 'object', additionalProperties: metricStatsSchema },
  },
} as const;

export const resultsSchema = {
  type: 'object',
  required: ['experiment_id', 'variant_results', 'computed_at_ms', 'is_stale', 'next_run_at_ms', 'computation_status', 'srm_p_value', 'srm_warning', 'analysis'],
  properties: {
    experiment_id: { type: 'string' },
    variant_results: { type: 'array', items: variantResultSchema },
    computed_at_ms: { type: 'integer' },
    is_stale: { type: 'boolean', description: 'Exposures or events arrived after computed_at_ms.' },
    next_run_at_ms: { type: 'integer', description: 'When the schedule recomputes an ACTIVE experiment; 0 when not scheduled.' },
    computation_status: { type: 'string', description: '`completed`, or `no_iteration` for an experiment that never ran.' },
    srm_p_value: { ...nullableNumber, description: "Sample-ratio mismatch: chi-squared p of the participant counts against the flag's planned split." },
    srm_warning: { type: ['boolean', 'null'], description: 'srm_p_value below the srm_threshold with enough participants expected; null in results computed before it.' },
    sequential_srm_p_value: { ...nullableNumber, description: 'The sequential SRM check (Dirichlet–multinomial e-value): an always-valid p-value, valid however often it is read; null when not testable.' },
    analysis: { ...analysisRecordSchema, type: ['object', 'null'], description: 'The settings the results were computed with; null in results computed before them.' },
  },
} as const;

export const recomputeParams = {
  type: 'object',
  required: ['experiment_id'],
  properties: { experiment_id: { type: 'string', minLength: 1, maxLength: 100, description: 'The experiment id; 400 when not a UUID.' } },
} as const;

export const jobParams = {
  type: 'object',
  required: ['job_id'],
  properties: { job_id: { type: 'string', minLength: 1, maxLength: 100 } },
} as const;

const jobStatus = { type: 'string', enum: ['pending', 'running', 'completed', 'failed'] } as const;

export const recomputeResponse = {
  type: 'object',
  required: ['job_id', 'status', 'created_at_ms'],
  properties: { job_id: { type: 'string' }, status: { ...jobStatus, description: 'Always pending.' }, created_at_ms: { type: 'integer' } },
} as const;

export const jobSchema = {
  type: 'object',
  required: ['job_id', 'status', 'started_at_ms', 'completed_at_ms', 'error', 'created_at_ms'],
  properties: {
    job_id: { type: 'string' },
    status: { ...jobStatus, description: 'pending → running → completed | failed.' },
    started_at_ms: { type: 'integer', description: '0 until a worker first claims the job.' },
    completed_at_ms: { type: 'integer', description: '0 until the job completes or fails.' },
    error: { type: 'string', description: 'Empty unless failed.' },
    created_at_ms: { type: 'integer' },
  },
} as const;

/** The power calculator (docs/contract.md "Power and duration", docs/statistics.md §14). */
const nullableNumberOrNull = { type: ['number', 'null'] } as const;
const powerPlanSchema = {
  type: 'object',
  required: ['sample_per_arm', 'total', 'days'],
  properties: {
    sample_per_arm: { type: ['array', 'null'], items: { type: 'integer' }, description: 'Participants per arm, in the order of `weights` / `arms` (the control first); null when the inputs give none (no variance, mean 0).' },
    total: { type: ['integer', 'null'], description: 'All arms together.' },
    days: { ...nullableNumberOrNull, description: 'total / exposures_per_day (not rounded); null without a rate.' },
  },
} as const;

const powerInputsSchema = {
  type: 'object',
  required: ['mean', 'variance', 'exposures_per_day', 'cuped_r2', 'participants', 'window_days', 'truncated', 'source'],
  properties: {
    mean: nullableNumberOrNull,
    variance: { ...nullableNumberOrNull, description: 'Per unit (n − 1); a ratio metric: the delta-method variance.' },
    exposures_per_day: { ...nullableNumberOrNull, description: 'New participants a day entering the experiment (all arms).' },
    cuped_r2: { type: 'number' },
    participants: { type: ['integer', 'null'], description: 'Units of the past window read (contexts with any event in it); null when nothing was read.' },
    window_days: { type: 'integer' },
    truncated: { type: 'boolean', description: 'The window had more units than the bound (1,000,000): the estimates cover the first units only.' },
    source: {
      type: 'object',
      required: ['mean', 'variance', 'exposures_per_day', 'cuped_r2'],
      properties: {
        mean: { type: 'string', enum: ['events', 'given'] },
        variance: { type: 'string', enum: ['events', 'given'] },
        exposures_per_day: { type: ['string', 'null'], enum: ['events', 'given', 'experiment', null] },
        cuped_r2: { type: 'string', enum: ['events', 'given', 'none'] },
      },
    },
  },
} as const;

const powerSettingsSchema = {
  type: 'object',
  required: ['mde', 'alpha', 'power', 'sides', 'weights', 'sequential'],
  properties: {
    mde: { type: 'number' },
    alpha: { type: 'number' },
    power: { type: 'number' },
    sides: { type: 'string', enum: ['two', 'one'] },
    weights: { type: 'array', items: { type: 'number' }, description: 'Normalised to sum 1, the control first.' },
    sequential: { type: ['object', 'null'], required: ['tuning_n'], properties: { tuning_n: { type: 'integer' } } },
  },
} as const;

const powerAnswerProperties = {
  settings: powerSettingsSchema,
  inputs: powerInputsSchema,
  fixed: powerPlanSchema,
  sequential: { ...powerPlanSchema, type: ['object', 'null'], description: 'The always-valid test (null without `sequential`).' },
} as const;

export const powerBody = {
  type: 'object',
  required: ['mde'],
  description:
    'An experiment not yet created: `metric` (as in the experiment create body) read over the past `window_days` of the environment\'s events, ' +
    'or `mean` and `variance` by hand (each overrides the data); `exposures_per_day` by hand or the window\'s distinct contexts a day × `traffic_allocation`.',
  properties: {
    metric: { ...metricBodySchema, type: ['object', 'null'] },
    window_days: { type: ['integer', 'null'], description: 'The past window read, 1..90 days (default 14).' },
    mean: nullableNumberOrNull,
    variance: nullableNumberOrNull,
    exposures_per_day: nullableNumberOrNull,
    traffic_allocation: { ...nullableNumberOrNull, description: 'Share of the window\'s traffic the experiment will get, (0, 1] (default 1); scales the rate read from events.' },
    mde: { type: ['number', 'null'], description: 'Minimum detectable effect relative to the mean (0.02 = 2 %), > 0.' },
    alpha: { ...nullableNumberOrNull, description: 'Default 0.05; in (0, 0.5).' },
    power: { ...nullableNumberOrNull, description: 'Default 0.8; above alpha, below 1.' },
    sides: { type: ['string', 'null'], description: "'two' (default) or 'one'." },
    arms: { type: ['integer', 'null'], description: '2..20 equal arms (default 2, or the length of weights).' },
    weights: { type: ['array', 'null'], items: { type: 'number' }, description: 'Relative arm sizes, the control first.' },
    cuped_r2: { ...nullableNumberOrNull, description: "CUPED's expected R² in [0, 1); default: estimated from the window for a metric with cuped, else 0." },
    sequential: { type: ['object', 'null'], description: '`{tuning_n?}` (default 5000): also the always-valid test; null: fixed only.' },
  },
} as const;

export const powerSchema = {
  type: 'object',
  required: ['settings', 'inputs', 'fixed', 'sequential'],
  properties: powerAnswerProperties,
} as const;

export const experimentPowerQuery = {
  type: 'object',
  required: ['mde'],
  properties: {
    mde: { type: 'string', maxLength: 32, description: 'Minimum detectable effect relative to the mean (0.02 = 2 %), > 0.' },
    power: { type: 'string', maxLength: 32, description: 'Target power (default 0.8).' },
    window_days: { type: 'string', maxLength: 8, description: 'Past window of events read for the mean and variance, 1..90 (default 14).' },
    metric_key: { type: 'string', maxLength: 128, description: 'Only this metric (default: every metric of the experiment).' },
  },
} as const;

export const experimentPowerSchema = {
  type: 'object',
  required: ['experiment_id', 'arms', 'metrics'],
  properties: {
    experiment_id: { type: 'string' },
    arms: { type: 'array', items: { type: 'string' }, description: 'The variant keys, the control first (the order of sample_per_arm).' },
    metrics: {
      type: 'array',
      items: {
        type: 'object',
        required: ['metric_key', 'settings', 'inputs', 'fixed', 'sequential', 'current'],
        properties: {
          metric_key: { type: 'string' },
          ...powerAnswerProperties,
          current: {
            type: ['object', 'null'],
            required: ['participants_per_arm', 'power', 'sequential_power', 'projected_end_ms'],
            description: 'While the iteration runs: its participants so far, the power now for the mde (fixed; sequential too when on) and the projected end.',
            properties: {
              participants_per_arm: { type: 'object', additionalProperties: { type: 'integer' } },
              power: nullableNumberOrNull,
              sequential_power: nullableNumberOrNull,
              projected_end_ms: { type: ['integer', 'null'] },
            },
          },
        },
      },
    },
  },
} as const;
