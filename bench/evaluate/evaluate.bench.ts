/**
 * Requests per second and latency of the evaluate routes, end to end over HTTP, each against the
 * floor of a bare node:http server doing the least any server must do for the same answer
 * (issue targets in docs/status.md):
 *
 * - one flag (`flag_key`, --connections): >= 0.75x a node:http server that JSON.parses the body and
 *   JSON.stringifies the answer, p99 < 5 ms; rows for a server answering captured bytes, for
 *   Fastify with its defaults and for the server's own Fastify app, each with the route's schemas
 *   and no work;
 * - all 1,000 flags (no `flag_key`, --all-connections): >= 0.6x a node:http server that parses the
 *   body, builds 1,000 result objects and stringifies them; a Fastify floor row;
 * - OFREP bulk (`POST /ofrep/v1/evaluate/flags`), answered in full and as 304 Not Modified (each
 *   request carries its context's current ETag): >= 0.6x the same kind of server building 1,000
 *   OFREP entries.
 * The all-flags and OFREP sections also show the evaluation alone (EvaluationService.evaluateFlags
 * called back to back in this process, no HTTP): the most requests per second any route answering
 * every flag could serve on the server's one event loop. Every section has a row for the server's
 * Fastify app running that same evaluation for each request and answering the captured bytes: the
 * route minus its credential check and its answer's building, so the distance from that row to the
 * route is what the route adds, and the distance from the Fastify floor to that row is what the
 * evaluation costs inside an HTTP server (more than back to back: the HTTP stack between two
 * evaluations evicts the definitions from the CPU caches). The one-flag section ends with the route
 * asked for one fixed flag by every request (not a goal): the same work with the flag's definition
 * staying in the CPU caches.
 *
 *   npx tsx bench/evaluate/evaluate.bench.ts [--duration 10] [--warmup 3] [--connections 64]
 *                                             [--all-connections 8] [--rounds 1] [--skip-all] [--only one|all|ofrep]
 *                                             [--targets 'TEXT|TEXT'] [--profile TEXT] [--pin]
 *
 * This process seeds a fresh database (BENCH_DATABASE_URL, else TEST_DATABASE_URL, else an embedded
 * PostgreSQL) with 1,000 flags of five rules each, through an instance of the server (hosts/server)
 * of its own, which also gives the sample answers the reference servers replay. Every served
 * target, the measured server (another instance over the seeded database) as each reference
 * server, runs in a process of its own (server-process.ts says why), started fresh for each round
 * of that target and closed after it (startServed says why), pinned with this one by --pin, its
 * setup's garbage collected before its warm-up. Requests rotate over every flag and 1,024 users.
 * autocannon drives every target from a child process, so it never shares the servers' event loop;
 * each target gets a warm-up run first, whose figures are dropped.
 * Prints a table per section and one JSON line; exits 0 whatever the figures. Each row shows its
 * median round, its ratio to the baseline's median round ("vs baseline"), and the median of its
 * rounds' own ratios to the baseline of the same round ("per round"), which a slow spell of the
 * machine moves less when it spans a round; a goal line gives both. `--profile TEXT`
 * records a V8 CPU profile of the serving process during the first measured run of each
 * target whose name contains TEXT and names the .cpuprofile file written (Chrome DevTools reads it).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { EvaluationCounter } from '@switchyard/core';
import { EvaluationService } from '@switchyard/services';
import type { RunningServer } from '../../hosts/server/src/server.ts';
import { startBenchServer } from '../support/bench-server.ts';
import { CpuProfiler } from '../support/cpu-profiler.ts';
import { collectGarbage, median, option } from '../support/measure.ts';
import { ChildJobs } from '../support/child-jobs.ts';
import { openBenchDatabase } from '../support/bench-database.ts';
import type { LoadJob, LoadRequest, LoadSummary } from './load-generator.ts';
import type { EvaluationSpec, ProcessSpec, ServerMessage, ServerReply, ServerSpec } from './server-process.ts';
import { FLAG_COUNT, benchContexts, evaluateRequests, seedEnvironment } from './seed.ts';

const DURATION_S = option('duration', 10);
const WARMUP_S = option('warmup', 3);
const CONNECTIONS = option('connections', 64);
const SKIP_ALL = process.argv.includes('--skip-all');
/** `--only one|all|ofrep`: run that section alone (for quick iterations). */
const ONLY = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
/** The all-flags row answers ~135 KB per request: fewer connections keep its latencies readable (and under autocannon's 10 s timeout). */
const ALL_CONNECTIONS = option('all-connections', 8);
/**
 * `--targets 'TEXT|TEXT'`: run only the targets whose names contain one of the texts, and each
 * section's baseline (for A/B runs of one change: fewer targets, more rounds in the same time).
 */
const TARGETS = process.argv.includes('--targets') ? process.argv[process.argv.indexOf('--targets') + 1]!.split('|') : undefined;
/** `--profile TEXT`: profile the first measured run of the targets whose names contain TEXT. */
const PROFILE = process.argv.includes('--profile') ? process.argv[process.argv.indexOf('--profile') + 1] : undefined;
/**
 * `--pin`: every server process on CPU 0 and the load generator on CPU 1 (taskset), so the
 * two never take turns on one core's caches; rounds then vary less on a 2-CPU machine.
 */
const PIN = process.argv.includes('--pin');
/** On a busy machine, several alternating rounds give steadier ratios than one long run. */
const ROUNDS = option('rounds', 1);
const ONE_FLAG_TARGET = 0.75;
const ALL_FLAGS_TARGET = 0.6;
const TARGET_P99_MS = 5;
const ADMIN = { email: 'bench-root@example.com', password: 'bench-root-password-1' };
const JWT_SECRET = 'evaluate-bench-secret-of-at-least-32-bytes';

interface Target {
  name: string;
  connections: number;
  requests: LoadRequest[];
  /** Status every answer must have (200 unless told). */
  status?: number;
  /** Measured in this process instead of over HTTP: one call is one "request" (a floor row). */
  inProcess?: (i: number) => Promise<unknown>;
  /**
   * The server that serves it, started in a fresh process of its own for every round and closed
   * after it (absent for the in-process rows): server-process.ts says why a process of its own,
   * startServed why a fresh one.
   */
  serve?: ProcessSpec;
}

/** Calls `work` back to back for `seconds`: what one core does per second with no HTTP around it. */
async function measureInProcess(work: (i: number) => Promise<unknown>, seconds: number): Promise<LoadSummary> {
  const until = performance.now() + seconds * 1000;
  let count = 0;
  while (performance.now() < until) await work(count++);
  const elapsed = seconds;
  return {
    id: 0,
    requestsPerSecond: count / elapsed,
    requestsTotal: count,
    latencyP50Ms: 0,
    latencyP99Ms: 0,
    latencyMaxMs: 0,
    latencyMeanMs: 0,
    bytesPerSecond: 0,
    errors: 0,
    timeouts: 0,
    non2xx: 0,
    statusCounts: {},
    durationSeconds: elapsed,
  };
}

/** Targets measured against the section's first one (its baseline), with the target ratio of its routes. */
interface Section {
  title: string;
  targets: Target[];
  /** Rows held to the target: name → the least ratio to the baseline. */
  goals: Record<string, number>;
  /** The p99 bound of the goals' rows, when the section has one. */
  p99Ms?: number;
}

interface Row extends LoadSummary {
  name: string;
  section: string;
  connections: number;
  /** CPU time (user + system) of the process serving the target, per completed request. */
  serverCpuUsPerRequest: number;
  /** requests/s of every round, in order (the row's other figures are its median round's). */
  roundsRequestsPerSecond: number[];
  /**
   * Each round's requests/s over its section baseline's in the same round: the two ran seconds
   * apart, so a slow spell of the shared machine that spans a round moves both.
   */
  roundRatios: number[];
}

// --- the load generator (a child process) ---

/** The load generator runs in a child process (see load-generator.ts). */
type LoadGenerator = ChildJobs<Omit<LoadJob, 'id'>, LoadSummary>;
const newLoadGenerator = (): LoadGenerator => new ChildJobs(new URL('./load-generator.ts', import.meta.url));

// --- the servers (a child process each) ---

/** A served target in a process of its own (server-process.ts says why). */
interface ServerProcess {
  url: string;
  pid: number | undefined;
  cpuUsage(): Promise<NodeJS.CpuUsage>;
  collectGarbage(): Promise<void>;
  profiler: Profiler;
  /** Resolves once the process has exited. */
  close(): Promise<void>;
}

async function startServerProcess(spec: ProcessSpec): Promise<ServerProcess> {
  const child = new ChildJobs<ServerMessage, ServerReply>(new URL('./server-process.ts', import.meta.url));
  try {
    const { url } = await child.run({ start: spec });
    return {
      url: url!,
      pid: child.pid,
      cpuUsage: async () => {
        const { user, system } = await child.run({ cpu: true });
        return { user: user!, system: system! };
      },
      collectGarbage: async () => void (await child.run({ gc: true })),
      profiler: {
        start: async () => void (await child.run({ profile: 'start' })),
        stop: async (file) => void (await child.run({ profile: 'stop', file })),
      },
      close: () => child.close(),
    };
  } catch (error) {
    await child.close();
    throw error;
  }
}

/**
 * A target's server in a fresh process, pinned with the other servers by --pin, its setup's
 * garbage collected. Fresh for every round: how fast one process runs for its whole life varies by
 * itself on these machines. In runs with one process per server for the whole run, one process in
 * a few served everything 1.5-2x slower than the others in every round, its CPU time per request
 * up in user code and in the kernel's writev alike, whichever server it was (the real one or a
 * floor); a row served by one process then measured that process's luck in every round. With a
 * new process per round, the row's median round does not depend on one process.
 */
async function startServed(spec: ProcessSpec): Promise<ServerProcess> {
  const served = await startServerProcess(spec);
  try {
    if (PIN) pinToCpu(served.pid, 0);
    await served.collectGarbage();
    return served;
  } catch (error) {
    await served.close();
    throw error;
  }
}

/** A fetch Headers object as entries (what crosses to a server process). */
const headerEntries = (headers: Headers): Array<[string, string]> => {
  const entries: Array<[string, string]> = [];
  headers.forEach((value, name) => entries.push([name, value]));
  return entries;
};

// --- requests ---

/** OFREP bulk requests: each user's context (targetingKey and attributes). */
function ofrepRequests(): LoadRequest[] {
  return benchContexts().map((context) => ({ path: '/ofrep/v1/evaluate/flags', body: JSON.stringify({ context: { targetingKey: context.key, ...context.attributes } }) }));
}

/** One real request before any timing: proves the route works and captures its answer. */
async function sampleResponse(baseUrl: string, sdkKey: string, request: LoadRequest): Promise<{ status: number; body: Buffer; headers: Headers }> {
  const response = await fetch(`${baseUrl}${request.path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sdk-key': sdkKey, ...request.headers },
    body: request.body,
  });
  return { status: response.status, body: Buffer.from(await response.arrayBuffer()), headers: response.headers };
}

/**
 * `--pin`: every thread of a process to one CPU (taskset): this process and the servers' to CPU 0,
 * the load generator's to CPU 1.
 */
function pinToCpu(pid: number | undefined, cpu: number): void {
  if (pid === undefined) throw new Error('--pin: a process without a pid');
  execFileSync('taskset', ['-a', '-pc', String(cpu), String(pid)], { stdio: 'ignore' });
}

// --- output ---

/** A V8 CPU profiler of the process serving a target (`--profile`): CpuProfiler's, here or in a server process. */
type Profiler = Pick<CpuProfiler, 'start' | 'stop'>;

const profileFile = (targetName: string): string => path.join(tmpdir(), `bench-evaluate-${targetName.replace(/[^a-z0-9]+/gi, '-').toLowerCase()}.cpuprofile`);

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

function printSection(section: Section, rows: Row[]): void {
  const baseline = rows[0]!;
  const ratio = (row: Row): number => row.requestsPerSecond / baseline.requestsPerSecond;
  const roundRatio = (row: Row): number => median(row.roundRatios);
  const header = ['target', 'req/s', 'p50 ms', 'p99 ms', 'max ms', 'requests', 'errors', 'non-2xx', 'server CPU/req', 'vs baseline', 'per round'];
  const cells = rows.map((r) => [
    r.name,
    fmt(r.requestsPerSecond),
    String(r.latencyP50Ms),
    String(r.latencyP99Ms),
    String(r.latencyMaxMs),
    fmt(r.requestsTotal),
    String(r.errors),
    String(r.non2xx),
    `${r.serverCpuUsPerRequest.toFixed(1)} µs`,
    `${ratio(r).toFixed(2)}x`,
    `${roundRatio(r).toFixed(2)}x`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (c: string[]): string => c.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  console.log(`\n${section.title}`);
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of cells) console.log(line(row));
  for (const [name, least] of Object.entries(section.goals)) {
    const row = rows.find((r) => r.name === name);
    if (!row) continue;
    const p99Met = section.p99Ms === undefined || row.latencyP99Ms < section.p99Ms;
    const met = ratio(row) >= least && p99Met;
    const metPerRound = roundRatio(row) >= least && p99Met;
    const p99 = section.p99Ms === undefined ? '' : ` and p99 < ${section.p99Ms} ms (${row.latencyP99Ms} ms)`;
    console.log(
      `target: ${name} >= ${least}x ${baseline.name}${p99}: median rounds ${ratio(row).toFixed(2)}x -> ${met ? 'met' : 'NOT met'}; ` +
        `median of the rounds' own ratios ${roundRatio(row).toFixed(2)}x (${row.roundRatios.map((r) => r.toFixed(2)).join(', ')}) -> ${metPerRound ? 'met' : 'NOT met'}`,
    );
  }
  if (section.p99Ms !== undefined && baseline.latencyP99Ms >= section.p99Ms) {
    console.log(`NOTE: the baseline's own p99 is ${baseline.latencyP99Ms} ms, not under ${section.p99Ms} ms: at this concurrency no server reaches it on this machine`);
  }
  for (const row of rows) {
    if (row.non2xx > 0 || row.errors > 0) {
      console.log(`NOTE: ${row.name}: ${row.non2xx} unexpected statuses ${JSON.stringify(row.statusCounts)} and ${row.errors} errors (${row.timeouts} timeouts): its figures are not clean`);
    }
  }
}

function printReport(sections: Section[], rowsBySection: Row[][], meta: Record<string, unknown>): void {
  console.log(
    `evaluate: node ${process.version}, ${FLAG_COUNT} flags x 5 rules, ${ROUNDS} round(s) of ${DURATION_S} s per target after ${WARMUP_S} s warm-up ` +
      `(median round shown), ${String(meta.cpus)} CPUs (load ${String(meta.load_before)} before)${PIN ? ', servers pinned to CPU 0 and load to CPU 1' : ''}, database: ${String(meta.database)}`,
  );
  sections.forEach((section, i) => printSection(section, rowsBySection[i]!));
  if (Number(meta.load_before) > Number(meta.cpus) / 2) {
    console.log(`NOTE: the machine was already busy (1-minute load ${String(meta.load_before)} on ${String(meta.cpus)} CPUs): the figures are noisy, run it again on an idle machine`);
  }
  console.log(
    JSON.stringify({
      bench: 'evaluate',
      node: process.version,
      ...meta,
      flags: FLAG_COUNT,
      rounds: ROUNDS,
      duration_s: DURATION_S,
      warmup_s: WARMUP_S,
      results: rowsBySection.flatMap((rows) =>
        rows.map((r) => ({
          section: r.section,
          name: r.name,
          connections: r.connections,
          requests_per_s: Math.round(r.requestsPerSecond),
          requests_total: r.requestsTotal,
          rounds_requests_per_s: r.roundsRequestsPerSecond,
          latency_p50_ms: r.latencyP50Ms,
          latency_p99_ms: r.latencyP99Ms,
          latency_max_ms: r.latencyMaxMs,
          errors: r.errors,
          non_2xx: r.non2xx,
          server_cpu_us_per_request: Number(r.serverCpuUsPerRequest.toFixed(2)),
          ratio_to_baseline: Number((r.requestsPerSecond / rows[0]!.requestsPerSecond).toFixed(3)),
          round_ratios: r.roundRatios.map((ratio) => Number(ratio.toFixed(3))),
          median_round_ratio: Number(median(r.roundRatios).toFixed(3)),
        })),
      ),
    }),
  );
}

// --- the run ---

async function main(): Promise<void> {
  // Taken before anything of ours runs: how busy the machine already was.
  const loadBefore = Number(loadavg()[0]!.toFixed(2));
  // Read before --pin narrows this process to one CPU.
  const cpus = availableParallelism();
  const database = await openBenchDatabase();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-bench-data-'));
  // The instance this process seeds through, takes the sample answers from and evaluates with for
  // the in-process rows; the measured server is another instance (startServed).
  let server: RunningServer | undefined;
  let load: LoadGenerator | undefined;
  try {
    const started = await startBenchServer({ databaseUrl: database.url, dataDir, admin: ADMIN, jwtSecret: JWT_SECRET });
    server = started.server;
    const seedStarted = performance.now();
    const seeded = await seedEnvironment(server, ADMIN);
    console.error(`# seeded ${seeded.flagKeys.length} flags in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s (database: ${database.source})`);
    // The measured server: an instance of its own, in a process of its own, as production runs it.
    const serverSpec: ServerSpec = { databaseUrl: database.url, admin: ADMIN, jwtSecret: JWT_SECRET };
    const real: ProcessSpec = { kind: 'server', server: serverSpec };
    // The same server with evaluation counting off (INSIGHTS_COUNTING=false): beside the route, what
    // counting costs the route per request (issue 40: at most 3%).
    const realUncounted: ProcessSpec = { kind: 'server', server: { ...serverSpec, env: { INSIGHTS_COUNTING: 'false' } } };
    // Answers as the server gives them, from this process's instance (the same code and database).
    const serverUrl = `http://127.0.0.1:${server.httpPort}`;

    const oneFlag = evaluateRequests(seeded, 'rotate');
    const sample = await sampleResponse(serverUrl, seeded.sdkKey, oneFlag[0]!);
    const text = sample.body.toString('utf8');
    const reason = sample.status === 200 ? (JSON.parse(text) as { reason?: string }).reason : undefined;
    if (reason !== 'SPLIT' && reason !== 'TARGETING_MATCH') {
      console.log(`evaluate: the sample request did not evaluate (status ${sample.status}, body ${text.slice(0, 500)}); nothing measured`);
      return;
    }
    console.error(`# sample response (${sample.body.length} bytes): ${text}`);

    const keepAliveMs = server.http.server.keepAliveTimeout;
    // The rows running the server's evaluation run an instance of the server too, in their own
    // process, over this run's database.
    const evaluation = (request: 'evaluate' | 'ofrep'): EvaluationSpec => ({ ...serverSpec, sdkKey: seeded.sdkKey, environmentId: seeded.environmentId, request });
    const sampleHeaders = headerEntries(sample.headers);
    const scope = server.services.evaluation.scopeFor(await server.services.verifier.verifySdkKey(seeded.sdkKey), seeded.environmentId);
    const userContexts = benchContexts().map((context) => ({ key: context.key, context_type: 'user', parameters: context.attributes }));
    // The evaluation without its budget (EVALUATION_BUDGET_MS; docs/security.md): beside the same
    // with it, what the budget's clock reads cost. budgetMs 0 is no budget (not a configurable value).
    const unbudgeted = new EvaluationService(server.repos, server.services.snapshots, undefined, Date.now, undefined, { budgetMs: 0 });
    // Evaluation counts (docs/insights.md "Counting"; issue 40: at most 3% of the route's CPU per
    // request): two services alike but for the counter (the server's budget, no exposures or
    // metrics), so the pair of rows is what counting costs per request. The counter is never
    // drained here: it holds one key per (flag, variant, reason) evaluated, as between two flushes.
    const counted = new EvaluationService(server.repos, server.services.snapshots, undefined, Date.now, undefined, { budgetMs: 100, counter: new EvaluationCounter() });
    const uncounted = new EvaluationService(server.repos, server.services.snapshots, undefined, Date.now, undefined, { budgetMs: 100 });
    const oneFlagRequests = oneFlag.map((request) => JSON.parse(request.body!) as { flag_key: string; context_key: string; attributes: Record<string, string | number | boolean> });
    const evaluateOne = (service: EvaluationService) => async (i: number) => {
      const request = oneFlagRequests[i % oneFlagRequests.length]!;
      return service.evaluateNow(scope, { flagKey: request.flag_key, contexts: [{ key: request.context_key, context_type: 'user', parameters: request.attributes }] });
    };
    // One flag's answer goes out as a string, as the route sends it (the all-flags answer as bytes).
    const sections: Section[] = [
      {
        title: `one flag (flag_key), ${CONNECTIONS} connections`,
        targets: [
          { name: 'baseline: node:http + JSON.parse/stringify', serve: { kind: 'json', answer: JSON.parse(text) as object, headers: sampleHeaders, keepAliveMs }, connections: CONNECTIONS, requests: oneFlag },
          { name: 'reference: node:http answering captured bytes', serve: { kind: 'bare', bodyBase64: sample.body.toString('base64'), headers: sampleHeaders, keepAliveMs }, connections: CONNECTIONS, requests: oneFlag },
          { name: 'Fastify defaults + route schemas, no work', serve: { kind: 'fastify', body: text, asBytes: false, fastifyDefaults: true, keepAliveMs }, connections: CONNECTIONS, requests: oneFlag },
          { name: 'floor: Fastify app + route schemas, no work', serve: { kind: 'fastify', body: text, asBytes: false, keepAliveMs }, connections: CONNECTIONS, requests: oneFlag },
          { name: 'floor: Fastify app + route schemas + the evaluation', serve: { kind: 'fastify', body: text, asBytes: false, evaluation: evaluation('evaluate'), keepAliveMs }, connections: CONNECTIONS, requests: oneFlag },
          { name: 'POST evaluate, one flag', serve: real, connections: CONNECTIONS, requests: oneFlag },
          { name: 'POST evaluate, one flag, counting off (INSIGHTS_COUNTING=false)', serve: realUncounted, connections: CONNECTIONS, requests: oneFlag },
          // Not a goal: the same route when every request asks for the same flag, whose definition
          // then stays in the CPU caches (the rows above rotate over every flag).
          { name: 'POST evaluate, one fixed flag (not rotating)', serve: real, connections: CONNECTIONS, requests: evaluateRequests(seeded, 'fixed') },
          { name: 'in process: evaluateNow, one flag, no HTTP (1 core)', connections: 0, requests: [], inProcess: evaluateOne(server.services.evaluation) },
          { name: 'in process: evaluateNow, one flag, no budget (1 core)', connections: 0, requests: [], inProcess: evaluateOne(unbudgeted) },
          { name: 'in process: evaluateNow, one flag, counts on (1 core)', connections: 0, requests: [], inProcess: evaluateOne(counted) },
          { name: 'in process: evaluateNow, one flag, counts off (1 core)', connections: 0, requests: [], inProcess: evaluateOne(uncounted) },
        ],
        goals: { 'POST evaluate, one flag': ONE_FLAG_TARGET },
        p99Ms: TARGET_P99_MS,
      },
    ];
    if (!SKIP_ALL && ONLY !== 'one') {
      const allFlags = evaluateRequests(seeded, 'none');
      const allSample = await sampleResponse(serverUrl, seeded.sdkKey, allFlags[0]!);
      const allAnswer = JSON.parse(allSample.body.toString('utf8')) as { flags: object[] };
      const allHeaders = headerEntries(allSample.headers);
      const allBody = allSample.body.toString('utf8');
      // The evaluation alone, as the routes run it, in this process and without HTTP: no route
      // answering every flag can serve more requests per second than this on one core.
      const evaluateAll = (i: number) => server!.services.evaluation.evaluateFlags(scope, { contexts: [userContexts[i % userContexts.length]!] });
      const evaluationFloor = { name: `floor: evaluating the ${FLAG_COUNT} flags in process, no HTTP (1 core)`, connections: 0, requests: [], inProcess: evaluateAll };
      const evaluateAllUnbudgeted = (i: number) => unbudgeted.evaluateFlags(scope, { contexts: [userContexts[i % userContexts.length]!] });
      const evaluationFloorUnbudgeted = { name: `floor: evaluating the ${FLAG_COUNT} flags in process, no budget (1 core)`, connections: 0, requests: [], inProcess: evaluateAllUnbudgeted };
      sections.push({
        title: `all ${FLAG_COUNT} flags (no flag_key), ${ALL_CONNECTIONS} connections, ${allSample.body.length} bytes per answer`,
        targets: [
          { name: `baseline: node:http building + stringifying ${FLAG_COUNT} results`, serve: { kind: 'building', items: allAnswer.flags, wrap: 'evaluate', headers: allHeaders, keepAliveMs }, connections: ALL_CONNECTIONS, requests: allFlags },
          { name: 'floor: Fastify app + route schemas, no work', serve: { kind: 'fastify', body: allBody, asBytes: true, keepAliveMs }, connections: ALL_CONNECTIONS, requests: allFlags },
          evaluationFloor,
          evaluationFloorUnbudgeted,
          { name: `in process: evaluating the ${FLAG_COUNT} flags, counts on (1 core)`, connections: 0, requests: [], inProcess: (i: number) => counted.evaluateFlags(scope, { contexts: [userContexts[i % userContexts.length]!] }) },
          { name: `in process: evaluating the ${FLAG_COUNT} flags, counts off (1 core)`, connections: 0, requests: [], inProcess: (i: number) => uncounted.evaluateFlags(scope, { contexts: [userContexts[i % userContexts.length]!] }) },
          { name: 'floor: Fastify app + route schemas + the evaluation', serve: { kind: 'fastify', body: allBody, asBytes: true, evaluation: evaluation('evaluate'), keepAliveMs }, connections: ALL_CONNECTIONS, requests: allFlags },
          { name: 'POST evaluate, all flags', serve: real, connections: ALL_CONNECTIONS, requests: allFlags },
        ],
        goals: { 'POST evaluate, all flags': ALL_FLAGS_TARGET },
      });

      const ofrep = ofrepRequests();
      const ofrepSample = await sampleResponse(serverUrl, seeded.sdkKey, ofrep[0]!);
      const ofrepAnswer = JSON.parse(ofrepSample.body.toString('utf8')) as { flags: object[] };
      // Each request carries its own context's current ETag, so every answer is a 304.
      const notModified: LoadRequest[] = [];
      for (const request of ofrep) {
        const answer = await sampleResponse(serverUrl, seeded.sdkKey, request);
        notModified.push({ ...request, headers: { 'if-none-match': answer.headers.get('etag') ?? '' } });
      }
      sections.push({
        title: `OFREP bulk (POST /ofrep/v1/evaluate/flags), ${ALL_CONNECTIONS} connections, ${ofrepSample.body.length} bytes per answer`,
        targets: [
          {
            name: `baseline: node:http building + stringifying ${FLAG_COUNT} entries`,
            serve: { kind: 'building', items: ofrepAnswer.flags, wrap: 'ofrep', headers: headerEntries(ofrepSample.headers), keepAliveMs },
            connections: ALL_CONNECTIONS,
            requests: ofrep,
          },
          evaluationFloor,
          evaluationFloorUnbudgeted,
          {
            name: 'floor: Fastify app + the evaluation',
            serve: { kind: 'fastify', body: ofrepSample.body.toString('utf8'), asBytes: true, ofrep: true, evaluation: evaluation('ofrep'), keepAliveMs },
            connections: ALL_CONNECTIONS,
            requests: ofrep,
          },
          { name: 'OFREP bulk, 200', serve: real, connections: ALL_CONNECTIONS, requests: ofrep },
          { name: 'OFREP bulk, 304 (If-None-Match)', serve: real, connections: ALL_CONNECTIONS, requests: notModified, status: 304 },
        ],
        goals: { 'OFREP bulk, 200': ALL_FLAGS_TARGET, 'OFREP bulk, 304 (If-None-Match)': ALL_FLAGS_TARGET },
      });
    }

    load = newLoadGenerator();
    if (PIN) {
      if (cpus < 2) throw new Error('--pin needs 2 CPUs');
      pinToCpu(process.pid, 0);
      pinToCpu(load.pid, 1);
    }
    // Setup is over: its garbage (the seeding above all) is collected now rather than during, and
    // at the cost of, whichever in-process row runs when V8 gets to it. Each server process does the
    // same once started (startServed): left in the old generation, a setup's garbage made young
    // collections several times slower until V8 got to a major collection mid-run.
    collectGarbage();
    const headers = { 'content-type': 'application/json', 'x-sdk-key': seeded.sdkKey };
    // Each round runs every target in turn, so a busy spell on a shared machine hits both the
    // baselines and the routes; each row is then the target's median round (by requests/s).
    const sectionNames = ['one', 'all', 'ofrep'];
    const picked = ONLY === undefined ? sections : sections.filter((_, i) => sectionNames[i] === ONLY);
    const chosen = TARGETS === undefined ? picked : picked.map((section) => ({ ...section, targets: section.targets.filter((t, i) => i === 0 || TARGETS.some((text) => t.name.includes(text))) }));
    const targets = chosen.flatMap((section) => section.targets.map((target) => ({ section, target })));
    // The load generator's own first run is slow (its code is not yet optimised): the first served
    // target gets a second warm-up run, so the first baseline is not penalised for it.
    const firstServed = targets.findIndex(({ target }) => target.serve !== undefined);
    const rounds: Row[][] = targets.map(() => []);
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [i, { section, target }] of targets.entries()) {
        const served = target.serve ? await startServed(target.serve) : undefined;
        try {
          const job = { url: served?.url ?? '', connections: target.connections, headers, requests: target.requests };
          const run = (seconds: number) => (target.inProcess ? measureInProcess(target.inProcess, seconds) : load!.run({ ...job, durationSeconds: seconds }));
          if (round === 1 && i === firstServed) await run(WARMUP_S);
          await run(WARMUP_S);
          const profiler = round === 1 && PROFILE !== undefined && target.name.includes(PROFILE) ? (served?.profiler ?? new CpuProfiler()) : undefined;
          await profiler?.start();
          const cpuUsage = async () => (served ? served.cpuUsage() : process.cpuUsage());
          const cpuBefore = await cpuUsage();
          const summary = await run(DURATION_S);
          const cpuAfter = await cpuUsage();
          const cpu = { user: cpuAfter.user - cpuBefore.user, system: cpuAfter.system - cpuBefore.system };
          if (profiler) {
            await profiler.stop(profileFile(target.name));
            console.error(`# profile of ${target.name}: ${profileFile(target.name)}`);
          }
          const serverCpuUsPerRequest = (cpu.user + cpu.system) / Math.max(1, summary.requestsTotal);
          // autocannon counts 304s as non-2xx: a row expecting them counts what is not a 304 instead.
          const expected = target.status ?? 200;
          const unexpected = Object.entries(summary.statusCounts).reduce((n, [status, count]) => (Number(status) === expected ? n : n + count), 0);
          rounds[i]!.push({ ...summary, non2xx: unexpected, name: target.name, section: section.title, connections: target.connections, serverCpuUsPerRequest, roundsRequestsPerSecond: [], roundRatios: [] });
          console.error(`# round ${round}, ${target.name}: ${Math.round(summary.requestsPerSecond)} req/s, p99 ${summary.latencyP99Ms} ms, user ${(cpu.user / summary.requestsTotal).toFixed(1)} µs sys ${(cpu.system / summary.requestsTotal).toFixed(1)} µs`);
        } finally {
          await served?.close();
        }
      }
    }
    // A section's baseline is its first target (rounds[] follows targets[] order).
    const baselineRuns = (title: string): Row[] => rounds[targets.findIndex(({ section }) => section.title === title)]!;
    const rows = rounds.map((runs) => {
      const sorted = [...runs].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
      const baseline = baselineRuns(runs[0]!.section);
      return {
        ...sorted[(sorted.length - 1) >> 1]!,
        roundsRequestsPerSecond: runs.map((r) => Math.round(r.requestsPerSecond)),
        roundRatios: runs.map((r, round) => r.requestsPerSecond / baseline[round]!.requestsPerSecond),
      };
    });
    const rowsBySection = chosen.map((section) => rows.filter((row) => row.section === section.title));
    printReport(chosen, rowsBySection, { database: database.source, cpus, load_before: loadBefore, pinned: PIN, sample_response_bytes: sample.body.length });
  } finally {
    await load?.close();
    await server?.stop();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// Benchmarks report, they do not assert: a failure is printed and the exit code stays 0.
await main().catch((error: unknown) => {
  console.log(`evaluate: the benchmark could not run: ${(error as Error).stack ?? String(error)}`);
});
