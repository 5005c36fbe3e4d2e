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
  /**
   * A guardrail is watched for harm, not optimised (the console shows it apart): null for a metric
   * that is not one. `margin` (≥ 0) is the harm tolerated, on the relative effect (0.02 = 2 %) or
   * the absolute one (the metric's units); 0: any significant harm fails (docs/statistics.md §13).
   */
  guardrail: GuardrailMargin | null;
}

/** A guardrail's tolerated harm (docs/statistics.md §13). */
export interface GuardrailMargin {
  margin: number;
  marginKind: 'absolute' | 'relative';
}

/**
 * A metric as stored before guardrails had margins (`guardrail: true/false`) reads as a guardrail
 * with margin 0 on the relative effect, or none. Stored rows are rewritten by migration 0026; the
 * readers still pass every stored metric through this, so a value written by an older instance
 * during a rolling upgrade reads the same.
 */
export function normaliseStoredMetric(metric: ExperimentMetric): ExperimentMetric {
  const guardrail = metric.guardrail as unknown;
  if (guardrail === true) return { ...metric, guardrail: { margin: 0, marginKind: 'relative' } };
  if (guardrail === false || guardrail === undefined) return { ...metric, guardrail: null };
  return metric;
}

/**
 * A quantile metric's quantile (docs/statistics.md §15): the p-th quantile (0 < p < 1) of each arm's
 * per-participant values (`participant`: the metric's aggregation per participant, as any event
 * metric) or of the values of every attributed event (`event`: the events of a participant are
 * clustered, which the interval accounts for). Without capping and CUPED.
 */
export interface MetricQuantile {
  p: number;
  unit: 'participant' | 'event';
}
export const QUANTILE_UNITS: readonly MetricQuantile['unit'][] = ['participant', 'event'];

/** A metric over one event key. */
export interface EventMetric extends MetricCommon, MetricSource {
  kind: 'event';
  capping: MetricCapping | null;
  /**
   * Set: the metric is the arm's quantile of the values rather than their mean (§15). Absent or
   * null in metrics stored before quantile metrics: a mean metric.
   */
  quantile?: MetricQuantile | null;
}

/** The metric's quantile when it is a quantile metric, else null. */
export const metricQuantile = (metric: ExperimentMetric): MetricQuantile | null =>
  metric.kind === 'event' ? (metric.quantile ?? null) : null;

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
    guardrail: null,
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
  /** Which engine the verdicts (and the console) read: p-values and intervals, or chance to win. */
  engine: AnalysisEngine;
  /**
   * Always-valid inference (docs/statistics.md §9–§10), tuned for a planned sample `tuningN`
   * (both arms); null: fixed-horizon only.
   */
  sequential: { tuningN: number } | null;
  /** With `sequential`: α/2 sequential while running, α/2 fixed-horizon once the iteration ended (§10). */
  hybrid: boolean;
  /** The Bayesian engine's prior on the relative effect; null: the flat (improper) prior (§12). */
  prior: { mean: number; sd: number } | null;
}

/** N* when `sequential: {}` names none: GrowthBook's default (the same value as @switchyard/stats' DEFAULT_SEQUENTIAL_TUNING_N). */
export const DEFAULT_SEQUENTIAL_TUNING_N = 5000;

export type AnalysisEngine = 'frequentist' | 'bayesian';
export const ANALYSIS_ENGINES: readonly AnalysisEngine[] = ['frequentist', 'bayesian'];

export const DEFAULT_ANALYSIS: Readonly<AnalysisSettings> = {
  alpha: 0.05,
  sides: 'two',
  relativeInterval: 'delta',
  correction: 'none',
  correctionFamily: 'all',
  srmThreshold: 0.001,
  srmMinExpected: 5,
  engine: 'frequentist',
  sequential: null,
  hybrid: false,
  prior: null,
};

/**
 * Settings as stored: those saved before issue 39's fields (engine, sequential, hybrid, prior) take
 * their defaults, so results and experiments stored earlier read as they were computed.
 */
export function normaliseStoredAnalysis(analysis: AnalysisSettings): AnalysisSettings {
  return {
    ...analysis,
    engine: analysis.engine ?? DEFAULT_ANALYSIS.engine,
    sequential: analysis.sequential ?? null,
    hybrid: analysis.hybrid ?? false,
    prior: analysis.prior ?? null,
  };
}

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
  /** A quantile metric's order statistics over the arm (§15); absent or null otherwise or without values. */
  quantile?: QuantileOrderStatistics | null;
}

/**
 * A quantile metric's exact order statistics over one arm (docs/statistics.md §15), X_(1) ≤ … ≤
 * X_(n) its sorted values (participants' values, or events' values): the point estimate X_(⌈np⌉)
 * and the outer confidence interval [X_(L), X_(U)] at the normal quantile `z`, with
 * L = ⌊np − z·σ√n⌋ and U = ⌈np + z·σ√n⌉ clamped to [1, n], σ² = p(1 − p) for participants and the
 * delta-method variance of the share of events ≤ the estimate (per event) for events.
 */
export interface QuantileOrderStatistics {
  /** Values in the arm: participants (unit participant) or events (unit event). */
  n: number;
  /** Participants the values come from (equals n for unit participant). */
  clusters: number;
  estimate: number;
  lower: number;
  upper: number;
  lowerRank: number;
  upperRank: number;
  /** The normal quantile the ranks were taken at (z_{1−α/2}). */
  z: number;
}

/** An effect with its interval and p-value; an unbounded side of the interval is null. */
export interface EffectEstimate {
  estimate: number;
  ci_low: number | null;
  ci_high: number | null;
  p_value: number | null;
}

export type MetricVerdict = 'better' | 'worse' | 'inconclusive' | 'not_enough_data';

/** A guardrail's status (docs/statistics.md §13). */
export type GuardrailStatus = 'ok' | 'warning' | 'failing';

/** An always-valid test carried across looks (docs/statistics.md §10; @switchyard/stats SequentialRunningState). */
export interface SequentialRunning {
  /** Looks folded in so far (a look with no computable result is not counted). */
  looks: number;
  /** The latest look's estimate (the point estimate is not intersected). */
  estimate: number;
  /** inf over the looks of the always-valid p-value. */
  p_value: number;
  /** max over the looks of the lower bound (null: unbounded below at every look). */
  ci_low: number | null;
  /** min over the looks of the upper bound (null: unbounded above at every look). */
  ci_high: number | null;
  /**
   * True once a look's interval missed the running intersection entirely. Under the model that
   * happens with probability ≤ α; in practice it means the effect drifted over time (or the
   * variance estimate was off). The intersection then restarts from that look's interval.
   */
  disjoint: boolean;
}

/** A sequential guardrail's tests carried across looks (§13; @switchyard/stats GuardrailResult). */
export interface GuardrailRunning {
  estimate: number;
  harm_p_value: number;
  non_inferiority_p_value: number;
  bound: number | null;
  status: GuardrailStatus;
}

/**
 * What the stats worker folds across its looks at one iteration, saved with the results and never
 * sent to clients. `settings` names what the states were computed with (α, sides, N*, hybrid, the
 * metrics' directions and guardrail margins): when it changes mid-iteration the states start
 * again, since a running minimum over tests of different settings is no test at all.
 */
export interface ExperimentRunningState {
  iterationId: string;
  settings: string;
  /** Per treatment variant, per metric key: the relative effect's running always-valid test. */
  sequential: Record<string, Record<string, SequentialRunning>>;
  /** Per treatment variant, per guardrail metric key (sequential analyses only). */
  guardrails: Record<string, Record<string, GuardrailRunning>>;
  /** The sequential SRM e-value's running state (§11). */
  srm: { looks: number; max_log_e_value: number; p_value: number } | null;
  /** `variant/metric` of the guardrails whose start of failing was already recorded in this iteration. */
  failingAnnounced: string[];
}
