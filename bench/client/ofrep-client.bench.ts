/**
 * OFREP bulk evaluation (`POST /ofrep/v1/evaluate/flags`) with a client key against a server key
 * on the same environment, in the same run (docs/client-side.md "What a client sees"; issue 32
 * target: the client key at least 0.9x the server key). Both answers evaluate the same flags (every
 * flag is client-visible and enabled), so the difference is what the client path adds: the
 * visibility filter, its own entry texts and the answer built as text, and the Cache-Control
 * header. Also each key's 304 (each request carries its context's current ETag; the client key's
 * is answered from its remembered ETag).
 *
 *   npx tsx bench/client/ofrep-client.bench.ts [--flags 1000] [--duration 5] [--warmup 2] [--connections 8] [--rounds 3]
 *
 * One server (hosts/server, in this process) over a fresh database (BENCH_DATABASE_URL, else
 * TEST_DATABASE_URL, else an embedded PostgreSQL), the flags of bench/evaluate/seed.ts (five rules
 * each), 1,024 rotating users; autocannon drives it from a child process. Rounds alternate the
 * targets so a slow spell of the machine touches both. Prints a table and one JSON line; exits 0
 * whatever the figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { startBenchServer } from '../support/bench-server.ts';
import { openBenchDatabase } from '../support/bench-database.ts';
import { ChildJobs } from '../support/child-jobs.ts';
import { median, option } from '../support/measure.ts';
import type { LoadJob, LoadRequest, LoadSummary } from '../evaluate/load-generator.ts';
import { benchContexts, benchFlagBody } from '../evaluate/seed.ts';

const FLAGS = option('flags', 1000);
const DURATION_S = option('duration', 5);
const WARMUP_S = option('warmup', 2);
const CONNECTIONS = option('connections', 8);
const ROUNDS = option('rounds', 3);
const TARGET = 0.9;
const ADMIN = { email: 'bench-root@example.com', password: 'bench-root-password-1' };
const BULK = '/ofrep/v1/evaluate/flags';

const database = await openBenchDatabase();
const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-client-bench-'));
const { server } = await startBenchServer({ databaseUrl: database.url, dataDir, admin: ADMIN, jwtSecret: 'client-bench-secret-of-at-least-32-bytes!!' });
const load = new ChildJobs<Omit<LoadJob, 'id'>, LoadSummary>(new URL('../evaluate/load-generator.ts', import.meta.url));

try {
  const { auth, management, flags, verifier } = server.services;
  const root = await verifier.verifyBearer((await auth.login(ADMIN)).accessToken);
  const org = await management.createOrg(root, { name: 'client-bench' });
  const orgAdmin = { email: 'client-bench-admin@example.com', password: 'client-bench-admin-password-1' };
  await management.seedUser(root, org.org_id, { email: orgAdmin.email, displayName: 'Bench admin', password: orgAdmin.password, orgRole: 'org_admin' });
  const admin = await verifier.verifyBearer((await auth.login({ ...orgAdmin, orgId: org.org_id })).accessToken);
  const project = await management.createProject(admin, org.org_id, { name: 'bench' });
  // Every new flag client-visible: both keys evaluate the same flags.
  await management.updateProject(admin, project.project_id, { client_visible_default: true });
  const environment = await management.createEnvironment(admin, project.project_id, { name: 'production' });
  const serverKey = (await management.createSdkKey(admin, environment.environment_id)).raw_key!;
  const clientKey = (
    await management.createSdkKey(admin, environment.environment_id, { kind: 'client', name: 'bench', allowed_origins: ['https://bench.example.com'], allow_missing_origin: true })
  ).raw_key!;
  const target = await flags.target(admin, environment.environment_id, 'environment');
  for (let i = 0; i < FLAGS; i += 8) {
    await Promise.all(Array.from({ length: Math.min(8, FLAGS - i) }, (_, j) => flags.create(admin, target, benchFlagBody(i + j))));
  }

  const base = `http://127.0.0.1:${server.httpPort}`;
  const requests: LoadRequest[] = benchContexts().map((context) => ({ path: BULK, body: JSON.stringify({ context: { targetingKey: context.key, ...context.attributes } }) }));

  /** Each request with its context's current ETag for this key (the 304 rows), checking the answers on the way. */
  async function withEtags(key: string): Promise<LoadRequest[]> {
    const out: LoadRequest[] = [];
    // The first answers of a cold server may run over the evaluation budget (flags answered ERROR):
    // one pass to warm up, the ETags from the second.
    for (const request of requests.slice(0, 64)) {
      await (await fetch(base + request.path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': key }, body: request.body })).arrayBuffer();
    }
    for (const request of requests) {
      const response = await fetch(base + request.path, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': key }, body: request.body });
      if (response.status !== 200) throw new Error(`${key.slice(0, 3)}: ${response.status} ${await response.text()}`);
      const answer = (await response.json()) as { flags: object[] };
      if (answer.flags.length !== FLAGS) throw new Error(`${key.slice(0, 3)}: ${response.status}, ${answer.flags.length} flags`);
      out.push({ ...request, headers: { 'if-none-match': response.headers.get('etag')! } });
    }
    return out;
  }
  const serverPolls = await withEtags(serverKey);
  const clientPolls = await withEtags(clientKey);

  interface Target {
    name: string;
    key: string;
    requests: LoadRequest[];
    status: number;
  }
  const targets: Target[] = [
    { name: 'server key, full answer (baseline)', key: serverKey, requests, status: 200 },
    { name: 'client key, full answer', key: clientKey, requests, status: 200 },
    { name: 'server key, 304', key: serverKey, requests: serverPolls, status: 304 },
    { name: 'client key, 304', key: clientKey, requests: clientPolls, status: 304 },
  ];
  const runs = new Map<string, LoadSummary[]>(targets.map((t) => [t.name, []]));
  const job = (t: Target, seconds: number): Omit<LoadJob, 'id'> => ({
    url: base,
    connections: CONNECTIONS,
    durationSeconds: seconds,
    headers: { 'content-type': 'application/json', 'x-sdk-key': t.key },
    requests: t.requests,
  });
  for (const t of targets) await load.run(job(t, WARMUP_S));
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate the order each round.
    for (const t of round % 2 === 0 ? targets : [...targets].reverse()) {
      const summary = await load.run(job(t, DURATION_S));
      const unexpected = Object.entries(summary.statusCounts).reduce((n, [status, count]) => (Number(status) === t.status ? n : n + count), 0);
      if (unexpected > 0 || summary.errors > 0) {
        console.log(`NOTE: ${t.name}: ${unexpected} unexpected statuses ${JSON.stringify(summary.statusCounts)} and ${summary.errors} errors: its figures are not clean`);
      }
      runs.get(t.name)!.push(summary);
    }
  }

  const rps = (name: string) => median(runs.get(name)!.map((s) => s.requestsPerSecond));
  const p99 = (name: string) => median(runs.get(name)!.map((s) => s.latencyP99Ms));
  const rows = targets.map((t) => ({ name: t.name, rps: rps(t.name), p99Ms: p99(t.name) }));
  const full = rps(targets[1]!.name) / rps(targets[0]!.name);
  const polls = rps(targets[3]!.name) / rps(targets[2]!.name);
  console.log(`\nOFREP bulk, ${FLAGS} flags, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION_S} s (median), ${availableParallelism()} CPUs, load ${loadavg()[0]!.toFixed(2)}`);
  console.log('| target | req/s | p99 ms |');
  console.log('|---|---:|---:|');
  for (const row of rows) console.log(`| ${row.name} | ${row.rps.toFixed(0)} | ${row.p99Ms} |`);
  console.log(`client key / server key, full answer: ${full.toFixed(2)}x (target >= ${TARGET}x: ${full >= TARGET ? 'met' : 'NOT met'})`);
  console.log(`client key / server key, 304: ${polls.toFixed(2)}x`);
  console.log(JSON.stringify({ bench: 'ofrep-client', flags: FLAGS, connections: CONNECTIONS, rounds: ROUNDS, rows, fullRatio: full, pollRatio: polls, target: TARGET }));
} finally {
  await load.close();
  await server.stop();
  await database.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
