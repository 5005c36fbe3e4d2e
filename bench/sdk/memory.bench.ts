/**
 * Heap an SDK client needs to hold an environment's definitions (10,000 flags by default).
 *
 *   npm run bench:sdk-memory
 *   node --expose-gc --import tsx bench/sdk/memory.bench.ts [--flags 10000]
 *
 * The real server runs in this process over a throwaway database (BENCH_DATABASE_URL, else
 * TEST_DATABASE_URL, else an embedded PostgreSQL) with two environments: one of `--flags` flags
 * (two rules each: `country in [...]` AND `plan == pro` → a 50/50 split; a second rule serving a
 * variant to a segment-free condition) and an empty one. The flags, as the server's flag service
 * returns them, are written to a JSON file. A child process (memory-probe.ts, --expose-gc, nothing
 * else in its heap) measures heap used after − before, each after gc(), for:
 *   - baseline: the same definitions as plain parsed JSON objects in an array;
 *   - an SDK client started from `bootstrap` with them (and with none: the client's fixed cost);
 *   - an SDK client that received them over the real sync stream (decoded from protobuf), and one
 *     on the empty environment.
 * Per flag: (client with the flags − client without) ÷ flags, next to the baseline's per flag.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Principal } from '@switchyard/core';
import { loadConfig } from '@switchyard/transport/config.ts';
import { createLogger } from '@switchyard/transport/logging.ts';
import { startServer, type RunningServer } from '../../hosts/server/src/server.ts';
import { openBenchDatabase } from '../support/bench-database.ts';
import { option } from '../support/measure.ts';
import { call } from '../support/rest-call.ts';

const FLAGS = option('flags', 10_000);
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' };
const RUN_LIMIT_MS = 15 * 60_000;


const benchFlag = (i: number) => ({
  flag: {
    key: `flag-${String(i).padStart(5, '0')}`,
    description: `benchmark flag ${i}: EU pro users split 50/50, beta testers on`,
    value_type: 'bool',
    variants: [
      { key: 'on', value: true },
      { key: 'off', value: false },
    ],
    off_variant_key: 'off',
    rules: [
      { conditions: [{ attribute: 'beta', op: 'eq', values: [true] }], variant_key: 'on' },
      {
        conditions: [
          { attribute: 'country', op: 'in', values: ['DE', 'FR', 'NL', 'AT'] },
          { attribute: 'plan', op: 'eq', values: ['pro'] },
        ],
        allocation: { context_hash_specs: { user: { parameter_names: [] } }, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] },
      },
    ],
  },
  enabled: true,
});

interface Seeded {
  full: { sdkKey: string; environmentId: string };
  empty: { sdkKey: string; environmentId: string };
  flags: unknown[];
}

async function seed(server: RunningServer, base: string): Promise<Seeded> {
  const root = await call(base, 'POST', '/v1/auth/login', undefined, ADMIN);
  const org = await call(base, 'POST', '/v1/admin/orgs', root.token, { name: 'bench' });
  await call(base, 'POST', `/v1/admin/orgs/${org.org_id}/users`, root.token, { email: 'owner@example.com', display_name: 'owner', password: 'owner-password-1', org_role: 'org_admin' });
  const owner = await call(base, 'POST', '/v1/auth/login', undefined, { email: 'owner@example.com', password: 'owner-password-1', org_id: org.org_id });
  const principal: Principal = await server.services.verifier.verifyBearer(owner.token);
  const environments: Array<{ sdkKey: string; environmentId: string }> = [];
  for (const name of ['full', 'empty']) {
    const project = await call(base, 'POST', `/v1/management/orgs/${org.org_id}/projects`, owner.token, { name });
    const environment = await call(base, 'POST', `/v1/management/projects/${project.project_id}/environments`, owner.token, { name: 'production' });
    const key = await call(base, 'POST', `/v1/management/environments/${environment.environment_id}/sdk-keys`, owner.token);
    environments.push({ sdkKey: key.raw_key, environmentId: environment.environment_id });
  }
  const target = await server.services.flags.target(principal, environments[0]!.environmentId, 'environment');
  const lanes = 16;
  let next = 0;
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < FLAGS) await server.services.flags.create(principal, target, benchFlag(next++));
    }),
  );
  const flags = await server.services.flags.list(principal, target);
  if (flags.length !== FLAGS) throw new Error(`seeded ${flags.length} flags, expected ${FLAGS}`);
  return { full: environments[0]!, empty: environments[1]!, flags };
}

const loadBefore = loadavg()[0] ?? 0;
setTimeout(() => {
  console.error(`bench:sdk-memory: still running after ${RUN_LIMIT_MS / 60_000} minutes; stopping`);
  process.exit(1);
}, RUN_LIMIT_MS).unref();

const db = await openBenchDatabase();
const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-bench-sdk-memory-'));
const server = await startServer(
  loadConfig({
    DATABASE_URL: db.url,
    HTTP_PORT: '0',
    GRPC_PORT: '0',
    SYNC_GRPC_PORT: '0',
    DATA_DIR: dataDir,
    JWT_SECRET: 'bench-sdk-secret-of-at-least-32-bytes!!!',
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
  }),
  createLogger({ filter: 'warn', json: true }),
);
const base = `http://127.0.0.1:${server.httpPort}`;
const probe = fork(fileURLToPath(new URL('./memory-probe.ts', import.meta.url)), [], { execArgv: ['--expose-gc', '--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
let rows: Array<{ name: string; flags: number; bytes: number }> = [];
let seedMs = 0;
let fileBytes = 0;
let failed: unknown;
try {
  const started = performance.now();
  const seeded = await seed(server, base);
  seedMs = performance.now() - started;
  const file = path.join(dataDir, 'flags.json');
  const json = JSON.stringify(seeded.flags);
  fileBytes = Buffer.byteLength(json);
  writeFileSync(file, json);
  rows = await new Promise((resolve, reject) => {
    probe.once('message', (message: any) => (message.type === 'measured' ? resolve(message.rows) : reject(new Error(message.message))));
    probe.once('exit', (code) => reject(new Error(`probe exited (${code})`)));
    probe.send({ type: 'measure', file, baseUrl: base, syncUrl: `127.0.0.1:${server.syncGrpcPort}`, full: { ...seeded.full, flags: FLAGS }, empty: seeded.empty });
  });
} catch (error) {
  failed = error;
} finally {
  if (probe.connected) probe.disconnect();
  await server.stop();
  await db.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
if (failed) {
  console.error('bench:sdk-memory failed:', failed);
  process.exit(1);
}

const byName = (name: string): number => rows.find((r) => r.name === name)!.bytes;
const baselinePerFlag = byName('baseline: parsed JSON array') / FLAGS;
const perFlag = {
  bootstrap: (byName('SDK client, bootstrap') - byName('SDK client, bootstrap, no flags')) / FLAGS,
  sync: (byName('SDK client, sync stream') - byName('SDK client, sync stream, no flags')) / FLAGS,
};
const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(2);
console.log(
  `sdk memory: node ${process.version}, ${FLAGS.toLocaleString('en-US')} flags (${mib(fileBytes)} MiB as JSON, seeded in ${(seedMs / 1000).toFixed(0)} s), heap used after − before with gc(), database: ${db.source}, load average before: ${loadBefore.toFixed(2)}`,
);
const header = ['held', 'flags', 'heap (MiB)', 'per flag (bytes)', 'vs baseline'];
const cells = rows.map((r) => {
  const own = r.name === 'SDK client, bootstrap' ? perFlag.bootstrap : r.name === 'SDK client, sync stream' ? perFlag.sync : r.flags > 0 ? r.bytes / r.flags : Number.NaN;
  return [r.name, String(r.flags), mib(r.bytes), Number.isNaN(own) ? '-' : own.toFixed(0), Number.isNaN(own) ? '-' : `${(own / baselinePerFlag).toFixed(2)}x`];
});
const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
const line = (row: string[]): string => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
console.log(line(header));
console.log(widths.map((w) => '-'.repeat(w)).join('  '));
for (const row of cells) console.log(line(row));
console.log('per flag of a client: (client with the flags − the same client without any) ÷ flags');
console.log(
  JSON.stringify({
    bench: 'sdk-memory',
    node: process.version,
    load_average_before: Number(loadBefore.toFixed(2)),
    flags: FLAGS,
    json_bytes: fileBytes,
    baseline_bytes_per_flag: Math.round(baselinePerFlag),
    bootstrap_bytes_per_flag: Math.round(perFlag.bootstrap),
    sync_bytes_per_flag: Math.round(perFlag.sync),
    results: rows.map((r) => ({ held: r.name, flags: r.flags, heap_bytes: r.bytes })),
  }),
);
