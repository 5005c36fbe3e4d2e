/**
 * The load generator of evaluate.bench.ts, run as a child process (forked with tsx) so that
 * autocannon's own work never competes with the servers on their event loop. It answers each
 * `LoadJob` message with one `LoadSummary`, and exits when the parent disconnects.
 */
import autocannon from 'autocannon';

export interface LoadRequest {
  path: string;
  body: string;
}

export interface LoadJob {
  id: number;
  url: string;
  connections: number;
  durationSeconds: number;
  headers: Record<string, string>;
  /** Sent in order by every connection, round and round. */
  requests: LoadRequest[];
}

export interface LoadSummary {
  id: number;
  /** Mean of the per-second request counts (autocannon's "Req/Sec avg"). */
  requestsPerSecond: number;
  /** Completed requests over the whole run. */
  requestsTotal: number;
  /** Latency percentiles in ms (whole milliseconds: autocannon's histogram resolution). */
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  latencyMeanMs: number;
  bytesPerSecond: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCounts: Record<string, number>;
  durationSeconds: number;
}

async function run(job: LoadJob): Promise<LoadSummary> {
  const result = await autocannon({
    url: job.url,
    connections: job.connections,
    duration: job.durationSeconds,
    method: 'POST',
    headers: job.headers,
    requests: job.requests.map((request) => ({ method: 'POST', path: request.path, body: request.body })),
  });
  const statusCounts: Record<string, number> = {};
  for (const [status, stats] of Object.entries(result.statusCodeStats ?? {})) statusCounts[status] = stats.count ?? 0;
  return {
    id: job.id,
    requestsPerSecond: result.requests.average,
    requestsTotal: result.requests.total,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    latencyMaxMs: result.latency.max,
    latencyMeanMs: result.latency.average,
    bytesPerSecond: result.throughput.average,
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    statusCounts,
    durationSeconds: result.duration,
  };
}

process.on('message', (job: LoadJob) => {
  run(job).then(
    (summary) => process.send?.(summary),
    (error: unknown) => process.send?.({ id: job.id, error: String((error as Error).stack ?? error) }),
  );
});
process.on('disconnect', () => process.exit(0));
