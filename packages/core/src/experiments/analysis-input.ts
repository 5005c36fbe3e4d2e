import { invalidArgument } from '../errors/domain-error.ts';
import {
  ANALYSIS_ENGINES,
  CORRECTION_FAMILIES,
  DEFAULT_ANALYSIS,
  DEFAULT_CUPED_LOOKBACK_MS,
  DEFAULT_SEQUENTIAL_TUNING_N,
  METRIC_AGGREGATIONS,
  METRIC_DIRECTIONS,
  MULTIPLE_TESTING_CORRECTIONS,
  QUANTILE_UNITS,
  type AnalysisEngine,
  type AnalysisSettings,
  type CorrectionFamily,
  type GuardrailMargin,
  type EventMetric,
  type ExperimentMetric,
  type MetricAggregation,
  type MetricCapping,
  type MetricDirection,
  type MetricQuantile,
  type MetricSource,
  type MultipleTestingCorrection,
  type RatioMetric,
} from './analysis-model.ts';

/**
 * The wire shapes of metric definitions and analysis settings (docs/contract.md "Experiments"),
 * snake_case as REST and gRPC carry them, and their parsing into analysis-model.ts's shapes.
 * Pure: REST bodies and gRPC messages (mapped to these shapes) go through the same checks, and
 * every refusal is INVALID_ARGUMENT naming the field (`metrics[2].capping.lower`). Whether event
 * keys are registered event definitions depends on the environment: the service checks that.
 */

/** Metrics per experiment: each costs a pass over its events per recompute. */
export const MAX_METRICS = 20;
export const MAX_METRIC_KEY_LENGTH = 128;
/** A metric's window and CUPED lookback: at most a year (each widens the events read). */
export const MAX_METRIC_WINDOW_MS = 366 * 24 * 60 * 60 * 1000;
export const MAX_CUPED_LOOKBACK_MS = 366 * 24 * 60 * 60 * 1000;
/** srm_min_expected: a larger threshold would switch the warning off for any real experiment. */
export const MAX_SRM_MIN_EXPECTED = 1_000_000_000;
/** Sequential tuning N*: at least 10 participants, at most a billion (docs/statistics.md §9). */
export const MIN_SEQUENTIAL_TUNING_N = 10;
export const MAX_SEQUENTIAL_TUNING_N = 1_000_000_000;
/** A relative guardrail margin: at most 10 (1,000 % harm); an absolute one within ±MAX_ABSOLUTE_CAP. */
export const MAX_RELATIVE_GUARDRAIL_MARGIN = 10;
/** A prior on the relative effect: |mean| and sd at most this (1e6 = a hundred-million-percent lift). */
export const MAX_PRIOR_MAGNITUDE = 1e6;
/** Absolute capping bounds: finite and at most this far from 0 (they are compared with values stored as float8). */
export const MAX_ABSOLUTE_CAP = 1e15;

export interface MetricSourceWire {
  event_key: string;
  aggregation: MetricAggregation;
  window_ms?: number | null;
}

export interface MetricCappingWire {
  kind: MetricCapping['kind'];
  lower?: number | null;
  upper?: number | null;
  ignore_zeros?: boolean | null;
}

/** An event metric (`event_key` set) or a ratio metric (`ratio` set), as sent and answered. */
export interface MetricWire {
  key?: string | null;
  event_key?: string | null;
  aggregation?: MetricAggregation | null;
  window_ms?: number | null;
  direction?: MetricDirection | null;
  capping?: MetricCappingWire | null;
  cuped?: { lookback_ms?: number | null } | null;
  /** `true` = `{margin: 0, margin_kind: "relative"}`; `false`/null: not a guardrail. Answered as the object or null. */
  guardrail?: boolean | GuardrailWire | null;
  ratio?: { numerator: MetricSourceWire; denominator: MetricSourceWire } | null;
  /** A quantile metric (docs/statistics.md §15); null or absent: a mean metric. */
  quantile?: { p?: number | null; unit?: MetricQuantile['unit'] | null } | null;
}

export interface GuardrailWire {
  margin?: number | null;
  margin_kind?: GuardrailMargin['marginKind'] | null;
}

export interface AnalysisWire {
  alpha?: number | null;
  sides?: AnalysisSettings['sides'] | null;
  relative_interval?: AnalysisSettings['relativeInterval'] | null;
  correction?: MultipleTestingCorrection | null;
  correction_family?: CorrectionFamily | null;
  srm_threshold?: number | null;
  srm_min_expected?: number | null;
  engine?: AnalysisEngine | null;
  sequential?: { tuning_n?: number | null } | null;
  hybrid?: boolean | null;
  prior?: { mean?: number | null; sd?: number | null } | null;
}

const present = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function objectAt(value: unknown, field: string, allowed: readonly string[]): Record<string, unknown> {
  if (!isObject(value)) throw invalidArgument(`${field} must be an object`, field);
  // A field set to null (JSON) or undefined (a mapped gRPC message) is not sent.
  const unknown = Object.keys(value).find((name) => !allowed.includes(name) && present(value[name]));
  if (unknown !== undefined) throw invalidArgument(`${field}.${unknown} is not a field (allowed: ${allowed.join(', ')})`, `${field}.${unknown}`);
  return value;
}

function keyAt(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_METRIC_KEY_LENGTH) {
    throw invalidArgument(`${field} must be a non-empty string of at most ${MAX_METRIC_KEY_LENGTH} characters`, field);
  }
  return value;
}

function oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidArgument(`${field} must be one of ${allowed.join(', ')}`, field);
  }
  return value as T;
}

function optionalOneOf<T extends string>(value: unknown, field: string, allowed: readonly T[], fallback: T): T {
  return present(value) ? oneOf(value, field, allowed) : fallback;
}

function durationAt(value: unknown, field: string, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0 || value > max) {
    throw invalidArgument(`${field} must be an integer number of milliseconds > 0 and <= ${max}`, field);
  }
  return value;
}

function booleanAt(value: unknown, field: string): boolean {
  if (!present(value)) return false;
  if (typeof value !== 'boolean') throw invalidArgument(`${field} must be a boolean`, field);
  return value;
}

function numberAt(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalidArgument(`${field} must be a finite number`, field);
  return value;
}

const SOURCE_FIELDS = ['event_key', 'aggregation', 'window_ms'] as const;
const CAPPING_FIELDS = ['kind', 'lower', 'upper', 'ignore_zeros'] as const;
const EVENT_FIELDS = ['key', 'event_key', 'aggregation', 'window_ms', 'direction', 'capping', 'cuped', 'guardrail', 'quantile'] as const;
/** A quantile's p: within (0, 1), and not so close to either end that no arm could estimate it. */
export const MIN_QUANTILE_P = 0.001;
export const MAX_QUANTILE_P = 0.999;
const RATIO_FIELDS = ['key', 'ratio', 'direction', 'cuped', 'guardrail'] as const;
const ANALYSIS_FIELDS = [
  'alpha', 'sides', 'relative_interval', 'correction', 'correction_family', 'srm_threshold', 'srm_min_expected', 'engine', 'sequential', 'hybrid', 'prior',
] as const;

/**
 * `true` is a guardrail with margin 0 on the relative effect, `false` (or null) none; an object
 * `{margin?, margin_kind?}` sets the margin (default 0, `relative`): a relative margin in
 * [0, MAX_RELATIVE_GUARDRAIL_MARGIN], an absolute one in [0, MAX_ABSOLUTE_CAP].
 */
function parseGuardrail(value: unknown, field: string): GuardrailMargin | null {
  if (!present(value) || value === false) return null;
  if (value === true) return { margin: 0, marginKind: 'relative' };
  if (!isObject(value)) throw invalidArgument(`${field} must be a boolean or {margin, margin_kind}`, field);
  const guardrail = objectAt(value, field, ['margin', 'margin_kind']);
  const marginKind = optionalOneOf(guardrail.margin_kind, `${field}.margin_kind`, ['relative', 'absolute'] as const, 'relative');
  const margin = present(guardrail.margin) ? numberAt(guardrail.margin, `${field}.margin`) : 0;
  const max = marginKind === 'relative' ? MAX_RELATIVE_GUARDRAIL_MARGIN : MAX_ABSOLUTE_CAP;
  if (!(margin >= 0 && margin <= max)) throw invalidArgument(`${field}.margin must be from 0 to ${max} for a ${marginKind} margin`, `${field}.margin`);
  return { margin, marginKind };
}

function parseSource(value: unknown, field: string): MetricSource {
  const source = objectAt(value, field, SOURCE_FIELDS);
  return {
    eventKey: keyAt(source.event_key, `${field}.event_key`),
    aggregation: oneOf(source.aggregation, `${field}.aggregation`, METRIC_AGGREGATIONS),
    windowMs: present(source.window_ms) ? durationAt(source.window_ms, `${field}.window_ms`, MAX_METRIC_WINDOW_MS) : null,
  };
}

/**
 * `absolute`: clamp to [lower, upper], at least one bound, lower <= upper. `percentile`: quantiles
 * in (0, 1), at least one, lower < upper.
 */
function parseCapping(value: unknown, field: string): MetricCapping {
  const capping = objectAt(value, field, CAPPING_FIELDS);
  const kind = oneOf(capping.kind, `${field}.kind`, ['absolute', 'percentile'] as const);
  const lower = present(capping.lower) ? numberAt(capping.lower, `${field}.lower`) : null;
  const upper = present(capping.upper) ? numberAt(capping.upper, `${field}.upper`) : null;
  if (lower === null && upper === null) throw invalidArgument(`${field} needs lower, upper or both`, field);
  if (kind === 'absolute') {
    for (const [name, bound] of [['lower', lower], ['upper', upper]] as const) {
      if (bound !== null && Math.abs(bound) > MAX_ABSOLUTE_CAP) throw invalidArgument(`${field}.${name} must be within ±${MAX_ABSOLUTE_CAP}`, `${field}.${name}`);
    }
    if (lower !== null && upper !== null && lower > upper) throw invalidArgument(`${field}.lower must be <= ${field}.upper`, `${field}.lower`);
  } else {
    for (const [name, bound] of [['lower', lower], ['upper', upper]] as const) {
      if (bound !== null && !(bound > 0 && bound < 1)) throw invalidArgument(`${field}.${name} of a percentile capping must be a quantile in (0, 1)`, `${field}.${name}`);
    }
    if (lower !== null && upper !== null && lower >= upper) throw invalidArgument(`${field}.lower must be < ${field}.upper`, `${field}.lower`);
  }
  return { kind, lower, upper, ignoreZeros: booleanAt(capping.ignore_zeros, `${field}.ignore_zeros`) };
}

/** `{p, unit?}`: p in [MIN_QUANTILE_P, MAX_QUANTILE_P], unit `participant` (default) or `event`. */
function parseQuantile(value: unknown, field: string): MetricQuantile {
  const quantile = objectAt(value, field, ['p', 'unit']);
  if (!present(quantile.p)) throw invalidArgument(`${field}.p is required (the quantile, e.g. 0.5 for the median, 0.9 for p90)`, `${field}.p`);
  const p = numberAt(quantile.p, `${field}.p`);
  if (!(p >= MIN_QUANTILE_P && p <= MAX_QUANTILE_P)) throw invalidArgument(`${field}.p must be from ${MIN_QUANTILE_P} to ${MAX_QUANTILE_P}`, `${field}.p`);
  return { p, unit: optionalOneOf(quantile.unit, `${field}.unit`, QUANTILE_UNITS, 'participant') };
}

/** `cuped: {}` takes the default lookback; null or absent: no CUPED. */
function parseCuped(value: unknown, field: string): { lookbackMs: number } | null {
  if (!present(value)) return null;
  const cuped = objectAt(value, field, ['lookback_ms']);
  return { lookbackMs: present(cuped.lookback_ms) ? durationAt(cuped.lookback_ms, `${field}.lookback_ms`, MAX_CUPED_LOOKBACK_MS) : DEFAULT_CUPED_LOOKBACK_MS };
}

/** One metric of a `metrics` list; `field` names it (`metrics[3]`). */
export function parseMetric(value: unknown, field: string): ExperimentMetric {
  if (isObject(value) && present(value.ratio)) {
    if (present(value.quantile)) throw invalidArgument(`${field}.quantile: a ratio metric cannot be a quantile metric (a quantile is of one event key's values)`, `${field}.quantile`);
    if (present(value.event_key) || present(value.aggregation) || present(value.window_ms) || present(value.capping)) {
      const extra = ['event_key', 'aggregation', 'window_ms', 'capping'].find((name) => present(value[name])) ?? 'ratio';
      throw invalidArgument(`${field} is a ratio metric: ${extra} belongs in ratio.numerator / ratio.denominator (capping applies to event metrics only)`, `${field}.${extra}`);
    }
    const metric = objectAt(value, field, RATIO_FIELDS);
    const ratio = objectAt(metric.ratio, `${field}.ratio`, ['numerator', 'denominator']);
    if (!present(metric.key)) throw invalidArgument(`${field}.key is required for a ratio metric`, `${field}.key`);
    const parsed: RatioMetric = {
      kind: 'ratio',
      key: keyAt(metric.key, `${field}.key`),
      numerator: parseSource(ratio.numerator, `${field}.ratio.numerator`),
      denominator: parseSource(ratio.denominator, `${field}.ratio.denominator`),
      direction: optionalOneOf(metric.direction, `${field}.direction`, METRIC_DIRECTIONS, 'increase'),
      cuped: parseCuped(metric.cuped, `${field}.cuped`),
      guardrail: parseGuardrail(metric.guardrail, `${field}.guardrail`),
    };
    return parsed;
  }
  const metric = objectAt(value, field, EVENT_FIELDS);
  if (!present(metric.event_key)) throw invalidArgument(`${field} needs event_key (an event metric) or ratio (a ratio metric)`, `${field}.event_key`);
  const eventKey = keyAt(metric.event_key, `${field}.event_key`);
  const quantile = present(metric.quantile) ? parseQuantile(metric.quantile, `${field}.quantile`) : null;
  if (quantile !== null) {
    if (present(metric.cuped)) throw invalidArgument(`${field}.cuped: CUPED adjusts means; it does not apply to a quantile metric`, `${field}.cuped`);
    if (present(metric.capping)) throw invalidArgument(`${field}.capping: a quantile metric is not capped (a quantile is already robust to outliers)`, `${field}.capping`);
    if (quantile.unit === 'event' && present(metric.aggregation)) {
      throw invalidArgument(`${field}.aggregation: a per-event quantile (unit "event") reads each event's own value; aggregation applies to unit "participant"`, `${field}.aggregation`);
    }
  }
  const parsed: EventMetric = {
    kind: 'event',
    key: present(metric.key) ? keyAt(metric.key, `${field}.key`) : eventKey,
    eventKey,
    // A quantile metric's participant value is summed by default; a per-event quantile's
    // participants count their events (their values are not aggregated).
    aggregation: quantile === null
      ? oneOf(metric.aggregation, `${field}.aggregation`, METRIC_AGGREGATIONS)
      : quantile.unit === 'event' ? 'count' : optionalOneOf(metric.aggregation, `${field}.aggregation`, METRIC_AGGREGATIONS, 'sum'),
    windowMs: present(metric.window_ms) ? durationAt(metric.window_ms, `${field}.window_ms`, MAX_METRIC_WINDOW_MS) : null,
    direction: optionalOneOf(metric.direction, `${field}.direction`, METRIC_DIRECTIONS, 'increase'),
    capping: present(metric.capping) ? parseCapping(metric.capping, `${field}.capping`) : null,
    cuped: parseCuped(metric.cuped, `${field}.cuped`),
    guardrail: parseGuardrail(metric.guardrail, `${field}.guardrail`),
  };
  if (quantile !== null) parsed.quantile = quantile;
  return parsed;
}

/** A `metrics` list: at most MAX_METRICS, keys unique. */
export function parseMetrics(value: unknown, field = 'metrics'): ExperimentMetric[] {
  if (!Array.isArray(value)) throw invalidArgument(`${field} must be an array of metrics`, field);
  if (value.length > MAX_METRICS) throw invalidArgument(`${field} holds at most ${MAX_METRICS} metrics`, field);
  const metrics = value.map((item, i) => parseMetric(item, `${field}[${i}]`));
  const seen = new Set<string>();
  metrics.forEach((metric, i) => {
    if (seen.has(metric.key)) throw invalidArgument(`${field}[${i}].key: '${metric.key}' names two metrics (keys are unique; set key to tell them apart)`, `${field}[${i}].key`);
    seen.add(metric.key);
  });
  return metrics;
}

/** Analysis settings; a missing (or null) field takes its DEFAULT_ANALYSIS value. */
export function parseAnalysis(value: unknown, field = 'analysis'): AnalysisSettings {
  const analysis = objectAt(value, field, ANALYSIS_FIELDS);
  const alpha = present(analysis.alpha) ? numberAt(analysis.alpha, `${field}.alpha`) : DEFAULT_ANALYSIS.alpha;
  if (!(alpha > 0 && alpha <= 0.5)) throw invalidArgument(`${field}.alpha must be in (0, 0.5]`, `${field}.alpha`);
  const srmThreshold = present(analysis.srm_threshold) ? numberAt(analysis.srm_threshold, `${field}.srm_threshold`) : DEFAULT_ANALYSIS.srmThreshold;
  if (!(srmThreshold > 0 && srmThreshold < 1)) throw invalidArgument(`${field}.srm_threshold must be in (0, 1)`, `${field}.srm_threshold`);
  const srmMinExpected = present(analysis.srm_min_expected) ? numberAt(analysis.srm_min_expected, `${field}.srm_min_expected`) : DEFAULT_ANALYSIS.srmMinExpected;
  if (!(srmMinExpected >= 0 && srmMinExpected <= MAX_SRM_MIN_EXPECTED)) {
    throw invalidArgument(`${field}.srm_min_expected must be from 0 to ${MAX_SRM_MIN_EXPECTED}`, `${field}.srm_min_expected`);
  }
  const sides = optionalOneOf(analysis.sides, `${field}.sides`, ['two', 'one'] as const, DEFAULT_ANALYSIS.sides);
  const engine = optionalOneOf(analysis.engine, `${field}.engine`, ANALYSIS_ENGINES, DEFAULT_ANALYSIS.engine);
  let sequential: AnalysisSettings['sequential'] = null;
  if (present(analysis.sequential)) {
    const given = objectAt(analysis.sequential, `${field}.sequential`, ['tuning_n']);
    const tuningN = present(given.tuning_n) ? numberAt(given.tuning_n, `${field}.sequential.tuning_n`) : DEFAULT_SEQUENTIAL_TUNING_N;
    if (!(Number.isSafeInteger(tuningN) && tuningN >= MIN_SEQUENTIAL_TUNING_N && tuningN <= MAX_SEQUENTIAL_TUNING_N)) {
      throw invalidArgument(`${field}.sequential.tuning_n must be an integer from ${MIN_SEQUENTIAL_TUNING_N} to ${MAX_SEQUENTIAL_TUNING_N}`, `${field}.sequential.tuning_n`);
    }
    // One-sided mixtures (a one-sided test, and every guardrail) are tuned at 2α, which must stay below 1 (docs/statistics.md §9).
    if (!(alpha < 0.5)) throw invalidArgument(`${field}.alpha must be below 0.5 with sequential testing (one-sided tests and guardrails are tuned at 2·alpha)`, `${field}.alpha`);
    sequential = { tuningN };
  }
  const hybrid = booleanAt(analysis.hybrid, `${field}.hybrid`);
  if (hybrid && sequential === null) throw invalidArgument(`${field}.hybrid needs ${field}.sequential (the hybrid is half sequential)`, `${field}.hybrid`);
  let prior: AnalysisSettings['prior'] = null;
  if (present(analysis.prior)) {
    if (engine !== 'bayesian') throw invalidArgument(`${field}.prior applies to the bayesian engine only (set ${field}.engine to "bayesian")`, `${field}.prior`);
    const given = objectAt(analysis.prior, `${field}.prior`, ['mean', 'sd']);
    const mean = present(given.mean) ? numberAt(given.mean, `${field}.prior.mean`) : 0;
    if (!(Math.abs(mean) <= MAX_PRIOR_MAGNITUDE)) throw invalidArgument(`${field}.prior.mean must be within ±${MAX_PRIOR_MAGNITUDE}`, `${field}.prior.mean`);
    if (!present(given.sd)) throw invalidArgument(`${field}.prior.sd is required (the prior's standard deviation on the relative effect, e.g. 0.05)`, `${field}.prior.sd`);
    const sd = numberAt(given.sd, `${field}.prior.sd`);
    if (!(sd > 0 && sd <= MAX_PRIOR_MAGNITUDE)) throw invalidArgument(`${field}.prior.sd must be > 0 and <= ${MAX_PRIOR_MAGNITUDE}`, `${field}.prior.sd`);
    prior = { mean, sd };
  }
  return {
    alpha,
    sides,
    relativeInterval: optionalOneOf(analysis.relative_interval, `${field}.relative_interval`, ['delta', 'fieller'] as const, DEFAULT_ANALYSIS.relativeInterval),
    correction: optionalOneOf(analysis.correction, `${field}.correction`, MULTIPLE_TESTING_CORRECTIONS, DEFAULT_ANALYSIS.correction),
    correctionFamily: optionalOneOf(analysis.correction_family, `${field}.correction_family`, CORRECTION_FAMILIES, DEFAULT_ANALYSIS.correctionFamily),
    srmThreshold,
    srmMinExpected,
    engine,
    sequential,
    hybrid,
    prior,
  };
}

const sourceWire = (source: MetricSource): MetricSourceWire => ({ event_key: source.eventKey, aggregation: source.aggregation, window_ms: source.windowMs });

/** A metric as REST and gRPC answer it: every field present (null where unset), valid input as it stands. */
export function metricWire(metric: ExperimentMetric): MetricWire {
  const cuped = metric.cuped === null ? null : { lookback_ms: metric.cuped.lookbackMs };
  if (metric.kind === 'ratio') {
    return {
      key: metric.key,
      ratio: { numerator: sourceWire(metric.numerator), denominator: sourceWire(metric.denominator) },
      direction: metric.direction,
      cuped,
      guardrail: guardrailWire(metric.guardrail),
    };
  }
  const quantile = metric.quantile ?? null;
  const wire: MetricWire = {
    key: metric.key,
    event_key: metric.eventKey,
    // A per-event quantile takes no aggregation (its stored 'count' only counts participants' events).
    aggregation: quantile?.unit === 'event' ? null : metric.aggregation,
    window_ms: metric.windowMs,
    direction: metric.direction,
    capping: metric.capping === null ? null : { kind: metric.capping.kind, lower: metric.capping.lower, upper: metric.capping.upper, ignore_zeros: metric.capping.ignoreZeros },
    cuped,
    guardrail: guardrailWire(metric.guardrail),
  };
  // Present on quantile metrics only, so the answers for every other metric are as they were.
  if (quantile !== null) wire.quantile = { p: quantile.p, unit: quantile.unit };
  return wire;
}

const guardrailWire = (guardrail: GuardrailMargin | null): GuardrailWire | null =>
  guardrail === null ? null : { margin: guardrail.margin, margin_kind: guardrail.marginKind };

/** Analysis settings as REST and gRPC answer them (sequential and prior may be null). */
export const analysisWire = (analysis: AnalysisSettings): Required<{ [K in Exclude<keyof AnalysisWire, 'sequential' | 'prior'>]: NonNullable<AnalysisWire[K]> }>
  & { sequential: { tuning_n: number } | null; prior: { mean: number; sd: number } | null } => ({
  alpha: analysis.alpha,
  sides: analysis.sides,
  relative_interval: analysis.relativeInterval,
  correction: analysis.correction,
  correction_family: analysis.correctionFamily,
  srm_threshold: analysis.srmThreshold,
  srm_min_expected: analysis.srmMinExpected,
  engine: analysis.engine,
  sequential: analysis.sequential === null ? null : { tuning_n: analysis.sequential.tuningN },
  hybrid: analysis.hybrid,
  prior: analysis.prior === null ? null : { mean: analysis.prior.mean, sd: analysis.prior.sd },
});
