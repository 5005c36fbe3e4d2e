/**
 * Committed metric events per second through the REST batch route (target: at least 100,000
 * events/s, and at least 0.5x a raw COPY of the same rows into PostgreSQL).
 *
 *   npx tsx bench/ingest/ingest.bench.ts [--duration 20] [--warmup 3] [--connections 16]
 *                                         [--batch 1000] [--bodies 8] [--rounds 1]
 *                                         [--copy-streams 1] [--insert-lanes 16] [--skip-insert]
 *
 * The real server (hosts/server) runs in this process over a fresh database (BENCH_DATABASE_URL,
 * else TEST_DATABASE_URL, else an embedded PostgreSQL), seeded through the services with one
 * environment, an SDK key and three event definitions (bool, int, double). autocannon, in a child
 * process so it never shares the server's event loop, sends `POST /v1/environments/{env}/events/batch`
 * with `x-sdk-key` and `{events: [...]}` bodies of --batch events (--bodies distinct ones, context
 * keys varied) at --connections for --duration seconds, after a --warmup run whose rows are
 * dropped. Committed events/s = the rows the table gained ÷ the time from the start of the run to
 * the moment the server's group commit has nothing left to write; it is cross-checked against
 * Σ accepted_count of the 202 answers.
 *
 * Baselines, in the same run and on the same (emptied) table: a raw COPY of as many rows as the
 * REST run committed, the same rows and columns straight into PostgreSQL (--copy-streams COPYs side
 * by side, one connection each; default 1); and
 * (unless --skip-insert) multi-row INSERTs of one body each on --insert-lanes connections. Prints
 * a table and one JSON line; exits 0 whatever the figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import type { RunningServer } from '../../hosts/server/src/server.ts';
import { connect, type Sql } from '../../packages/postgres/src/connect.ts';
import { ChildJobs } from '../support/child-jobs.ts';
import { openBenchDatabase } from '../support/bench-database.ts';
import { startBenchServer } from '../support/bench-server.ts';
import { median, option } from '../support/measure.ts';
import type { IngestLoadJob, IngestLoadSummary } from './load-generator.ts';
import { backendCpu, cpuSpent } from './database-cpu.ts';
import { rawCopy, rawInsert, type RawTarget } from './raw-baselines.ts';
import { buildBodies, seedIngestEnvironment, type EventBody } from './seed.ts';

const DURATION_S = option('duration', 20);
const WARMUP_S = option('warmup', 3);
const CONNECTIONS = option('connections', 16);
const BATCH = option('batch', 1000);
const BODIES = option('bodies', 8);
const ROUNDS = option('rounds', 1);
const INSERT_LANES = option('insert-lanes', 16);
/** The COPY baseline's concurrent streams (one connection each). */
const COPY_STREAMS = option('copy-streams', 1);
const SKIP_INSERT = process.argv.includes('--skip-insert');
const TARGET_EVENTS_PER_S = 100_000;
const TARGET_RATIO = 0.5;
const ADMIN = { email: 'bench-root@example.com', password: 'bench-root-password-1' };

interface RestRound extends IngestLoadSummary {
  committedEvents: number;
  committedPerSecond: number;
  /** Σ accepted_count of the 202s over autocannon's own run time. */
  acknowledgedPerSecond: number;
  /** CPU time (user + system) of this process, where the server runs, per committed event. */
  serverCpuUsPerEvent: number;
  /** CPU time of the database's PostgreSQL backends per committed event (null: not measurable here). */
  dbCpuUsPerEvent: number | null;
}

interface RawRound {
  rows: number;
  ms: number;
  rowsPerSecond: number;
  /** As RestRound.dbCpuUsPerEvent. */
  dbCpuUsPerRow: number | null;
}

// --- the load generator (a child process) ---

/** The load generator runs in a child process (see load-generator.ts). */
type LoadGenerator = ChildJobs<Omit<IngestLoadJob, 'id'>, IngestLoadSummary>;
const newLoadGenerator = (): LoadGenerator => new ChildJobs(new URL('./load-generator.ts', import.meta.url));

// --- the database between phases ---

const countEvents = async (sql: Sql): Promise<number> => Number((await sql<Array<{ n: number }>>`SELECT count(*)::int8 AS n FROM events`)[0]!.n);

/** Each phase starts on an empty table with no dirty pages of the previous one to write. */
async function resetTable(sql: Sql): Promise<void> {
  await sql`TRUNCATE events`;
  // Needs superuser (or pg_checkpoint); without it a phase may pay for the previous one's writes.
  await sql`CHECKPOINT`.catch(() => {});
}

// --- output ---

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US');
const ms = (n: number): string => n.toFixed(1);
const pickMedian = <T>(runs: T[], by: (run: T) => number): T => [...runs].sort((a, b) => by(a) - by(b))[(runs.length - 1) >> 1]!;

function printReport(rest: RestRound, copy: RawRound, insert: RawRound | null, all: { rest: RestRound[]; copy: RawRound[]; insert: RawRound[] }, meta: Record<string, unknown>): void {
  const ratio = (rate: number): string => `${(rate / copy.rowsPerSecond).toFixed(2)}x`;
  const header = ['path', 'events/s', 'p50 ms', 'p99 ms', 'max ms', 'requests', 'non-2xx', 'errors', 'CPU/event', 'DB CPU/row', 'vs COPY'];
  const us = (value: number | null): string => (value === null ? 'n/a' : `${value.toFixed(2)} µs`);
  const rows: string[][] = [
    [
      `REST events/batch (${BATCH}/request, ${CONNECTIONS} conn.)`,
      fmt(rest.committedPerSecond),
      ms(rest.latencyP50Ms),
      ms(rest.latencyP99Ms),
      ms(rest.latencyMaxMs),
      fmt(rest.requestsTotal),
      String(rest.non2xx),
      String(rest.errors),
      `${rest.serverCpuUsPerEvent.toFixed(2)} µs`,
      us(rest.dbCpuUsPerEvent),
      ratio(rest.committedPerSecond),
    ],
    [`baseline: raw COPY (${COPY_STREAMS} connection${COPY_STREAMS > 1 ? 's' : ''})`, fmt(copy.rowsPerSecond), '', '', '', '', '', '', '', us(copy.dbCpuUsPerRow), '1.00x'],
  ];
  if (insert) rows.push([`raw multi-row INSERT (${BATCH} rows, ${INSERT_LANES} conn.)`, fmt(insert.rowsPerSecond), '', '', '', '', '', '', '', us(insert.dbCpuUsPerRow), ratio(insert.rowsPerSecond)]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (c: string[]): string => c.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  console.log(
    `ingest: node ${process.version}, ${BATCH} events/request, ${BODIES} distinct bodies, autocannon ${CONNECTIONS} connections, ` +
      `${ROUNDS} round(s) of ${DURATION_S} s after ${WARMUP_S} s warm-up (median round shown), ${String(meta.cpus)} CPUs (load ${String(meta.load_before)} before), database: ${String(meta.database)}`,
  );
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
  console.log(
    `committed: ${fmt(rest.committedEvents)} rows in the table; acknowledged: ${fmt(rest.acceptedEvents)} (${fmt(rest.accepted202)} answers 202, ` +
      `${fmt(rest.acknowledgedPerSecond)}/s over autocannon's ${(rest.elapsedMs / 1000).toFixed(1)} s); ` +
      `${fmt(rest.committedEvents - rest.acceptedEvents)} committed after autocannon stopped waiting`,
  );
  const ratioToCopy = rest.committedPerSecond / copy.rowsPerSecond;
  const met = rest.committedPerSecond >= TARGET_EVENTS_PER_S && ratioToCopy >= TARGET_RATIO;
  console.log(
    `target: >= ${fmt(TARGET_EVENTS_PER_S)} events/s and >= ${TARGET_RATIO}x raw COPY: ${fmt(rest.committedPerSecond)} events/s, ${ratioToCopy.toFixed(2)}x -> ${met ? 'met' : 'NOT met'}`,
  );
  if (Number(meta.load_before) > Number(meta.cpus) / 2) {
    console.log(`NOTE: the machine was already busy (1-minute load ${String(meta.load_before)} on ${String(meta.cpus)} CPUs): the figures are noisy, run it again on an idle machine`);
  }
  if (rest.non2xx > 0 || rest.errors > 0) {
    console.log(`NOTE: ${rest.non2xx} non-2xx answers ${JSON.stringify(rest.statusCounts)} and ${rest.errors} errors (${rest.timeouts} timeouts)${rest.firstFailure ? `, first: ${rest.firstFailure}` : ''}: the figures are not clean`);
  }
  if (rest.committedEvents < rest.acceptedEvents) console.log(`NOTE: fewer rows in the table than acknowledged: acknowledged events were lost`);
  console.log(
    JSON.stringify({
      bench: 'ingest',
      node: process.version,
      ...meta,
      batch: BATCH,
      bodies: BODIES,
      connections: CONNECTIONS,
      rounds: ROUNDS,
      duration_s: DURATION_S,
      warmup_s: WARMUP_S,
      rest: {
        committed_events_per_s: Math.round(rest.committedPerSecond),
        acknowledged_events_per_s: Math.round(rest.acknowledgedPerSecond),
        committed_events: rest.committedEvents,
        accepted_events: rest.acceptedEvents,
        requests_total: rest.requestsTotal,
        answers_202: rest.accepted202,
        latency_p50_ms: Number(rest.latencyP50Ms.toFixed(2)),
        latency_p99_ms: Number(rest.latencyP99Ms.toFixed(2)),
        latency_max_ms: Number(rest.latencyMaxMs.toFixed(2)),
        latency_mean_ms: Number(rest.latencyMeanMs.toFixed(2)),
        non_2xx: rest.non2xx,
        errors: rest.errors,
        timeouts: rest.timeouts,
        status_counts: rest.statusCounts,
        server_cpu_us_per_event: Number(rest.serverCpuUsPerEvent.toFixed(3)),
        db_cpu_us_per_event: rest.dbCpuUsPerEvent === null ? null : Number(rest.dbCpuUsPerEvent.toFixed(3)),
        rounds_events_per_s: all.rest.map((r) => Math.round(r.committedPerSecond)),
      },
      copy: { streams: COPY_STREAMS, rows: copy.rows, ms: Math.round(copy.ms), rows_per_s: Math.round(copy.rowsPerSecond), db_cpu_us_per_row: copy.dbCpuUsPerRow === null ? null : Number(copy.dbCpuUsPerRow.toFixed(3)), rounds_rows_per_s: all.copy.map((r) => Math.round(r.rowsPerSecond)) },
      insert: insert
        ? { rows: insert.rows, ms: Math.round(insert.ms), rows_per_s: Math.round(insert.rowsPerSecond), lanes: INSERT_LANES, rounds_rows_per_s: all.insert.map((r) => Math.round(r.rowsPerSecond)) }
        : null,
      ratio_to_copy: Number(ratioToCopy.toFixed(3)),
      rounds_ratio_to_copy: all.rest.map((r, i) => Number((r.committedPerSecond / all.copy[i]!.rowsPerSecond).toFixed(3))),
      target_met: met,
    }),
  );
}

// --- the run ---

async function restRound(server: RunningServer, sql: Sql, load: LoadGenerator, job: Omit<IngestLoadJob, 'id'>): Promise<RestRound> {
  await resetTable(sql);
  const before = await countEvents(sql);
  const dbBefore = await backendCpu(sql);
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  const summary = await load.run(job);
  // Requests autocannon sent but stopped waiting for are still committed: the clock stops when
  // the group commit has nothing left, and the table count includes them.
  const writer = server.services.ingest.eventWriter;
  let handed: number;
  do {
    // A request whose body was still arriving reaches the writer a moment later: wait for quiet.
    handed = writer.stats.requests;
    await writer.flush();
    await new Promise((resolve) => setTimeout(resolve, 20));
  } while (writer.stats.requests !== handed);
  const elapsedMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const dbCpu = cpuSpent(dbBefore, await backendCpu(sql));
  const committedEvents = (await countEvents(sql)) - before;
  return {
    ...summary,
    committedEvents,
    committedPerSecond: committedEvents / (elapsedMs / 1000),
    acknowledgedPerSecond: summary.acceptedEvents / (summary.elapsedMs / 1000),
    serverCpuUsPerEvent: (cpu.user + cpu.system) / Math.max(1, committedEvents),
    dbCpuUsPerEvent: dbCpu === null ? null : dbCpu / Math.max(1, committedEvents),
  };
}

async function rawRound(sql: Sql, rows: number, write: () => Promise<number>): Promise<RawRound> {
  await resetTable(sql);
  const dbBefore = await backendCpu(sql);
  const elapsed = await write();
  let stored = await countEvents(sql);
  // A stream finishes at the COPY's CommandComplete; its commit may land a moment later.
  for (let tries = 0; stored < rows && tries < 50; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    stored = await countEvents(sql);
  }
  if (stored !== rows) throw new Error(`the baseline stored ${stored} rows, not ${rows}`);
  const dbCpu = cpuSpent(dbBefore, await backendCpu(sql));
  return { rows, ms: elapsed, rowsPerSecond: rows / (elapsed / 1000), dbCpuUsPerRow: dbCpu === null ? null : dbCpu / rows };
}

async function main(): Promise<void> {
  // Taken before anything of ours runs: how busy the machine already was.
  const loadBefore = Number(loadavg()[0]!.toFixed(2));
  const database = await openBenchDatabase();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-bench-data-'));
  let server: RunningServer | undefined;
  let load: LoadGenerator | undefined;
  let sql: Sql | undefined;
  let lanes: Sql | undefined;
  try {
    server = (await startBenchServer({ databaseUrl: database.url, dataDir, admin: ADMIN, jwtSecret: 'ingest-bench-secret-of-at-least-32-bytes' })).server;
    const serverUrl = `http://127.0.0.1:${server.httpPort}`;
    const seeded = await seedIngestEnvironment(server, ADMIN);
    const bodies: EventBody[] = buildBodies(BODIES, BATCH, Date.now());
    const route = `/v1/environments/${seeded.environmentId}/events/batch`;
    const headers = { 'content-type': 'application/json', 'x-sdk-key': seeded.sdkKey };
    console.error(`# seeded environment ${seeded.environmentId}; bodies of ${fmt(bodies[0]!.json.length)} bytes (database: ${database.source})`);

    // One real request before any timing: the route must accept every event of a body.
    const sample = await fetch(`${serverUrl}${route}`, { method: 'POST', headers, body: bodies[0]!.json });
    const sampleText = await sample.text();
    const accepted = sample.status === 202 ? (JSON.parse(sampleText) as { accepted_count?: number }).accepted_count : undefined;
    if (accepted !== BATCH) {
      console.log(`ingest: the sample request was not fully accepted (status ${sample.status}, body ${sampleText.slice(0, 500)}); nothing measured`);
      return;
    }

    sql = connect(database.url, { poolSize: Math.max(1, COPY_STREAMS), applicationName: 'switchyard-bench-ingest' });
    lanes = SKIP_INSERT ? undefined : connect(database.url, { poolSize: INSERT_LANES, applicationName: 'switchyard-bench-ingest' });
    const target: RawTarget = { orgId: seeded.orgId, environmentId: seeded.environmentId };
    load = newLoadGenerator();
    const job = { url: serverUrl, path: route, connections: CONNECTIONS, headers, bodies: bodies.map((body) => body.json) };
    await load.run({ ...job, durationSeconds: WARMUP_S });

    // Each round runs every path in turn, so a busy spell on a shared machine hits them all;
    // each row is then the path's median round.
    const all = { rest: [] as RestRound[], copy: [] as RawRound[], insert: [] as RawRound[] };
    for (let round = 1; round <= ROUNDS; round++) {
      const rest = await restRound(server, sql, load, { ...job, durationSeconds: DURATION_S });
      all.rest.push(rest);
      console.error(`# round ${round}, REST: ${fmt(rest.committedPerSecond)} events/s, p99 ${ms(rest.latencyP99Ms)} ms`);
      const rowCount = rest.committedEvents;
      const copySql = sql;
      const copy = await rawRound(sql, rowCount, () => rawCopy(copySql, target, bodies, rowCount, COPY_STREAMS));
      all.copy.push(copy);
      console.error(`# round ${round}, COPY: ${fmt(copy.rowsPerSecond)} rows/s`);
      if (lanes) {
        const insertSql = lanes;
        const insert = await rawRound(sql, rowCount, () => rawInsert(insertSql, target, bodies, rowCount, INSERT_LANES));
        all.insert.push(insert);
        console.error(`# round ${round}, INSERT: ${fmt(insert.rowsPerSecond)} rows/s`);
      }
    }
    await sql`TRUNCATE events`;
    const rest = pickMedian(all.rest, (r) => r.committedPerSecond);
    const copy = pickMedian(all.copy, (r) => r.rowsPerSecond);
    const insert = all.insert.length > 0 ? pickMedian(all.insert, (r) => r.rowsPerSecond) : null;
    printReport(rest, copy, insert, all, {
      database: database.source,
      cpus: availableParallelism(),
      load_before: loadBefore,
      body_bytes: Math.round(median(bodies.map((body) => body.json.length))),
    });
  } finally {
    load?.close();
    await server?.stop();
    await sql?.end();
    await lanes?.end();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

// Benchmarks report, they do not assert: a failure is printed and the exit code stays 0.
await main().catch((error: unknown) => {
  console.log(`ingest: the benchmark could not run: ${(error as Error).stack ?? String(error)}`);
});
