/**
 * The power calculator's state and words (docs/console.md "Power and duration"; the API in
 * docs/contract.md "Power and duration", the method in docs/statistics.md §14): the panel's inputs
 * as typed (percentages, days), the body of `POST …/experiments/power` they make with the
 * experiment form's own settings, and the answer in words. Pure, so it is unit-tested.
 */
import type { Flag, PowerInputs, PowerPlan } from '../records.ts';
import { analysisToWire, defaultStudiedRule, metricToWire, type SetupDraft } from './experiment-setup.ts';

/** The panel's inputs as typed; '' is "not set" (the API's default, or the window's value). */
export interface PowerDraft {
  /** The index of one of the form's metrics, or 'hand' for a mean and variance typed in. */
  metric: string;
  /** The minimum detectable effect relative to the mean, in percent (2 = 2 %). */
  mdePercent: string;
  /** The target power in percent (80 = 80 %). */
  powerPercent: string;
  /** The past window read for the metric and the exposure rate (1..90). */
  windowDays: string;
  mean: string;
  variance: string;
  /** New participants a day (all arms); '' : from the window. */
  exposuresPerDay: string;
}

export const BY_HAND = 'hand';

export const newPowerDraft = (): PowerDraft => ({ metric: '0', mdePercent: '2', powerPercent: '80', windowDays: '14', mean: '', variance: '', exposuresPerDay: '' });

const numberOrNull = (text: string): number | null => (text.trim() === '' ? null : Number(text));

/** A percentage as typed → the fraction the API takes (2 → 0.02); '' → null. */
export function percentToFraction(text: string): number | null {
  const percent = numberOrNull(text);
  // Rounded to 12 significant digits so that 7 % is 0.07, not 0.07000000000000001.
  return percent === null ? null : Number((percent / 100).toPrecision(12));
}

/** The experiment's arms, the control first, and the studied rule's planned weights (null: equal, as the API takes them when a weight is 0 or there is no rule). */
export function plannedArms(flag: Pick<Flag, 'rules'> | undefined, variantKeys: readonly string[], control: string, ruleId: string): { arms: string[]; weights: number[] | null } {
  const arms = [control, ...variantKeys.filter((key) => key !== control)];
  const rule = ruleId === '' ? defaultStudiedRule(flag, variantKeys, control) : flag?.rules.find((r) => r.id === ruleId);
  const buckets = rule?.allocation?.buckets;
  if (!buckets) return { arms, weights: null };
  const weights = arms.map((key) => buckets.filter((b) => b.variant_key === key).reduce((sum, b) => sum + b.weight_milli, 0));
  return { arms, weights: weights.every((w) => w > 0) ? weights : null };
}

/** What the panel reads from the experiment form besides its own inputs. */
export interface PowerContext {
  setup: SetupDraft;
  /** The arms, the control first (plannedArms). */
  arms: string[];
  weights: number[] | null;
  /** The experiment's traffic allocation (0, 1]; a new experiment's is 1. */
  trafficAllocation: number;
}

/**
 * The body of `POST …/experiments/power`: the panel's metric (as the form would create it) or the
 * mean and variance typed in, the MDE and power as fractions, and the form's alpha, sides,
 * sequential N*, arms, weights and traffic allocation. Fields left empty are left out.
 */
export function powerBody(draft: PowerDraft, context: PowerContext): Record<string, unknown> {
  const analysis = analysisToWire(context.setup.analysis);
  const metric = draft.metric === BY_HAND ? undefined : context.setup.metrics[Number(draft.metric)];
  const byHand = draft.metric === BY_HAND;
  const fields: Record<string, unknown> = {
    mde: percentToFraction(draft.mdePercent),
    ...(metric ? { metric: metricToWire(metric) } : {}),
    window_days: numberOrNull(draft.windowDays),
    ...(byHand ? { mean: numberOrNull(draft.mean), variance: numberOrNull(draft.variance) } : {}),
    exposures_per_day: numberOrNull(draft.exposuresPerDay),
    power: percentToFraction(draft.powerPercent),
    alpha: analysis.alpha ?? null,
    sides: analysis.sides,
    sequential: analysis.sequential ?? null,
    ...(context.weights ? { weights: context.weights } : { arms: Math.max(context.arms.length, 2) }),
    traffic_allocation: context.trafficAllocation,
  };
  // Not sent rather than null, so the request reads as what the person set (the API takes both alike).
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null && value !== undefined));
}

/** The query of `GET …/experiments/{id}/power` for the MDE, power and window typed. */
export function powerQuery(mdePercent: string, powerPercent: string, windowDays: string): string {
  const params = new URLSearchParams();
  const mde = percentToFraction(mdePercent);
  const power = percentToFraction(powerPercent);
  const window = numberOrNull(windowDays);
  // An empty MDE is sent empty, so the API's own "mde is required" is what the person reads.
  params.set('mde', mde === null ? '' : String(mde));
  if (power !== null) params.set('power', String(power));
  if (window !== null) params.set('window_days', String(window));
  return params.toString();
}

/** A count of participants: whole, with thousands separated (1,774); null → —. */
export function formatCount(n: number | null | undefined): string {
  return n === null || n === undefined ? '—' : Math.round(n).toLocaleString('en-US');
}

/** The sample per arm: one figure when the arms are equal ("437 each"), else each arm's ("red 300 · blue 900"). */
export function formatPerArm(plan: PowerPlan, arms: readonly string[]): string {
  const sample = plan.sample_per_arm;
  if (!sample || sample.length === 0) return '—';
  if (sample.every((n) => n === sample[0])) return `${formatCount(sample[0])} each`;
  return sample.map((n, i) => `${arms[i] ?? `arm ${i + 1}`} ${formatCount(n)}`).join(' · ');
}

/** Days as the panel shows them: one decimal (1,223.6 days), with weeks past two weeks; null → "— (no exposure rate)". */
export function formatDays(days: number | null | undefined): string {
  if (days === null || days === undefined) return '— (no exposure rate)';
  // A fast rate (a burst of exposures just after the start) would otherwise read "0.0 days".
  if (days > 0 && days < 0.05) return 'under 0.1 days';
  const text = `${(Math.round(days * 10) / 10).toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 })} ${days === 1 ? 'day' : 'days'}`;
  return days > 14 ? `${text} (about ${Math.round(days / 7).toLocaleString('en-US')} weeks)` : text;
}

/** A probability as a percentage with one decimal (0.8 → 80.0 %); null → —. */
export function formatPercent(p: number | null | undefined): string {
  return p === null || p === undefined ? '—' : `${(p * 100).toFixed(1)} %`;
}

/** A mean, variance or rate with 4 significant digits (no exponent for ordinary sizes). */
export function formatValue(x: number | null | undefined): string {
  if (x === null || x === undefined) return '—';
  if (x !== 0 && (Math.abs(x) >= 1e9 || Math.abs(x) < 1e-4)) return x.toExponential(3);
  return Number(x.toPrecision(4)).toLocaleString('en-US', { maximumFractionDigits: 8 });
}

const SOURCE_WORDS: Record<string, string> = { events: 'from the events', given: 'given', experiment: "from the experiment's own participants", none: 'none' };

/** Where each input came from, one line each, for the panel's "Inputs" list. */
export function inputWords(inputs: PowerInputs): string[] {
  const read = inputs.participants === null ? '' : ` (${formatCount(inputs.participants)} units in the last ${inputs.window_days} days)`;
  const fromEvents = (source: string) => (source === 'events' ? `${SOURCE_WORDS.events}${read}` : SOURCE_WORDS[source] ?? source);
  const lines = [
    `Mean ${formatValue(inputs.mean)}, ${fromEvents(inputs.source.mean)}`,
    `Variance per participant ${formatValue(inputs.variance)}, ${fromEvents(inputs.source.variance)}`,
    `New participants a day ${formatValue(inputs.exposures_per_day)}, ${inputs.source.exposures_per_day === null ? 'none' : fromEvents(inputs.source.exposures_per_day)}`,
    `CUPED R² ${formatValue(inputs.cuped_r2)}, ${SOURCE_WORDS[inputs.source.cuped_r2] ?? inputs.source.cuped_r2}`,
  ];
  if (inputs.truncated) lines.push('Truncated: the window had more units than the API reads (1,000,000); the estimates cover the first of them only.');
  return lines;
}

/** Why a plan has no sample, in words. */
export function noSampleWords(inputs: PowerInputs): string {
  if (inputs.mean === null || inputs.variance === null) return 'No sample: the window has fewer than 2 units for this metric. Give the mean and variance by hand.';
  return 'No sample: the mean or the variance is 0, so no effect relative to it can be detected.';
}
