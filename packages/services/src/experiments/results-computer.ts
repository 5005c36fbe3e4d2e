import {
  DomainError,
  isDomainError,
  studiedRule,
  type ArmTotals,
  type ExperimentIteration,
  type ExperimentResults,
  type MetricValueType,
  type Repositories,
  type Rule,
} from '@switchyard/core';

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
 *    something new;
 * 4. the statistics (@switchyard/stats analyseExperiment, docs/statistics.md): each variant
 *    against the control per metric, corrections, verdicts, the sample-ratio test;
 * 5. save, stamped with the instant the computation STARTED: anything received after it makes the
 *    results stale, including rows that landed while the aggregation ran.
 */
export class ResultsComputer implements ResultsComputation {
  private readonly intervalMs: number;
  private readonly now: () => number;

  constructor(
    private readonly repos: Pick<Repositories, 'experiments' | 'flags' | 'eventDefinitions' | 'experimentData' | 'results'>,
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
      });

    // Loaded by the first computation, not by every server start: its distributions (stdlib's t
    // and chi-squared CDFs, ~100 small CommonJS packages) are ~0.25 s of CPU to load.
    const { analyseExperiment, plannedWeights } = await import('@switchyard/stats');
    const buckets = rule?.allocation?.buckets ?? null;
    const weights = buckets === null ? experiment.variantKeys.map(() => 0) : plannedWeights(buckets, experiment.variantKeys);
    const computed = analyseExperiment({
      arms: arms.map((arm, i) => ({ ...arm, plannedWeight: weights[i] ?? 0 })),
      controlVariantKey: experiment.controlVariantKey,
      metrics: experiment.metrics,
      settings: experiment.analysis,
    });
    const results: ExperimentResults = {
      experimentId,
      iterationId: iteration?.id ?? null,
      variantResults: computed.variantResults,
      // Without a planned split there is nothing to test the counts against.
      srmPValue: buckets === null ? null : computed.srmPValue,
      srmWarning: buckets === null ? false : computed.srmWarning,
      analysis: experiment.analysis,
      computedAtMs,
      // Only running experiments are on the schedule.
      nextRunAtMs: experiment.status === 'EXPERIMENT_STATUS_ACTIVE' ? computedAtMs + this.intervalMs : 0,
      computationStatus: iteration === null ? COMPUTATION_NO_ITERATION : COMPUTATION_COMPLETED,
    };
    try {
      await this.repos.results.save(scope, results);
    } catch (error) {
      // Deleted while the aggregation ran.
      if (isDomainError(error) && error.code === 'NOT_FOUND') throw gone(experimentId);
      throw error;
    }
    return results;
  }
}
