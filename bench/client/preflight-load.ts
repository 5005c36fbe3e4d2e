/**
 * The load generator of preflight.bench.ts, run as a child process (forked with tsx) so that
 * autocannon's own work never competes with the server it measures. Answers each job with one
 * summary; exits when the parent disconnects.
 */
import autocannon from 'autocannon';

export interface PreflightJob {
  id: number;
  url: string;
  path: string;
  connections: number;
  durationSeconds: number;
  headers: Record<string, string>;
}

export interface PreflightSummary {
  id: number;
  requestsPerSecond: number;
  requestsTotal: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  statusCounts: Record<string, number>;
  errors: number;
}

async function run(job: PreflightJob): Promise<PreflightSummary> {
  const result = await autocannon({
    url: job.url + job.path,
    connections: job.connections,
    duration: job.durationSeconds,
    method: 'OPTIONS',
    headers: job.headers,
  });
  const statusCounts: Record<string, number> = {};
  for (const [status, stats] of Object.entries(result.statusCodeStats ?? {})) statusCounts[status] = stats.count ?? 0;
  return {
    id: job.id,
    requestsPerSecond: result.requests.average,
    requestsTotal: result.requests.total,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    statusCounts,
    errors: result.errors + result.timeouts,
  };
}

process.on('message', (job: PreflightJob) => {
  run(job).then(
    (summary) => process.send?.(summary),
    (error: unknown) => process.send?.({ id: job.id, error: String(error) }),
  );
});
process.on('disconnect', () => process.exit(0));
