/**
 * The experiment form's state and its wire shapes (docs/contract.md "Experiments"): the default
 * control, the rules an experiment can study, metric definitions and analysis settings as the
 * inputs hold them (strings, days) and as the API takes them (numbers, milliseconds). Pure, so the
 * conversions are unit-tested.
 */
import type { AnalysisWire, CorrectionFamily, EventDefinition, Experiment, Flag, GuardrailWire, MetricAggregation, MetricDirection, MetricSourceWire, MetricWire, MultipleTestingCorrection, Rule } from '../records.ts';

export const DAY_MS = 24 * 60 * 60 * 1000;
/** The API's default CUPED lookback (14 days), shown when CUPED is switched on. */
export const DEFAULT_LOOKBACK_DAYS = '14';
/** The API's default sequential tuning N* (docs/statistics.md §9), shown when sequential testing is switched on. */
export const DEFAULT_TUNING_N = '5000';
/** The prior first offered with the Bayesian engine: N(0, 0.05²) on the relative lift (Eppo's default; docs/statistics.md §12). */
export const DEFAULT_PRIOR_MEAN = '0';
export const DEFAULT_PRIOR_SD = '0.05';

/**
 * The control a new experiment starts with: the flag's off variant when it is one of the
 * experiment's variants (what everyone got before the experiment), else the first variant.
 */
export function defaultControl(variantKeys: string[], offVariantKey: string | null | undefined): string {
  if (offVariantKey && variantKeys.includes(offVariantKey)) return offVariantKey;
  return variantKeys[0] ?? '';
}

/** The flag's rules an experiment can study: those that split traffic by an allocation. */
export const allocatingRules = (flag: Pick<Flag, 'rules'> | undefined): Rule[] => (flag?.rules ?? []).filter((rule) => rule.allocation !== undefined);

/**
 * Whether a rule can be studied with this control: its allocation gives a positive weight to the
 * control and to another of the experiment's variants (else there is nothing to compare).
 */
export function splitsControl(rule: Rule, variantKeys: readonly string[], control: string): boolean {
  const weighted = (rule.allocation?.buckets ?? []).filter((b) => b.weight_milli > 0).map((b) => b.variant_key);
  return weighted.includes(control) && weighted.some((key) => key !== control && variantKeys.includes(key));
}

/** The rule the API studies when none is named (rule_id null): the first that splits the control with another variant. */
export const defaultStudiedRule = (flag: Pick<Flag, 'rules'> | undefined, variantKeys: readonly string[], control: string): Rule | undefined =>
  (flag?.rules ?? []).find((rule) => splitsControl(rule, variantKeys, control));

/** The control of an experiment as read from the API: explicit, or the first variant (servers before it). */
export const controlOf = (experiment: Pick<Experiment, 'control_variant_key' | 'variant_keys'>): string => experiment.control_variant_key || experiment.variant_keys[0] || '';

/** One aggregated event as the inputs hold it; `windowDays` '' means to the end. */
export interface SourceDraft {
  eventKey: string;
  aggregation: MetricAggregation;
  windowDays: string;
}

/** One metric row of the form. Number inputs are kept as typed; '' is "not set". */
export interface MetricDraft {
  kind: 'event' | 'ratio';
  /** '' for an event metric: named after its event. */
  key: string;
  event: SourceDraft;
  numerator: SourceDraft;
  denominator: SourceDraft;
  direction: MetricDirection;
  capping: 'none' | 'absolute' | 'percentile';
  capLower: string;
  capUpper: string;
  ignoreZeros: boolean;
  cuped: boolean;
  lookbackDays: string;
  guardrail: boolean;
  /** The harm a guardrail tolerates, as typed ('' : the API's default, 0); relative 0.02 = 2 %. */
  guardrailMargin: string;
  guardrailMarginKind: 'relative' | 'absolute';
  /** What an event metric reports per arm: the mean, or a percentile (a quantile metric, docs/statistics.md §15). */
  statistic: 'mean' | 'percentile';
  /** The percentile as typed, in percent ('90' is p90, the quantile 0.9); '' : not set. */
  percentile: string;
  /** A percentile of each participant's (aggregated) value, or of every event's own value. */
  percentileUnit: QuantileUnit;
}

export type QuantileUnit = 'participant' | 'event';
/** The percentile first offered when a row switches to one: p90. */
export const DEFAULT_PERCENTILE = '90';

/**
 * A percentile in percent as the API's quantile p: 90 → 0.9, 99.9 → 0.999 (12 significant digits,
 * so 99.9 / 100's binary rounding, 0.9990000000000001, is not sent beyond the API's 0.999).
 */
export const percentToQuantile = (percent: number): number => Number((percent / 100).toPrecision(12));
/** The API's quantile p as a percentile in percent for the input: 0.9 → '90', 0.001 → '0.1'. */
export const quantileToPercent = (p: number): string => String(Number((p * 100).toPrecision(12)));
/** A quantile's short name: 0.9 → "p90", 0.5 → "p50", 0.999 → "p99.9". */
export const quantileName = (p: number): string => `p${quantileToPercent(p)}`;
/** A form row's percentile as typed, named: '90' → "p90"; '' → "percentile". */
export const percentileName = (percent: string): string => (percent.trim() === '' || !Number.isFinite(Number(percent)) ? 'percentile' : `p${Number(percent)}`);

/** How an event's values are aggregated unless chosen otherwise: a bool event converts, others sum (core's metricFromKey). */
export const defaultAggregation = (definition: Pick<EventDefinition, 'value_type'> | undefined): MetricAggregation => (definition?.value_type === 'bool' ? 'conversion' : 'sum');

/** A new metric row over `eventKey` (or the first event definition). */
export function newMetricDraft(definitions: EventDefinition[], eventKey = definitions[0]?.key ?? ''): MetricDraft {
  const source: SourceDraft = { eventKey, aggregation: defaultAggregation(definitions.find((d) => d.key === eventKey)), windowDays: '' };
  return {
    kind: 'event',
    key: '',
    event: source,
    numerator: { ...source },
    denominator: { ...source, aggregation: 'count' },
    direction: 'increase',
    capping: 'none',
    capLower: '',
    capUpper: '',
    ignoreZeros: false,
    cuped: false,
    lookbackDays: DEFAULT_LOOKBACK_DAYS,
    guardrail: false,
    guardrailMargin: '0',
    guardrailMarginKind: 'relative',
    statistic: 'mean',
    percentile: DEFAULT_PERCENTILE,
    percentileUnit: 'participant',
  };
}

/** '' (or blanks) → null; otherwise the number typed (a number input holds '' or a number). */
const numberOrNull = (text: string): number | null => (text.trim() === '' ? null : Number(text));
const daysToMs = (text: string): number | null => {
  const days = numberOrNull(text);
  return days === null ? null : Math.round(days * DAY_MS);
};
/** Milliseconds as days for an input: at most 6 decimals, no trailing zeros. */
const msToDays = (ms: number | null | undefined): string => (ms === null || ms === undefined ? '' : String(Number((ms / DAY_MS).toFixed(6))));

const sourceToWire = (source: SourceDraft): MetricSourceWire => ({ event_key: source.eventKey, aggregation: source.aggregation, window_ms: daysToMs(source.windowDays) });
const sourceFromWire = (source: MetricSourceWire): SourceDraft => ({ eventKey: source.event_key, aggregation: source.aggregation, windowDays: msToDays(source.window_ms) });

function guardrailToWire(draft: Pick<MetricDraft, 'guardrailMargin' | 'guardrailMarginKind'>): GuardrailWire {
  const margin = numberOrNull(draft.guardrailMargin);
  return { ...(margin === null ? {} : { margin }), margin_kind: draft.guardrailMarginKind };
}

/** A metric row as the API takes it; fields not set are left out (the API's defaults apply). */
export function metricToWire(draft: MetricDraft): MetricWire {
  const common: MetricWire = {
    ...(draft.key.trim() === '' ? {} : { key: draft.key.trim() }),
    direction: draft.direction,
    cuped: draft.cuped ? { lookback_ms: daysToMs(draft.lookbackDays) } : null,
    guardrail: draft.guardrail ? guardrailToWire(draft) : false,
  };
  if (draft.kind === 'ratio') return { ...common, ratio: { numerator: sourceToWire(draft.numerator), denominator: sourceToWire(draft.denominator) } };
  if (draft.statistic === 'percentile') {
    // The API refuses CUPED and capping on a quantile metric, and an aggregation on a per-event one
    // (each event's own value is ranked): the row keeps them for a switch back to the mean, unsent.
    const { aggregation, ...source } = sourceToWire(draft.event);
    const percent = numberOrNull(draft.percentile);
    // An empty percentile goes as null, which the API refuses in its words ("quantile.p is required").
    const quantile = { p: percent === null ? null : percentToQuantile(percent), unit: draft.percentileUnit };
    return { ...common, ...source, ...(draft.percentileUnit === 'event' ? {} : { aggregation }), quantile, capping: null, cuped: null };
  }
  return {
    ...common,
    ...sourceToWire(draft.event),
    capping:
      draft.capping === 'none'
        ? null
        : { kind: draft.capping, lower: numberOrNull(draft.capLower), upper: numberOrNull(draft.capUpper), ...(draft.capping === 'percentile' ? { ignore_zeros: draft.ignoreZeros } : {}) },
  };
}

/** A metric of an experiment as a form row (to edit it). */
export function metricFromWire(metric: MetricWire, definitions: EventDefinition[] = []): MetricDraft {
  const blank = newMetricDraft(definitions, metric.event_key ?? metric.ratio?.numerator.event_key ?? '');
  const shared = {
    direction: metric.direction ?? 'increase',
    cuped: !!metric.cuped,
    lookbackDays: metric.cuped?.lookback_ms ? msToDays(metric.cuped.lookback_ms) : DEFAULT_LOOKBACK_DAYS,
    guardrail: !!metric.guardrail,
    // `true` (accepted by the API, never answered) is margin 0 on the relative effect.
    guardrailMargin: typeof metric.guardrail === 'object' && metric.guardrail !== null ? String(metric.guardrail.margin ?? 0) : '0',
    guardrailMarginKind: (typeof metric.guardrail === 'object' && metric.guardrail?.margin_kind) || 'relative',
  };
  if (metric.ratio) {
    return { ...blank, ...shared, kind: 'ratio', key: metric.key ?? '', numerator: sourceFromWire(metric.ratio.numerator), denominator: sourceFromWire(metric.ratio.denominator) };
  }
  const eventKey = metric.event_key ?? '';
  const capping = metric.capping;
  return {
    ...blank,
    ...shared,
    kind: 'event',
    // A key equal to its event is the default: the row shows it empty, and renaming the event renames it.
    key: metric.key && metric.key !== eventKey ? metric.key : '',
    event: { eventKey, aggregation: metric.aggregation ?? defaultAggregation(definitions.find((d) => d.key === eventKey)), windowDays: msToDays(metric.window_ms) },
    capping: capping ? capping.kind : 'none',
    capLower: capping?.lower === null || capping?.lower === undefined ? '' : String(capping.lower),
    capUpper: capping?.upper === null || capping?.upper === undefined ? '' : String(capping.upper),
    ignoreZeros: !!capping?.ignore_zeros,
    ...(metric.quantile
      ? { statistic: 'percentile' as const, percentile: metric.quantile.p === null ? '' : quantileToPercent(metric.quantile.p), percentileUnit: metric.quantile.unit ?? 'participant' }
      : {}),
  };
}

/**
 * The metrics of an experiment as the API answered them; from a server before metric definitions,
 * each metric key as the event it names, aggregated by default (core's metricFromKey).
 */
export function metricsOfExperiment(experiment: Pick<Experiment, 'metrics' | 'metric_keys'>, definitions: EventDefinition[] = []): MetricWire[] {
  if (experiment.metrics) return experiment.metrics;
  return experiment.metric_keys.map((key) => ({ key, event_key: key, aggregation: defaultAggregation(definitions.find((d) => d.key === key)) }));
}

/** The name a metric row's results are reported under. */
export const metricKeyOf = (metric: MetricWire): string => metric.key ?? metric.event_key ?? '';

/** Analysis settings as the inputs hold them. */
export interface AnalysisDraft {
  alpha: string;
  sides: AnalysisWire['sides'];
  relativeInterval: AnalysisWire['relative_interval'];
  correction: MultipleTestingCorrection;
  correctionFamily: CorrectionFamily;
  srmThreshold: string;
  srmMinExpected: string;
  engine: 'frequentist' | 'bayesian';
  /** Always-valid testing on; `tuningN` its planned sample (both arms), '' : the API's default. */
  sequential: boolean;
  tuningN: string;
  /** Only sent with `sequential` (the API refuses a hybrid without it). */
  hybrid: boolean;
  /** Only sent with the Bayesian engine (the API refuses a prior without it); the values are kept while another choice is shown. */
  prior: 'flat' | 'normal';
  priorMean: string;
  priorSd: string;
}

/** The API's defaults (core's DEFAULT_ANALYSIS), for a new experiment. */
export const DEFAULT_ANALYSIS_WIRE: Readonly<AnalysisWire> = {
  alpha: 0.05,
  sides: 'two',
  relative_interval: 'delta',
  correction: 'none',
  correction_family: 'all',
  srm_threshold: 0.001,
  srm_min_expected: 5,
  engine: 'frequentist',
  sequential: null,
  hybrid: false,
  prior: null,
};

export function analysisFromWire(analysis: AnalysisWire | undefined): AnalysisDraft {
  const a = analysis ?? DEFAULT_ANALYSIS_WIRE;
  return {
    alpha: String(a.alpha),
    sides: a.sides,
    relativeInterval: a.relative_interval,
    correction: a.correction,
    correctionFamily: a.correction_family,
    srmThreshold: String(a.srm_threshold),
    srmMinExpected: String(a.srm_min_expected),
    engine: a.engine ?? 'frequentist',
    sequential: !!a.sequential,
    tuningN: String(a.sequential?.tuning_n ?? DEFAULT_TUNING_N),
    hybrid: !!a.sequential && !!a.hybrid,
    prior: a.prior ? 'normal' : 'flat',
    priorMean: String(a.prior?.mean ?? DEFAULT_PRIOR_MEAN),
    priorSd: String(a.prior?.sd ?? DEFAULT_PRIOR_SD),
  };
}

/**
 * The settings as the API takes them; a number field left empty takes the API's default. They
 * replace the stored ones as a whole, so the engine, sequential, hybrid and prior are always sent
 * (the hybrid only with sequential testing, the prior only with the Bayesian engine: the API
 * refuses either alone).
 */
export function analysisToWire(draft: AnalysisDraft): Partial<AnalysisWire> {
  const alpha = numberOrNull(draft.alpha);
  const srmThreshold = numberOrNull(draft.srmThreshold);
  const srmMinExpected = numberOrNull(draft.srmMinExpected);
  const tuningN = numberOrNull(draft.tuningN);
  const priorMean = numberOrNull(draft.priorMean);
  const priorSd = numberOrNull(draft.priorSd);
  return {
    ...(alpha === null ? {} : { alpha }),
    sides: draft.sides,
    relative_interval: draft.relativeInterval,
    correction: draft.correction,
    correction_family: draft.correctionFamily,
    ...(srmThreshold === null ? {} : { srm_threshold: srmThreshold }),
    ...(srmMinExpected === null ? {} : { srm_min_expected: srmMinExpected }),
    engine: draft.engine,
    sequential: draft.sequential ? (tuningN === null ? {} : { tuning_n: tuningN }) : null,
    hybrid: draft.sequential && draft.hybrid,
    prior: draft.engine === 'bayesian' && draft.prior === 'normal' ? { ...(priorMean === null ? {} : { mean: priorMean }), ...(priorSd === null ? {} : { sd: priorSd }) } : null,
  };
}

/** The whole setup the form edits: the design (control, studied rule) and the analysis (metrics, settings). */
export interface SetupDraft {
  control: string;
  /** '' : the flag's first rule with an allocation (rule_id null). */
  ruleId: string;
  metrics: MetricDraft[];
  analysis: AnalysisDraft;
}

/** A new experiment's setup for a flag: its default control, the default rule, no metrics, the default settings. */
export function newSetup(flag: Pick<Flag, 'variants' | 'off_variant_key'> | undefined): SetupDraft {
  return { control: defaultControl((flag?.variants ?? []).map((v) => v.key), flag?.off_variant_key), ruleId: '', metrics: [], analysis: analysisFromWire(undefined) };
}

/** An experiment's setup as the form edits it. */
export function setupOf(experiment: Experiment, definitions: EventDefinition[] = []): SetupDraft {
  return {
    control: controlOf(experiment),
    ruleId: experiment.rule_id ?? '',
    metrics: metricsOfExperiment(experiment, definitions).map((m) => metricFromWire(m, definitions)),
    analysis: analysisFromWire(experiment.analysis),
  };
}

/**
 * The body fields of a create or update: `metrics` and `analysis` always (never `metric_keys`
 * beside them: the API derives those); the control and the rule only with `design` (a DRAFT:
 * they change nothing once the experiment has run).
 */
export function setupBody(draft: SetupDraft, design: boolean): { metrics: MetricWire[]; analysis: Partial<AnalysisWire>; control_variant_key?: string; rule_id?: string | null } {
  return {
    metrics: draft.metrics.map(metricToWire),
    analysis: analysisToWire(draft.analysis),
    ...(design ? { control_variant_key: draft.control, rule_id: draft.ruleId === '' ? null : draft.ruleId } : {}),
  };
}

/**
 * How a form part changes its draft: with a function of the CURRENT draft, never a copy of the one
 * it rendered with. Two input events can arrive before the next render (a fast typist, a loaded
 * machine); a part that spread its rendered draft would undo the other's change.
 */
export type DraftUpdate<T> = (update: (current: T) => T) => void;
