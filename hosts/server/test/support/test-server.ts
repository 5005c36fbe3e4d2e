import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Writable } from 'node:stream';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import { loadConfig } from '@switchyard/transport/config.ts';
import { createLogger, type RootLogger } from '@switchyard/transport/logging.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { TEST_DB_POOL_SIZE, compiledModule } from './server-process.ts';
import { currentTestBatch } from './test-batch.ts';

/**
 * Which deployment the integration suites run against (docs/architecture.md): `single` (one
 * process) or `split` (a gateway process in front of the services). `npm test` runs the suites
 * once per topology; TEST_TOPOLOGY picks it per run.
 */
export type Topology = 'single' | 'split';

export const TOPOLOGY: Topology = process.env.TEST_TOPOLOGY === 'split' ? 'split' : 'single';

export const TEST_ADMIN = { email: 'root@example.com', password: 'root-password-1' };
export const TEST_JWT_SECRET = 'integration-test-secret-of-at-least-32-bytes';

export interface TestServer {
  server: RunningServer;
  db: TestDatabase;
  /** `http://127.0.0.1:PORT` of the REST API. */
  base: string;
  /** Every log line written so far (JSON, debug level and up): assert no secret is in them. */
  logs: string[];
  /** The topology this server runs as. */
  topology: Topology;
  /** The gateway in front of the services (split topology only). */
  gateway: TestGateway | null;
  /** Open public sync streams: the in-process hub's count, or the gateway's gauge. */
  openSyncStreams(): Promise<number>;
  /** A second server process-equivalent on the same database (another instance). */
  startAnotherInstance(): Promise<RunningServer>;
  stop(): Promise<void>;
}

export interface TestServerOptions {
  topology?: Topology;
  /**
   * The file's tests need no server of their own: they make their own tenants (seedTenant) and
   * read nothing server-wide (no other org's rows, metrics, the log as a whole). When `npm test`
   * runs the file in a process with other files (scripts/test-batches.ts), the files that say so
   * share one server per topology and settings, started by the first and stopped when the
   * process's last file ends: each file saves a server start, a database and, split, a gateway
   * process. Alone (TEST_BATCH=0, a failed batch's files run again, `node --test`), a file gets
   * its own server as usual.
   */
  share?: boolean;
}

/**
 * The real single-process server on ephemeral ports over a fresh database, with a system-org
 * admin (TEST_ADMIN) and every log line captured. Extra environment variables override defaults.
 */
export async function startTestServer(env: Record<string, string> = {}, options: TestServerOptions = {}): Promise<TestServer> {
  const topology = options.topology ?? TOPOLOGY;
  const batch = options.share === true ? currentTestBatch() : undefined;
  if (batch === undefined) return startOwnTestServer(env, topology);
  const key = `${topology} ${JSON.stringify(Object.entries(env).sort(([a], [b]) => a.localeCompare(b)))}`;
  batch.servers ??= new Map();
  let shared = batch.servers.get(key);
  if (shared === undefined) {
    const starting = startOwnTestServer(env, topology);
    shared = starting;
    batch.servers.set(key, starting);
    batch.cleanups.push(() => starting.then((server) => server.stop(), () => {}));
  }
  const server = await shared;
  // Failed logins and API-token guesses are counted per client address, and every file's client
  // is 127.0.0.1: each file starts from none, as it would on a server of its own.
  await server.db.sql`DELETE FROM login_failures`;
  return { ...server, stop: async () => {} };
}

async function startOwnTestServer(env: Record<string, string>, topology: Topology): Promise<TestServer> {
  const db = await createTestDatabase();
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(String(chunk));
      callback();
    },
  });
  const logging = createLogger({ filter: 'debug', json: true, destination: sink });
  const config = () =>
    loadConfig({
      DATABASE_URL: db.url,
      HTTP_PORT: '0',
      GRPC_PORT: '0',
      SYNC_GRPC_PORT: '0',
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'switchyard-it-')),
      JWT_SECRET: TEST_JWT_SECRET,
      BOOTSTRAP_ADMIN_EMAIL: TEST_ADMIN.email,
      BOOTSTRAP_ADMIN_PASSWORD: TEST_ADMIN.password,
      // bcrypt at 4, not 10: half of a typical server test's CPU was signing in (config.ts says
      // more). Production refuses a cost below 10, so a production server keeps the default.
      ...(env.APP_ENV === 'production' ? {} : { PASSWORD_HASH_COST: '4' }),
      DB_POOL_SIZE: TEST_DB_POOL_SIZE,
      ...env,
    });
  const start = () => (topology === 'single' ? startServer(config(), logging) : startSplit(config(), env, logging, sink));
  let server: RunningServer;
  try {
    server = await start();
  } catch (error) {
    // A server that failed to start leaves its database behind, and that connection open.
    await db.drop();
    throw error;
  }
  const others: RunningServer[] = [];
  return {
    server,
    db,
    base: `http://127.0.0.1:${server.httpPort}`,
    logs,
    topology,
    gateway: gatewayOf.get(server) ?? null,
    async openSyncStreams() {
      const gateway = gatewayOf.get(server);
      if (!gateway) return server.services.sync.stats().streams;
      const text = await (await fetch(`http://127.0.0.1:${gateway.httpPort}/metrics`)).text();
      const line = text.split('\n').find((entry) => entry.startsWith('switchyard_sync_streams '));
      if (line === undefined) throw new Error('the gateway reports no switchyard_sync_streams');
      return Number(line.split(' ')[1]);
    },
    async startAnotherInstance() {
      const other = await start();
      others.push(other);
      return other;
    },
    async stop() {
      for (const other of others) await other.stop();
      await server.stop();
      await db.drop();
    },
  };
}

/** The gateway of a split test server: its ports (REST and the public sync port). */
export interface TestGateway {
  httpPort: number;
  syncGrpcPort: number;
}

const gatewayOf = new WeakMap<RunningServer, TestGateway>();

/** The module in-process-gateway.ts: as `npm test` compiled it (its own copy of the packages), or its source. */
type InProcessGateway = typeof import('./in-process-gateway.ts');
let inProcessGateway: Promise<InProcessGateway> | undefined;

function loadInProcessGateway(): Promise<InProcessGateway> {
  const source = fileURLToPath(new URL('./in-process-gateway.ts', import.meta.url));
  // Not a literal import, which the test files' build would bundle with the services' modules.
  inProcessGateway ??= import(pathToFileURL(compiledModule(source) ?? source).href) as Promise<InProcessGateway>;
  return inProcessGateway;
}

/**
 * The services and a gateway in front of them, as one RunningServer. Both run in the test's
 * process, so tests still reach the services' repositories and workers; the gateway calls the
 * services over their internal gRPC port, as it does from a process of its own, and under
 * `npm test` it has its own copy of the workspace's modules (in-process-gateway.ts). REST and the
 * public sync port are the gateway's; the internal gRPC port, `http` (the services' operational
 * routes) and the in-process services are the services'. Stopping stops the gateway first.
 *
 * Why not a process: a gateway process cost ~1.1 s of CPU per test server (its start, and its
 * code compiled again for the few requests of a file), a fifth of the CPU of a profiled run of
 * the REST files in both topologies (bench/README.md "test suite"). The gateway's own process (`npm run start:gateway`, its
 * signals and exit) is tested by topology-processes.test.ts and built-server.test.ts.
 */
async function startSplit(config: ReturnType<typeof loadConfig>, env: Record<string, string>, logging: RootLogger, sink: Writable): Promise<RunningServer> {
  const services = await startServer({ ...config, httpPort: 0 }, logging, 'services');
  let gateway: Awaited<ReturnType<InProcessGateway['startGateway']>>;
  try {
    const { createLogger: createGatewayLogger, loadGatewayConfig, startGateway } = await loadInProcessGateway();
    const gatewayConfig = loadGatewayConfig({
      ...env,
      APP_ENV: 'test',
      HTTP_PORT: String(config.httpPort),
      SYNC_GRPC_PORT: String(config.syncGrpcPort),
      // A TLS certificate names the host (the test certificates: localhost), not the address.
      SERVICES_URL: `${config.grpcTls ? 'localhost' : '127.0.0.1'}:${services.grpcPort}`,
    });
    gateway = await startGateway(gatewayConfig, createGatewayLogger({ filter: gatewayConfig.logFilter, json: true, destination: sink }));
    for (const deadline = Date.now() + 10_000; !gateway.isReady(); ) {
      if (Date.now() > deadline) {
        await gateway.stop();
        throw new Error('the gateway did not become ready');
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  } catch (error) {
    // Whatever started is stopped, or it keeps running (and the test process waiting).
    await services.stop();
    throw error;
  }
  const split: RunningServer = {
    ...services,
    httpPort: gateway.httpPort,
    syncGrpcPort: gateway.syncGrpcPort,
    async stop() {
      await gateway.stop();
      await services.stop();
    },
  };
  gatewayOf.set(split, { httpPort: gateway.httpPort, syncGrpcPort: gateway.syncGrpcPort });
  return split;
}
