import {
  DomainError,
  isDomainError,
  studiedRule,
  type ArmTotals,
  type EnvironmentScope,
  type Experiment,
  type ExperimentIteration,
  type ExperimentResults,
  type ExperimentRunningState,
  type MetricValueType,
  type Repositories,
  type Rule,
} from '@switchyard/core';
import { recordChange } from '../audit/audit-trail.ts';

/** computation_status of results computed over an iteration. */
export const COMPUTATION_COMPLETED = 'completed';
/** computation_status of an experiment that never ran: every variant has 0 participants. */
export const COMPUTATION_NO_ITERATION = 'no_iteration';

/** Results are recomputed on schedule this often by default (docs/contract.md "Experiments and statistics", `next_run_at_ms`). */
export const DEFAULT_STATS_INTERVAL_MS = 5 * 60_000;

/** What a stats job runs; the worker depends on this shape only. */
export interface ResultsComputation {
  /** Computes and stores the results of the experiment. @throws NOT_FOUND when it no longer exists. */
  compute(orgId: string, experimentId: string): Promise<ExperimentResults>;
}

const gone = (experimentId: string): DomainError => new DomainError('NOT_FOUND', `experiment ${experimentId} no longer exists`);

/** The change-history action recorded when a guardrail starts failing (docs/workflow.md "Webhooks"). */
export const GUARDRAIL_FAILING_ACTION = 'experiment.guardrail_failing';
/** Who records it: the stats worker, not a caller. */
const STATS_ACTOR = { type: 'system', id: 'stats' } as const;

/** The current iteration: the latest one, running or not. */
const latest = (iterations: ExperimentIteration[]): ExperimentIteration | null =>
  iterations.reduce<ExperimentIteration | null>((found, it) => (found === null || it.iterationNumber > found.iterationNumber ? it : found), null);

/**
 * One recomputation of an experiment's results:
 * 1. the experiment (by id within the job's org) and its current iteration — the window is
 *    [started_at_ms, ended_at_ms), open-ended while it runs;
 * 2. the studied rule (the experiment's `rule_id`, or the flag's first rule allocating over its
 *    arms): only its exposures make participants, and its weights are the planned split;
 * 3. the aggregation, in the database (ExperimentDataRepository.aggregateMetrics): participants
 *    per variant and per metric the joint moments of its participants' values (counted from
 *    their first exposure, capped, with CUPED covariates), a few rows whatever the number of
 *    events; the store keeps a running iteration's participants and re-reads only those with
 *    something new; quantile metrics' order statistics at z_{1−α/2} come back with them (§15);
 * 4. the statistics (@switchyard/stats analyseExperiment, docs/statistics.md): each variant
 *    against the control per metric, corrections, verdicts, the sample-ratio test;
 *    Each recompute is a look of the sequential tests: the states carried from the previous look
 *    at the same iteration (saved with the results, `runningState`) are folded forward, unless the
 *    running settings changed since (then they start again, runningSettingsKey);
 * 5. save, stamped with the instant the computation STARTED: anything received after it makes the
 *    results stale, including rows that landed while the aggregation ran. A guardrail whose status
 *    became `failing` records a change-history entry (`experiment.guardrail_failing`, so a webhook
 *    can announce it), once per iteration and metric, in the same transaction as the results.
 */
export class ResultsComputer implements ResultsComputation {
  private readonly intervalMs: number;
  private readonly now: () => number;

  constructor(
    private readonly repos: Pick<Repositories, 'experiments' | 'flags' | 'eventDefinitions' | 'experimentData' | 'results' | 'unitOfWork'>,
    options: { intervalMs?: number; now?: () => number } = {},
  ) {
    this.intervalMs = options.intervalMs ?? DEFAULT_STATS_INTERVAL_MS;
    this.now = options.now ?? Date.now;
  }

  async compute(orgId: string, experimentId: string): Promise<ExperimentResults> {
    const found = await this.repos.experiments.findInOrg({ orgId }, experimentId);
    if (!found) throw gone(experimentId);
    const { experiment, scope } = found;
    const computedAtMs = this.now();
    const iteration = latest(await this.repos.experiments.listIterations(scope, experimentId));

    const [flag, definitions] = await Promise.all([this.repos.flags.get(scope, experiment.flagKey), this.repos.eventDefinitions.list(scope)]);
    // A metric whose definition was deleted after the experiment was made: its stored events are
    // still numbers, aggregated as a double metric's would be.
    const valueTypes: Record<string, MetricValueType> = Object.fromEntries(definitions.map((definition) => [definition.key, definition.valueType]));
    const studied = flag === null ? null : studiedRule(flag, experiment);
    const rule: Rule | null = studied !== null && 'rule' in studied ? studied.rule : null;
    // Loaded by the first computation, not by every server start: its distributions (stdlib's t
    // and chi-squared CDFs, ~100 small CommonJS packages) are ~0.25 s of CPU to load.
    const { analyseExperiment, normalUpperQuantile, plannedWeights, runningSettingsKey } = await import('@switchyard/stats');
    const arms: ArmTotals[] = iteration === null
      ? experiment.variantKeys.map((variantKey) => ({ variantKey, participants: 0, metrics: {} }))
      : await this.repos.experimentData.aggregateMetrics(scope, {
        flagKey: experiment.flagKey,
        // A rule removed since the start (the flag changed under a paused experiment): its id
        // still names the exposures it made.
        ruleId: rule?.id ?? experiment.ruleId,
        variantKeys: experiment.variantKeys,
        metrics: experiment.metrics,
        valueTypes,
        fromMs: iteration.startedAtMs,
        toMs: iteration.endedAtMs === 0 ? null : iteration.endedAtMs,
        // A running iteration's participants are kept by the store between recomputes.
        iterationId: iteration.id,
        // Quantile metrics' outer intervals at the experiment's level (docs/statistics.md §15).
        quantileZ: normalUpperQuantile(experiment.analysis.alpha / 2),
      });

    const buckets = rule?.allocation?.buckets ?? null;
    const weights = buckets === null ? experiment.variantKeys.map(() => 0) : plannedWeights(buckets, experiment.variantKeys);
    const analysis: LookInputs = { experiment, iteration, arms, weights, buckets, computedAtMs, intervalMs: this.intervalMs, analyseExperiment, runningSettingsKey };
    // Compare-and-set against the results this look folds forward: a recompute that ran at the same
    // time and saved first is folded in on the next attempt, so no look of the running tests is lost.
    for (let attempt = 1; ; attempt++) {
      const stored = await this.repos.results.get(scope, experimentId);
      // A computation that started later has already saved: its look saw at least our data.
      if (stored !== null && stored.computedAtMs > computedAtMs) return stored;
      const { results, failing } = analyseLook(analysis, stored);
      try {
        if (await this.saveLook(scope, results, failing, experiment, stored?.computedAtMs ?? null)) return results;
      } catch (error) {
        // Deleted while the aggregation ran.
        if (isDomainError(error) && error.code === 'NOT_FOUND') throw gone(experimentId);
        throw error;
      }
      if (attempt >= SAVE_ATTEMPTS) throw new Error(`results of experiment ${experimentId}: ${SAVE_ATTEMPTS} concurrent saves in a row, giving up this look`);
    }
  }

  /** Saves the results and, in the same transaction, an entry per guardrail that started failing; false when the stored results changed since they were read. */
  private async saveLook(scope: EnvironmentScope, results: ExperimentResults, failing: Map<string, string[]>, experiment: Experiment, previousComputedAtMs: number | null): Promise<boolean> {
    if (failing.size === 0) return this.repos.results.saveIfUnchanged(scope, results, previousComputedAtMs);
    return this.repos.unitOfWork.run(async (tx) => {
      if (!(await tx.results.saveIfUnchanged(scope, results, previousComputedAtMs))) return false;
      for (const [metricKey, variantKeys] of failing) {
        const metric = experiment.metrics.find((m) => m.key === metricKey);
        await recordChange(tx, STATS_ACTOR, {
          orgId: scope.orgId,
          action: GUARDRAIL_FAILING_ACTION,
          resourceType: 'experiment',
          resourceId: experiment.id,
          projectId: scope.projectId,
          environmentId: scope.environmentId,
          details: {
            experiment_name: experiment.name,
            iteration_id: results.iterationId,
            metric_key: metricKey,
            margin: metric?.guardrail?.margin ?? null,
            margin_kind: metric?.guardrail?.marginKind ?? null,
            variants: variantKeys.map((variantKey) => {
              const stats = results.variantResults.find((v) => v.variantKey === variantKey)?.metricStats[metricKey];
              return { variant_key: variantKey, estimate: stats?.guardrail?.estimate ?? null, harm_p_value: stats?.guardrail?.harm_p_value ?? null, bound: stats?.guardrail?.bound ?? null };
            }),
          },
        }, results.computedAtMs);
      }
      return true;
    });
  }
}

/** A concurrent save makes a look start again from the newer state; this many in a row fail the job (it is retried). */
const SAVE_ATTEMPTS = 5;

type StatsModule = typeof import('@switchyard/stats');

/** What one look needs besides the state it folds forward: the aggregation is read once. */
interface LookInputs {
  experiment: Experiment;
  iteration: ExperimentIteration | null;
  arms: ArmTotals[];
  weights: number[];
  buckets: unknown[] | null;
  computedAtMs: number;
  /** The schedule's interval: the next run of a running experiment. */
  intervalMs: number;
  analyseExperiment: StatsModule['analyseExperiment'];
  runningSettingsKey: StatsModule['runningSettingsKey'];
}

/** The statistics of one look, folding forward the running states of `stored` (the previous look, when at this iteration and these settings). */
function analyseLook(inputs: LookInputs, stored: ExperimentResults | null): { results: ExperimentResults; failing: Map<string, string[]> } {
  const { experiment, iteration, arms, weights, buckets, computedAtMs } = inputs;
  // The states of the previous look at this iteration (docs/statistics.md §10).
  const settingsKey = inputs.runningSettingsKey(experiment.metrics, experiment.analysis);
  const carried = iteration === null ? null : (stored?.runningState ?? null);
  const sameIteration = carried !== null && iteration !== null && carried.iterationId === iteration.id;
  const previous = sameIteration && carried.settings === settingsKey ? carried : null;
  const computed = inputs.analyseExperiment({
    arms: arms.map((arm, i) => ({ ...arm, plannedWeight: weights[i] ?? 0 })),
    controlVariantKey: experiment.controlVariantKey,
    metrics: experiment.metrics,
    settings: experiment.analysis,
    previous,
    atEnd: iteration !== null && iteration.endedAtMs !== 0,
  });
  // Guardrails failing now whose start was not yet recorded in this iteration (whatever the settings since).
  const announced = sameIteration ? carried.failingAnnounced : [];
  const failing = new Map<string, string[]>();
  for (const variant of computed.variantResults) {
    for (const [key, stats] of Object.entries(variant.metricStats)) {
      if (stats.guardrail_status === 'failing' && !announced.includes(key)) failing.set(key, [...(failing.get(key) ?? []), variant.variantKey]);
    }
  }
  const runningState: ExperimentRunningState | null = iteration === null ? null : {
    iterationId: iteration.id,
    settings: settingsKey,
    ...computed.running,
    failingAnnounced: [...announced, ...failing.keys()],
  };
  const results: ExperimentResults = {
    experimentId: experiment.id,
    iterationId: iteration?.id ?? null,
    variantResults: computed.variantResults,
    // Without a planned split there is nothing to test the counts against.
    srmPValue: buckets === null ? null : computed.srmPValue,
    srmWarning: buckets === null ? false : computed.srmWarning,
    analysis: experiment.analysis,
    computedAtMs,
    // Only running experiments are on the schedule.
    nextRunAtMs: experiment.status === 'EXPERIMENT_STATUS_ACTIVE' ? computedAtMs + inputs.intervalMs : 0,
    computationStatus: iteration === null ? COMPUTATION_NO_ITERATION : COMPUTATION_COMPLETED,
    sequentialSrmPValue: buckets === null ? null : computed.sequentialSrmPValue,
    runningState,
  };
  return { results, failing };
}
