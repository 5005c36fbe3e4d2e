/**
 * The load generator of evaluate.bench.ts, run as a child process (forked with tsx) so that
 * autocannon's own work never competes with the servers on their event loop. It answers each
 * `LoadJob` message with one `LoadSummary`, and exits when the parent disconnects.
 */
import autocannon from 'autocannon';

export interface LoadRequest {
  path: string;
  body: string;
  /** Extra headers of this request only (e.g. If-None-Match). */
  headers?: Record<string, string>;
}

export interface LoadJob {
  id: number;
  url: string;
  connections: number;
  durationSeconds: number;
  headers: Record<string, string>;
  /** The rotation: each connection sends its own share of it in order, round and round. */
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

/**
 * The rotation split into one share per connection, together covering every request once.
 * autocannon deep-clones its options and pre-builds every request of `requests` for each
 * connection as it opens them: handing all 4,096 requests to each of 64 connections kept this
 * process busy for seconds at the start of every run, while the first connections' requests waited
 * (multi-second "max" latencies, and runs that were partly idle).
 */
function shares(requests: LoadRequest[], connections: number): autocannon.Request[][] {
  const all = requests.map((request): autocannon.Request => ({ method: 'POST', path: request.path, body: request.body, ...(request.headers ? { headers: request.headers } : {}) }));
  const size = Math.max(1, Math.ceil(all.length / connections));
  return Array.from({ length: connections }, (_, i) => {
    const start = (i * size) % all.length;
    const share = all.slice(start, start + size);
    return share.length > 0 ? share : all.slice(0, size);
  });
}

async function run(job: LoadJob): Promise<LoadSummary> {
  const perConnection = shares(job.requests, job.connections);
  let opened = 0;
  const result = await autocannon({
    url: job.url,
    connections: job.connections,
    duration: job.durationSeconds,
    method: 'POST',
    headers: job.headers,
    // One request to clone and build per connection; setupClient then gives it its own share.
    requests: perConnection[0]!.slice(0, 1),
    setupClient: (client) => client.setRequests(perConnection[opened++ % perConnection.length]!),
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
