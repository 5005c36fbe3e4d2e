/**
 * Flag change propagation to SDK clients (issue target: p99 < 1 s with 1,000 clients).
 *
 *   npm run bench:sdk-propagation
 *   npx tsx bench/sdk/propagation.bench.ts [--clients 1000] [--processes 2] [--rounds 20]
 *
 * The real server (hosts/server, startServer) runs in this process over a throwaway database
 * (BENCH_DATABASE_URL, else TEST_DATABASE_URL, else an embedded PostgreSQL), seeded with one
 * environment of 20 flags. `--clients` SwitchyardClients (docs/sdk.md) run in `--processes` child
 * processes (bench/sdk/sdk-clients.ts), each with its own sync stream, all ready before anything
 * is timed. Then, `--rounds` times (after one warm-up round that is not counted), a REST
 * `PUT .../flags/prop-flag` flips the flag's served value, and each client reports when its
 * `change` event for the flag fired (having checked that `boolVariation` serves the new value).
 * Latency: from just before the REST request to each client's event, p50/p95/p99/max over all
 * client × round samples.
 *
 * Baseline, same run, same server, same updates: as many raw grpc-js FlagSyncService streams
 * (bench/sync/sync-clients.ts: no SDK, messages left undecoded, the change found by a marker in
 * the bytes) in one child process, over the same number of HTTP/2 connections as the SDK
 * processes use. The difference is what the SDK adds: decoding, the definition store, the event.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Principal } from '@switchyard/core';
import { loadConfig } from '@switchyard/transport/config.ts';
import { createLogger } from '@switchyard/transport/logging.ts';
import { startServer, type RunningServer } from '../../hosts/server/src/server.ts';
import { openBenchDatabase } from '../support/bench-database.ts';
import { median, option } from '../support/measure.ts';
import { call, percentile } from '../support/rest-call.ts';

const CLIENTS = option('clients', 1000);
const PROCESSES = option('processes', 2);
const ROUNDS = option('rounds', 20);
const FLAGS = 20;
const FLAG_KEY = 'prop-flag';
/** Whole-run bound: a run that hangs is stopped and reported as failed. */
const RUN_LIMIT_MS = 15 * 60_000;
/** A round whose change has not reached every client within this is a failed run. */
const ROUND_LIMIT_MS = 30_000;
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' };

const nowMs = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));


/** A bool flag; the first is the one the rounds flip (its off variant), the rest are company. */
const benchFlag = (key: string) => ({
  flag: {
    key,
    description: `benchmark flag ${key}`,
    value_type: 'bool',
    variants: [
      { key: 'on', value: true },
      { key: 'off', value: false },
    ],
    off_variant_key: 'off',
    rules: [
      { conditions: [{ attribute: 'country', op: 'in', values: ['NZ', 'AU'] }], variant_key: 'on' },
      { conditions: [], allocation: { context_hash_specs: { user: { parameter_names: [] } }, buckets: [{ variant_key: 'on', weight_milli: 0 }, { variant_key: 'off', weight_milli: 1000 }] } },
    ],
  },
  // prop-flag starts disabled (serving its off variant), so flipping off_variant_key flips every value.
  enabled: key !== FLAG_KEY,
});

async function seed(server: RunningServer, base: string): Promise<{ token: string; environmentId: string; rawKey: string }> {
  const root = await call(base, 'POST', '/v1/auth/login', undefined, ADMIN);
  const org = await call(base, 'POST', '/v1/admin/orgs', root.token, { name: 'bench' });
  await call(base, 'POST', `/v1/admin/orgs/${org.org_id}/users`, root.token, { email: 'owner@example.com', display_name: 'owner', password: 'owner-password-1', org_role: 'org_admin' });
  const owner = await call(base, 'POST', '/v1/auth/login', undefined, { email: 'owner@example.com', password: 'owner-password-1', org_id: org.org_id });
  const principal: Principal = await server.services.verifier.verifyBearer(owner.token);
  const project = await call(base, 'POST', `/v1/management/orgs/${org.org_id}/projects`, owner.token, { name: 'bench' });
  const environment = await call(base, 'POST', `/v1/management/projects/${project.project_id}/environments`, owner.token, { name: 'production' });
  const key = await call(base, 'POST', `/v1/management/environments/${environment.environment_id}/sdk-keys`, owner.token);
  const target = await server.services.flags.target(principal, environment.environment_id, 'environment');
  await server.services.flags.create(principal, target, benchFlag(FLAG_KEY));
  for (let i = 1; i < FLAGS; i++) await server.services.flags.create(principal, target, benchFlag(`flag-${String(i).padStart(2, '0')}`));
  return { token: owner.token, environmentId: environment.environment_id, rawKey: key.raw_key };
}

/** A child process answering commands with typed messages (one waiter per reply type). */
class Child {
  private readonly process: ChildProcess;
  private readonly waiting = new Map<string, Array<(message: any) => void>>();
  private failure: Error | undefined;

  constructor(file: string) {
    this.process = fork(fileURLToPath(new URL(file, import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.process.on('message', (message: any) => {
      if (message.type === 'error') return this.fail(new Error(`client process: ${message.message}`));
      this.waiting.get(message.type)?.shift()?.(message);
    });
    this.process.on('exit', (code) => this.fail(new Error(`client process exited (${code})`)));
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const list of this.waiting.values()) list.splice(0);
  }

  /** The next message of `type`; rejects after `limitMs`. */
  next(type: string, limitMs: number): Promise<any> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(this.failure ?? new Error(`no '${type}' within ${limitMs} ms`)), limitMs);
      const list = this.waiting.get(type) ?? [];
      this.waiting.set(type, list);
      list.push((message) => {
        clearTimeout(timer);
        resolve(message);
      });
    });
  }

  send(command: object): void {
    this.process.send(command);
  }

  stop(): void {
    if (this.process.connected) this.process.disconnect();
    if (this.process.exitCode === null) setTimeout(() => this.process.kill(), 2_000).unref();
  }
}

interface Phase {
  name: string;
  openMs: number;
  /** ms from just before each REST request to each client having the change, all rounds. */
  latencies: number[];
  /** REST round trip of each update. */
  restMs: number[];
}

/**
 * Warm-up + ROUNDS updates; `update(round)` makes the change and returns once REST answered, each
 * child is told what to expect first, then reports its clients' times.
 */
async function rounds(children: Child[], expect: (round: number) => object, update: (round: number) => Promise<void>): Promise<{ latencies: number[]; restMs: number[] }> {
  const latencies: number[] = [];
  const restMs: number[] = [];
  for (let round = -1; round < ROUNDS; round++) {
    const expecting = children.map((child) => child.next('expecting', 10_000));
    for (const child of children) child.send(expect(round));
    await Promise.all(expecting);
    const delivered = children.map((child) => child.next('delivered', ROUND_LIMIT_MS));
    const started = nowMs();
    await update(round);
    const answered = nowMs();
    const times = (await Promise.all(delivered)).flatMap((message: { times: number[] }) => message.times);
    if (round >= 0) {
      latencies.push(...times.map((t) => t - started));
      restMs.push(answered - started);
    }
    await sleep(200);
  }
  return { latencies: latencies.sort((a, b) => a - b), restMs };
}

const loadBefore = loadavg()[0] ?? 0;
const runLimit = setTimeout(() => {
  console.error(`bench:sdk-propagation: still running after ${RUN_LIMIT_MS / 60_000} minutes; stopping`);
  process.exit(1);
}, RUN_LIMIT_MS);
runLimit.unref();

const db = await openBenchDatabase();
const server = await startServer(
  loadConfig({
    DATABASE_URL: db.url,
    HTTP_PORT: '0',
    GRPC_PORT: '0',
    SYNC_GRPC_PORT: '0',
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'switchyard-bench-sdk-')),
    JWT_SECRET: 'bench-sdk-secret-of-at-least-32-bytes!!!',
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    // All clients share one SDK key; the per-key cap (default 1,000) would refuse some.
    SYNC_MAX_STREAMS_PER_KEY: String(CLIENTS * 2),
  }),
  createLogger({ filter: 'warn', json: true }),
);
const base = `http://127.0.0.1:${server.httpPort}`;
const phases: Phase[] = [];
let reconnects = 0;
let failed: unknown;
const children: Child[] = [];
try {
  const seeded = await seed(server, base);
  // The flag starts serving false; the warm-up round (-1) flips it to true, round 0 back to false, ...
  const valueOf = (round: number): boolean => (round + 1) % 2 === 0;
  const flip = (round: number, description: string): Promise<void> =>
    call(base, 'PUT', `/v1/environments/${seeded.environmentId}/flags/${FLAG_KEY}`, seeded.token, { flag: { off_variant_key: valueOf(round) ? 'on' : 'off', description } });

  // SDK clients.
  const perProcess = Array.from({ length: PROCESSES }, (_, i) => Math.floor(CLIENTS / PROCESSES) + (i < CLIENTS % PROCESSES ? 1 : 0));
  const sdkChildren = perProcess.map(() => new Child('./sdk-clients.ts'));
  children.push(...sdkChildren);
  const openedAt = nowMs();
  const opened = await Promise.all(
    sdkChildren.map((child, i) => {
      const reply = child.next('opened', 120_000);
      child.send({ type: 'open', clients: perProcess[i], sdkKey: seeded.rawKey, environmentId: seeded.environmentId, baseUrl: base, syncUrl: `127.0.0.1:${server.syncGrpcPort}` });
      return reply;
    }),
  );
  const ready = opened.reduce((sum, o: { ready: number }) => sum + o.ready, 0);
  if (ready !== CLIENTS) throw new Error(`only ${ready} of ${CLIENTS} clients are ready`);
  const openMs = nowMs() - openedAt;
  await sleep(1000);
  const sdk = await rounds(
    sdkChildren,
    (round) => ({ type: 'expect', flagKey: FLAG_KEY, value: valueOf(round) }),
    (round) => flip(round, `sdk-${round}`),
  );
  phases.push({ name: `SDK clients (${PROCESSES} processes)`, openMs, ...sdk });
  for (const child of sdkChildren) {
    const closed = child.next('closed', 30_000);
    child.send({ type: 'close' });
    reconnects += (await closed).reconnects;
    child.stop();
  }
  await sleep(1000);

  // Baseline: raw streams, the change found by its marker (the description) in the bytes.
  const raw = new Child('../sync/sync-clients.ts');
  children.push(raw);
  const rawOpenedAt = nowMs();
  const rawOpened = raw.next('opened', 120_000);
  raw.send({ type: 'open', port: server.syncGrpcPort, streams: CLIENTS, perConnection: Math.ceil(CLIENTS / PROCESSES), sdkKey: seeded.rawKey, environmentId: seeded.environmentId });
  await rawOpened;
  const rawOpenMs = nowMs() - rawOpenedAt;
  await sleep(1000);
  const marker = (round: number): string => `raw-${Date.now()}-${round}`;
  let current = '';
  const baseline = await rounds(
    [raw],
    (round) => ({ type: 'expect', marker: (current = marker(round)) }),
    (round) => flip(round, current),
  );
  phases.push({ name: 'baseline: raw grpc-js streams', openMs: rawOpenMs, ...baseline });
  const closed = raw.next('closed', 30_000);
  raw.send({ type: 'close' });
  await closed;
} catch (error) {
  failed = error;
} finally {
  for (const child of children) child.stop();
  await server.stop();
  await db.drop();
}
if (failed) {
  console.error('bench:sdk-propagation failed:', failed);
  process.exit(1);
}

const fmt = (n: number): string => n.toFixed(1);
console.log(
  `sdk propagation: node ${process.version}, ${CLIENTS} clients in ${PROCESSES} processes, ${ROUNDS} rounds after 1 warm-up, ${FLAGS} flags in the environment, database: ${db.source}, load average before: ${loadBefore.toFixed(2)}`,
);
if (loadBefore > 1) console.log(`NOTE: the machine was already busy (load ${loadBefore.toFixed(2)}): latencies include waiting for a CPU`);
const header = ['receivers', 'open all (ms)', 'samples', 'p50 (ms)', 'p95 (ms)', 'p99 (ms)', 'max (ms)', 'REST PUT p50 (ms)'];
const rows = phases.map((p) => [
  p.name,
  p.openMs.toFixed(0),
  String(p.latencies.length),
  fmt(percentile(p.latencies, 50)),
  fmt(percentile(p.latencies, 95)),
  fmt(percentile(p.latencies, 99)),
  fmt(p.latencies.at(-1)!),
  fmt(median(p.restMs)),
]);
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
const line = (row: string[]): string => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const row of rows) console.log(line(row));
const [ours, theirs] = phases as [Phase, Phase];
const p99 = percentile(ours.latencies, 99);
console.log(`SDK p99 / raw stream p99: ${(p99 / percentile(theirs.latencies, 99)).toFixed(2)}x; p50: ${(percentile(ours.latencies, 50) / percentile(theirs.latencies, 50)).toFixed(2)}x`);
console.log(`target p99 < 1000 ms: ${fmt(p99)} ms — ${p99 < 1000 ? 'met' : 'NOT met'}; SDK stream reconnects during the run: ${reconnects}`);
console.log(
  JSON.stringify({
    bench: 'sdk-propagation',
    node: process.version,
    load_average_before: Number(loadBefore.toFixed(2)),
    clients: CLIENTS,
    processes: PROCESSES,
    rounds: ROUNDS,
    reconnects,
    results: phases.map((p) => ({
      receivers: p.name,
      open_all_ms: Math.round(p.openMs),
      samples: p.latencies.length,
      p50_ms: Number(percentile(p.latencies, 50).toFixed(2)),
      p95_ms: Number(percentile(p.latencies, 95).toFixed(2)),
      p99_ms: Number(percentile(p.latencies, 99).toFixed(2)),
      max_ms: Number(p.latencies.at(-1)!.toFixed(2)),
      rest_put_p50_ms: Number(median(p.restMs).toFixed(2)),
    })),
  }),
);
