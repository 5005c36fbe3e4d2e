import {
  DEFAULT_SEQUENTIAL_TUNING_N,
  MAX_SEQUENTIAL_TUNING_N,
  MIN_SEQUENTIAL_TUNING_N,
  invalidArgument,
  parseMetric,
  studiedRule,
  type ArmMetricData,
  type EnvironmentScope,
  type Experiment,
  type ExperimentMetric,
  type MetricWire,
  type Repositories,
} from '@switchyard/core';
import { eventValueTypes, requireRegisteredEventKeys } from './event-value-types.ts';
import { MAX_VARIANT_KEYS, present } from './experiment-input.ts';

/**
 * The power and duration calculator (docs/statistics.md §14, docs/contract.md "Power and
 * duration"): from a metric's mean and variance over a past window of the environment's events
 * (or given by hand) and the exposure rate, the sample per arm and the days for a minimum
 * detectable effect, fixed-horizon and always-valid, with CUPED's expected variance reduction;
 * for an experiment that runs, also its current power and projected end. Callers authorise
 * (ExperimentService, `experiment.read`).
 */

const DAY_MS = 86_400_000;
export const DEFAULT_POWER_WINDOW_DAYS = 14;
export const MAX_POWER_WINDOW_DAYS = 90;
/** Bounds the inputs keep the arithmetic finite (and the root finding short). */
const MAX_MAGNITUDE = 1e12;

/** POST /v1/environments/{env_id}/experiments/power. */
export interface PowerBody {
  metric?: MetricWire | null;
  window_days?: number | null;
  mean?: number | null;
  variance?: number | null;
  exposures_per_day?: number | null;
  traffic_allocation?: number | null;
  mde?: number | null;
  alpha?: number | null;
  power?: number | null;
  sides?: string | null;
  arms?: number | null;
  weights?: number[] | null;
  cuped_r2?: number | null;
  sequential?: { tuning_n?: number | null } | null;
}

/** GET /v1/environments/{env_id}/experiments/{id}/power: query parameters (strings from a URL, numbers from gRPC). */
export interface ExperimentPowerQuery {
  metric_key?: string | null;
  mde?: number | string | null;
  power?: number | string | null;
  window_days?: number | string | null;
}

export interface PowerInputs {
  mean: number | null;
  variance: number | null;
  exposures_per_day: number | null;
  cuped_r2: number;
  /** Units of the window read (null: nothing was read, every value given). */
  participants: number | null;
  window_days: number;
  /** The window's units (or, GET, the experiment's participants counted) reached the store's bound: the estimates cover the first units only, the counts are lower bounds. */
  truncated: boolean;
  source: { mean: 'events' | 'given'; variance: 'events' | 'given'; exposures_per_day: 'events' | 'given' | 'experiment' | null; cuped_r2: 'events' | 'given' | 'none' };
}

export interface PowerPlan {
  /** Per arm, in `arms` order (the control first); null: not computable (no variance, mean 0). */
  sample_per_arm: number[] | null;
  /** All arms together. */
  total: number | null;
  /** total / exposures_per_day; null without a rate. */
  days: number | null;
}

export interface PowerSettingsRecord {
  mde: number;
  alpha: number;
  power: number;
  sides: 'two' | 'one';
  /** Normalised to sum 1, the control first. */
  weights: number[];
  sequential: { tuning_n: number } | null;
}

export interface PowerAnswer {
  settings: PowerSettingsRecord;
  inputs: PowerInputs;
  fixed: PowerPlan;
  sequential: PowerPlan | null;
}

export interface MetricPowerAnswer extends PowerAnswer {
  metric_key: string;
  /** While an iteration runs (null otherwise). */
  current: { participants_per_arm: Record<string, number>; power: number | null; sequential_power: number | null; projected_end_ms: number | null } | null;
}

export interface ExperimentPowerAnswer {
  experiment_id: string;
  /** The experiment's variant keys, the control first (the order of sample_per_arm). */
  arms: string[];
  metrics: MetricPowerAnswer[];
}

// --- field checks (INVALID_ARGUMENT naming the field) ---

function numberField(value: unknown, field: string): number | undefined {
  if (!present(value)) return undefined;
  const parsed = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof parsed !== 'number' || !Number.isFinite(parsed)) throw invalidArgument(`${field} must be a finite number`, field);
  return parsed;
}

function checkMde(value: unknown): number {
  const mde = numberField(value, 'mde');
  if (mde === undefined) throw invalidArgument('mde is required: the minimum detectable effect relative to the mean (0.02 for 2 %)', 'mde');
  if (!(mde > 0 && mde <= 100)) throw invalidArgument('mde must be > 0 and at most 100 (a relative effect, 0.02 for 2 %)', 'mde');
  return mde;
}

function checkAlpha(value: unknown): number {
  const alpha = numberField(value, 'alpha') ?? 0.05;
  if (!(alpha > 0 && alpha < 0.5)) throw invalidArgument('alpha must be in (0, 0.5)', 'alpha');
  return alpha;
}

function checkPower(value: unknown, alpha: number): number {
  const power = numberField(value, 'power') ?? 0.8;
  if (!(power > alpha && power < 1)) throw invalidArgument(`power must be above alpha (${alpha}) and below 1`, 'power');
  return power;
}

function checkWindowDays(value: unknown): number {
  const days = numberField(value, 'window_days') ?? DEFAULT_POWER_WINDOW_DAYS;
  if (!(Number.isInteger(days) && days >= 1 && days <= MAX_POWER_WINDOW_DAYS)) {
    throw invalidArgument(`window_days must be an integer from 1 to ${MAX_POWER_WINDOW_DAYS}`, 'window_days');
  }
  return days;
}

function checkSequential(value: unknown): { tuningN: number } | null {
  if (!present(value)) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidArgument('sequential must be an object {tuning_n?} or null', 'sequential');
  const tuningN = numberField((value as { tuning_n?: unknown }).tuning_n, 'sequential.tuning_n') ?? DEFAULT_SEQUENTIAL_TUNING_N;
  if (!(Number.isSafeInteger(tuningN) && tuningN >= MIN_SEQUENTIAL_TUNING_N && tuningN <= MAX_SEQUENTIAL_TUNING_N)) {
    throw invalidArgument(`sequential.tuning_n must be an integer from ${MIN_SEQUENTIAL_TUNING_N} to ${MAX_SEQUENTIAL_TUNING_N}`, 'sequential.tuning_n');
  }
  return { tuningN };
}

/** weights (positive, normalised; the control first) from `weights` and/or `arms` (default 2 equal arms). */
function checkWeights(weightsValue: unknown, armsValue: unknown): number[] {
  const arms = numberField(armsValue, 'arms');
  if (arms !== undefined && !(Number.isInteger(arms) && arms >= 2 && arms <= MAX_VARIANT_KEYS)) {
    throw invalidArgument(`arms must be an integer from 2 to ${MAX_VARIANT_KEYS}`, 'arms');
  }
  if (!present(weightsValue)) return new Array<number>(arms ?? 2).fill(1 / (arms ?? 2));
  if (!Array.isArray(weightsValue) || weightsValue.length < 2 || weightsValue.length > MAX_VARIANT_KEYS
    || weightsValue.some((weight) => typeof weight !== 'number' || !Number.isFinite(weight) || weight <= 0 || weight > MAX_MAGNITUDE)) {
    throw invalidArgument(`weights must be 2 to ${MAX_VARIANT_KEYS} positive numbers (the control's first)`, 'weights');
  }
  if (arms !== undefined && arms !== weightsValue.length) throw invalidArgument(`weights has ${weightsValue.length} entries but arms is ${arms}`, 'weights');
  const sum = (weightsValue as number[]).reduce((all, weight) => all + weight, 0);
  return (weightsValue as number[]).map((weight) => weight / sum);
}

function checkNonNegative(value: unknown, field: string, positive: boolean): number | undefined {
  const number = numberField(value, field);
  if (number === undefined) return undefined;
  if (!(positive ? number > 0 : number >= 0) || Math.abs(number) > MAX_MAGNITUDE) {
    throw invalidArgument(`${field} must be ${positive ? '> 0' : '>= 0'} and at most ${MAX_MAGNITUDE}`, field);
  }
  return number;
}

// --- the estimates from a window's moments ---

/**
 * A metric's mean and per-unit variance over the window's units: an event metric's (capped)
 * value, mean and sample variance M2/(n − 1); a ratio metric's mean_N/mean_D and the delta-method
 * per-unit variance (Var N − 2R Cov(N, D) + R² Var D)/mean_D² (docs/statistics.md §4), the same
 * variance its test uses. CUPED's R² from the data: an event metric's squared correlation of its
 * value with its pre-exposure value (a ratio metric's is not estimated: 0 unless given).
 */
export function windowEstimates(metric: ExperimentMetric, data: ArmMetricData): { mean: number | null; variance: number | null; cupedR2: number | null } {
  const { n, means, comoments } = data.moments;
  if (n < 2) return { mean: null, variance: null, cupedR2: null };
  const v = (a: number, b: number) => (comoments[a]?.[b] ?? 0) / (n - 1);
  if (metric.kind === 'event') {
    const variance = v(0, 0);
    let cupedR2: number | null = null;
    if (metric.cuped !== null && variance > 0 && v(1, 1) > 0) cupedR2 = Math.min((v(0, 1) * v(0, 1)) / (variance * v(1, 1)), 0.999999);
    return { mean: means[0] ?? 0, variance, cupedR2 };
  }
  const meanD = means[1] ?? 0;
  if (meanD === 0) return { mean: null, variance: null, cupedR2: null };
  const ratio = (means[0] ?? 0) / meanD;
  const variance = (v(0, 0) - 2 * ratio * v(0, 1) + ratio * ratio * v(1, 1)) / (meanD * meanD);
  return { mean: ratio, variance: Math.max(variance, 0), cupedR2: null };
}

interface Planned {
  mean: number | null;
  variance: number | null;
  cupedR2: number;
  rate: number | null;
}

type Stats = typeof import('@switchyard/stats');

/**
 * The sample per arm at `weights` (the control first, summing to 1): equal weights, stats'
 * sampleSizePerArm; otherwise the total N at which every treatment's comparison with the control
 * (w_C·N against w_T·N participants) reaches the power, by Brent's method, each arm ⌈w·N⌉.
 */
function plan(stats: Stats, settings: import('@switchyard/stats').PowerSettings, weights: number[], rate: number | null): PowerPlan {
  const none: PowerPlan = { sample_per_arm: null, total: null, days: null };
  const equal = weights.every((weight) => Math.abs(weight - (weights[0] ?? 0)) < 1e-12);
  let perArm: number[];
  if (equal) {
    const size = stats.sampleSizePerArm(settings);
    if (size === null) return none;
    perArm = weights.map(() => size.per_arm);
  } else {
    const control = weights[0] ?? 0;
    const gap = (total: number): number => Math.min(...weights.slice(1).map((w) => stats.powerAt(settings, control * total, w * total) ?? 0)) - settings.power;
    const equalSize = stats.sampleSizePerArm(settings);
    if (equalSize === null) return none;
    let hi = equalSize.exact * 2;
    let lo = hi;
    while (gap(lo) > 0 && lo > 1e-9) lo /= 2;
    while (gap(hi) < 0) {
      hi *= 2;
      if (!Number.isFinite(hi) || hi > 1e18) return none;
    }
    if (lo === hi) lo = hi / 2;
    const total = stats.findRootBracketed(gap, lo, hi);
    perArm = weights.map((weight) => Math.ceil(weight * total));
  }
  const total = perArm.reduce((all, n) => all + n, 0);
  return { sample_per_arm: perArm, total, days: rate !== null && rate > 0 ? total / rate : null };
}

export class PowerCalculator {
  constructor(
    private readonly repos: Pick<Repositories, 'power' | 'eventDefinitions' | 'experiments' | 'flags'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** POST .../experiments/power: an experiment not yet created. */
  async estimate(scope: EnvironmentScope, body: PowerBody): Promise<PowerAnswer> {
    if (typeof body !== 'object' || body === null) throw invalidArgument('the body must be a JSON object', 'body');
    const mde = checkMde(body.mde);
    const alpha = checkAlpha(body.alpha);
    const power = checkPower(body.power, alpha);
    const sides = body.sides === undefined || body.sides === null ? 'two' : body.sides;
    if (sides !== 'two' && sides !== 'one') throw invalidArgument("sides must be 'two' or 'one'", 'sides');
    const weights = checkWeights(body.weights, body.arms);
    const sequential = checkSequential(body.sequential);
    const windowDays = checkWindowDays(body.window_days);
    const givenMean = numberField(body.mean, 'mean');
    if (givenMean !== undefined && Math.abs(givenMean) > MAX_MAGNITUDE) throw invalidArgument(`mean must be within ±${MAX_MAGNITUDE}`, 'mean');
    const givenVariance = checkNonNegative(body.variance, 'variance', false);
    const givenRate = checkNonNegative(body.exposures_per_day, 'exposures_per_day', false);
    const allocation = numberField(body.traffic_allocation, 'traffic_allocation') ?? 1;
    if (!(allocation > 0 && allocation <= 1)) throw invalidArgument('traffic_allocation must be in (0, 1]', 'traffic_allocation');
    const givenR2 = numberField(body.cuped_r2, 'cuped_r2');
    if (givenR2 !== undefined && !(givenR2 >= 0 && givenR2 < 1)) throw invalidArgument('cuped_r2 must be in [0, 1)', 'cuped_r2');
    const metric = present(body.metric) ? parseMetric(body.metric, 'metric') : null;
    if (metric === null && (givenMean === undefined || givenVariance === undefined)) {
      throw invalidArgument('give a metric (as the experiment create body defines one), or mean and variance by hand', 'metric');
    }
    // The calculator plans a difference of means; a quantile's variance is another matter (§14).
    if (metric !== null && metric.kind === 'event' && metric.quantile) throw invalidArgument('power for a quantile metric is not calculated: give the mean and variance of a comparable mean metric by hand', 'metric.quantile');
    // Read once, for the check and the window (not at all when everything is given by hand).
    const valueTypes = metric === null && givenRate !== undefined ? new Map() : await eventValueTypes(this.repos, scope);
    if (metric !== null) requireRegisteredEventKeys([metric], valueTypes, () => 'metric');

    const needsData = givenMean === undefined || givenVariance === undefined || givenRate === undefined || (givenR2 === undefined && metric?.cuped);
    const toMs = this.now();
    const window = needsData
      ? await this.repos.power.windowMoments(scope, { metrics: metric === null ? [] : [metric], valueTypes: Object.fromEntries(valueTypes), fromMs: toMs - windowDays * DAY_MS, toMs })
      : null;
    const estimates = metric !== null && window !== null && window.metrics[metric.key] ? windowEstimates(metric, window.metrics[metric.key] as ArmMetricData) : null;
    const rate = givenRate ?? (window === null ? null : (window.participants / windowDays) * allocation);
    const cupedR2 = givenR2 ?? estimates?.cupedR2 ?? 0;
    const inputs: PowerInputs = {
      mean: givenMean ?? estimates?.mean ?? null,
      variance: givenVariance ?? estimates?.variance ?? null,
      exposures_per_day: rate,
      cuped_r2: cupedR2,
      participants: window === null ? null : window.participants,
      window_days: windowDays,
      truncated: window?.truncated ?? false,
      source: {
        mean: givenMean === undefined ? 'events' : 'given',
        variance: givenVariance === undefined ? 'events' : 'given',
        exposures_per_day: givenRate !== undefined ? 'given' : 'events',
        cuped_r2: givenR2 !== undefined ? 'given' : estimates?.cupedR2 != null ? 'events' : 'none',
      },
    };
    const settings: PowerSettingsRecord = { mde, alpha, power, sides, weights, sequential: sequential === null ? null : { tuning_n: sequential.tuningN } };
    return { settings, inputs, ...(await this.plans(settings, { mean: inputs.mean, variance: inputs.variance, cupedR2, rate })) };
  }

  /** GET .../experiments/{id}/power: each metric of the experiment (or `metric_key`), with its settings. */
  async forExperiment(scope: EnvironmentScope, experiment: Experiment, query: ExperimentPowerQuery): Promise<ExperimentPowerAnswer> {
    const mde = checkMde(query.mde);
    const alpha = experiment.analysis.alpha;
    const power = checkPower(query.power, alpha);
    const windowDays = checkWindowDays(query.window_days);
    const isQuantile = (metric: ExperimentMetric) => metric.kind === 'event' && !!metric.quantile;
    // Quantile metrics are left out: the calculator plans a difference of means (§14).
    let metrics = experiment.metrics.filter((metric) => !isQuantile(metric));
    if (present(query.metric_key) && query.metric_key !== '') {
      const named = experiment.metrics.find((metric) => metric.key === query.metric_key);
      if (named === undefined) {
        throw invalidArgument(`metric_key '${query.metric_key}' is not a metric of this experiment (${experiment.metrics.map((m) => m.key).join(', ') || 'none'})`, 'metric_key');
      }
      if (isQuantile(named)) throw invalidArgument(`metric_key '${query.metric_key}' is a quantile metric: power is calculated for mean and ratio metrics only`, 'metric_key');
      metrics = [named];
    }
    const arms = [experiment.controlVariantKey, ...experiment.variantKeys.filter((key) => key !== experiment.controlVariantKey)];
    const flag = await this.repos.flags.get(scope, experiment.flagKey);
    const studied = flag === null ? null : studiedRule(flag, experiment);
    const rule = studied !== null && 'rule' in studied ? studied.rule : null;
    const buckets = rule?.allocation?.buckets ?? null;
    const { plannedWeights } = await import('@switchyard/stats');
    const planned = buckets === null ? arms.map(() => 0) : plannedWeights(buckets, arms);
    const plannedSum = planned.reduce((all, weight) => all + weight, 0);
    const weights = plannedSum > 0 && planned.every((weight) => weight > 0) ? planned.map((weight) => weight / plannedSum) : arms.map(() => 1 / arms.length);

    // The experiment's own exposure rate: its latest iteration's participants over its days so far.
    const iterations = await this.repos.experiments.listIterations(scope, experiment.id);
    const iteration = iterations.reduce<(typeof iterations)[number] | null>((last, it) => (last === null || it.iterationNumber > last.iterationNumber ? it : last), null);
    const nowMs = this.now();
    let counts: Record<string, number> | null = null;
    let experimentRate: number | null = null;
    let countsTruncated = false;
    if (iteration !== null) {
      const endMs = iteration.endedAtMs === 0 ? nowMs : iteration.endedAtMs;
      const armCounts = await this.repos.power.armParticipants(scope, {
        flagKey: experiment.flagKey,
        ruleId: rule?.id ?? experiment.ruleId,
        variantKeys: experiment.variantKeys,
        fromMs: iteration.startedAtMs,
        toMs: endMs,
      });
      counts = armCounts.counts;
      countsTruncated = armCounts.truncated;
      const total = Object.values(counts).reduce((all, n) => all + n, 0);
      const elapsedDays = (endMs - iteration.startedAtMs) / DAY_MS;
      if (total > 0 && elapsedDays > 0) experimentRate = total / elapsedDays;
    }
    const needsWindow = metrics.length > 0;
    const window = needsWindow
      ? await this.repos.power.windowMoments(scope, { metrics, valueTypes: Object.fromEntries(await eventValueTypes(this.repos, scope)), fromMs: nowMs - windowDays * DAY_MS, toMs: nowMs })
      : null;
    const windowRate = window === null ? null : (window.participants / windowDays) * experiment.trafficAllocation;
    const rate = experimentRate ?? windowRate;
    const stats = await import('@switchyard/stats');
    const settings: PowerSettingsRecord = {
      mde,
      alpha,
      power,
      sides: experiment.analysis.sides,
      weights,
      sequential: experiment.analysis.sequential === null ? null : { tuning_n: experiment.analysis.sequential.tuningN },
    };
    const running = iteration !== null && iteration.endedAtMs === 0 && experiment.status === 'EXPERIMENT_STATUS_ACTIVE';
    const answers: MetricPowerAnswer[] = [];
    for (const metric of metrics) {
      const data = window?.metrics[metric.key];
      const estimates = data ? windowEstimates(metric, data) : { mean: null, variance: null, cupedR2: null };
      const cupedR2 = estimates.cupedR2 ?? 0;
      const inputs: PowerInputs = {
        mean: estimates.mean,
        variance: estimates.variance,
        exposures_per_day: rate,
        cuped_r2: cupedR2,
        participants: window === null ? null : window.participants,
        window_days: windowDays,
        truncated: (window?.truncated ?? false) || countsTruncated,
        source: { mean: 'events', variance: 'events', exposures_per_day: experimentRate !== null ? 'experiment' : 'events', cuped_r2: estimates.cupedR2 !== null ? 'events' : 'none' },
      };
      const plans = await this.plans(settings, { mean: inputs.mean, variance: inputs.variance, cupedR2, rate });
      let current: MetricPowerAnswer['current'] = null;
      if (running && counts !== null && iteration !== null) {
        const base = this.statsSettings(settings, { mean: inputs.mean, variance: inputs.variance, cupedR2 });
        const control = counts[arms[0] as string] ?? 0;
        const powerOf = (s: typeof base) => {
          if (s === null) return null;
          const values = arms.slice(1).map((key) => stats.powerAt(s, control, counts?.[key] ?? 0));
          return values.some((value) => value === null) ? null : Math.min(...(values as number[]));
        };
        const totalNeeded = (plans.sequential ?? plans.fixed).total;
        current = {
          participants_per_arm: Object.fromEntries(arms.map((key) => [key, counts?.[key] ?? 0])),
          power: powerOf(base === null ? null : { ...base, sequential: null }),
          sequential_power: settings.sequential === null ? null : powerOf(base),
          projected_end_ms: totalNeeded !== null && rate !== null && rate > 0 ? Math.round(iteration.startedAtMs + (totalNeeded / rate) * DAY_MS) : null,
        };
      }
      answers.push({ metric_key: metric.key, settings, inputs, ...plans, current });
    }
    return { experiment_id: experiment.id, arms, metrics: answers };
  }

  private statsSettings(settings: PowerSettingsRecord, values: { mean: number | null; variance: number | null; cupedR2: number }): import('@switchyard/stats').PowerSettings | null {
    if (values.mean === null || values.variance === null) return null;
    return {
      mean: values.mean,
      variance: values.variance,
      mde: settings.mde,
      alpha: settings.alpha,
      power: settings.power,
      sides: settings.sides,
      cupedR2: values.cupedR2,
      sequential: settings.sequential === null ? null : { tuningN: settings.sequential.tuning_n },
    };
  }

  private async plans(settings: PowerSettingsRecord, values: Planned): Promise<{ fixed: PowerPlan; sequential: PowerPlan | null }> {
    const stats = await import('@switchyard/stats');
    const base = this.statsSettings(settings, values);
    const none: PowerPlan = { sample_per_arm: null, total: null, days: null };
    const fixed = base === null ? none : plan(stats, { ...base, sequential: null }, settings.weights, values.rate);
    const sequential = settings.sequential === null ? null : base === null ? none : plan(stats, base, settings.weights, values.rate);
    return { fixed, sequential };
  }
}
