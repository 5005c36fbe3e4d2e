import type { ArmMetricData, ExperimentMetric } from '../experiments/analysis-model.ts';
import type { MetricValueType, StatsJob } from '../model/entities.ts';
import type { EnvironmentScope } from './scopes.ts';

/** What `ExperimentDataRepository.aggregateMetrics` reads (docs/statistics.md "Attribution and aggregation"). */
export interface MetricAggregateQuery {
  flagKey: string;
  /**
   * The rule whose allocation the experiment studies: exposures that name another rule (or ''
   * for no allocation) are not participants. Exposures that name none (NULL: older clients)
   * still count. Null: every exposure of the flag counts.
   */
  ruleId: string | null;
  /** The experiment's variants; exposures to other variants of the flag are ignored. */
  variantKeys: readonly string[];
  metrics: readonly ExperimentMetric[];
  /** The value type of every event key the metrics read (a missing key counts as `double`). */
  valueTypes: Readonly<Record<string, MetricValueType>>;
  /** The iteration's window on exposures' and events' `timestamp_ms`: from (inclusive) ... */
  fromMs: number;
  /** ... to (exclusive); null while the iteration runs. */
  toMs: number | null;
  /**
   * The iteration the window belongs to, when the caller computes an experiment's results. While
   * it runs (toMs null) a store may keep its participants' values between calls and bring them up
   * to date from what arrived since the last call (PostgreSQL does, docs/statistics.md
   * "Incremental aggregation"); the answer is the same as a computation from scratch.
   */
  iterationId?: string | null;
  /**
   * The normal quantile z_{1−α/2} at which quantile metrics' outer intervals are taken
   * (docs/statistics.md §15); absent: 1.959963984540054 (95 %).
   */
  quantileZ?: number;
}

/** One arm's participants and, by metric key, its sufficient statistics (every metric present). */
export interface ArmTotals {
  variantKey: string;
  /** Distinct contexts whose first exposure in the window was to this variant. */
  participants: number;
  metrics: Record<string, ArmMetricData>;
}

/**
 * Reads the raw experiment data. Aggregation happens in the store (SQL GROUP BY in PostgreSQL):
 * only a few numbers per variant and metric come back, never the events themselves.
 */
export interface ExperimentDataRepository {
  /**
   * Per variant (in `variantKeys` order, every key present) its participants (distinct contexts whose first exposure by the studied rule in the window was to it) and
   * for each metric the ArmMetricData of its participants (docs/statistics.md "Attribution and
   * aggregation"): each participant's events counted from its first exposure t0 (within the
   * source's window and the iteration's), aggregated per participant, capped, with the CUPED
   * covariates over [t0 − lookback, t0). An arm without participants in a metric has n 0, means,
   * co-moments and uncappedMean 0.
   */
  aggregateMetrics(scope: EnvironmentScope, query: MetricAggregateQuery): Promise<ArmTotals[]>;
  /**
   * Whether any exposure of the flag or event of the metrics was RECEIVED after `sinceMs`
   * (server receipt time, `received_at_ms > sinceMs`): results computed at `sinceMs` are stale.
   */
  dataArrivedSince(scope: EnvironmentScope, query: { flagKey: string; metricKeys: readonly string[]; sinceMs: number }): Promise<boolean>;
}

/** The stats scheduler's view of jobs across every org (next to StatsJobRepository's per-job calls). */
export interface StatsScheduleRepository {
  /**
   * Creates a pending job for every ACTIVE experiment (any org) that is due and returns them. Due:
   * its results are absent or `next_run_at_ms <= nowMs`, it has no pending or running job, and no
   * job of it was created after `nowMs - intervalMs` (so a failing experiment is retried once per
   * interval, not on every tick). Atomic across instances: concurrent calls never both enqueue
   * for the same experiment.
   */
  enqueueDue(nowMs: number, intervalMs: number): Promise<StatsJob[]>;
  /**
   * Extends the lease of a job still running under the claim that made `attempts`; false when the
   * job was finished or re-claimed meanwhile (the caller lost it and should stop).
   */
  renewLease(jobId: string, attempts: number, nowMs: number, leaseMs: number): Promise<boolean>;
  /** Deletes completed and failed jobs that finished before `beforeMs`; returns how many. */
  pruneFinished(beforeMs: number): Promise<number>;
}

/** What `PowerDataRepository.windowMoments` reads: a past window of an environment's events (docs/statistics.md §14). */
export interface PowerWindowQuery {
  metrics: readonly ExperimentMetric[];
  valueTypes: Readonly<Record<string, MetricValueType>>;
  /** The window on events' `timestamp_ms`: from (inclusive) to (exclusive). */
  fromMs: number;
  toMs: number;
}

/** The units of a past window and each metric's moments over them (one "arm"). */
export interface PowerWindowMoments {
  /** Distinct contexts with any event in the window (at most the store's bound). */
  participants: number;
  /** The store's bound was reached: the participants beyond it were not read. */
  truncated: boolean;
  /** By metric key, as ArmMetricData (n 0 when no unit has a value). */
  metrics: Record<string, ArmMetricData>;
}

/** What `PowerDataRepository.armParticipants` counts: an experiment's participants so far. */
export interface ArmParticipantsQuery {
  flagKey: string;
  ruleId: string | null;
  variantKeys: readonly string[];
  /** Exposures' `timestamp_ms` in [fromMs, toMs). */
  fromMs: number;
  toMs: number;
}

/**
 * Reads for the power and duration calculator (docs/statistics.md §14), bounded: a statement
 * timeout and a LIMIT on the participants each statement keeps.
 */
export interface PowerDataRepository {
  /**
   * Each metric aggregated per unit as the experiment engine aggregates it, a unit being a context
   * with any event in the window, its "exposure" t0 its first event there.
   */
  windowMoments(scope: EnvironmentScope, query: PowerWindowQuery): Promise<PowerWindowMoments>;
  /** Per variant key (every key present), the distinct contexts whose first exposure in [fromMs, toMs) was to it; and whether the bound was reached. */
  armParticipants(scope: EnvironmentScope, query: ArmParticipantsQuery): Promise<{ counts: Record<string, number>; truncated: boolean }>;
}
