/**
 * Definitions sync at scale (issue targets: 50,000 streams within 1.5 GiB RSS, p99 delivery < 1 s).
 *
 *   npm run bench:sync
 *   node --expose-gc --import tsx bench/sync/sync.bench.ts [--streams 1000,10000] [--rounds 5]
 *        [--per-connection 100] [--fanout-flags 100] [--snapshot-flags 1000] [--client-processes N]
 *
 * One Switchyard server runs in this process over a throwaway database (BENCH_DATABASE_URL,
 * TEST_DATABASE_URL or an embedded PostgreSQL). The streams' clients run in child processes
 * (bench/sync/sync-clients.ts; 1 below 20,000 streams, else 4, or --client-processes), so the RSS
 * reported is the server's and client work does not share its event loop. For each stream count:
 *   1. open N FlagSyncService streams (100 per HTTP/2 connection) and wait for every snapshot;
 *   2. RSS of this process with the N streams open;
 *   3. delivery: a REST PUT changes one flag; time from just before the request to the moment
 *      each stream has the change (p50/p99/max over all streams and rounds), with this process's
 *      CPU time per round and its longest event-loop delay (to tell CPU starvation on a busy
 *      machine from the server's own work);
 *   4. resync: every stream gets a full snapshot at once (as after a lost LISTEN connection);
 *      time to the last stream and peak RSS;
 *   5. baseline: the same streams and the same change message over a bare grpc-js server
 *      (bare-sync-server.ts: no auth, no database, no diff) in the same process.
 * Snapshot time: one stream on an environment with 1,000 flags, time to its first message, cold
 * (definitions not cached: database load + encode) and warm (another stream already open).
 */
import { fork } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import type { Principal } from '@switchyard/core';
import { loadConfig } from '@switchyard/transport/config.ts';
import { featureFlagMessage } from '@switchyard/transport/domains/flags/messages.ts';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { createLogger } from '@switchyard/transport/logging.ts';
import { startServer, type RunningServer } from '../../hosts/server/src/server.ts';
import { median, option } from '../support/measure.ts';
import { startBareSyncServer } from './bare-sync-server.ts';
import { openBenchDatabase } from '../support/bench-database.ts';
import { call, percentile } from '../support/rest-call.ts';

const STREAM_COUNTS = (process.argv.includes('--streams') ? process.argv[process.argv.indexOf('--streams') + 1] ?? '' : '1000,10000')
  .split(',')
  .map(Number)
  .filter((n) => Number.isInteger(n) && n > 0);
const ROUNDS = option('rounds', 5);
const PER_CONNECTION = option('per-connection', 100);
const FANOUT_FLAGS = option('fanout-flags', 100);
const SNAPSHOT_FLAGS = option('snapshot-flags', 1000);
const NO_BASELINE = process.argv.includes('--no-baseline');
const NO_RESYNC = process.argv.includes('--no-resync');
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' };

/** Progress on stderr (the results go to stdout). */
const progress = (text: string): void => void process.stderr.write(`[sync bench ${new Date().toISOString().slice(11, 19)}] ${text}\n`);
const nowMs = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (bytes: number): number => Math.round(bytes / 1024 / 1024);
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

// --- seeding over REST (as an operator would) and the FlagService ---


const benchFlag = (i: number) => ({
  flag: {
    key: `flag-${String(i).padStart(4, '0')}`,
    description: `benchmark flag ${i}`,
    value_type: 'string',
    variants: [
      { key: 'control', value: 'a' },
      { key: 'treatment', value: 'b' },
    ],
    off_variant_key: 'control',
    rules: [
      { conditions: [{ attribute: 'country', op: 'in', values: ['NZ', 'AU'] }], variant_key: 'treatment' },
      { conditions: [], allocation: { context_hash_specs: { user: { parameter_names: [] } }, buckets: [{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }] } },
    ],
  },
  enabled: true,
});

interface Environment {
  environmentId: string;
  rawKey: string;
}

async function seed(server: RunningServer, base: string, flagsPerEnvironment: number[]): Promise<{ token: string; principal: Principal; environments: Environment[] }> {
  const root = await call(base, 'POST', '/v1/auth/login', undefined, ADMIN);
  const org = await call(base, 'POST', '/v1/admin/orgs', root.token, { name: 'bench' });
  await call(base, 'POST', `/v1/admin/orgs/${org.org_id}/users`, root.token, { email: 'owner@example.com', display_name: 'owner', password: 'owner-password-1', org_role: 'org_admin' });
  const owner = await call(base, 'POST', '/v1/auth/login', undefined, { email: 'owner@example.com', password: 'owner-password-1', org_id: org.org_id });
  const principal = await server.services.verifier.verifyBearer(owner.token);
  const environments: Environment[] = [];
  // One project per environment: flag definitions are project-level.
  for (const [n, count] of flagsPerEnvironment.entries()) {
    const project = await call(base, 'POST', `/v1/management/orgs/${org.org_id}/projects`, owner.token, { name: `bench-${n}` });
    const environment = await call(base, 'POST', `/v1/management/projects/${project.project_id}/environments`, owner.token, { name: 'production' });
    const key = await call(base, 'POST', `/v1/management/environments/${environment.environment_id}/sdk-keys`, owner.token);
    const target = await server.services.flags.target(principal, environment.environment_id, 'environment');
    for (let i = 0; i < count; i += 10) {
      await Promise.all(Array.from({ length: Math.min(10, count - i) }, (_, j) => server.services.flags.create(principal, target, benchFlag(i + j))));
    }
    environments.push({ environmentId: environment.environment_id, rawKey: key.raw_key });
  }
  return { token: owner.token, principal, environments };
}

// --- the client child processes ---

/**
 * One child process running streams' clients (sync-clients.ts). Its replies come in the order of
 * the commands, except 'delivered', which the caller waits for with `next()`.
 */
class ClientProcess {
  private readonly child = fork(fileURLToPath(new URL('./sync-clients.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  private readonly replies: Array<(message: any) => void> = [];

  constructor() {
    this.child.on('message', (message: any) => {
      if (message.type === 'error') throw new Error(`client process: ${message.message}`);
      this.replies.shift()?.(message);
    });
  }

  ask(command: object): Promise<any> {
    return new Promise((resolve) => {
      this.replies.push(resolve);
      this.child.send(command);
    });
  }

  /** The next message not answering a command (the 'delivered' report). */
  next(): Promise<any> {
    return new Promise((resolve) => this.replies.push(resolve));
  }

  stop(): void {
    this.child.disconnect();
  }
}

/**
 * Client processes: with tens of thousands of streams one process's event loop would time itself
 * (50,000 'data' events one after another), not the server. `--client-processes` (default 1 below
 * 20,000 streams, else 4) splits the streams evenly.
 */
const CLIENT_PROCESSES = option('client-processes', 0);
const processesFor = (streams: number): number => CLIENT_PROCESSES || (streams >= 20_000 ? 4 : 1);
const pool: ClientProcess[] = [];
/** Streams of the current stream count that ended with an error after opening. */
let lostStreams = 0;
let clients: ClientProcess[] = [];

/**
 * Opens `streams` streams over `processesFor(streams)` processes: ms until every stream had its
 * first message, and the CPU time this (the server's) process spent meanwhile.
 */
async function openStreams(port: number, streams: number, sdkKey: string, environmentId: string): Promise<{ ms: number; cpuMs: number }> {
  const count = Math.min(processesFor(streams), streams);
  while (pool.length < count) pool.push(new ClientProcess());
  clients = pool.slice(0, count);
  lostStreams = 0;
  const cpu = process.cpuUsage();
  const started = nowMs();
  await Promise.all(
    clients.map((client, i) => {
      const share = Math.floor(streams / count) + (i < streams % count ? 1 : 0);
      return client.ask({ type: 'open', port, streams: share, perConnection: PER_CONNECTION, sdkKey, environmentId });
    }),
  );
  const ms = nowMs() - started;
  const used = process.cpuUsage(cpu);
  return { ms, cpuMs: (used.user + used.system) / 1000 };
}

const closeStreams = (): Promise<unknown> => Promise.all(clients.map((client) => client.ask({ type: 'close' })));

/** Tells every client process the marker to look for; resolves with the delivery times of all streams. */
async function expect(marker: string): Promise<{ delivered: Promise<number[]> }> {
  await Promise.all(clients.map((client) => client.ask({ type: 'expect', marker })));
  const reports = clients.map((client) => client.next() as Promise<{ times: number[]; lost?: number }>);
  return {
    delivered: Promise.all(reports).then((all) => {
      const lostNow = all.reduce((sum, report) => sum + (report.lost ?? 0), 0);
      if (lostNow > lostStreams) progress(`${lostNow} streams lost (ended by an error after opening): not counted from now on`);
      lostStreams = lostNow;
      return all.flatMap((report) => report.times).filter((t) => !Number.isNaN(t));
    }),
  };
}

interface Delivery {
  /** Per stream and round: ms from just before the change request to the stream having it. */
  latencies: number[];
  /** Per round: when the last stream had it. */
  roundMaxima: number[];
  /** The marker of the last change: the current description of flag-0000. */
  lastMarker: string;
  /** Per round: CPU time of this (the server's) process from the change to the last stream having it. */
  cpuMs: number[];
  /** The longest event-loop delay of this process during any counted round. */
  loopDelayMaxMs: number;
}

async function deliver(rounds: number, change: (marker: string) => Promise<void>): Promise<Delivery> {
  const latencies: number[] = [];
  const roundMaxima: number[] = [];
  const cpuMs: number[] = [];
  let loopDelayMaxMs = 0;
  let lastMarker = '';
  // Round 0 warms up code paths on both sides and is not counted.
  for (let round = -1; round < rounds; round++) {
    const marker = `bench-${Date.now()}-${round}`;
    lastMarker = marker;
    const { delivered } = await expect(marker);
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const cpu = process.cpuUsage();
    const started = nowMs();
    await change(marker);
    const times = await delivered;
    const used = process.cpuUsage(cpu);
    loop.disable();
    const own = times.map((t) => t - started);
    if (round >= 0) {
      for (const ms of own) latencies.push(ms);
      roundMaxima.push(own.reduce((a, b) => Math.max(a, b), 0));
      cpuMs.push((used.user + used.system) / 1000);
      loopDelayMaxMs = Math.max(loopDelayMaxMs, loop.max / 1e6);
    }
    await sleep(300);
  }
  return { latencies: latencies.sort((a, b) => a - b), roundMaxima, lastMarker, cpuMs, loopDelayMaxMs };
}

/**
 * A lost database notification connection: every stream gets a full snapshot at once. Time until
 * the last stream has it, and the highest RSS meanwhile (the write budget bounds the copies).
 */
async function resync(server: RunningServer, marker: string): Promise<{ ms: number; peakRssMiB: number }> {
  const { delivered } = await expect(marker);
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const started = nowMs();
  server.services.snapshots.invalidateAll();
  const times = await delivered;
  clearInterval(sampler);
  return { ms: times.reduce((a, b) => Math.max(a, b), 0) - started, peakRssMiB: mib(peak) };
}

// --- snapshot time ---

const SyncClient = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags.proto'), 'svc.flags.v1.FlagSyncService');

/** Opens a stream in this process; resolves with ms to its first message and that message's size. */
function firstMessage(port: number, environment: Environment, keepOpen: boolean): Promise<{ ms: number; bytes: number; close(): void }> {
  const client = new SyncClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  const metadata = new grpc.Metadata();
  metadata.set('x-sdk-key', environment.rawKey);
  const started = nowMs();
  const stream = (client as any).SyncDefinitions({ environment_id: environment.environmentId }, metadata) as grpc.ClientReadableStream<any>;
  const close = (): void => {
    stream.cancel();
    client.close();
  };
  return new Promise((resolve, reject) => {
    stream.on('error', (error: grpc.ServiceError) => {
      if (error.code !== grpc.status.CANCELLED) reject(error);
    });
    stream.once('data', (message: object) => {
      const ms = nowMs() - started;
      const bytes = SyncClient.service.SyncDefinitions!.responseSerialize(message).length;
      if (!keepOpen) close();
      resolve({ ms, bytes, close });
    });
  });
}

async function snapshotTimes(server: RunningServer, environment: Environment): Promise<{ coldMs: number; warmMs: number; bytes: number }> {
  const port = server.syncGrpcPort;
  // Warm-up: JIT, connection code paths.
  for (let i = 0; i < 3; i++) await firstMessage(port, environment, false);
  const cold: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 10; i++) {
    // No stream open and the definitions cache dropped: a database load, a diff state and an encoding.
    server.services.snapshots.invalidate({ environmentId: environment.environmentId });
    await sleep(20);
    const first = await firstMessage(port, environment, false);
    cold.push(first.ms);
    bytes = first.bytes;
    await sleep(20);
  }
  const holder = await firstMessage(port, environment, true);
  const warm: number[] = [];
  for (let i = 0; i < 20; i++) warm.push((await firstMessage(port, environment, false)).ms);
  holder.close();
  return { coldMs: median(cold), warmMs: median(warm), bytes };
}

// --- the run ---

interface Row {
  streams: number;
  server: string;
  resync: { ms: number; peakRssMiB: number } | null;
  openMs: number;
  /** CPU time of this (the server's) process while the streams opened. */
  openCpuMs: number;
  rssMiB: number | null;
  heapMiB: number | null;
  p50: number;
  p99: number;
  max: number;
  clientProcesses: number;
  /** Median over rounds of this process's CPU time per delivery round (ms). */
  cpuMs: number;
  loopDelayMaxMs: number;
}

const loadBefore = loadavg()[0] ?? 0;
let loadPeak = loadBefore;
const loadSampler = setInterval(() => (loadPeak = Math.max(loadPeak, loadavg()[0] ?? 0)), 5000);
loadSampler.unref();
const db = await openBenchDatabase();
const logging = createLogger({ filter: 'warn', json: true });
const server = await startServer(
  loadConfig({
    DATABASE_URL: db.url,
    HTTP_PORT: '0',
    GRPC_PORT: '0',
    SYNC_GRPC_PORT: '0',
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'switchyard-bench-sync-')),
    JWT_SECRET: 'bench-sync-secret-of-at-least-32-bytes!!',
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    RUST_LOG: 'warn',
    // Every bench stream uses one SDK key; the per-key cap (default 1,000) would refuse most.
    SYNC_MAX_STREAMS_PER_KEY: String(Math.max(...STREAM_COUNTS, 1)),
  }),
  logging,
);
const base = `http://127.0.0.1:${server.httpPort}`;
const rows: Row[] = [];
let snapshot = { coldMs: 0, warmMs: 0, bytes: 0 };
try {
  const seeded = await seed(server, base, [FANOUT_FLAGS, SNAPSHOT_FLAGS]);
  const [fanout, large] = seeded.environments as [Environment, Environment];
  progress('snapshot times');
  snapshot = await snapshotTimes(server, large);

  const changeFlag = (marker: string): Promise<void> =>
    call(base, 'PUT', `/v1/environments/${fanout.environmentId}/flags/flag-0000`, seeded.token, { flag: { description: marker } });

  for (const streams of STREAM_COUNTS) {
    // Switchyard.
    gc();
    progress(`switchyard: opening ${streams} streams over ${processesFor(streams)} client process(es)`);
    const { ms: openMs, cpuMs: openCpuMs } = await openStreams(server.syncGrpcPort, streams, fanout.rawKey, fanout.environmentId);
    await sleep(1000);
    gc();
    const memory = process.memoryUsage();
    progress(`switchyard: ${streams} streams open in ${Math.round(openMs)} ms, RSS ${mib(memory.rss)} MiB; delivery rounds`);
    const ours = await deliver(ROUNDS, changeFlag);
    progress(`switchyard delivery: p50 ${percentile(ours.latencies, 50).toFixed(1)} p99 ${percentile(ours.latencies, 99).toFixed(1)} max ${Math.max(...ours.roundMaxima).toFixed(1)} ms, server CPU per round ${ours.cpuMs.map((ms) => ms.toFixed(0)).join(', ')} ms, event-loop delay max ${ours.loopDelayMaxMs.toFixed(0)} ms, load ${(loadavg()[0] ?? 0).toFixed(1)}; resync`);
    const resynced = NO_RESYNC ? null : await resync(server, ours.lastMarker);
    const lostInRun = lostStreams;
    await closeStreams();
    progress(`switchyard row done: ${JSON.stringify({ openMs, openCpuMs, rss: mib(memory.rss), heap: mib(memory.heapUsed), p50: percentile(ours.latencies, 50), p99: percentile(ours.latencies, 99), max: Math.max(...ours.roundMaxima), cpuMs: ours.cpuMs, loopDelayMaxMs: ours.loopDelayMaxMs, resynced, lost: lostInRun, load: loadavg()[0] })}`);
    rows.push({ streams, server: 'switchyard', resync: resynced, openMs, openCpuMs, rssMiB: mib(memory.rss), heapMiB: mib(memory.heapUsed), p50: percentile(ours.latencies, 50), p99: percentile(ours.latencies, 99), max: Math.max(...ours.roundMaxima), clientProcesses: clients.length, cpuMs: median(ours.cpuMs), loopDelayMaxMs: ours.loopDelayMaxMs });
    await sleep(500);

    if (NO_BASELINE) continue;
    // Baseline: the same snapshot and change messages from a bare grpc-js server.
    const flags = await server.services.flags.list(seeded.principal, await server.services.flags.target(seeded.principal, fanout.environmentId, 'environment'));
    const template = flags[0]!;
    const bare = await startBareSyncServer({ flags: flags.map(featureFlagMessage), sequence_number: 1, full_snapshot: true, environment_id: fanout.environmentId });
    progress(`baseline: opening ${streams} streams`);
    const { ms: bareOpenMs, cpuMs: bareOpenCpuMs } = await openStreams(bare.port, streams, 'none', fanout.environmentId);
    const theirs = await deliver(ROUNDS, async (marker) => {
      bare.broadcast({ flags: [featureFlagMessage({ ...template, description: marker })], sequence_number: 2, environment_id: fanout.environmentId });
    });
    await closeStreams();
    await bare.stop();
    progress(`baseline row done: ${JSON.stringify({ bareOpenMs, bareOpenCpuMs, p50: percentile(theirs.latencies, 50), p99: percentile(theirs.latencies, 99), max: Math.max(...theirs.roundMaxima), cpuMs: theirs.cpuMs, loopDelayMaxMs: theirs.loopDelayMaxMs, load: loadavg()[0] })}`);
    rows.push({ streams, server: 'baseline: bare grpc-js', resync: null, openMs: bareOpenMs, openCpuMs: bareOpenCpuMs, rssMiB: null, heapMiB: null, p50: percentile(theirs.latencies, 50), p99: percentile(theirs.latencies, 99), max: Math.max(...theirs.roundMaxima), clientProcesses: clients.length, cpuMs: median(theirs.cpuMs), loopDelayMaxMs: theirs.loopDelayMaxMs });
    await sleep(500);
  }
} finally {
  for (const client of pool) client.stop();
  await server.stop();
  await db.drop();
}

const fmt = (n: number | null, digits = 1): string => (n === null ? '-' : n.toFixed(digits));
console.log(
  `sync: node ${process.version}, ${ROUNDS} rounds per stream count, ${PER_CONNECTION} streams per HTTP/2 connection, ${FANOUT_FLAGS} flags in the streamed environment, database: ${db.source}, load average before: ${loadBefore.toFixed(2)}, highest during: ${loadPeak.toFixed(2)}, after: ${(loadavg()[0] ?? 0).toFixed(2)}`,
);
if (loadBefore > 1) console.log(`NOTE: the machine was already busy (load ${loadBefore.toFixed(2)}): delivery times include waiting for a CPU`);
const header = ['streams', 'server', 'client procs', 'open all (ms)', 'open CPU (ms)', 'RSS (MiB)', 'heap (MiB)', 'p50 (ms)', 'p99 (ms)', 'max (ms)', 'CPU/round (ms)', 'loop delay max (ms)'];
const cells = rows.map((r) => [String(r.streams), r.server, String(r.clientProcesses), fmt(r.openMs, 0), fmt(r.openCpuMs, 0), fmt(r.rssMiB, 0), fmt(r.heapMiB, 0), fmt(r.p50), fmt(r.p99), fmt(r.max), fmt(r.cpuMs, 0), fmt(r.loopDelayMaxMs, 0)]);
const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
const line = (row: string[]): string => row.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const row of cells) console.log(line(row));
for (const row of rows) {
  if (row.resync) console.log(`resync of ${row.streams} streams (full snapshot to each): ${row.resync.ms.toFixed(0)} ms to the last one, peak RSS ${row.resync.peakRssMiB} MiB`);
}
console.log(`snapshot of ${SNAPSHOT_FLAGS} flags (${Math.round(snapshot.bytes / 1024)} KiB): cold ${snapshot.coldMs.toFixed(1)} ms (database load + encode), warm ${snapshot.warmMs.toFixed(1)} ms (median to first message)`);
console.log(
  JSON.stringify({
    bench: 'sync',
    node: process.version,
    load_average_before: Number(loadBefore.toFixed(2)),
    load_average_peak: Number(loadPeak.toFixed(2)),
    rounds: ROUNDS,
    per_connection: PER_CONNECTION,
    fanout_flags: FANOUT_FLAGS,
    snapshot: { flags: SNAPSHOT_FLAGS, bytes: snapshot.bytes, cold_ms: Number(snapshot.coldMs.toFixed(2)), warm_ms: Number(snapshot.warmMs.toFixed(2)) },
    results: rows.map((r) => ({
      streams: r.streams,
      server: r.server,
      open_all_ms: Math.round(r.openMs),
      open_server_cpu_ms: Math.round(r.openCpuMs),
      rss_mib: r.rssMiB,
      heap_mib: r.heapMiB,
      delivery_p50_ms: Number(r.p50.toFixed(2)),
      delivery_p99_ms: Number(r.p99.toFixed(2)),
      delivery_max_ms: Number(r.max.toFixed(2)),
      client_processes: r.clientProcesses,
      server_cpu_ms_per_round: Number(r.cpuMs.toFixed(1)),
      event_loop_delay_max_ms: Number(r.loopDelayMaxMs.toFixed(1)),
      ...(r.resync ? { resync_ms: Math.round(r.resync.ms), resync_peak_rss_mib: r.resync.peakRssMiB } : {}),
    })),
  }),
);
