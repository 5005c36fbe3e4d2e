import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, stablePort, type TestDatabase } from '@switchyard/postgres/testing';
import { createFlag, evaluate, onOffFlag } from './support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { spawnServer, stopProcess, type ServerProcess } from './support/server-process.ts';
import { openSync, sdkKeyMetadata } from './support/sync-client.ts';
import { TEST_ADMIN, TEST_JWT_SECRET } from './support/test-server.ts';

/**
 * The split topology with real processes (docs/architecture.md): gateways and services started by
 * their own entry points (`npm run start:gateway`, `npm run start:services`) on one database.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Running {
  process: ServerProcess;
  /** REST port (gateway) or operational HTTP port (services). */
  httpPort: number;
  /** Internal gRPC port (services) or public sync port (gateway). */
  grpcPort: number;
}

async function startServices(db: TestDatabase, grpcPort: number): Promise<Running> {
  const httpPort = await stablePort();
  const process = spawnServer(
    {
      DATABASE_URL: db.url,
      JWT_SECRET: TEST_JWT_SECRET,
      BOOTSTRAP_ADMIN_EMAIL: TEST_ADMIN.email,
      BOOTSTRAP_ADMIN_PASSWORD: TEST_ADMIN.password,
      GRPC_PORT: String(grpcPort),
      HTTP_PORT: String(httpPort),
      APP_ENV: 'test',
      // As every test server: bcrypt at cost 10 made each sign-in of a loaded machine take seconds.
      PASSWORD_HASH_COST: '4',
      // Both processes look for due scheduled changes often, so they race for each one.
      SCHEDULES_POLL_MS: '20',
    },
    { entry: 'services' },
  );
  await process.waitForLine(/services are up/, 60_000);
  return { process, httpPort, grpcPort };
}

async function startGatewayProcess(servicesPort: number, extra: Record<string, string> = {}): Promise<Running> {
  const httpPort = await stablePort();
  const grpcPort = await stablePort();
  const process = spawnServer(
    { HTTP_PORT: String(httpPort), SYNC_GRPC_PORT: String(grpcPort), SERVICES_URL: `127.0.0.1:${servicesPort}`, SERVICES_DEADLINE_MS: '2000', APP_ENV: 'test', ...extra },
    { entry: 'gateway' },
  );
  await process.waitForLine(/gateway is up/, 60_000);
  return { process, httpPort, grpcPort };
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const readyStatus = async (port: number): Promise<number> => (await fetch(`http://127.0.0.1:${port}/readyz`)).status;

describe('split topology, real processes: two gateways and two services processes on one database', () => {
  let db: TestDatabase;
  const processes: ServerProcess[] = [];
  let gateways: Running[];
  let clients: ApiClient[];
  let tenant: Tenant;

  before(async () => {
    db = await createTestDatabase({ migrate: false });
    const first = await startServices(db, await stablePort());
    processes.push(first.process);
    const second = await startServices(db, await stablePort());
    processes.push(second.process);
    gateways = [];
    for (const services of [first, second]) {
      // A loaded machine (the whole suite on 2 cores) can take more than the outage tests' 2 s per
      // call; these tests are about the processes working together, not about the deadline.
      const gateway = await startGatewayProcess(services.grpcPort, { SERVICES_DEADLINE_MS: '10000' });
      processes.push(gateway.process);
      gateways.push(gateway);
    }
    clients = gateways.map((gateway) => api(`http://127.0.0.1:${gateway.httpPort}`));
    const root = await loginAdmin(clients[0]!);
    tenant = await seedTenant(clients[0]!, root.token, 'topology');
  });

  after(async () => {
    await Promise.all(processes.map((process) => stopProcess(process)));
    await db?.drop();
  });

  it('every process reports ready', async () => {
    for (const gateway of gateways) assert.equal(await readyStatus(gateway.httpPort), 200);
  });

  it('a flag changed through one gateway reaches an SDK stream on the other', async () => {
    const stream = openSync(gateways[1]!.grpcPort, {}, sdkKeyMetadata(tenant.rawKey));
    try {
      const first = await stream.next();
      assert.equal(first.full_snapshot, true);
      await createFlag(clients[0]!, tenant.admin.token, tenant.environmentId, onOffFlag('crosses-gateways'));
      const change = await stream.until((message) => message.flags.some((flag) => flag.key === 'crosses-gateways'), 15_000);
      assert.equal(change.environment_id, tenant.environmentId);
    } finally {
      stream.cancel();
    }
  });

  it('scheduled changes are applied exactly once by the two services processes racing for them', async () => {
    const keys = ['sched-a', 'sched-b', 'sched-c', 'sched-d'];
    for (const key of keys) await createFlag(clients[0]!, tenant.admin.token, tenant.environmentId, { ...onOffFlag(key), enabled: false });
    const ids: string[] = [];
    for (const key of keys) {
      // Each its own time, read just before: on a loaded machine the creations take longer than 1.5 s.
      const at = Date.now() + 1500;
      const made = expectStatus(
        await clients[0]!.post(`/v1/environments/${tenant.environmentId}/flags/${key}/scheduled-changes`, { token: tenant.admin.token, body: { execute_at_ms: at, operations: [{ op: 'set_enabled', enabled: true }] } }),
        201,
      );
      ids.push(made.id as string);
    }
    for (const [i, key] of keys.entries()) {
      const path = `/v1/environments/${tenant.environmentId}/flags/${key}/scheduled-changes/${ids[i]}`;
      await waitFor(`${key} applied`, async () => ((await clients[1]!.get(path, { token: tenant.admin.token })).body.status === 'applied' ? true : undefined));
      const flag = expectStatus(await clients[1]!.get(`/v1/environments/${tenant.environmentId}/flags/${key}`, { token: tenant.admin.token }), 200);
      assert.deepEqual([flag.enabled, flag.version], [true, 2], `${key}: written once`);
      const history = expectStatus(await clients[1]!.get(`/v1/environments/${tenant.environmentId}/flags/${key}/history`, { token: tenant.admin.token }), 200);
      assert.equal((history.entries as Array<{ action: string }>).filter((entry) => entry.action === 'flag.scheduled_change').length, 1, `${key}: one entry`);
    }
  });

  it('an SDK key revoked through one gateway is refused by both', async () => {
    const made = expectStatus(await clients[0]!.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token }), 201);
    const key = made.raw_key as string;
    await createFlag(clients[0]!, tenant.admin.token, tenant.environmentId, onOffFlag('revocation-probe'));
    // Both gateways have checked (and cached) the key.
    for (const client of clients) {
      await waitFor('the flag on every gateway', async () => ((await evaluate(client, key, tenant.environmentId, 'u1', { flag_key: 'revocation-probe' })).status === 200 ? true : undefined));
    }
    expectStatus(await clients[0]!.delete(`/v1/management/environments/${tenant.environmentId}/sdk-keys/${made.sdk_key_id}`, { token: tenant.admin.token }), 204);
    const revokedAt = Date.now();
    const refusedAfterMs: number[] = [];
    for (const client of clients) {
      await waitFor('the revoked key refused', async () => ((await evaluate(client, key, tenant.environmentId, 'u1', { flag_key: 'revocation-probe' })).status === 401 ? true : undefined), 10_000);
      refusedAfterMs.push(Date.now() - revokedAt);
    }
    // The bound here is generous for a busy machine; the measured delays are in the test output.
    console.log(`# revoked key refused by the gateways after ${refusedAfterMs.join(' ms and ')} ms`);
  });

  it('an API token revoked through one gateway is refused by the other within 3 s (its cached answer would live 30 s)', async () => {
    const made = expectStatus(
      await clients[0]!.post(`/v1/management/orgs/${tenant.orgId}/api-tokens`, { token: tenant.admin.token, body: { name: 'two gateways', role: 'viewer' } }),
      201,
    );
    const projects = `/v1/management/orgs/${tenant.orgId}/projects`;
    // Both gateways (and the services behind each) have checked, and cached, the token.
    for (const client of clients) {
      await waitFor('the token accepted by every gateway', async () => ((await client.get(projects, { token: made.token })).status === 200 ? true : undefined));
      expectStatus(await client.get(projects, { token: made.token }), 200);
    }
    expectStatus(await clients[0]!.delete(`/v1/management/orgs/${tenant.orgId}/api-tokens/${made.id}`, { token: tenant.admin.token }), 204);
    const revokedAt = Date.now();
    assert.equal((await clients[0]!.get(projects, { token: made.token })).status, 401, 'refused at once where it was revoked');
    await waitFor('the revoked token refused by the other gateway', async () => ((await clients[1]!.get(projects, { token: made.token })).status === 401 ? true : undefined), 5_000);
    const refusedAfterMs = Date.now() - revokedAt;
    console.log(`# revoked API token refused by the other gateway after ${refusedAfterMs} ms`);
    // Pushed, not expired: a cached answer lives 30 s (remote-credential-verifier.ts). Quiet runs
    // take well under 1 s; a loaded CI machine (load ~19 on 2 cores) took 1,030 ms, so 3 s.
    assert.ok(refusedAfterMs <= 3_000, `refused after ${refusedAfterMs} ms`);
  });
});

describe('split topology, real processes: outages of the services', () => {
  let db: TestDatabase;
  let servicesPort: number;
  let services: Running | undefined;
  let gateway: Running;
  let client: ApiClient;

  before(async () => {
    db = await createTestDatabase({ migrate: false });
    servicesPort = await stablePort();
    gateway = await startGatewayProcess(servicesPort);
    client = api(`http://127.0.0.1:${gateway.httpPort}`);
  });

  after(async () => {
    await stopProcess(gateway?.process);
    await stopProcess(services?.process);
    await db?.drop();
  });

  it('a gateway started before its services is not ready, then ready when they come up', async () => {
    assert.equal(await readyStatus(gateway.httpPort), 503);
    const answer = await client.post('/v1/auth/login', { body: { email: TEST_ADMIN.email, password: TEST_ADMIN.password } });
    assert.equal(answer.status, 503);
    assert.equal(answer.body.code, 'UNAVAILABLE');
    services = await startServices(db, servicesPort);
    await waitFor('the gateway ready', async () => ((await readyStatus(gateway.httpPort)) === 200 ? true : undefined), 20_000);
    expectStatus(await client.post('/v1/auth/login', { body: { email: TEST_ADMIN.email, password: TEST_ADMIN.password } }), 200);
  });

  it('services restarted under load: the gateway answers 503 meanwhile (never a hang, never a 500) and recovers by itself', async () => {
    const root = await loginAdmin(client);
    const tenant = await seedTenant(client, root.token, 'outage');
    await createFlag(client, tenant.admin.token, tenant.environmentId, onOffFlag('outage-flag'));
    const statuses = new Map<number, number>();
    let slowest = 0;
    let running = true;
    const load = (async () => {
      while (running) {
        const started = Date.now();
        const [evaluated, listed] = await Promise.all([
          evaluate(client, tenant.rawKey, tenant.environmentId, 'u1', { flag_key: 'outage-flag' }),
          client.get(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token }),
        ]);
        slowest = Math.max(slowest, Date.now() - started);
        for (const status of [evaluated.status, listed.status]) statuses.set(status, (statuses.get(status) ?? 0) + 1);
        await sleep(20);
      }
    })();
    await sleep(500);
    await stopProcess(services!.process);
    // Answers while the services are down.
    await waitFor('503 while the services are down', async () => ((statuses.get(503) ?? 0) > 0 ? true : undefined), 15_000);
    services = await startServices(db, servicesPort);
    const okBefore = statuses.get(200) ?? 0;
    await waitFor('200 again after the restart', async () => ((statuses.get(200) ?? 0) > okBefore + 4 ? true : undefined), 30_000);
    running = false;
    await load;
    const seen = Object.fromEntries(statuses);
    assert.deepEqual(Object.keys(seen).map(Number).filter((status) => status !== 200 && status !== 503), [], `statuses seen: ${JSON.stringify(seen)}`);
    // SERVICES_DEADLINE_MS is 2 s: no request may wait much longer than that.
    assert.ok(slowest < 10_000, `a request took ${slowest} ms`);
  });
});
