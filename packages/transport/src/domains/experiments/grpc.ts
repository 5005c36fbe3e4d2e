import type * as grpc from '@grpc/grpc-js';
import {
  analysisWire,
  invalidArgument,
  type AnalysisSettings,
  type AnalysisWire,
  type EnvironmentScope,
  type ExperimentResults,
  type MetricStats,
  type MetricWire,
  type Principal,
} from '@switchyard/core';
import { experimentRecord, iterationRecord, jobRecord, type ExperimentBody, type PowerBody } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { authenticateCall, presentedByMetadata } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';

const ExperimentationServiceDefinition = lookup<grpc.ServiceClientConstructor>(
  loadProto('svc/experiments/v1/experiments.proto'),
  'svc.experiments.v1.ExperimentationService',
);
const StatsServiceDefinition = lookup<grpc.ServiceClientConstructor>(loadProto('svc/stats/v1/stats.proto'), 'svc.stats.v1.StatsService');

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;

/** svc.experiments.v1.Experiment as decoded: proto3 `optional` fields are absent when unset. */
interface ExperimentMessage {
  id: string;
  environment_id: string;
  name?: string;
  description?: string;
  flag_key?: string;
  status: string;
  variant_keys: string[];
  metric_keys: string[];
  traffic_allocation?: number;
  rule_id?: string;
  control_variant_key?: string;
  metrics: MetricMessage[];
  analysis: AnalysisMessage | null;
  version: number;
}
interface MetricSourceMessage {
  event_key: string;
  aggregation: string;
  window_ms?: number;
}
/** svc.experiments.v1.Metric as decoded: unset message fields are null, unset optionals absent. */
interface MetricMessage {
  key: string;
  event_key: string;
  aggregation: string;
  window_ms?: number;
  direction: string;
  capping: { kind: string; lower?: number; upper?: number; ignore_zeros: boolean } | null;
  cuped: { lookback_ms?: number } | null;
  guardrail: boolean;
  ratio: { numerator: MetricSourceMessage | null; denominator: MetricSourceMessage | null } | null;
  guardrail_margin: { margin: number; margin_kind: string } | null;
  quantile: { p: number; unit: string } | null;
}
interface AnalysisMessage {
  alpha?: number;
  sides: string;
  relative_interval: string;
  correction: string;
  correction_family: string;
  srm_threshold?: number;
  srm_min_expected?: number;
  engine: string;
  sequential: { tuning_n?: number | string } | null;
  hybrid: boolean;
  prior: { mean: number; sd: number } | null;
}
interface ExperimentRef {
  environment_id: string;
  experiment_id: string;
}

/**
 * The gRPC Experiment carries the same fields as the REST record (nulls serialise as unset), except
 * a metric's guardrail: the bool `guardrail` plus the `guardrail_margin` message.
 */
const experimentMessage = (experiment: Parameters<typeof experimentRecord>[0]) => {
  const record = experimentRecord(experiment);
  return {
    ...record,
    metrics: record.metrics.map((metric) => {
      const margin = metric.guardrail;
      return {
        ...metric,
        // A per-event quantile metric has no aggregation: "" on the wire.
        aggregation: metric.aggregation ?? undefined,
        guardrail: typeof margin === 'object' && margin !== null,
        guardrail_margin: typeof margin === 'object' && margin !== null ? margin : undefined,
      };
    }),
  };
};

/** proto3 strings are "" when unset: "" is "not sent" on the wire shape core parses. */
const text = (value: string | undefined): string | undefined => (value === '' ? undefined : value);

const sourceWire = (source: MetricSourceMessage | null): unknown =>
  source === null ? null : { event_key: text(source.event_key), aggregation: text(source.aggregation), window_ms: source.window_ms };

/**
 * A Metric message as the REST wire shape, so core's parser checks both transports alike (its
 * INVALID_ARGUMENT messages name the same fields). The shape is unchecked here: the parser checks it.
 */
const metricWireOf = (metric: MetricMessage): MetricWire =>
  ({
    key: text(metric.key),
    event_key: text(metric.event_key),
    aggregation: text(metric.aggregation),
    window_ms: metric.window_ms,
    direction: text(metric.direction),
    capping: metric.capping && { kind: text(metric.capping.kind), lower: metric.capping.lower, upper: metric.capping.upper, ignore_zeros: metric.capping.ignore_zeros },
    cuped: metric.cuped && { lookback_ms: metric.cuped.lookback_ms },
    // guardrail_margin gives the margin; the bool alone is a margin-0 guardrail (REST's `true`).
    guardrail: metric.guardrail_margin ? { margin: metric.guardrail_margin.margin, margin_kind: text(metric.guardrail_margin.margin_kind) } : metric.guardrail,
    ratio: metric.ratio && { numerator: sourceWire(metric.ratio.numerator), denominator: sourceWire(metric.ratio.denominator) },
    quantile: metric.quantile && { p: metric.quantile.p, unit: text(metric.quantile.unit) },
  }) as MetricWire;

const analysisWireOf = (analysis: AnalysisMessage): AnalysisWire =>
  ({
    alpha: analysis.alpha,
    sides: text(analysis.sides),
    relative_interval: text(analysis.relative_interval),
    correction: text(analysis.correction),
    correction_family: text(analysis.correction_family),
    srm_threshold: analysis.srm_threshold,
    srm_min_expected: analysis.srm_min_expected,
    engine: text(analysis.engine),
    sequential: analysis.sequential && { tuning_n: analysis.sequential.tuning_n === undefined ? undefined : Number(analysis.sequential.tuning_n) },
    hybrid: analysis.hybrid,
    prior: analysis.prior && { mean: analysis.prior.mean, sd: analysis.prior.sd },
  }) as AnalysisWire;

/** JSON nulls become unset `optional` fields. */
const orUnset = (value: number | null): number | undefined => (value === null ? undefined : value);

/** Results stored before metric definitions lack the fields after p_value: they stay unset. */
const metricStatsMessage = (stats: MetricStats) => ({
  mean: stats.mean,
  variance: stats.variance,
  lift: orUnset(stats.lift),
  ci_low: orUnset(stats.ci_low),
  ci_high: orUnset(stats.ci_high),
  p_value: orUnset(stats.p_value),
  absolute: stats.absolute ?? undefined,
  relative: stats.relative ?? undefined,
  adjusted_p_value: stats.adjusted_p_value ?? undefined,
  capped_mean: stats.capped_mean,
  uncapped_mean: stats.uncapped_mean,
  cuped: stats.cuped ?? undefined,
  verdict: stats.verdict ?? '',
  sequential: stats.sequential ? { ...stats.sequential, ci_low: orUnset(stats.sequential.ci_low), ci_high: orUnset(stats.sequential.ci_high), adjusted_p_value: orUnset(stats.sequential.adjusted_p_value) } : undefined,
  bayesian: stats.bayesian ?? undefined,
  guardrail_status: stats.guardrail_status ?? '',
  guardrail: stats.guardrail ? { ...stats.guardrail, bound: orUnset(stats.guardrail.bound) } : undefined,
  quantile: stats.quantile ?? undefined,
});

const resultsMessage = (results: ExperimentResults, isStale: boolean) => ({
  experiment_id: results.experimentId,
  variant_results: results.variantResults.map((variant) => ({
    variant_key: variant.variantKey,
    participant_count: variant.participantCount,
    metric_values: variant.metricValues,
    p_value: variant.pValue,
    p_value_present: variant.pValuePresent,
    metric_stats: Object.fromEntries(Object.entries(variant.metricStats).map(([key, stats]) => [key, metricStatsMessage(stats)])),
  })),
  computed_at_ms: results.computedAtMs,
  is_stale: isStale,
  next_run_at_ms: results.nextRunAtMs,
  computation_status: results.computationStatus,
  srm_p_value: orUnset(results.srmPValue),
  srm_warning: results.srmWarning,
  analysis: results.analysis === undefined ? undefined : analysisMessage(results.analysis),
  sequential_srm_p_value: orUnset(results.sequentialSrmPValue ?? null),
});

/** Analysis settings as the Analysis message: null sub-messages unset. */
const analysisMessage = (analysis: AnalysisSettings) => {
  const wire = analysisWire(analysis);
  return { ...wire, sequential: wire.sequential ?? undefined, prior: wire.prior ?? undefined };
};

/** The fields of a request's Experiment that are set (or named in `mask`), as the REST body. */
function bodyOf(message: ExperimentMessage | null | undefined, mask: readonly string[] = []): ExperimentBody {
  if (!message) throw invalidArgument('experiment is required', 'experiment');
  const given = (field: string, set: boolean) => set || mask.includes(field);
  const body: ExperimentBody = {};
  if (given('name', message.name !== undefined)) body.name = message.name ?? '';
  if (given('description', message.description !== undefined)) body.description = message.description ?? '';
  if (given('flag_key', message.flag_key !== undefined)) body.flag_key = message.flag_key ?? '';
  if (given('variant_keys', message.variant_keys.length > 0)) body.variant_keys = message.variant_keys;
  if (given('metric_keys', message.metric_keys.length > 0)) body.metric_keys = message.metric_keys;
  if (given('traffic_allocation', message.traffic_allocation !== undefined)) body.traffic_allocation = message.traffic_allocation ?? 1;
  if (given('metrics', message.metrics.length > 0)) body.metrics = message.metrics.map(metricWireOf);
  if (message.analysis) body.analysis = analysisWireOf(message.analysis);
  else if (mask.includes('analysis')) body.analysis = {};
  // "" (or named in the mask) is the default rule; the service tells null from absent.
  if (given('rule_id', message.rule_id !== undefined)) body.rule_id = text(message.rule_id) ?? null;
  if (message.control_variant_key !== undefined) body.control_variant_key = message.control_variant_key;
  if (message.version > 0) body.version = message.version;
  return body;
}

/** svc.experiments.v1.EstimatePowerRequest as decoded. */
interface EstimatePowerMessage {
  environment_id: string;
  metric: MetricMessage | null;
  window_days?: number;
  mean?: number;
  variance?: number;
  exposures_per_day?: number;
  traffic_allocation?: number;
  mde: number;
  alpha?: number;
  power?: number;
  sides: string;
  arms?: number;
  weights: number[];
  cuped_r2?: number;
  sequential: { tuning_n?: number | string } | null;
}

/** The request as the REST body, so the service checks both transports alike (proto3's 0 mde is "not sent"). */
const powerBodyOf = (message: EstimatePowerMessage): PowerBody => ({
  metric: message.metric ? metricWireOf(message.metric) : null,
  window_days: message.window_days,
  mean: message.mean,
  variance: message.variance,
  exposures_per_day: message.exposures_per_day,
  traffic_allocation: message.traffic_allocation,
  mde: message.mde === 0 ? undefined : message.mde,
  alpha: message.alpha,
  power: message.power,
  sides: text(message.sides),
  arms: message.arms,
  weights: message.weights.length === 0 ? undefined : message.weights,
  cuped_r2: message.cuped_r2,
  sequential: message.sequential && { tuning_n: message.sequential.tuning_n === undefined ? undefined : Number(message.sequential.tuning_n) },
});

/** A JSON answer as a message: nulls become unset fields, a null sample_per_arm an empty list. */
function unsetNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unsetNulls);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.entries(value).flatMap(([key, entry]) => {
    if (entry === null) return key === 'sample_per_arm' ? [[key, []]] : [];
    return [[key, unsetNulls(entry)]];
  }));
}

function required(value: string | undefined, field: string): string {
  if (!value) throw invalidArgument(`${field} is required`, field);
  return value;
}

/**
 * svc.experiments.v1.ExperimentationService and svc.stats.v1.StatsService on the internal gRPC
 * port: the REST routes' services, RBAC and validation, with `authorization: Bearer` metadata.
 */
export function addExperimentGrpcServices(server: grpc.Server, deps: { services: GatewayServices; logger: Logger }): void {
  const { services, logger } = deps;
  const { verifier, experiments, stats } = services;

  async function resolve(call: Call<unknown>, environmentId: string | undefined): Promise<{ principal: Principal; scope: EnvironmentScope }> {
    return authenticateScoped(verifier, presentedByMetadata(call.metadata), 'bearer', (principal) => experiments.scope(principal, required(environmentId, 'environment_id')));
  }
  const experimentId = (request: ExperimentRef): string => required(request.experiment_id, 'experiment_id');

  server.addService(ExperimentationServiceDefinition.service, {
    createExperiment: unary(logger, async (call: Call<{ experiment: ExperimentMessage | null }>) => {
      const { principal, scope } = await resolve(call, call.request.experiment?.environment_id);
      return experimentMessage(await experiments.create(principal, scope, bodyOf(call.request.experiment)));
    }),
    updateExperiment: unary(logger, async (call: Call<{ experiment: ExperimentMessage | null; update_mask: string[] }>) => {
      const { principal, scope } = await resolve(call, call.request.experiment?.environment_id);
      const id = required(call.request.experiment?.id, 'experiment.id');
      return experimentMessage(await experiments.update(principal, scope, id, bodyOf(call.request.experiment, call.request.update_mask)));
    }),
    getExperiment: unary(logger, async (call: Call<ExperimentRef>) => {
      const { principal, scope } = await resolve(call, call.request.environment_id);
      return experimentMessage(await experiments.get(principal, scope, experimentId(call.request)));
    }),
    deleteExperiment: unary(logger, async (call: Call<ExperimentRef & { version: number }>) => {
      const { principal, scope } = await resolve(call, call.request.environment_id);
      const version = call.request.version > 0 ? call.request.version : undefined;
      return experimentMessage(await experiments.remove(principal, scope, experimentId(call.request), version));
    }),
    listExperiments: unary(logger, async (call: Call<{ environment_id: string }>) => {
      const { principal, scope } = await resolve(call, call.request.environment_id);
      return { experiments: (await experiments.list(principal, scope)).map(experimentMessage) };
    }),
    transitionExperiment: unary(logger, async (call: Call<ExperimentRef & { new_status: string; reason: string; version: number }>) => {
      const { principal, scope } = await resolve(call, call.request.environment_id);
      const { new_status, reason, version } = call.request;
      const moved = await experiments.transition(principal, scope, experimentId(call.request), { new_status, reason, ...(version > 0 ? { version } : {}) });
      return experimentMessage(moved);
    }),
    listIterations: unary(logger, async (call: Call<ExperimentRef>) => {
      const { principal, scope } = await resolve(call, call.request.environment_id);
      return { iterations: (await experiments.iterations(principal, scope, experimentId(call.request))).map(iterationRecord) };
    }),
    getResults: unary(logger, async (call: Call<ExperimentRef>) => {
      const { principal, scope } = await resolve(call, call.request.environment_id);
      const { results, isStale } = await experiments.results(principal, scope, experimentId(call.request));
      return resultsMessage(results, isStale);
    }),
    estimatePower: unary(logger, async (call: Call<EstimatePowerMessage>) => {
      const { principal, scope } = await resolve(call, call.request.environment_id);
      return unsetNulls(await experiments.power(principal, scope, powerBodyOf(call.request)));
    }),
    getExperimentPower: unary(logger, async (call: Call<ExperimentRef & { mde: number; power?: number; window_days?: number; metric_key: string }>) => {
      const { principal, scope } = await resolve(call, call.request.environment_id);
      const { mde, power, window_days, metric_key } = call.request;
      return unsetNulls(await experiments.experimentPower(principal, scope, experimentId(call.request), {
        mde: mde === 0 ? undefined : mde,
        power,
        window_days,
        metric_key: text(metric_key),
      }));
    }),
  });

  server.addService(StatsServiceDefinition.service, {
    triggerRecompute: unary(logger, async (call: Call<{ experiment_id: string }>) => {
      const principal = await authenticateCall(verifier, call.metadata, 'bearer');
      const job = await stats.triggerRecompute(principal, call.request.experiment_id);
      return { job_id: job.id, status: job.status, created_at_ms: job.createdAtMs };
    }),
    getJobStatus: unary(logger, async (call: Call<{ job_id: string }>) => {
      const principal = await authenticateCall(verifier, call.metadata, 'bearer');
      return jobRecord(await stats.getJob(principal, call.request.job_id));
    }),
  });
}
