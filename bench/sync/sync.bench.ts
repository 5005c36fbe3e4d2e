/**
 * Definitions sync at scale (issue targets: 10,000 streams within 1.5 GiB RSS, p99 delivery < 1 s).
 *
 *   npm run bench:sync
 *   node --expose-gc --import tsx bench/sync/sync.bench.ts [--streams 1000,10000] [--rounds 5]
 *        [--per-connection 100] [--fanout-flags 100] [--snapshot-flags 1000]
 *
 * One Switchyard server runs in this process over a throwaway database (BENCH_DATABASE_URL,
 * TEST_DATABASE_URL or an embedded PostgreSQL). The streams' clients run in a child process
 * (bench/sync/sync-clients.ts), so the RSS reported is the server's and client decoding does not
 * share its event loop. For each stream count:
 *   1. open N FlagSyncService streams (100 per HTTP/2 connection) and wait for every snapshot;
 *   2. RSS of this process with the N streams open;
 *   3. delivery: a REST PUT changes one flag; time from just before the request to the moment
 *      each stream has the change (p50/p99/max over all streams and rounds);
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
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' };

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

// --- the client child process ---

const child = fork(fileURLToPath(new URL('./sync-clients.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const replies: Array<(message: any) => void> = [];
child.on('message', (message: any) => {
  if (message.type === 'error') throw new Error(`client process: ${message.message}`);
  replies.shift()?.(message);
});
const ask = (command: object): Promise<any> =>
  new Promise((resolve) => {
    replies.push(resolve);
    child.send(command);
  });

interface Delivery {
  /** Per stream and round: ms from just before the change request to the stream having it. */
  latencies: number[];
  /** Per round: when the last stream had it. */
  roundMaxima: number[];
  /** The marker of the last change: the current description of flag-0000. */
  lastMarker: string;
}

async function deliver(rounds: number, change: (marker: string) => Promise<void>): Promise<Delivery> {
  const latencies: number[] = [];
  const roundMaxima: number[] = [];
  let lastMarker = '';
  // Round 0 warms up code paths on both sides and is not counted.
  for (let round = -1; round < rounds; round++) {
    const marker = `bench-${Date.now()}-${round}`;
    lastMarker = marker;
    await ask({ type: 'expect', marker });
    // The child's next message is the 'delivered' report.
    const delivered = new Promise<{ times: number[] }>((resolve) => replies.push(resolve));
    const started = nowMs();
    await change(marker);
    const { times } = await delivered;
    const own = times.map((t) => t - started);
    if (round >= 0) {
      latencies.push(...own);
      roundMaxima.push(Math.max(...own));
    }
    await sleep(300);
  }
  return { latencies: latencies.sort((a, b) => a - b), roundMaxima, lastMarker };
}

/**
 * A lost database notification connection: every stream gets a full snapshot at once. Time until
 * the last stream has it, and the highest RSS meanwhile (the write budget bounds the copies).
 */
async function resync(server: RunningServer, marker: string): Promise<{ ms: number; peakRssMiB: number }> {
  await ask({ type: 'expect', marker });
  const delivered = new Promise<{ times: number[] }>((resolve) => replies.push(resolve));
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  const started = nowMs();
  server.services.snapshots.invalidateAll();
  const { times } = await delivered;
  clearInterval(sampler);
  return { ms: Math.max(...times) - started, peakRssMiB: mib(peak) };
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
  rssMiB: number | null;
  heapMiB: number | null;
  p50: number;
  p99: number;
  max: number;
}

const loadBefore = loadavg()[0] ?? 0;
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
  snapshot = await snapshotTimes(server, large);

  const changeFlag = (marker: string): Promise<void> =>
    call(base, 'PUT', `/v1/environments/${fanout.environmentId}/flags/flag-0000`, seeded.token, { flag: { description: marker } });

  for (const streams of STREAM_COUNTS) {
    // Switchyard.
    gc();
    const open = await ask({ type: 'open', port: server.syncGrpcPort, streams, perConnection: PER_CONNECTION, sdkKey: fanout.rawKey, environmentId: fanout.environmentId });
    await sleep(1000);
    gc();
    const memory = process.memoryUsage();
    const ours = await deliver(ROUNDS, changeFlag);
    const resynced = await resync(server, ours.lastMarker);
    await ask({ type: 'close' });
    rows.push({ streams, server: 'switchyard', resync: resynced, openMs: open.ms, rssMiB: mib(memory.rss), heapMiB: mib(memory.heapUsed), p50: percentile(ours.latencies, 50), p99: percentile(ours.latencies, 99), max: Math.max(...ours.roundMaxima) });
    await sleep(500);

    // Baseline: the same snapshot and change messages from a bare grpc-js server.
    const flags = await server.services.flags.list(seeded.principal, await server.services.flags.target(seeded.principal, fanout.environmentId, 'environment'));
    const template = flags[0]!;
    const bare = await startBareSyncServer({ flags: flags.map(featureFlagMessage), sequence_number: 1, full_snapshot: true, environment_id: fanout.environmentId });
    const bareOpen = await ask({ type: 'open', port: bare.port, streams, perConnection: PER_CONNECTION, sdkKey: 'none', environmentId: fanout.environmentId });
    const theirs = await deliver(ROUNDS, async (marker) => {
      bare.broadcast({ flags: [featureFlagMessage({ ...template, description: marker })], sequence_number: 2, environment_id: fanout.environmentId });
    });
    await ask({ type: 'close' });
    await bare.stop();
    rows.push({ streams, server: 'baseline: bare grpc-js', resync: null, openMs: bareOpen.ms, rssMiB: null, heapMiB: null, p50: percentile(theirs.latencies, 50), p99: percentile(theirs.latencies, 99), max: Math.max(...theirs.roundMaxima) });
    await sleep(500);
  }
} finally {
  child.disconnect();
  await server.stop();
  await db.drop();
}

const fmt = (n: number | null, digits = 1): string => (n === null ? '-' : n.toFixed(digits));
console.log(
  `sync: node ${process.version}, ${ROUNDS} rounds per stream count, ${PER_CONNECTION} streams per HTTP/2 connection, ${FANOUT_FLAGS} flags in the streamed environment, database: ${db.source}, load average before: ${loadBefore.toFixed(2)}`,
);
if (loadBefore > 1) console.log(`NOTE: the machine was already busy (load ${loadBefore.toFixed(2)}): delivery times include waiting for a CPU`);
const header = ['streams', 'server', 'open all (ms)', 'RSS (MiB)', 'heap (MiB)', 'p50 (ms)', 'p99 (ms)', 'max (ms)'];
const cells = rows.map((r) => [String(r.streams), r.server, fmt(r.openMs, 0), fmt(r.rssMiB, 0), fmt(r.heapMiB, 0), fmt(r.p50), fmt(r.p99), fmt(r.max)]);
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
    rounds: ROUNDS,
    per_connection: PER_CONNECTION,
    fanout_flags: FANOUT_FLAGS,
    snapshot: { flags: SNAPSHOT_FLAGS, bytes: snapshot.bytes, cold_ms: Number(snapshot.coldMs.toFixed(2)), warm_ms: Number(snapshot.warmMs.toFixed(2)) },
    results: rows.map((r) => ({
      streams: r.streams,
      server: r.server,
      open_all_ms: Math.round(r.openMs),
      rss_mib: r.rssMiB,
      heap_mib: r.heapMiB,
      delivery_p50_ms: Number(r.p50.toFixed(2)),
      delivery_p99_ms: Number(r.p99.toFixed(2)),
      delivery_max_ms: Number(r.max.toFixed(2)),
      ...(r.resync ? { resync_ms: Math.round(r.resync.ms), resync_peak_rss_mib: r.resync.peakRssMiB } : {}),
    })),
  }),
);
