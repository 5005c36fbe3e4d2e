import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import { loadConfig, loadGatewayConfig } from '@switchyard/transport/config.ts';
import type { RunningGateway } from '@switchyard/gateway/gateway.ts';
import { createLogger, type RootLogger } from '@switchyard/transport/logging.ts';
import { startServer, type RunningServer } from '../../src/server.ts';

/**
 * Which deployment the integration suites run against (docs/architecture.md): `single` (one
 * process) or `split` (a gateway in front of a services process, talking over real gRPC on
 * loopback). `npm test` runs the suites once per topology; TEST_TOPOLOGY picks it per run.
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
  gateway: RunningGateway | null;
  /** A second server process-equivalent on the same database (another instance). */
  startAnotherInstance(): Promise<RunningServer>;
  stop(): Promise<void>;
}

/**
 * The real single-process server on ephemeral ports over a fresh database, with a system-org
 * admin (TEST_ADMIN) and every log line captured. Extra environment variables override defaults.
 */
export async function startTestServer(env: Record<string, string> = {}, options: { topology?: Topology } = {}): Promise<TestServer> {
  const topology = options.topology ?? TOPOLOGY;
  const db = await createTestDatabase({ migrate: false });
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
      ...env,
    });
  const start = () => (topology === 'single' ? startServer(config(), logging) : startSplit(config(), env, logging));
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

const gatewayOf = new WeakMap<RunningServer, RunningGateway>();

/**
 * A services process and a gateway in front of it, as one RunningServer: REST, the public sync
 * port, `http` and the sync hub are the gateway's; the internal gRPC port, repositories and the
 * other in-process services are the services'. Stopping stops the gateway first.
 */
async function startSplit(config: ReturnType<typeof loadConfig>, env: Record<string, string>, logging: RootLogger): Promise<RunningServer> {
  const services = await startServer({ ...config, httpPort: 0 }, logging, 'services');
  let gateway: RunningGateway | undefined;
  try {
    const { startGateway } = await import('@switchyard/gateway/gateway.ts');
    gateway = await startGateway(
      loadGatewayConfig({
        HTTP_PORT: String(config.httpPort),
        SYNC_GRPC_PORT: String(config.syncGrpcPort),
        ...env,
        // A TLS certificate names the host (the test certificates: localhost), not the address.
        SERVICES_URL: `${config.grpcTls ? 'localhost' : '127.0.0.1'}:${services.grpcPort}`,
      }),
      logging,
    );
    for (const deadline = Date.now() + 10_000; !gateway.isReady(); ) {
      if (Date.now() > deadline) throw new Error('the gateway did not become ready');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  } catch (error) {
    // Whatever started is stopped, or its timers and sockets keep the test process alive.
    await gateway?.stop();
    await services.stop();
    throw error;
  }
  const running = gateway;
  const split: RunningServer = {
    ...services,
    httpPort: running.httpPort,
    syncGrpcPort: running.syncGrpcPort,
    http: running.http,
    // The public sync streams are the gateway's: tests reading the hub's counters read its hub.
    services: { ...services.services, sync: running.services.sync },
    async stop() {
      await running.stop();
      await services.stop();
    },
  };
  gatewayOf.set(split, running);
  return split;
}
