/**
 * CORS preflight throughput (issue 32 "Benchmarks": at least 0.8x a bare node:http 204 in the
 * same run).
 *
 *   npx tsx bench/client/preflight.bench.ts [--duration 5] [--warmup 2] [--connections 32] [--rounds 3]
 *                                           [--keys 1000]
 *
 * The real server (hosts/server) runs in this process over a fresh database (BENCH_DATABASE_URL,
 * else TEST_DATABASE_URL, else an embedded PostgreSQL), seeded through the services with --keys
 * client keys of two origins each (one exact, one wildcard), so the union preflights are answered
 * from is not trivially small. autocannon, in a child process so it never shares the server's
 * event loop, sends `OPTIONS /ofrep/v1/evaluate/flags` with an allowed `Origin`, the method and
 * the headers the stock OFREP web provider asks for, at --connections for --duration seconds.
 *
 * Baseline, in the same process and the same run: a bare node:http server that answers every
 * request with the same 204 and the same CORS headers (echoing the Origin), and nothing else —
 * the floor of any HTTP/1.1 answer on this machine. Rounds alternate the two, so a busy spell on a
 * shared machine hits both; each row is the median round. A third row, informational: preflights
 * from an origin no key allows (403). Prints a table and one JSON line; exits 0 whatever the figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import type { RunningServer } from '../../hosts/server/src/server.ts';
import { ALLOWED_HEADERS, PREFLIGHT_MAX_AGE_SECONDS } from '../../packages/transport/src/domains/client/rest-cors.ts';
import { ChildJobs } from '../support/child-jobs.ts';
import { openBenchDatabase } from '../support/bench-database.ts';
import { startBenchServer } from '../support/bench-server.ts';
import { median, option } from '../support/measure.ts';
import type { PreflightJob, PreflightSummary } from './preflight-load.ts';

const DURATION_S = option('duration', 5);
const WARMUP_S = option('warmup', 2);
const CONNECTIONS = option('connections', 32);
const ROUNDS = option('rounds', 3);
const KEYS = option('keys', 1000);
const TARGET_RATIO = 0.8;
const ADMIN = { email: 'bench-root@example.com', password: 'bench-root-password-1' };
const ROUTE = '/ofrep/v1/evaluate/flags';
const ALLOWED = 'https://app-7.example.com';
const UNKNOWN = 'https://evil.example.net';

type LoadGenerator = ChildJobs<Omit<PreflightJob, 'id'>, PreflightSummary>;

/** What a browser sends before the stock OFREP web provider's POST. */
const preflightHeaders = (origin: string): Record<string, string> => ({
  origin,
  'access-control-request-method': 'POST',
  'access-control-request-headers': 'authorization,content-type,if-none-match',
});

async function seedClientKeys(server: RunningServer, count: number): Promise<void> {
  const { auth, management, verifier } = server.services;
  const root = await verifier.verifyBearer((await auth.login(ADMIN)).accessToken);
  const org = await management.createOrg(root, { name: 'preflight-bench' });
  const orgAdmin = { email: 'preflight-admin@example.com', password: 'preflight-admin-password-1' };
  await management.seedUser(root, org.org_id, { email: orgAdmin.email, displayName: 'Preflight admin', password: orgAdmin.password, orgRole: 'org_admin' });
  const admin = await verifier.verifyBearer((await auth.login({ ...orgAdmin, orgId: org.org_id })).accessToken);
  const project = await management.createProject(admin, org.org_id, { name: 'preflight-bench' });
  const environment = await management.createEnvironment(admin, project.project_id, { name: 'production' });
  for (let i = 0; i < count; i++) {
    await management.createSdkKey(admin, environment.environment_id, {
      kind: 'client',
      name: `site ${i}`,
      allowed_origins: [`https://app-${i}.example.com`, `https://*.shop-${i}.example.com`],
    });
  }
}

/** The baseline: the same 204 and headers as the real preflight, and nothing else. */
async function startBare(): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    const origin = request.headers.origin ?? '';
    response.writeHead(204, {
      'access-control-allow-origin': origin,
      'access-control-allow-methods': 'POST',
      'access-control-allow-headers': ALLOWED_HEADERS,
      'access-control-max-age': String(PREFLIGHT_MAX_AGE_SECONDS),
      vary: 'Origin',
    });
    response.end();
  });
  server.keepAliveTimeout = 72_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

interface Row {
  name: string;
  rounds: PreflightSummary[];
}

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');

async function main(): Promise<void> {
  const loadBefore = Number(loadavg()[0]!.toFixed(2));
  const database = await openBenchDatabase();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-bench-data-'));
  let server: RunningServer | undefined;
  let bare: { url: string; server: Server } | undefined;
  let load: LoadGenerator | undefined;
  try {
    server = (await startBenchServer({ databaseUrl: database.url, dataDir, admin: ADMIN, jwtSecret: 'preflight-bench-secret-of-at-least-32-bytes' })).server;
    const serverUrl = `http://127.0.0.1:${server.httpPort}`;
    await seedClientKeys(server, KEYS);
    bare = await startBare();
    // The union is re-read on key notices: wait until the allowed origin is answered.
    for (let tries = 0; ; tries++) {
      const answer = await fetch(serverUrl + ROUTE, { method: 'OPTIONS', headers: preflightHeaders(ALLOWED) });
      if (answer.status === 204 && answer.headers.get('access-control-allow-origin') === ALLOWED) break;
      if (tries > 200) throw new Error(`the preflight answers ${answer.status}, not 204`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    console.error(`# ${KEYS} client keys (${KEYS * 2} origin patterns); database: ${database.source}`);

    load = new ChildJobs(new URL('./preflight-load.ts', import.meta.url));
    const job = (url: string, origin: string, durationSeconds: number) => ({ url, path: ROUTE, connections: CONNECTIONS, durationSeconds, headers: preflightHeaders(origin) });
    await load.run(job(bare.url, ALLOWED, WARMUP_S));
    await load.run(job(serverUrl, ALLOWED, WARMUP_S));

    const rows: Row[] = [
      { name: 'bare node:http 204', rounds: [] },
      { name: 'server preflight 204 (allowed origin)', rounds: [] },
      { name: 'server preflight 403 (unknown origin)', rounds: [] },
    ];
    for (let round = 1; round <= ROUNDS; round++) {
      rows[0]!.rounds.push(await load.run(job(bare.url, ALLOWED, DURATION_S)));
      rows[1]!.rounds.push(await load.run(job(serverUrl, ALLOWED, DURATION_S)));
      rows[2]!.rounds.push(await load.run(job(serverUrl, UNKNOWN, DURATION_S)));
      console.error(`# round ${round}: bare ${fmt(rows[0]!.rounds.at(-1)!.requestsPerSecond)}/s, server ${fmt(rows[1]!.rounds.at(-1)!.requestsPerSecond)}/s`);
    }

    const summary = rows.map((row) => ({
      name: row.name,
      requestsPerSecond: median(row.rounds.map((r) => r.requestsPerSecond)),
      p50Ms: median(row.rounds.map((r) => r.latencyP50Ms)),
      p99Ms: median(row.rounds.map((r) => r.latencyP99Ms)),
      statusCounts: row.rounds.reduce<Record<string, number>>((all, r) => {
        for (const [status, count] of Object.entries(r.statusCounts)) all[status] = (all[status] ?? 0) + count;
        return all;
      }, {}),
      errors: row.rounds.reduce((sum, r) => sum + r.errors, 0),
    }));
    const baseline = summary[0]!.requestsPerSecond;
    console.log(`\nCORS preflight, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION_S} s (median round); ${availableParallelism()} CPUs, load ${loadBefore}\n`);
    console.log(`${'row'.padEnd(40)} ${'req/s'.padStart(10)} ${'x bare'.padStart(7)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)}  statuses`);
    for (const row of summary) {
      console.log(
        `${row.name.padEnd(40)} ${fmt(row.requestsPerSecond).padStart(10)} ${(row.requestsPerSecond / baseline).toFixed(2).padStart(7)} ${String(row.p50Ms).padStart(7)} ${String(row.p99Ms).padStart(7)}  ${JSON.stringify(row.statusCounts)}${row.errors ? ` errors ${row.errors}` : ''}`,
      );
    }
    const ratio = summary[1]!.requestsPerSecond / baseline;
    console.log(`\npreflight / bare = ${ratio.toFixed(2)} (target >= ${TARGET_RATIO}: ${ratio >= TARGET_RATIO ? 'met' : 'NOT met'})`);
    console.log(
      JSON.stringify({
        bench: 'client-preflight',
        connections: CONNECTIONS,
        durationSeconds: DURATION_S,
        rounds: ROUNDS,
        clientKeys: KEYS,
        cpus: availableParallelism(),
        loadBefore,
        rows: summary,
        ratio: Number(ratio.toFixed(3)),
        target: TARGET_RATIO,
      }),
    );
  } finally {
    await load?.close();
    bare?.server.closeAllConnections();
    await new Promise<void>((resolve) => (bare ? bare.server.close(() => resolve()) : resolve()));
    await server?.stop();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
