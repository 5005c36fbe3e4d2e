/**
 * Browser event streams of client keys at scale (issue 32: 10,000 open browser streams on one
 * process: memory, and p99 from a REST flag change to every stream's notice < 1 s).
 *
 *   node --expose-gc --import tsx bench/client/streams.bench.ts [--streams 10000] [--rounds 5]
 *
 * One Switchyard server runs in this process over a throwaway database (BENCH_DATABASE_URL,
 * TEST_DATABASE_URL or an embedded PostgreSQL); the browsers run in a child process
 * (stream-clients.ts: one HTTP/1.1 connection per stream, as EventSource), so the RSS reported is
 * the server's. Steps: seed an environment with one client-visible flag and a client key; a bulk
 * OFREP answer names the stream; open N streams; RSS and heap with them open (after GC) against
 * the same process before; then rounds of a REST flag change (PUT of the flag) timed from
 * just before the request to each stream's notice (p50/p99/max over all streams and rounds).
 * Needs `ulimit -n` above N (each side holds N sockets).
 */
import { fork } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '@switchyard/transport/config.ts';
import { BrowserStreams } from '@switchyard/transport/domains/client/rest-event-streams.ts';
import { createLogger } from '@switchyard/transport/logging.ts';
import { startServer } from '../../hosts/server/src/server.ts';
import { openBenchDatabase } from '../support/bench-database.ts';
import { option } from '../support/measure.ts';
import { call, percentile } from '../support/rest-call.ts';

const STREAMS = option('streams', 10_000);
const ROUNDS = option('rounds', 5);
const ADMIN = { email: 'bench@example.com', password: 'bench-password-1' };
const nowMs = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (bytes: number): number => Math.round((bytes / 1024 / 1024) * 10) / 10;
const gc = (): void => (globalThis as { gc?: () => void }).gc?.();

const database = await openBenchDatabase();
const logging = createLogger({ filter: 'warn', json: true });
const server = await startServer(
  loadConfig({
    DATABASE_URL: database.url,
    HTTP_PORT: '0',
    GRPC_PORT: '0',
    SYNC_GRPC_PORT: '0',
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'switchyard-bench-')),
    JWT_SECRET: 'bench-secret-of-at-least-32-bytes-long!!',
    BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
    CLIENT_STREAM_MAX_PER_KEY: String(STREAMS * 2),
    CLIENT_STREAM_MAX_PER_ADDRESS: String(STREAMS * 2),
  }),
  logging,
);
const base = `http://127.0.0.1:${server.httpPort}`;
const child = fork(fileURLToPath(new URL('./stream-clients.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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

try {
  // --- seed: org, project, environment, client key, one flag ---
  const root = await call(base, 'POST', '/v1/auth/login', undefined, ADMIN);
  const org = await call(base, 'POST', '/v1/admin/orgs', root.token, { name: 'bench' });
  await call(base, 'POST', `/v1/admin/orgs/${org.org_id}/users`, root.token, { email: 'owner@example.com', display_name: 'owner', password: 'owner-password-1', org_role: 'org_admin' });
  const owner = await call(base, 'POST', '/v1/auth/login', undefined, { email: 'owner@example.com', password: 'owner-password-1', org_id: org.org_id });
  const project = await call(base, 'POST', `/v1/management/orgs/${org.org_id}/projects`, owner.token, { name: 'bench' });
  const environment = await call(base, 'POST', `/v1/management/projects/${project.project_id}/environments`, owner.token, { name: 'production' });
  const key = await call(base, 'POST', `/v1/management/environments/${environment.environment_id}/sdk-keys`, owner.token, { kind: 'client', name: 'web', allowed_origins: ['https://app.example.com'], allow_missing_origin: true });
  const principal = await server.services.verifier.verifyBearer(owner.token);
  const target = await server.services.flags.target(principal, environment.environment_id, 'environment');
  const flag = { key: 'banner', description: 'bench', value_type: 'string', variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }], off_variant_key: 'a', rules: [] };
  await server.services.flags.create(principal, target, { flag: { ...flag, client_visible: true } as never, enabled: true } as never);
  const scope = { orgId: org.org_id, projectId: project.project_id, environmentId: environment.environment_id };
  const visible = ((await server.services.snapshots.get(scope)).flags.get('banner') as { client_visible?: boolean } | undefined)?.client_visible === true;
  if (!visible) {
    // Before the visibility part of issue 32 is merged flags carry no client_visible: count every
    // flag as visible here (the predicate costs the same; the fan-out is what is measured).
    const current = server.services.clientStreams!;
    server.services.clientStreams = new BrowserStreams(server.services.sync, server.services.verifier, current.tokens, current.limits, { isVisible: () => true });
  }

  const bulk = await fetch(`${base}/ofrep/v1/evaluate/flags`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': key.raw_key }, body: '{"context":{"targetingKey":"v"}}' });
  if (bulk.status !== 200) throw new Error(`bulk OFREP with the client key: ${bulk.status} ${await bulk.text()}`);
  const answer = (await bulk.json()) as { eventStreams: Array<{ endpoint: { requestUri: string } }> };
  const url = base + answer.eventStreams[0]!.endpoint.requestUri;

  gc();
  await sleep(200);
  const before = process.memoryUsage();
  const opened = await ask({ type: 'open', url, count: STREAMS });
  await sleep(1_000);
  gc();
  await sleep(200);
  const withStreams = process.memoryUsage();
  const open = server.services.clientStreams!.stats().streams;

  // --- delivery rounds (round -1 warms up) ---
  const latencies: number[] = [];
  const maxima: number[] = [];
  for (let round = -1; round < ROUNDS; round++) {
    await ask({ type: 'expect' });
    const delivered = new Promise<{ times: number[] }>((resolve) => replies.push(resolve));
    const started = nowMs();
    await call(base, 'PUT', `/v1/environments/${environment.environment_id}/flags/banner`, owner.token, { flag: { description: `round ${round} ${started}` } });
    const { times } = await delivered;
    const own = times.map((t) => t - started);
    if (round >= 0) {
      latencies.push(...own);
      maxima.push(Math.max(...own));
    }
    await sleep(300);
  }
  latencies.sort((a, b) => a - b);
  console.log(
    JSON.stringify(
      {
        bench: 'client-streams',
        streams: STREAMS,
        open_on_server: open,
        open_ms: Math.round(opened.ms),
        client_visible_field: visible,
        rss_mib_before: mib(before.rss),
        rss_mib_with_streams: mib(withStreams.rss),
        rss_kib_per_stream: Math.round(((withStreams.rss - before.rss) / STREAMS / 1024) * 10) / 10,
        heap_mib_before: mib(before.heapUsed),
        heap_mib_with_streams: mib(withStreams.heapUsed),
        heap_kib_per_stream: Math.round(((withStreams.heapUsed - before.heapUsed) / STREAMS / 1024) * 10) / 10,
        notice_ms: { p50: Math.round(percentile(latencies, 50)), p99: Math.round(percentile(latencies, 99)), max: Math.round(latencies.at(-1)!), rounds: maxima.map(Math.round) },
      },
      null,
      2,
    ),
  );
} finally {
  child.send({ type: 'close' });
  await server.stop();
  await database.drop();
}
