import {
  analysisWire,
  metricWire,
  type AnalysisWire,
  type Experiment,
  type ExperimentIteration,
  type ExperimentResults,
  type MetricStats,
  type MetricWire,
  type StatsJob,
  type StatsJobStatus,
} from '@switchyard/core';

/**
 * The wire records of experiments, iterations, results and stats jobs (docs/contract.md
 * "Records"), snake_case, shared by REST and gRPC.
 */

/** Experiment: the record of docs/contract.md "Records", metric_keys and traffic_allocation included. */
export interface ExperimentRecord {
  id: string;
  environment_id: string;
  name: string;
  description: string;
  flag_key: string;
  status: string;
  variant_keys: string[];
  /** The keys of `metrics`, in order. */
  metric_keys: string[];
  traffic_allocation: number;
  rule_id: string | null;
  control_variant_key: string;
  metrics: MetricWire[];
  analysis: Required<AnalysisWire>;
  version: number;
  created_at_ms: number;
  updated_at_ms: number;
}

export interface IterationRecord {
  id: string;
  experiment_id: string;
  iteration_number: number;
  started_at_ms: number;
  /** 0 while the iteration runs. */
  ended_at_ms: number;
  traffic_allocation: number;
  metric_keys: string[];
}

export interface VariantResultRecord {
  variant_key: string;
  participant_count: number;
  metric_values: Record<string, number>;
  p_value: number;
  p_value_present: boolean;
  metric_stats: Record<string, MetricStats>;
}

export interface ResultsRecord {
  experiment_id: string;
  variant_results: VariantResultRecord[];
  computed_at_ms: number;
  is_stale: boolean;
  next_run_at_ms: number;
  computation_status: string;
  /** null when there is nothing to test (fewer than 2 variants with a planned weight, or nobody exposed). */
  srm_p_value: number | null;
  /** null in results computed before metric definitions. */
  srm_warning: boolean | null;
  /** The settings the results were computed with; null in results computed before them. */
  analysis: Required<AnalysisWire> | null;
  /** The sequential SRM check's always-valid p-value; null when not testable or in results computed before it. */
  sequential_srm_p_value: number | null;
}

/** A job as GET /v1/jobs/{job_id} shows it; the recompute answer is the first three fields. */
export interface JobRecord {
  job_id: string;
  status: StatsJobStatus;
  started_at_ms: number;
  completed_at_ms: number;
  error: string;
  created_at_ms: number;
}

export const experimentRecord = (experiment: Experiment): ExperimentRecord => ({
  id: experiment.id,
  environment_id: experiment.environmentId,
  name: experiment.name,
  description: experiment.description,
  flag_key: experiment.flagKey,
  status: experiment.status,
  variant_keys: experiment.variantKeys,
  metric_keys: experiment.metricKeys,
  traffic_allocation: experiment.trafficAllocation,
  rule_id: experiment.ruleId,
  control_variant_key: experiment.controlVariantKey,
  metrics: experiment.metrics.map(metricWire),
  analysis: analysisWire(experiment.analysis),
  version: experiment.version,
  created_at_ms: experiment.createdAtMs,
  updated_at_ms: experiment.updatedAtMs,
});

export const iterationRecord = (iteration: ExperimentIteration): IterationRecord => ({
  id: iteration.id,
  experiment_id: iteration.experimentId,
  iteration_number: iteration.iterationNumber,
  started_at_ms: iteration.startedAtMs,
  ended_at_ms: iteration.endedAtMs,
  traffic_allocation: iteration.trafficAllocation,
  metric_keys: iteration.metricKeys,
});

export const resultsRecord = (results: ExperimentResults, isStale: boolean): ResultsRecord => ({
  experiment_id: results.experimentId,
  variant_results: results.variantResults.map((variant) => ({
    variant_key: variant.variantKey,
    participant_count: variant.participantCount,
    metric_values: variant.metricValues,
    p_value: variant.pValue,
    p_value_present: variant.pValuePresent,
    metric_stats: variant.metricStats,
  })),
  computed_at_ms: results.computedAtMs,
  is_stale: isStale,
  next_run_at_ms: results.nextRunAtMs,
  computation_status: results.computationStatus,
  srm_p_value: results.srmPValue,
  srm_warning: results.srmWarning ?? null,
  analysis: results.analysis === undefined ? null : analysisWire(results.analysis),
  sequential_srm_p_value: results.sequentialSrmPValue ?? null,
});

export const jobRecord = (job: StatsJob): JobRecord => ({
  job_id: job.id,
  status: job.status,
  started_at_ms: job.startedAtMs,
  completed_at_ms: job.completedAtMs,
  error: job.error,
  created_at_ms: job.createdAtMs,
});
