import type * as grpc from '@grpc/grpc-js';
import type { ScheduledKind, ScheduledOutcome, ServiceMetrics, StatsJobOutcome, SyncHub, WebhookDeliveryOutcome } from '@switchyard/services';
import type { EvaluationResult } from '@switchyard/core';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, type Metric } from 'prom-client';
import { CallMetrics } from './call-metrics.ts';
import { PrometheusClientMetrics } from './domains/client/client-metrics.ts';
import { instrumentService, type GrpcCallObserver } from './grpc/grpc-metrics.ts';

/** The `route` label of requests no route matched (their URL is not a label: unbounded). */
export const UNMATCHED_ROUTE = 'unmatched';

/** Request durations: from 1 ms (a cached evaluation) to 10 s (the request timeout's order). */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** gRPC unary calls like HTTP; streams last as long as they are open, so the top buckets are long. */
const GRPC_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 600, 3600];
/** A results computation: tens of milliseconds to minutes for large experiments. */
const STATS_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

let processRegistry: Registry | null = null;

/**
 * prom-client's process metrics (CPU, memory, event loop lag, GC, handles), collected once per
 * process and shared by every server instance's registry: collectDefaultMetrics on each registry
 * would install another GC observer and event-loop monitor per instance.
 */
function processMetrics(): Registry {
  if (processRegistry === null) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** What the PostgreSQL pool gauge needs: connections of this pool as PostgreSQL sees them. */
export type PoolProbe = () => Promise<Array<{ state: string; count: number }>>;

/**
 * The Prometheus metrics of one server instance, in a registry of its own (several instances run
 * in one process in tests; the global default registry would make them clash). The services
 * report through ServiceMetrics (plain callbacks); REST and gRPC through the methods below.
 *
 * Hot-path costs: REST requests and gRPC calls are kept in plain maps (CallMetrics) and an
 * evaluation adds one Map update per flag; both become Prometheus samples only when /metrics is
 * scraped.
 */
export class ServerMetrics implements ServiceMetrics {
  /** The instance's metrics and the shared process metrics: what `/metrics` serves. */
  readonly registry = new Registry();
  /** Per key kind on the routes client keys use (docs/client-side.md "6. Limits"). */
  readonly client = new PrometheusClientMetrics(this.registry);

  private readonly http = new CallMetrics({
    counter: {
      name: 'switchyard_http_requests_total',
      help: 'REST requests answered, by method, route pattern ("unmatched" when no route matched) and status code.',
    },
    histogram: {
      name: 'switchyard_http_request_duration_seconds',
      help: 'Time from receiving a REST request to sending its answer, by method and route pattern.',
    },
    labels: ['method', 'route'],
    outcome: 'status',
    buckets: HTTP_BUCKETS,
  });
  private readonly grpc = new CallMetrics({
    counter: {
      name: 'switchyard_grpc_calls_total',
      help: 'gRPC calls ended (both gRPC ports), by service, method and status code; a stream counts when it ends.',
    },
    histogram: {
      name: 'switchyard_grpc_call_duration_seconds',
      help: 'Duration of gRPC calls (both gRPC ports), by service and method; a stream from its start to its end.',
    },
    labels: ['service', 'method'],
    outcome: 'code',
    buckets: GRPC_BUCKETS,
  });
  /** A gateway's calls to the services process (empty elsewhere). */
  private readonly servicesCalls = new CallMetrics({
    counter: {
      name: 'switchyard_services_calls_total',
      help: 'Calls a gateway made to the services process, by gRPC service, method and status code.',
    },
    histogram: {
      name: 'switchyard_services_call_duration_seconds',
      help: 'Gateway to services call latency (the hop a split deployment adds), by gRPC service and method.',
    },
    labels: ['service', 'method'],
    outcome: 'code',
    buckets: GRPC_BUCKETS,
  });
  /** Evaluations by reason since start, counted on the hot path without prom-client. */
  private readonly evaluationCounts = new Map<string, number>();
  private readonly syncMessages = new Counter({
    name: 'switchyard_sync_messages_total',
    help: 'Messages (full snapshots and changes) written to definitions sync streams.',
    registers: [this.registry],
  });
  private readonly ingestEvents = new Counter({
    name: 'switchyard_ingest_events_total',
    help: 'Metric events of stored ingest requests, by outcome (accepted: stored; rejected: invalid entries).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly ingestExposures = new Counter({
    name: 'switchyard_ingest_exposures_total',
    help: 'Exposures of stored ingest requests, by outcome (accepted: stored; rejected: invalid entries).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly statsJobs = new Counter({
    name: 'switchyard_stats_jobs_total',
    help: 'Stats (experiment results) jobs run by this instance, by how they ended: completed, failed, interrupted (retried later), lease_lost.',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  private readonly statsDuration = new Histogram({
    name: 'switchyard_stats_job_duration_seconds',
    help: 'Time from claiming a stats job to its end.',
    buckets: STATS_BUCKETS,
    registers: [this.registry],
  });

  private readonly webhookDeliveries = new Counter({
    name: 'switchyard_webhook_deliveries_total',
    help: 'Webhook delivery attempts made by this instance, by outcome: delivered (2xx), retried, failed (last attempt, or 410), refused (address not public).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });
  private readonly webhookLatency = new Histogram({
    name: 'switchyard_webhook_delivery_duration_seconds',
    help: 'Duration of webhook delivery attempts (connect, send, answer), whatever their outcome.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15],
    registers: [this.registry],
  });

  private readonly schedulerApplications = new Counter({
    name: 'switchyard_scheduler_applications_total',
    help: 'Due scheduled changes and scheduled change requests handled by this instance, by kind (scheduled_change, change_request) and outcome (applied, failed, conflicted).',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });
  private readonly schedulerLateness = new Histogram({
    name: 'switchyard_scheduler_lateness_seconds',
    help: 'Seconds from a scheduled change or scheduled change request being due (execute_at_ms) to its application, by kind.',
    labelNames: ['kind'] as const,
    buckets: [0.5, 1, 5, 10, 30, 60, 300, 900, 3600, 21600, 86400],
    registers: [this.registry],
  });

  constructor() {
    const counts = this.evaluationCounts;
    new Counter({
      name: 'switchyard_evaluations_total',
      help: 'Flag evaluations (REST evaluate and OFREP; one per flag evaluated), by reason.',
      labelNames: ['reason'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [reason, count] of counts) this.inc({ reason }, count);
      },
    });
    // getMetricsAsArray returns the metric objects themselves (typed as their JSON form).
    for (const metric of processMetrics().getMetricsAsArray()) this.registry.registerMetric(metric as unknown as Metric);
    for (const metric of [...this.http.metrics(), ...this.grpc.metrics(), ...this.servicesCalls.metrics()]) this.registry.registerMetric(metric);
    // Zero from the start, so that rates and alerts see the series before the first increment.
    for (const outcome of ['accepted', 'rejected']) {
      this.ingestEvents.inc({ outcome }, 0);
      this.ingestExposures.inc({ outcome }, 0);
    }
    for (const status of ['completed', 'failed', 'interrupted', 'lease_lost']) this.statsJobs.inc({ status }, 0);
    for (const outcome of ['delivered', 'retried', 'failed', 'refused']) this.webhookDeliveries.inc({ outcome }, 0);
  }

  // ---- REST ----

  /** One call from this gateway to the services process. */
  servicesCall = (service: string, method: string, code: string, seconds: number): void => {
    this.servicesCalls.observe(service, method, code, seconds);
  };

  /** One answered request; `route` is the route pattern, undefined when no route matched. */
  httpRequest(method: string, route: string | undefined, status: number, milliseconds: number): void {
    this.http.observe(method, route ?? UNMATCHED_ROUTE, status, milliseconds / 1000);
  }

  // ---- gRPC ----

  /** Wraps every handler a grpc-js server gets from now on (see instrumentService). */
  instrumentGrpc(server: grpc.Server): void {
    const observe: GrpcCallObserver = (service, method, code, seconds) => this.grpc.observe(service, method, code, seconds);
    const addService = server.addService.bind(server);
    server.addService = (definition, implementation) => addService(definition, instrumentService(definition, implementation, observe));
  }

  // ---- sync ----

  /** Open streams of the hub, read when scraped. */
  watchSync(sync: Pick<SyncHub, 'stats'>): void {
    new Gauge({
      name: 'switchyard_sync_streams',
      help: 'Definitions sync streams open on this instance (both gRPC ports).',
      registers: [this.registry],
      collect() {
        this.set(sync.stats().streams);
      },
    });
  }

  /** Open browser event streams of client keys (docs/client-side.md "7. Streaming"), read when scraped. */
  watchClientStreams(streams: { stats(): { streams: number } }): void {
    new Gauge({
      name: 'switchyard_client_streams',
      help: 'Browser event streams of client keys open on this instance (also counted in switchyard_sync_streams).',
      registers: [this.registry],
      collect() {
        this.set(streams.stats().streams);
      },
    });
  }

  syncMessageSent = (): void => {
    this.syncMessages.inc();
  };

  // ---- database ----

  /**
   * `switchyard_db_pool_connections{state}`: postgres.js exposes nothing about its pool, so the
   * connections are read from pg_stat_activity when scraped (see server.ts for what is counted).
   * A probe that fails or takes over a second leaves the gauge empty for that scrape.
   */
  watchPool(maxConnections: number, probe: PoolProbe): void {
    new Gauge({
      name: 'switchyard_db_pool_max_connections',
      help: 'Connections the PostgreSQL pool of this instance may open (DB_POOL_SIZE).',
      registers: [this.registry],
    }).set(maxConnections);
    new Gauge({
      name: 'switchyard_db_pool_connections',
      help: 'PostgreSQL connections to this database from application_name "switchyard" (all instances sharing it), by state, read from pg_stat_activity when scraped; the scrape\'s own query is one active connection.',
      labelNames: ['state'] as const,
      registers: [this.registry],
      async collect() {
        this.reset();
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), 1_000);
        });
        try {
          const rows = await Promise.race([probe(), timeout]);
          for (const row of rows ?? []) this.set({ state: row.state }, row.count);
        } catch {
          // The database is unreachable: /readyz says so; the gauge stays empty.
        } finally {
          clearTimeout(timer);
        }
      },
    });
  }

  // ---- services (ServiceMetrics) ----

  evaluated(results: readonly EvaluationResult[]): void {
    const counts = this.evaluationCounts;
    for (let i = 0; i < results.length; i++) {
      const reason = results[i]!.reason;
      counts.set(reason, (counts.get(reason) ?? 0) + 1);
    }
  }

  ingested(kind: 'events' | 'exposures', accepted: number, rejected: number): void {
    const counter = kind === 'events' ? this.ingestEvents : this.ingestExposures;
    if (accepted > 0) counter.inc({ outcome: 'accepted' }, accepted);
    if (rejected > 0) counter.inc({ outcome: 'rejected' }, rejected);
  }

  statsJob(outcome: StatsJobOutcome, seconds: number): void {
    this.statsJobs.inc({ status: outcome });
    this.statsDuration.observe(seconds);
  }

  webhookDelivery(outcome: WebhookDeliveryOutcome, seconds: number): void {
    this.webhookDeliveries.inc({ outcome });
    this.webhookLatency.observe(seconds);
  }

  scheduledApplication(kind: ScheduledKind, outcome: ScheduledOutcome, latenessSeconds: number): void {
    this.schedulerApplications.inc({ kind, outcome });
    this.schedulerLateness.observe({ kind }, latenessSeconds);
  }
}
