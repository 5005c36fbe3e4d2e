import {
  DomainError,
  isDomainError,
  type ExperimentIteration,
  type ExperimentResults,
  type MetricSpec,
  type Repositories,
} from '@switchyard/core';
import { computeVariantResults, experimentAllocation, plannedWeights, variantAggregates } from '@switchyard/stats';

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
 * 2. the aggregation, in the database (ExperimentDataRepository.aggregate): participants per
 *    variant and per-metric totals, a few rows whatever the number of events;
 * 3. core's arithmetic: zeros folded in, Welch's test of each variant against the first
 *    (control), the sample-ratio test against the flag's planned split;
 * 4. save, stamped with the instant the computation STARTED: anything received after it makes the
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
    const valueTypes = new Map(definitions.map((definition) => [definition.key, definition.valueType]));
    // A metric whose definition was deleted after the experiment was made: its stored events are
    // still numbers, summed as a double metric would be.
    const metrics: MetricSpec[] = experiment.metricKeys.map((key) => ({ key, valueType: valueTypes.get(key) ?? 'double' }));
    const totals = iteration === null
      ? experiment.variantKeys.map((variantKey) => ({ variantKey, participants: 0, metrics: {} }))
      : await this.repos.experimentData.aggregate(scope, {
        flagKey: experiment.flagKey,
        variantKeys: experiment.variantKeys,
        metrics,
        fromMs: iteration.startedAtMs,
        toMs: iteration.endedAtMs === 0 ? null : iteration.endedAtMs,
      });

    const buckets = experimentAllocation(flag, experiment.variantKeys);
    const weights = buckets === null ? experiment.variantKeys.map(() => 0) : plannedWeights(buckets, experiment.variantKeys);
    const computed = computeVariantResults({ variants: variantAggregates(totals, metrics, weights), metricKeys: experiment.metricKeys });
    const results: ExperimentResults = {
      experimentId,
      iterationId: iteration?.id ?? null,
      variantResults: computed.variantResults,
      // Without a planned split there is nothing to test the counts against.
      srmPValue: buckets === null ? null : computed.srmPValue,
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
