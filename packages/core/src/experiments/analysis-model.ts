/**
 * The shapes of experiment analysis (issue "Experiment analysis I"; docs/statistics.md): how each
 * metric of an experiment is defined, the experiment's analysis settings, the sufficient statistics
 * the store aggregates per arm, and what the results report per metric and variant. Pure types and
 * defaults: REST, gRPC, the store and the statistics engine (@switchyard/stats) all speak these.
 */

/** How one participant's events of a metric become its value. */
export type MetricAggregation = 'conversion' | 'sum' | 'count' | 'mean';
export const METRIC_AGGREGATIONS: readonly MetricAggregation[] = ['conversion', 'sum', 'count', 'mean'];

/** Which way a change of the metric is good. */
export type MetricDirection = 'increase' | 'decrease';
export const METRIC_DIRECTIONS: readonly MetricDirection[] = ['increase', 'decrease'];

/**
 * Outlier capping of participant values, applied before the statistics. `absolute`: values are
 * clamped to [lower, upper] (either side may be null = unbounded). `percentile`: `lower` / `upper`
 * are quantiles in (0, 1) of the participant values pooled over all arms (PostgreSQL
 * `percentile_cont`), zeros left out of the quantile when `ignoreZeros`.
 */
export interface MetricCapping {
  kind: 'absolute' | 'percentile';
  lower: number | null;
  upper: number | null;
  ignoreZeros: boolean;
}

/** One event key aggregated per participant, counted from its first exposure in the iteration. */
export interface MetricSource {
  eventKey: string;
  aggregation: MetricAggregation;
  /** Only events within this long after the participant's first exposure count; null: to the window's end. */
  windowMs: number | null;
}

interface MetricCommon {
  /** Names the metric in results; unique within the experiment. */
  key: string;
  direction: MetricDirection;
  /** CUPED: the same metric over `lookbackMs` before the participant's first exposure is the covariate. */
  cuped: { lookbackMs: number } | null;
  /** A guardrail is watched for harm, not optimised (reported the same way; the console shows it apart). */
  guardrail: boolean;
}

/** A metric over one event key. */
export interface EventMetric extends MetricCommon, MetricSource {
  kind: 'event';
  capping: MetricCapping | null;
}

/** numerator / denominator, both per participant (revenue per session), by the delta method. */
export interface RatioMetric extends MetricCommon {
  kind: 'ratio';
  numerator: MetricSource;
  denominator: MetricSource;
}

export type ExperimentMetric = EventMetric | RatioMetric;

export const DEFAULT_CUPED_LOOKBACK_MS = 14 * 24 * 60 * 60 * 1000;

/**
 * The metric an old-style `metric_keys` entry means: the event's values summed per participant
 * (bool events: converted or not), counted from the first exposure, no window, no capping, no
 * CUPED, higher is better.
 */
export function metricFromKey(eventKey: string, valueType: 'bool' | 'int' | 'double'): EventMetric {
  return {
    kind: 'event',
    key: eventKey,
    eventKey,
    aggregation: valueType === 'bool' ? 'conversion' : 'sum',
    windowMs: null,
    direction: 'increase',
    capping: null,
    cuped: null,
    guardrail: false,
  };
}

/** The event keys a metric reads. */
export function metricEventKeys(metric: ExperimentMetric): string[] {
  return metric.kind === 'event' ? [metric.eventKey] : [...new Set([metric.numerator.eventKey, metric.denominator.eventKey])];
}

export type MultipleTestingCorrection = 'none' | 'bonferroni' | 'holm' | 'benjamini_hochberg';
export const MULTIPLE_TESTING_CORRECTIONS: readonly MultipleTestingCorrection[] = ['none', 'bonferroni', 'holm', 'benjamini_hochberg'];
/** Which p-values are corrected together: every metric × variant, each metric's variants, or each variant's metrics. */
export type CorrectionFamily = 'all' | 'per_metric' | 'per_variant';
export const CORRECTION_FAMILIES: readonly CorrectionFamily[] = ['all', 'per_metric', 'per_variant'];

/** An experiment's analysis settings. */
export interface AnalysisSettings {
  alpha: number;
  /** `one`: the alternative is the metric's good direction. */
  sides: 'two' | 'one';
  relativeInterval: 'delta' | 'fieller';
  correction: MultipleTestingCorrection;
  correctionFamily: CorrectionFamily;
  /** SRM warns below this p-value ... */
  srmThreshold: number;
  /** ... once every variant expects at least this many participants. */
  srmMinExpected: number;
}

export const DEFAULT_ANALYSIS: Readonly<AnalysisSettings> = {
  alpha: 0.05,
  sides: 'two',
  relativeInterval: 'delta',
  correction: 'none',
  correctionFamily: 'all',
  srmThreshold: 0.001,
  srmMinExpected: 5,
};

/**
 * Mergeable moments of k variables observed together on the same n participants:
 * `means[i]` and the co-moments `comoments[i][j]` = Σ (v_i − mean_i)(v_j − mean_j) (a symmetric
 * k × k matrix; the diagonal is each variable's M2, so the sample variance is M2 / (n − 1)).
 * Two such summaries merge exactly (Chan, Golub & LeVeque's update, generalised to co-moments).
 */
export interface JointMoments {
  n: number;
  means: number[];
  comoments: number[][];
}

/**
 * What the store aggregates for one metric over one arm's participants, after capping. The
 * variables of `moments`, in this order:
 * - event metric: [value] or, with CUPED, [value, pre-exposure value];
 * - ratio metric: [numerator, denominator] or, with CUPED, [numerator, denominator,
 *   pre-exposure numerator, pre-exposure denominator].
 * Participants without events count as 0, except for a `mean` aggregation, whose value is
 * undefined without events: those participants are left out (n is then the participants with
 * an event).
 */
export interface ArmMetricData {
  moments: JointMoments;
  /** The mean of the (first) value before capping; equals moments.means[0] without capping. */
  uncappedMean: number;
}

/** An effect with its interval and p-value; an unbounded side of the interval is null. */
export interface EffectEstimate {
  estimate: number;
  ci_low: number | null;
  ci_high: number | null;
  p_value: number | null;
}

export type MetricVerdict = 'better' | 'worse' | 'inconclusive' | 'not_enough_data';
