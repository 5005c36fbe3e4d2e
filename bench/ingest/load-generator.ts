/**
 * The load generator of ingest.bench.ts, run as a child process (forked with tsx) so that
 * autocannon's own work never competes with the server on its event loop. It answers each
 * `IngestLoadJob` message with one `IngestLoadSummary`, and exits when the parent disconnects.
 *
 * Besides autocannon's figures it keeps what the benchmark needs and autocannon does not give:
 * the sum of `accepted_count` over the 202 answers (read from each answer's body), and the
 * latencies of the 202s alone, at sub-millisecond resolution.
 */
import autocannon from 'autocannon';

export interface IngestLoadJob {
  id: number;
  url: string;
  path: string;
  connections: number;
  durationSeconds: number;
  headers: Record<string, string>;
  /** The distinct bodies; each connection sends them in turn, starting at its own. */
  bodies: string[];
}

export interface IngestLoadSummary {
  id: number;
  /** Wall time of the autocannon run in this process. */
  elapsedMs: number;
  requestsTotal: number;
  accepted202: number;
  /** Σ accepted_count over the 202 answers. */
  acceptedEvents: number;
  /** 202 latency percentiles in ms. */
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  latencyMeanMs: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCounts: Record<string, number>;
  /** The first body of a non-202 answer, if any (what went wrong). */
  firstFailure?: string;
}

const percentile = (sorted: Float64Array, p: number): number => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!);

async function run(job: IngestLoadJob): Promise<IngestLoadSummary> {
  let acceptedEvents = 0;
  let firstFailure: string | undefined;
  const latencies: number[] = [];
  const onResponse = (status: number, body: string): void => {
    if (status === 202) acceptedEvents += (JSON.parse(body) as { accepted_count: number }).accepted_count;
    else firstFailure ??= `${status} ${body.slice(0, 300)}`;
  };
  const requests = job.bodies.map((body): autocannon.Request => ({ method: 'POST', path: job.path, body, onResponse }));
  let opened = 0;
  const started = performance.now();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: job.url,
        connections: job.connections,
        duration: job.durationSeconds,
        method: 'POST',
        headers: job.headers,
        requests,
        // Connections start at different bodies, so concurrent requests carry different rows.
        setupClient: (client) => {
          const offset = opened++ % requests.length;
          client.setRequests([...requests.slice(offset), ...requests.slice(0, offset)]);
        },
      },
      (error: unknown, done: autocannon.Result) => (error ? reject(error as Error) : resolve(done)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode === 202) latencies.push(responseTime);
    });
  });
  const elapsedMs = performance.now() - started;
  const sorted = Float64Array.from(latencies).sort();
  const statusCounts: Record<string, number> = {};
  for (const [status, stats] of Object.entries(result.statusCodeStats ?? {})) statusCounts[status] = stats.count ?? 0;
  const summary: IngestLoadSummary = {
    id: job.id,
    elapsedMs,
    requestsTotal: result.requests.total,
    accepted202: statusCounts['202'] ?? 0,
    acceptedEvents,
    latencyP50Ms: percentile(sorted, 0.5),
    latencyP99Ms: percentile(sorted, 0.99),
    latencyMaxMs: sorted.length > 0 ? sorted[sorted.length - 1]! : 0,
    latencyMeanMs: latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length),
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    statusCounts,
  };
  if (firstFailure !== undefined) summary.firstFailure = firstFailure;
  return summary;
}

process.on('message', (job: IngestLoadJob) => {
  run(job).then(
    (summary) => process.send?.(summary),
    (error: unknown) => process.send?.({ id: job.id, error: String((error as Error).stack ?? error) }),
  );
});
process.on('disconnect', () => process.exit(0));
