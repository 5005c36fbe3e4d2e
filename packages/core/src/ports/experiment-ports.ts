import type { AnalysisSettings, ExperimentMetric } from '../experiments/analysis-model.ts';
import type {
  Experiment,
  ExperimentIteration,
  ExperimentResults,
  ExperimentStatus,
  StatsJob,
} from '../model/entities.ts';
import type { EnvironmentScope, OrgScope } from './scopes.ts';

export interface ExperimentInput {
  name: string;
  description: string;
  flagKey: string;
  variantKeys: string[];
  /** The stored metric_keys are their keys. */
  metrics: ExperimentMetric[];
  trafficAllocation: number;
  ruleId: string | null;
  controlVariantKey: string;
  analysis: AnalysisSettings;
}

export interface ExperimentRepository {
  /** Starts in DRAFT with version 1. */
  create(scope: EnvironmentScope, input: ExperimentInput): Promise<Experiment>;
  get(scope: EnvironmentScope, experimentId: string): Promise<Experiment | null>;
  /** By id alone within the org (stats routes carry only the experiment id). */
  findInOrg(scope: OrgScope, experimentId: string): Promise<{ experiment: Experiment; scope: EnvironmentScope } | null>;
  list(scope: EnvironmentScope): Promise<Experiment[]>;
  /** @throws NOT_FOUND, ABORTED. */
  update(scope: EnvironmentScope, experimentId: string, patch: Partial<ExperimentInput>, expectedVersion?: number): Promise<Experiment>;
  /** Returns the deleted experiment. @throws NOT_FOUND, ABORTED. */
  delete(scope: EnvironmentScope, experimentId: string, expectedVersion?: number): Promise<Experiment>;
  /**
   * Moves `from` → `to` atomically with its iterations: entering ACTIVE opens iteration n+1,
   * leaving ACTIVE closes the open one at `atMs`. Whether the move is legal is core's decision
   * (experiment-transitions.ts); this only guards against a concurrent change of status.
   * @throws NOT_FOUND; ABORTED when the stored status is not `from` or the version differs.
   */
  transition(
    scope: EnvironmentScope,
    experimentId: string,
    move: { from: ExperimentStatus; to: ExperimentStatus; atMs: number },
    expectedVersion?: number,
  ): Promise<Experiment>;
  listIterations(scope: EnvironmentScope, experimentId: string): Promise<ExperimentIteration[]>;
  /** Every ACTIVE experiment, in every org (the stats scheduler's view). */
  listActive(): Promise<Array<{ experiment: Experiment; scope: EnvironmentScope }>>;
}

export interface ResultsRepository {
  /** Replaces the stored results of the experiment. */
  save(scope: EnvironmentScope, results: ExperimentResults): Promise<void>;
  /**
   * Saves only while the stored results are still those computed at `previousComputedAtMs` (null:
   * none stored yet), answering false when another computation saved in between: a compare-and-set,
   * so two recomputes of one experiment running at once cannot drop a look of its running tests
   * (docs/statistics.md §10). @throws NOT_FOUND as save does.
   */
  saveIfUnchanged(scope: EnvironmentScope, results: ExperimentResults, previousComputedAtMs: number | null): Promise<boolean>;
  get(scope: EnvironmentScope, experimentId: string): Promise<ExperimentResults | null>;
}

export interface StatsJobRepository {
  /**
   * A new job in `pending` — or, while the experiment already has a pending (queued, not yet
   * claimed) job, that job unchanged: at most one job per experiment waits, however many
   * triggers arrive, concurrent ones included.
   */
  create(scope: OrgScope, experimentId: string, nowMs: number): Promise<StatsJob>;
  get(scope: OrgScope, jobId: string): Promise<StatsJob | null>;
  /**
   * Claims a pending job, or a running one whose lease expired (FOR UPDATE SKIP LOCKED in
   * PostgreSQL, so several workers never claim the same job), taking orgs in turn: the oldest
   * claimable job of the org whose jobs were claimed least recently (an org never served first),
   * so one org's long queue cannot starve another org's job. Sets running, the lease
   * (nowMs + leaseMs) and attempts + 1; startedAtMs is set by the first claim only and kept when an
   * expired lease is claimed again. A lease counts as expired when leaseExpiresAtMs < nowMs.
   */
  claimNext(nowMs: number, leaseMs: number): Promise<StatsJob | null>;
  /** Marks completed; only from running. */
  complete(jobId: string, nowMs: number): Promise<StatsJob>;
  /** Marks failed with a non-empty error; only from running. */
  fail(jobId: string, error: string, nowMs: number): Promise<StatsJob>;
}

