/**
 * Issue 39's statistics per (treatment, metric) at one look of the stats worker, folded into the
 * states carried from its earlier looks at the iteration (docs/statistics.md §9–§13): the relative
 * effect's always-valid test (optionally the hybrid), the Bayesian posterior, and a guardrail's
 * tests against its margin. analyse-experiment.ts calls these and applies the corrections.
 */
import type {
  AnalysisSettings, ExperimentMetric, ExperimentRunningState, GuardrailRunning, SequentialRunning,
} from '@switchyard/core';
import { bayesianEffect } from './bayesian.ts';
import type { BayesianResult } from './bayesian.ts';
import type { TEstimate } from './effects.ts';
import { advanceGuardrailState, guardrailFixed, guardrailSequential } from './guardrail.ts';
import type { GuardrailResult } from './guardrail.ts';
import { alwaysValidInference } from './sequential.ts';
import { advanceSequentialState, hybridInference } from './sequential-state.ts';
import type { IntervalTest } from './sequential-state.ts';

/** The states analyseExperiment folds (ExperimentRunningState without what the caller keeps). */
export type RunningStates = Pick<ExperimentRunningState, 'sequential' | 'guardrails' | 'srm'>;

export const EMPTY_RUNNING_STATES: RunningStates = { sequential: {}, guardrails: {}, srm: null };

/**
 * What the running states depend on: the levels and tuning of the tests, and per metric its
 * direction and guardrail margin (and a quantile metric's quantile). When it changes mid-iteration the states start again (a running
 * minimum over tests of different settings is no test; docs/statistics.md §10). The corrections and
 * the engine are applied to the states afterwards and are not part of it.
 */
export function runningSettingsKey(metrics: readonly ExperimentMetric[], settings: AnalysisSettings): string {
  return JSON.stringify({
    alpha: settings.alpha,
    sides: settings.sides,
    sequential: settings.sequential,
    hybrid: settings.hybrid,
    // A quantile metric's quantile too (another p is another test); other metrics' entries are as
    // they were, so states saved before quantile metrics still match.
    metrics: metrics.map((metric) => (metric.kind === 'event' && metric.quantile
      ? [metric.key, metric.direction, metric.guardrail, metric.quantile]
      : [metric.key, metric.direction, metric.guardrail])),
  });
}

/** The sequential test as reported: the running state (hybrid: combined with the fixed test at the end). */
export interface SequentialReading extends IntervalTest {
  estimate: number;
}

/**
 * The relative effect's always-valid look, folded into `previous` (§9, §10):
 * 1. look = the relative effect θ̂ with V = se², n = both arms' participants in the metric; the
 *    mixture at α (hybrid: α/2), tuned by N*, two- or one-sided as the settings;
 * 2. the state = running minimum p and interval intersection (advanceSequentialState);
 * 3. hybrid: p = min(1, 2·min(p_seq, p_fixed)), the fixed part (the relative effect's own test at
 *    α/2, Fieller's interval when asked) read only once the iteration ended (`atEnd`).
 * Null reading when no look was ever computable; the state stays as it was.
 */
export function sequentialCell(
  relative: TEstimate | null,
  n: number,
  metric: ExperimentMetric,
  settings: AnalysisSettings & { sequential: { tuningN: number } },
  previous: SequentialRunning | null,
  fixedAtEnd: IntervalTest | null,
): { state: SequentialRunning | null; reading: SequentialReading | null } {
  const alpha = settings.hybrid ? settings.alpha / 2 : settings.alpha;
  const look = relative === null
    ? null
    : alwaysValidInference({ estimate: relative.estimate, variance: relative.se * relative.se, n }, {
      alpha, tuningN: settings.sequential.tuningN, sides: settings.sides, direction: metric.direction,
    });
  const state = advanceSequentialState(previous, look);
  if (state === null) return { state, reading: null };
  const test: IntervalTest = { p_value: state.p_value, ci_low: state.ci_low, ci_high: state.ci_high };
  const read = settings.hybrid ? hybridInference(test, fixedAtEnd) : test;
  return { state, reading: { estimate: state.estimate, ...read } };
}

/** The Bayesian engine on the relative effect (§12); null when it is not computable. */
export function bayesianCell(relative: TEstimate | null, metric: ExperimentMetric, settings: AnalysisSettings): BayesianResult | null {
  if (relative === null) return null;
  return bayesianEffect({ estimate: relative.estimate, variance: relative.se * relative.se }, { alpha: settings.alpha, direction: metric.direction, prior: settings.prior });
}

/**
 * A guardrail's tests against its margin (§13), on the relative or absolute effect as its
 * `margin_kind` says, at the settings' α: always-valid and folded into `previous` when the
 * analysis is sequential (so a guardrail that failed stays failed), fixed-horizon otherwise.
 */
export function guardrailCell(
  effects: { absolute: TEstimate | null; relative: TEstimate | null },
  n: number,
  metric: ExperimentMetric,
  settings: AnalysisSettings,
  previous: GuardrailRunning | null,
): { state: GuardrailRunning | null; reading: GuardrailResult | null } {
  if (metric.guardrail === null) return { state: null, reading: null };
  const effect = metric.guardrail.marginKind === 'relative' ? effects.relative : effects.absolute;
  const guard = { alpha: settings.alpha, direction: metric.direction, margin: metric.guardrail.margin };
  if (settings.sequential === null) return { state: null, reading: guardrailFixed(effect, guard) };
  const look = effect === null
    ? null
    : guardrailSequential({ estimate: effect.estimate, variance: effect.se * effect.se, n }, { ...guard, tuningN: settings.sequential.tuningN });
  const state = advanceGuardrailState(previous, look, guard);
  return { state, reading: state };
}
