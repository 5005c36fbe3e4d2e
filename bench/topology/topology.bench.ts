/**
 * The split topology (a gateway process in front of a services process) against the single
 * process, measured in the same run (targets: evaluate >= 0.9x the single process's requests/s,
 * one flag and all flags; ingest >= 0.7x; RSS of every process reported).
 *
 *   npx tsx bench/topology/topology.bench.ts [--duration 10] [--warmup 3] [--connections 32]
 *                                             [--rounds 2] [--skip-all] [--verbose] [--cpu-prof-dir DIR]
 *
 * The real hosts run as child processes (`node --import tsx hosts/.../main.ts`), all three over one
 * fresh database (BENCH_DATABASE_URL, else TEST_DATABASE_URL, else an embedded PostgreSQL):
 * single = hosts/server; split = hosts/services + hosts/gateway (SERVICES_URL = the services'
 * internal gRPC port). The database is seeded once over REST (an org, a project, an environment, an
 * SDK key, 100 flags of five rules, three event definitions). autocannon drives each load from a
 * child process: POST evaluate with a flag_key, POST evaluate without one (all flags), and
 * POST events/batch with 100-event bodies. Each round runs every load on both topologies, the
 * order alternating per round. Prints a table and one JSON line; exits 0 whatever the figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type Sql } from '../../packages/postgres/src/connect.ts';
import { stablePort } from '../../packages/postgres/src/testing/free-port.ts';
import type { LoadJob, LoadRequest, LoadSummary } from '../evaluate/load-generator.ts';
import { benchContexts, benchFlagBody, flagKey } from '../evaluate/seed.ts';
import type { IngestLoadJob, IngestLoadSummary } from '../ingest/load-generator.ts';
import { METRICS, buildBodies } from '../ingest/seed.ts';
import { openBenchDatabase, type BenchDatabase } from '../support/bench-database.ts';
import { UNLIMITED_INGEST } from '../support/bench-server.ts';
import { ChildJobs } from '../support/child-jobs.ts';
import { median, option } from '../support/measure.ts';
import { call } from '../support/rest-call.ts';
import { HostProcess, stopAll, type ProcessMemory } from './host-process.ts';

const DURATION_S = option('duration', 10);
const WARMUP_S = option('warmup', 3);
const CONNECTIONS = option('connections', 32);
const ROUNDS = option('rounds', 2);
const SKIP_ALL = process.argv.includes('--skip-all');
/** Echo the hosts' own output (warnings and errors: LOG_LEVEL=warn) on stderr. */
const VERBOSE = process.argv.includes('--verbose');
/** `--cpu-prof-dir DIR`: every host writes V8 CPU profiles (one per thread) to DIR/<host> when it stops (node --cpu-prof). */
const CPU_PROF_DIR = process.argv.includes('--cpu-prof-dir') ? path.resolve(process.argv[process.argv.indexOf('--cpu-prof-dir') + 1] ?? '.') : null;

const FLAG_COUNT = 100;
/** Evaluate rotation: flag (i * 37) mod FLAG_COUNT with user i, so flags and users rotate out of step. */
const ROTATION = 4096;
const EVENTS_PER_BODY = 100;
const INGEST_BODIES = 16;
const READY_TIMEOUT_MS = 120_000;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ADMIN = { email: 'topology-root@example.com', password: 'topology-root-password-1' };
const ORG_ADMIN = { email: 'topology-admin@example.com', password: 'topology-admin-password-1' };
const JWT_SECRET = 'topology-bench-secret-of-at-least-32-bytes';

type LoadName = 'evaluate, one flag' | 'evaluate, all flags' | 'events/batch';
type TopologyName = 'single' | 'split';

const TARGETS: Record<LoadName, number> = { 'evaluate, one flag': 0.9, 'evaluate, all flags': 0.9, 'events/batch': 0.7 };

interface Topology {
  name: TopologyName;
  /** REST base URL (the single server, or the gateway). */
  url: string;
  processes: HostProcess[];
}

interface Measurement {
  requestsPerSecond: number;
  /** events/batch only: accepted events (202 = committed) per second. */
  eventsPerSecond: number | null;
  requestsTotal: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCounts: Record<string, number>;
  /** CPU time of the topology's processes per completed request (µs), all of them and each. */
  cpuUsPerRequest: number;
  cpuUsPerRequestByProcess: Record<string, number>;
  firstFailure?: string;
}

interface Row {
  load: LoadName;
  topology: TopologyName;
  rounds: Measurement[];
  /** Each figure is the median over rounds (the mean of the two middle ones for an even count). */
  summary: Measurement;
}

// --- processes ---

/** What every host gets: nothing of this shell's environment but PATH and HOME. */
function baseEnv(dataDir: string): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? tmpdir(),
    APP_ENV: 'test',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    HTTP_HOST: '127.0.0.1',
    SYNC_GRPC_HOST: '127.0.0.1',
    GRPC_HOST: '127.0.0.1',
    // Throughput is measured, not the per-key limits (the bucket check still runs per request).
    ...UNLIMITED_INGEST,
  };
}

const echo = VERBOSE ? (line: string): void => void process.stderr.write(`${line}\n`) : undefined;

function spawnHost(name: string, entry: string, env: Record<string, string>): HostProcess {
  const nodeArgs = CPU_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${path.join(CPU_PROF_DIR, name)}`] : [];
  return new HostProcess(name, entry, env, { cwd: ROOT, nodeArgs, ...(echo ? { echo } : {}) });
}

async function startSingle(database: BenchDatabase, dataDir: string, started: HostProcess[]): Promise<Topology> {
  const httpPort = await stablePort();
  const host = spawnHost('single', 'hosts/server/src/main.ts', {
    ...baseEnv(dataDir),
    DATABASE_URL: database.url,
    JWT_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    HTTP_PORT: String(httpPort),
    GRPC_PORT: String(await stablePort()),
    SYNC_GRPC_PORT: String(await stablePort()),
  });
  started.push(host);
  const url = `http://127.0.0.1:${httpPort}`;
  const ms = await host.waitReady(`${url}/readyz`, READY_TIMEOUT_MS);
  console.error(`# single (pid ${host.pid}) ready in ${(ms / 1000).toFixed(1)} s`);
  return { name: 'single', url, processes: [host] };
}

async function startSplit(database: BenchDatabase, dataDir: string, started: HostProcess[]): Promise<Topology> {
  const servicesGrpcPort = await stablePort();
  const servicesHttpPort = await stablePort();
  const services = spawnHost('services', 'hosts/services/src/main.ts', {
    ...baseEnv(dataDir),
    DATABASE_URL: database.url,
    JWT_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    HTTP_PORT: String(servicesHttpPort),
    GRPC_PORT: String(servicesGrpcPort),
    SYNC_GRPC_PORT: String(await stablePort()),
  });
  started.push(services);
  const servicesMs = await services.waitReady(`http://127.0.0.1:${servicesHttpPort}/readyz`, READY_TIMEOUT_MS);
  console.error(`# services (pid ${services.pid}) ready in ${(servicesMs / 1000).toFixed(1)} s`);

  const gatewayHttpPort = await stablePort();
  const gateway = spawnHost('gateway', 'hosts/gateway/src/main.ts', {
    ...baseEnv(dataDir),
    SERVICES_URL: `127.0.0.1:${servicesGrpcPort}`,
    HTTP_PORT: String(gatewayHttpPort),
    SYNC_GRPC_PORT: String(await stablePort()),
  });
  started.push(gateway);
  const url = `http://127.0.0.1:${gatewayHttpPort}`;
  const gatewayMs = await gateway.waitReady(`${url}/readyz`, READY_TIMEOUT_MS);
  console.error(`# gateway (pid ${gateway.pid}) ready in ${(gatewayMs / 1000).toFixed(1)} s`);
  return { name: 'split', url, processes: [gateway, services] };
}

// --- seeding (REST, as an operator would) ---

interface Seeded {
  environmentId: string;
  sdkKey: string;
  flagKeys: string[];
}

async function seed(base: string): Promise<Seeded> {
  const root = await call(base, 'POST', '/v1/auth/login', undefined, ADMIN);
  const org = await call(base, 'POST', '/v1/admin/orgs', root.token, { name: 'topology-bench' });
  await call(base, 'POST', `/v1/admin/orgs/${org.org_id}/users`, root.token, {
    email: ORG_ADMIN.email,
    display_name: 'Topology bench admin',
    password: ORG_ADMIN.password,
    org_role: 'org_admin',
  });
  const admin = (await call(base, 'POST', '/v1/auth/login', undefined, { ...ORG_ADMIN, org_id: org.org_id })).token as string;
  const project = await call(base, 'POST', `/v1/management/orgs/${org.org_id}/projects`, admin, { name: 'topology-bench' });
  const environment = await call(base, 'POST', `/v1/management/projects/${project.project_id}/environments`, admin, { name: 'production' });
  const envId = environment.environment_id as string;
  const key = await call(base, 'POST', `/v1/management/environments/${envId}/sdk-keys`, admin);
  const indexes = Array.from({ length: FLAG_COUNT }, (_, i) => i);
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < indexes.length) await call(base, 'POST', `/v1/environments/${envId}/flags`, admin, benchFlagBody(indexes[next++]!));
    }),
  );
  for (const metric of METRICS) {
    await call(base, 'POST', `/v1/environments/${envId}/event-definitions`, admin, { key: metric.key, value_type: metric.valueType, description: `topology benchmark (${metric.valueType})` });
  }
  return { environmentId: envId, sdkKey: key.raw_key as string, flagKeys: indexes.map(flagKey) };
}

// --- requests ---

function evaluateRequests(seeded: Seeded, withFlagKey: boolean): LoadRequest[] {
  const contexts = benchContexts();
  const route = `/v1/environments/${seeded.environmentId}/evaluate`;
  return Array.from({ length: withFlagKey ? ROTATION : contexts.length }, (_, i) => {
    const context = contexts[i % contexts.length]!;
    const body: Record<string, unknown> = { context_key: context.key, context_type: 'user', attributes: context.attributes };
    if (withFlagKey) body.flag_key = seeded.flagKeys[(i * 37) % seeded.flagKeys.length]!;
    return { path: route, body: JSON.stringify(body) };
  });
}

async function post(base: string, route: string, sdkKey: string, body: string): Promise<{ status: number; text: string }> {
  const response = await fetch(base + route, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': sdkKey }, body });
  return { status: response.status, text: await response.text() };
}

/** What an answer says, without what legitimately differs between two servers. */
function evaluationGist(text: string): string {
  const answer = JSON.parse(text) as Record<string, unknown> & { flags?: Array<Record<string, unknown>> };
  const gist = (one: Record<string, unknown>): string => `${String(one.flag_key ?? one.key)}=${String(one.variant_key)}/${String(one.reason)}/${JSON.stringify(one.value)}`;
  return Array.isArray(answer.flags) ? answer.flags.map(gist).sort().join(',') : gist(answer);
}

/**
 * Before any timing, each topology must evaluate (200, a rule or the split) and take a batch
 * (202, every event accepted); the gateway's answers must equal the single server's. A gateway
 * fed by the services' definitions stream may need a moment after the seeding: polled for 30 s.
 */
async function checkTopology(topology: Topology, reference: Topology | null, seeded: Seeded, oneFlag: LoadRequest[], allFlags: LoadRequest[], ingestBody: string, ingestRoute: string): Promise<string[]> {
  const notes: string[] = [];
  const deadline = performance.now() + 30_000;
  for (;;) {
    const sample = await post(topology.url, oneFlag[0]!.path, seeded.sdkKey, oneFlag[0]!.body);
    const reason = sample.status === 200 ? (JSON.parse(sample.text) as { reason?: string }).reason : undefined;
    if (reason === 'SPLIT' || reason === 'TARGETING_MATCH') break;
    if (performance.now() > deadline) throw new Error(`${topology.name}: the sample evaluation did not evaluate (status ${sample.status}, body ${sample.text.slice(0, 500)})`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const all = await post(topology.url, allFlags[0]!.path, seeded.sdkKey, allFlags[0]!.body);
  const flagsAnswered = all.status === 200 ? ((JSON.parse(all.text) as { flags?: unknown[] }).flags?.length ?? 0) : 0;
  if (flagsAnswered !== FLAG_COUNT) throw new Error(`${topology.name}: the all-flags sample answered ${all.status} with ${flagsAnswered} flags (${all.text.slice(0, 300)})`);
  const batch = await post(topology.url, ingestRoute, seeded.sdkKey, ingestBody);
  const accepted = batch.status === 202 ? (JSON.parse(batch.text) as { accepted_count?: number }).accepted_count : undefined;
  if (accepted !== EVENTS_PER_BODY) throw new Error(`${topology.name}: the sample batch answered ${batch.status} ${batch.text.slice(0, 300)}`);
  console.error(`# ${topology.name}: sample evaluation, all flags (${all.text.length} bytes) and batch (202, ${accepted} accepted) OK`);
  if (reference) {
    const samples = [...oneFlag.slice(0, 50), ...allFlags.slice(0, 5)];
    let differing = 0;
    for (const request of samples) {
      const [mine, theirs] = await Promise.all([post(topology.url, request.path, seeded.sdkKey, request.body), post(reference.url, request.path, seeded.sdkKey, request.body)]);
      if (mine.status !== theirs.status || evaluationGist(mine.text) !== evaluationGist(theirs.text)) differing++;
    }
    if (differing > 0) notes.push(`${topology.name}: ${differing} of ${samples.length} sample evaluations differ from ${reference.name}'s answers: the rows do not compare the same work`);
    else console.error(`# ${topology.name}: ${samples.length} sample evaluations equal ${reference.name}'s`);
  }
  return notes;
}

// --- loads ---

type EvaluateLoad = ChildJobs<Omit<LoadJob, 'id'>, LoadSummary>;
type IngestLoad = ChildJobs<Omit<IngestLoadJob, 'id'>, IngestLoadSummary>;

async function truncateEvents(sql: Sql): Promise<void> {
  await sql`TRUNCATE events`;
  // Needs superuser (or pg_checkpoint); without it a run may pay for the previous one's writes.
  await sql`CHECKPOINT`.catch(() => {});
}

/** Runs `work` and returns the CPU ms each of the topology's processes spent meanwhile. */
async function withCpu<T>(topology: Topology, work: () => Promise<T>): Promise<{ result: T; cpuMs: Record<string, number> }> {
  const before = topology.processes.map((p) => p.cpuMs());
  const result = await work();
  const cpuMs: Record<string, number> = {};
  topology.processes.forEach((p, i) => (cpuMs[p.name] = p.cpuMs() - before[i]!));
  return { result, cpuMs };
}

function cpuFigures(cpuMs: Record<string, number>, requests: number): Pick<Measurement, 'cpuUsPerRequest' | 'cpuUsPerRequestByProcess'> {
  const byProcess: Record<string, number> = {};
  let total = 0;
  for (const [name, ms] of Object.entries(cpuMs)) {
    byProcess[name] = (ms * 1000) / Math.max(1, requests);
    total += ms;
  }
  return { cpuUsPerRequest: (total * 1000) / Math.max(1, requests), cpuUsPerRequestByProcess: byProcess };
}

/** The figures both loads report the same way: request count, latencies, failures. */
function commonFigures(s: { requestsTotal: number; latencyP50Ms: number; latencyP99Ms: number; latencyMaxMs: number; errors: number; timeouts: number; non2xx: number; statusCounts: Record<string, number> }) {
  const { requestsTotal, latencyP50Ms, latencyP99Ms, latencyMaxMs, errors, timeouts, non2xx, statusCounts } = s;
  return { requestsTotal, latencyP50Ms, latencyP99Ms, latencyMaxMs, errors, timeouts, non2xx, statusCounts };
}

async function runEvaluate(evaluate: EvaluateLoad, topology: Topology, seeded: Seeded, requests: LoadRequest[]): Promise<Measurement> {
  const job = { url: topology.url, connections: CONNECTIONS, headers: { 'content-type': 'application/json', 'x-sdk-key': seeded.sdkKey }, requests };
  await evaluate.run({ ...job, durationSeconds: WARMUP_S });
  const { result: s, cpuMs } = await withCpu(topology, () => evaluate.run({ ...job, durationSeconds: DURATION_S }));
  return {
    requestsPerSecond: s.requestsPerSecond,
    eventsPerSecond: null,
    ...commonFigures(s),
    ...cpuFigures(cpuMs, s.requestsTotal),
  };
}

async function runIngest(ingest: IngestLoad, sql: Sql, topology: Topology, seeded: Seeded, bodies: string[]): Promise<Measurement> {
  const job = {
    url: topology.url,
    path: `/v1/environments/${seeded.environmentId}/events/batch`,
    connections: CONNECTIONS,
    headers: { 'content-type': 'application/json', 'x-sdk-key': seeded.sdkKey },
    bodies,
  };
  await ingest.run({ ...job, durationSeconds: WARMUP_S });
  // Every timed run starts on an empty table, so neither topology pays for the other's index growth.
  await truncateEvents(sql);
  const { result: s, cpuMs } = await withCpu(topology, () => ingest.run({ ...job, durationSeconds: DURATION_S }));
  const seconds = s.elapsedMs / 1000;
  const measurement: Measurement = {
    requestsPerSecond: s.requestsTotal / seconds,
    eventsPerSecond: s.acceptedEvents / seconds,
    ...commonFigures(s),
    ...cpuFigures(cpuMs, s.requestsTotal),
  };
  if (s.firstFailure !== undefined) measurement.firstFailure = s.firstFailure;
  return measurement;
}

function summarise(rounds: Measurement[]): Measurement {
  const mid = (pick: (m: Measurement) => number): number => median(rounds.map(pick));
  const byProcess: Record<string, number> = {};
  for (const name of Object.keys(rounds[0]!.cpuUsPerRequestByProcess)) byProcess[name] = mid((m) => m.cpuUsPerRequestByProcess[name] ?? Number.NaN);
  const statusCounts: Record<string, number> = {};
  for (const m of rounds) for (const [status, count] of Object.entries(m.statusCounts)) statusCounts[status] = (statusCounts[status] ?? 0) + count;
  const summary: Measurement = {
    requestsPerSecond: mid((m) => m.requestsPerSecond),
    eventsPerSecond: rounds[0]!.eventsPerSecond === null ? null : mid((m) => m.eventsPerSecond ?? Number.NaN),
    requestsTotal: rounds.reduce((sum, m) => sum + m.requestsTotal, 0),
    latencyP50Ms: mid((m) => m.latencyP50Ms),
    latencyP99Ms: mid((m) => m.latencyP99Ms),
    latencyMaxMs: Math.max(...rounds.map((m) => m.latencyMaxMs)),
    errors: rounds.reduce((sum, m) => sum + m.errors, 0),
    timeouts: rounds.reduce((sum, m) => sum + m.timeouts, 0),
    non2xx: rounds.reduce((sum, m) => sum + m.non2xx, 0),
    statusCounts,
    cpuUsPerRequest: mid((m) => m.cpuUsPerRequest),
    cpuUsPerRequestByProcess: byProcess,
  };
  const failure = rounds.find((m) => m.firstFailure !== undefined)?.firstFailure;
  if (failure !== undefined) summary.firstFailure = failure;
  return summary;
}

// --- output ---

const fmt = (n: number): string => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : '-');
const mib = (kib: number): number => kib / 1024;
/** The figure a load's ratio is taken on: events/s for ingest, requests/s otherwise. */
const rate = (m: Measurement): number => m.eventsPerSecond ?? m.requestsPerSecond;

interface MemoryRow {
  topology: TopologyName;
  process: string;
  pid: number;
  idle: ProcessMemory;
  afterLoads: ProcessMemory;
}

function table(header: string[], cells: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (c: string[]): string => c.map((v, i) => (i <= 1 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of cells) console.log(line(row));
}

function ratioOf(rows: Row[], load: LoadName): { ratio: number; perRound: number[] } | null {
  const single = rows.find((r) => r.load === load && r.topology === 'single');
  const split = rows.find((r) => r.load === load && r.topology === 'split');
  if (!single || !split) return null;
  return {
    ratio: rate(split.summary) / rate(single.summary),
    perRound: split.rounds.map((m, i) => rate(m) / rate(single.rounds[i]!)),
  };
}

function printReport(rows: Row[], memory: MemoryRow[], meta: Record<string, unknown>, notes: string[], splitError: string | null): void {
  console.log(
    `topology: node ${process.version}, ${FLAG_COUNT} flags x 5 rules, ${EVENTS_PER_BODY} events per batch, autocannon ${CONNECTIONS} connections, ` +
      `${ROUNDS} round(s) of ${DURATION_S} s per load and topology after ${WARMUP_S} s warm-up (median of rounds), ` +
      `${String(meta.cpus)} CPUs shared by the load generator, every host process and PostgreSQL (load ${String(meta.load_before)} before), database: ${String(meta.database)}`,
  );
  const cells = rows.map((r) => {
    const m = r.summary;
    const ratio = r.topology === 'split' ? ratioOf(rows, r.load) : null;
    return [
      r.load,
      r.topology,
      fmt(m.requestsPerSecond),
      m.eventsPerSecond === null ? '' : fmt(m.eventsPerSecond),
      m.latencyP50Ms.toFixed(r.load === 'events/batch' ? 1 : 0),
      m.latencyP99Ms.toFixed(r.load === 'events/batch' ? 1 : 0),
      m.latencyMaxMs.toFixed(0),
      String(m.errors),
      String(m.non2xx),
      `${m.cpuUsPerRequest.toFixed(0)} µs`,
      Object.entries(m.cpuUsPerRequestByProcess)
        .map(([name, us]) => (Object.keys(m.cpuUsPerRequestByProcess).length > 1 ? `${name} ${us.toFixed(0)}` : ''))
        .filter(Boolean)
        .join(' + '),
      ratio ? `${ratio.ratio.toFixed(3)}x` : '',
      ratio ? `>= ${TARGETS[r.load]}x ${ratio.ratio >= TARGETS[r.load] ? 'met' : 'NOT met'}` : '',
    ];
  });
  table(['load', 'topology', 'req/s', 'events/s', 'p50 ms', 'p99 ms', 'max ms', 'errors', 'non-2xx', 'CPU/req', 'CPU/req by process', 'split/single', 'target'], cells);
  console.log('');
  table(
    ['process', 'topology', 'pid', 'RSS idle MiB', 'RSS after loads MiB', 'peak RSS MiB'],
    memory.map((m) => [m.process, m.topology, String(m.pid), mib(m.idle.rssKiB).toFixed(1), mib(m.afterLoads.rssKiB).toFixed(1), mib(m.afterLoads.peakRssKiB).toFixed(1)]),
  );
  const splitRss = memory.filter((m) => m.topology === 'split').reduce((sum, m) => sum + m.afterLoads.rssKiB, 0);
  const singleRss = memory.filter((m) => m.topology === 'single').reduce((sum, m) => sum + m.afterLoads.rssKiB, 0);
  if (splitRss > 0 && singleRss > 0) console.log(`RSS after loads: split ${mib(splitRss).toFixed(1)} MiB (gateway + services) vs single ${mib(singleRss).toFixed(1)} MiB (${(splitRss / singleRss).toFixed(2)}x)`);
  for (const load of Object.keys(TARGETS) as LoadName[]) {
    const ratio = ratioOf(rows, load);
    if (ratio && ROUNDS > 1) console.log(`${load}: split/single per round ${ratio.perRound.map((x) => `${x.toFixed(2)}x`).join(', ')}`);
  }
  if (splitError !== null) console.log(`NOTE: the split topology could not be measured: ${splitError}`);
  if (Number(meta.load_before) > Number(meta.cpus) / 2) {
    console.log(`NOTE: the machine was already busy (1-minute load ${String(meta.load_before)} on ${String(meta.cpus)} CPUs): the figures are noisy, run it again on an idle machine`);
  }
  for (const row of rows) {
    const m = row.summary;
    if (m.non2xx > 0 || m.errors > 0) {
      console.log(
        `NOTE: ${row.load} on ${row.topology}: ${m.non2xx} non-2xx responses ${JSON.stringify(m.statusCounts)} and ${m.errors} errors (${m.timeouts} timeouts)` +
          `${m.firstFailure ? `, first: ${m.firstFailure}` : ''}: its figures are not clean`,
      );
    }
  }
  for (const note of notes) console.log(`NOTE: ${note}`);

  const json = (m: Measurement): Record<string, unknown> => ({
    requests_per_s: Math.round(m.requestsPerSecond),
    events_per_s: m.eventsPerSecond === null ? null : Math.round(m.eventsPerSecond),
    requests_total: m.requestsTotal,
    latency_p50_ms: Number(m.latencyP50Ms.toFixed(2)),
    latency_p99_ms: Number(m.latencyP99Ms.toFixed(2)),
    latency_max_ms: Number(m.latencyMaxMs.toFixed(2)),
    errors: m.errors,
    timeouts: m.timeouts,
    non_2xx: m.non2xx,
    status_counts: m.statusCounts,
    cpu_us_per_request: Number(m.cpuUsPerRequest.toFixed(1)),
    cpu_us_per_request_by_process: Object.fromEntries(Object.entries(m.cpuUsPerRequestByProcess).map(([k, v]) => [k, Number(v.toFixed(1))])),
  });
  console.log(
    JSON.stringify({
      bench: 'topology',
      node: process.version,
      ...meta,
      flags: FLAG_COUNT,
      events_per_body: EVENTS_PER_BODY,
      connections: CONNECTIONS,
      rounds: ROUNDS,
      duration_s: DURATION_S,
      warmup_s: WARMUP_S,
      split_error: splitError,
      results: rows.map((r) => ({
        load: r.load,
        topology: r.topology,
        ...json(r.summary),
        rounds: r.rounds.map((m) => ({ requests_per_s: Math.round(m.requestsPerSecond), events_per_s: m.eventsPerSecond === null ? null : Math.round(m.eventsPerSecond), latency_p99_ms: Number(m.latencyP99Ms.toFixed(2)) })),
      })),
      ratios: (Object.keys(TARGETS) as LoadName[]).flatMap((load) => {
        const ratio = ratioOf(rows, load);
        return ratio
          ? [{ load, split_over_single: Number(ratio.ratio.toFixed(3)), per_round: ratio.perRound.map((x) => Number(x.toFixed(3))), target: TARGETS[load], met: ratio.ratio >= TARGETS[load] }]
          : [];
      }),
      rss: memory.map((m) => ({
        process: m.process,
        topology: m.topology,
        idle_rss_mib: Number(mib(m.idle.rssKiB).toFixed(1)),
        rss_mib: Number(mib(m.afterLoads.rssKiB).toFixed(1)),
        peak_rss_mib: Number(mib(m.afterLoads.peakRssKiB).toFixed(1)),
      })),
    }),
  );
}

// --- the run ---

/** A start failure in one line: what happened and the process's error line (the whole output went to stderr). */
function briefly(message: string): string {
  const lines = message.split('\n');
  const cause = lines.slice(1).find((line) => /error/i.test(line));
  return cause ? `${lines[0]} ${cause.trim()}` : lines[0]!;
}

async function main(): Promise<void> {
  // Taken before anything of ours runs: how busy the machine already was.
  const loadBefore = Number(loadavg()[0]!.toFixed(2));
  const database = await openBenchDatabase();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-bench-topology-'));
  const started: HostProcess[] = [];
  let sql: Sql | undefined;
  let evaluate: EvaluateLoad | undefined;
  let ingest: IngestLoad | undefined;
  const stopEverything = async (): Promise<void> => {
    evaluate?.close();
    ingest?.close();
    await stopAll(started);
    await sql?.end().catch(() => {});
    await database.drop().catch((error: unknown) => console.error(`# could not drop the database: ${String(error)}`));
    rmSync(dataDir, { recursive: true, force: true });
  };
  // Ctrl-C or a kill: stop the hosts (the exit hook SIGKILLs whatever is left).
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (interrupted) process.exit(130);
    interrupted = true;
    console.error(`# ${signal}: stopping the host processes`);
    void stopEverything().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    // The single server migrates the fresh database first; the services then find it current.
    const single = await startSingle(database, dataDir, started);
    const seedStarted = performance.now();
    const seeded = await seed(single.url);
    console.error(`# seeded ${FLAG_COUNT} flags and ${METRICS.length} event definitions over REST in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s (database: ${database.source})`);

    let split: Topology | null = null;
    let splitError: string | null = null;
    try {
      split = await startSplit(database, dataDir, started);
    } catch (error) {
      console.error(`# the split topology did not start: ${(error as Error).message}`);
      splitError = briefly((error as Error).message);
    }

    const oneFlag = evaluateRequests(seeded, true);
    const allFlags = evaluateRequests(seeded, false);
    const bodies = buildBodies(INGEST_BODIES, EVENTS_PER_BODY, Date.now()).map((b) => b.json);
    const ingestRoute = `/v1/environments/${seeded.environmentId}/events/batch`;
    const notes = await checkTopology(single, null, seeded, oneFlag, allFlags, bodies[0]!, ingestRoute);
    if (split) {
      try {
        notes.push(...(await checkTopology(split, single, seeded, oneFlag, allFlags, bodies[0]!, ingestRoute)));
      } catch (error) {
        console.error(`# the split topology does not answer as it should: ${(error as Error).message}`);
        splitError = briefly((error as Error).message);
        split = null;
      }
    }
    const topologies = split ? [single, split] : [single];
    const idle = new Map(topologies.flatMap((t) => t.processes.map((p) => [p, p.memory()] as const)));

    sql = connect(database.url, { poolSize: 1, applicationName: 'switchyard-bench-topology' });
    evaluate = new ChildJobs(new URL('../evaluate/load-generator.ts', import.meta.url));
    ingest = new ChildJobs(new URL('../ingest/load-generator.ts', import.meta.url));
    const loads: LoadName[] = SKIP_ALL ? ['evaluate, one flag', 'events/batch'] : ['evaluate, one flag', 'evaluate, all flags', 'events/batch'];
    const measured = new Map<string, Measurement[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      // Every load on both topologies in turn, the order alternating per round, so a busy spell of
      // the shared machine hits both.
      const order = round % 2 === 1 ? topologies : [...topologies].reverse();
      for (const load of loads) {
        for (const topology of order) {
          const m =
            load === 'events/batch'
              ? await runIngest(ingest, sql, topology, seeded, bodies)
              : await runEvaluate(evaluate, topology, seeded, load === 'evaluate, one flag' ? oneFlag : allFlags);
          const key = `${load}|${topology.name}`;
          measured.set(key, [...(measured.get(key) ?? []), m]);
          console.error(
            `# round ${round}, ${load}, ${topology.name}: ${fmt(m.requestsPerSecond)} req/s${m.eventsPerSecond === null ? '' : `, ${fmt(m.eventsPerSecond)} events/s`}, ` +
              `p99 ${m.latencyP99Ms.toFixed(1)} ms, CPU ${m.cpuUsPerRequest.toFixed(0)} µs/req${m.non2xx + m.errors > 0 ? `, ${m.non2xx} non-2xx, ${m.errors} errors` : ''}`,
          );
        }
      }
    }
    const rows: Row[] = loads.flatMap((load) =>
      topologies.map((t) => {
        const rounds = measured.get(`${load}|${t.name}`)!;
        return { load, topology: t.name, rounds, summary: summarise(rounds) };
      }),
    );
    for (const host of started) {
      if (host.hasExited) notes.push(`${host.name} ${host.describeExit()} during the run (its figures are not clean); its last output:\n${host.output()}`);
    }
    const memory: MemoryRow[] = topologies.flatMap((t) =>
      t.processes.map((p) => ({ topology: t.name, process: p.name, pid: p.pid, idle: idle.get(p)!, afterLoads: p.memory() })),
    );
    printReport(rows, memory, { database: database.source, cpus: availableParallelism(), load_before: loadBefore, load_after: Number(loadavg()[0]!.toFixed(2)) }, notes, splitError);
  } finally {
    await stopEverything();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

// Benchmarks report, they do not assert: a failure is printed and the exit code stays 0.
await main().catch((error: unknown) => {
  console.log(`topology: the benchmark could not run: ${(error as Error).stack ?? String(error)}`);
});
