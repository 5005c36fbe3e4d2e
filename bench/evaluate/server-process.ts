/**
 * One server of evaluate.bench.ts in a process of its own (forked with tsx through ChildJobs), so
 * that no two servers of the run share a V8 isolate: the real server (hosts/server, over the run's
 * seeded database) or one of the reference servers.
 *
 * Why: servers in one process share the JIT's code and its feedback for node:http, streams and
 * Fastify. Each server's traffic has its own object shapes (a Fastify app's requests and hooks, a
 * bare node:http handler's), so every switch from one target to the next deoptimised code the
 * other had made fast, and with four Fastify apps in the process (Fastify's defaults, the floor,
 * the floor running the evaluation, the server's own) Fastify's shared paths stayed polymorphic
 * for all of them: the measured route then depended on which servers ran before it (its user CPU
 * per request 14-16 µs with the baseline alone beside it, 16-18 µs with the Fastify references
 * too, in runs minutes apart). A production server runs one app in its process; so does each
 * server here, the measured one included (it no longer shares the benchmark's process, which seeds
 * the database).
 *
 * Messages (each answered with the same `id`): `start` (the server to run; answers its URL),
 * `cpu` (this process's CPU time so far, for CPU per request), `gc` (a full garbage collection, once
 * the setup is done), `profile` (`start`, or `stop` with the file to write a V8 CPU profile to).
 * The process closes its server and exits when the parent disconnects.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger } from '@switchyard/transport/logging.ts';
import { startBenchServer, type BenchServer } from '../support/bench-server.ts';
import { CpuProfiler } from '../support/cpu-profiler.ts';
import { collectGarbage } from '../support/measure.ts';
import { requestEvaluation, startBareServer, startBuildingServer, startFastifyServer, startJsonServer, type ReferenceServer, type RequestEvaluation } from './reference-servers.ts';

/** What the route answers with its headers, as plain entries (a Headers object does not cross processes). */
type HeaderEntries = Array<[string, string]>;

/** An instance of the real server over the run's (seeded) database. */
export interface ServerSpec {
  databaseUrl: string;
  admin: { email: string; password: string };
  jwtSecret: string;
  /** More settings for the instance (e.g. INSIGHTS_COUNTING=false for the route without counting). */
  env?: Record<string, string>;
}

/** The server's own evaluation, run by an instance of the server over the run's database. */
export interface EvaluationSpec extends ServerSpec {
  sdkKey: string;
  environmentId: string;
  /** How the request body names the context: the evaluate route's fields, or OFREP's `context`. */
  request: 'evaluate' | 'ofrep';
}

export type ProcessSpec = { kind: 'server'; server: ServerSpec } | ReferenceSpec;

export type ReferenceSpec = { keepAliveMs: number } & (
  | { kind: 'json'; answer: object; headers: HeaderEntries }
  | { kind: 'bare'; bodyBase64: string; headers: HeaderEntries }
  | { kind: 'building'; items: object[]; wrap: 'evaluate' | 'ofrep'; headers: HeaderEntries }
  | { kind: 'fastify'; body: string; asBytes: boolean; fastifyDefaults?: boolean; ofrep?: boolean; evaluation?: EvaluationSpec }
);

export type ServerMessage = { start: ProcessSpec } | { cpu: true } | { gc: true } | { profile: 'start' } | { profile: 'stop'; file: string };

export type ServerReply = { id: number; url?: string; user?: number; system?: number };

let server: ReferenceServer | undefined;
/** The instance of the real server this process runs (the served one, or the one that evaluates). */
let instance: { bench: BenchServer; dataDir: string } | undefined;
const profiler = new CpuProfiler();

async function startInstance(spec: ServerSpec): Promise<BenchServer> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-bench-server-'));
  const bench = await startBenchServer({ databaseUrl: spec.databaseUrl, dataDir, admin: spec.admin, jwtSecret: spec.jwtSecret, env: spec.env });
  instance = { bench, dataDir };
  return bench;
}

/** The server's evaluation of one request body, by an instance of the server of this process's own. */
async function evaluationFor(spec: EvaluationSpec): Promise<RequestEvaluation> {
  const { evaluation, verifier } = (await startInstance(spec)).server.services;
  return requestEvaluation(evaluation, await verifier.verifySdkKey(spec.sdkKey), spec.environmentId, spec.request);
}

async function start(spec: ProcessSpec): Promise<ReferenceServer> {
  switch (spec.kind) {
    case 'server': {
      // Served as is: its own Fastify app, routes and background work; closed with the instance.
      const { server: real } = await startInstance(spec.server);
      return { url: `http://127.0.0.1:${real.httpPort}`, close: async () => {} };
    }
    case 'json':
      return startJsonServer(spec.answer, new Headers(spec.headers), spec.keepAliveMs);
    case 'bare':
      return startBareServer(Buffer.from(spec.bodyBase64, 'base64'), new Headers(spec.headers), spec.keepAliveMs);
    case 'building':
      return startBuildingServer(spec.items, spec.wrap === 'evaluate' ? (flags) => ({ evaluated: true, flags }) : (flags) => ({ flags }), new Headers(spec.headers), spec.keepAliveMs);
    case 'fastify': {
      const evaluate = spec.evaluation ? await evaluationFor(spec.evaluation) : undefined;
      const logger = (instance?.bench.logging ?? createLogger({ filter: 'warn', json: true, destination: process.stderr })).forModule('http');
      const body = spec.asBytes ? Buffer.from(spec.body, 'utf8') : spec.body;
      return startFastifyServer(body, logger, spec.keepAliveMs, { evaluate, ofrep: spec.ofrep, fastifyDefaults: spec.fastifyDefaults });
    }
  }
}

async function handle(message: ServerMessage): Promise<Omit<ServerReply, 'id'>> {
  if ('start' in message) {
    if (server) throw new Error('this process already runs a server');
    server = await start(message.start);
    return { url: server.url };
  }
  if ('cpu' in message) return process.cpuUsage();
  if ('gc' in message) {
    collectGarbage();
    return {};
  }
  if (message.profile === 'start') await profiler.start();
  else await profiler.stop(message.file);
  return {};
}

process.on('message', (message: ServerMessage & { id: number }) => {
  handle(message).then(
    (reply) => process.send?.({ ...reply, id: message.id }),
    (error: unknown) => process.send?.({ id: message.id, error: String((error as Error).stack ?? error) }),
  );
});

process.on('disconnect', () => {
  void (async () => {
    await server?.close();
    if (instance) {
      await instance.bench.server.stop();
      rmSync(instance.dataDir, { recursive: true, force: true });
    }
    process.exit(0);
  })();
});
