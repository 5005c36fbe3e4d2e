/**
 * How fast a change made through one instance takes effect on another (the timings the tests no
 * longer assert: rest-evaluate "freshness" and rest-sdk-keys "a key cached on another instance").
 * Two server instances on one throwaway database; each round changes something through instance
 * A and polls until instance B answers the new way:
 *
 * - flag change: a flag's rules PUT on A until B's REST evaluate serves the new variant;
 * - key revocation: an SDK key B has cached DELETEd on A until B's verifier rejects it.
 *
 * Baseline: the same polling against A itself (the write's own instance sees it at once, so the
 * baseline is the cost of one poll). Prints a table and one JSON line; never fails on a figure.
 *
 *   npx tsx bench/propagation/propagation.bench.ts [--rounds 30]
 */
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '@switchyard/transport/config.ts';
import { createLogger } from '@switchyard/transport/logging.ts';
import { startServer, type RunningServer } from '../../hosts/server/src/server.ts';
import { openBenchDatabase } from '../support/bench-database.ts';
import { median, option } from '../support/measure.ts';

const ROUNDS = option('rounds', 30);
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' };
const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

async function call(base: string, method: string, route: string, auth: { token?: string; sdkKey?: string }, body?: unknown): Promise<any> {
  const headers: Record<string, string> = {};
  if (auth.token) headers.authorization = `Bearer ${auth.token}`;
  if (auth.sdkKey) headers['x-sdk-key'] = auth.sdkKey;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(base + route, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${route}: ${response.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

/** Polls `seen` back to back until it is true; returns the ms from `startedAt`. */
async function until(seen: () => Promise<boolean>, startedAt: number): Promise<number> {
  for (;;) {
    if (await seen()) return performance.now() - startedAt;
    if (performance.now() - startedAt > 60_000) throw new Error('not seen within 60 s');
  }
}

const db = await openBenchDatabase();
const logging = createLogger({ filter: 'warn', json: true });
const start = (): Promise<RunningServer> =>
  startServer(
    loadConfig({
      DATABASE_URL: db.url,
      HTTP_PORT: '0',
      GRPC_PORT: '0',
      SYNC_GRPC_PORT: '0',
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'switchyard-bench-propagation-')),
      JWT_SECRET: 'bench-propagation-secret-of-32-bytes!!',
      BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
      BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
      RUST_LOG: 'warn',
    }),
    logging,
  );
const loadBefore = loadavg()[0] ?? 0;
const a = await start();
const b = await start();
const baseA = `http://127.0.0.1:${a.httpPort}`;
const baseB = `http://127.0.0.1:${b.httpPort}`;

try {
  // Seeding over REST, as an operator would.
  const root = await call(baseA, 'POST', '/v1/auth/login', {}, ADMIN);
  const org = await call(baseA, 'POST', '/v1/admin/orgs', { token: root.token }, { name: 'bench' });
  await call(baseA, 'POST', `/v1/admin/orgs/${org.org_id}/users`, { token: root.token }, { email: 'owner@example.com', display_name: 'owner', password: 'owner-password-1', org_role: 'org_admin' });
  const owner = await call(baseA, 'POST', '/v1/auth/login', {}, { email: 'owner@example.com', password: 'owner-password-1', org_id: org.org_id });
  const auth = { token: owner.token as string };
  const project = await call(baseA, 'POST', `/v1/management/orgs/${org.org_id}/projects`, auth, { name: 'bench' });
  const environment = await call(baseA, 'POST', `/v1/management/projects/${project.project_id}/environments`, auth, { name: 'production' });
  const envId = environment.environment_id as string;
  const key = await call(baseA, 'POST', `/v1/management/environments/${envId}/sdk-keys`, auth);
  const flag = (variant: string) => ({ rules: [{ conditions: [], variant_key: variant }] });
  await call(baseA, 'POST', `/v1/environments/${envId}/flags`, auth, {
    flag: { key: 'bench', value_type: 'string', variants: [{ key: 'on', value: 'ON' }, { key: 'off', value: 'OFF' }], off_variant_key: 'off', rules: [] },
    enabled: true,
  });
  const variantOn = async (base: string): Promise<string> =>
    (await call(base, 'POST', `/v1/environments/${envId}/evaluate`, { sdkKey: key.raw_key }, { flag_key: 'bench', context_key: 'u1', context_type: 'user' })).variant_key;

  const flagLatency: Record<'A' | 'B', number[]> = { A: [], B: [] };
  const revocationLatency: Record<'A' | 'B', number[]> = { A: [], B: [] };
  // Round -1 warms up (snapshots loaded, code paths compiled) and is not counted.
  for (let round = -1; round < ROUNDS; round++) {
    for (const [name, base] of [['A', baseA], ['B', baseB]] as const) {
      const variant = (round * 2 + (name === 'A' ? 0 : 1)) % 2 === 0 ? 'on' : 'off';
      await variantOn(base); // the instance holds the current snapshot
      const startedAt = performance.now();
      await call(baseA, 'PUT', `/v1/environments/${envId}/flags/bench/rules`, auth, flag(variant));
      const ms = await until(async () => (await variantOn(base)) === variant, startedAt);
      if (round >= 0) flagLatency[name].push(ms);
    }
    for (const [name, server] of [['A', a], ['B', b]] as const) {
      const doomed = await call(baseA, 'POST', `/v1/management/environments/${envId}/sdk-keys`, auth);
      await server.services.verifier.verifySdkKey(doomed.raw_key); // now cached there
      const startedAt = performance.now();
      await call(baseA, 'DELETE', `/v1/management/environments/${envId}/sdk-keys/${doomed.sdk_key_id}`, auth);
      const ms = await until(() => server.services.verifier.verifySdkKey(doomed.raw_key).then(() => false, () => true), startedAt);
      if (round >= 0) revocationLatency[name].push(ms);
    }
  }

  const row = (what: string, values: number[]) => {
    const sorted = [...values].sort((x, y) => x - y);
    return { what, p50: median(sorted), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? Number.NaN };
  };
  const rows = [
    row('flag change, same instance (baseline)', flagLatency.A),
    row('flag change, other instance', flagLatency.B),
    row('key revocation, same instance (baseline)', revocationLatency.A),
    row('key revocation, other instance', revocationLatency.B),
  ];
  console.log(`propagation between two instances, ${ROUNDS} rounds (ms from before the write to the new answer; load ${loadBefore.toFixed(2)} before)`);
  console.log('| what | p50 ms | p99 ms | max ms |');
  console.log('|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.what} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.max.toFixed(1)} |`);
  console.log(JSON.stringify({ bench: 'propagation', rounds: ROUNDS, loadBefore, rows }));
} finally {
  await b.stop();
  await a.stop();
  await db.drop();
}
