import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, stablePort, type TestDatabase } from '@switchyard/postgres/testing';
import { splitFlag } from '../../../hosts/server/test/support/experiment-fixtures.ts';
import { createFlag, createSegment, envFlags, evaluate, onOffFlag, put } from '../../../hosts/server/test/support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from '../../../hosts/server/test/support/rest-client.ts';
import { spawnServer, type ServerProcess } from '../../../hosts/server/test/support/server-process.ts';
import { TEST_ADMIN, TEST_JWT_SECRET } from '../../../hosts/server/test/support/test-server.ts';
import { SwitchyardClient, type ClientState, type SwitchyardOptions } from '../src/index.ts';
import { silent } from './fixtures.ts';

/**
 * The SDK against the real server process (hosts/server/src/main.ts): REST to set things up, the
 * sync stream to the SDK. Waits are event-driven with generous bounds (15 s); no timing is asserted.
 */

const WAIT_MS = 15_000;
let db: TestDatabase;
let httpPort: number;
let syncPort: number;
let server: ServerProcess;
let rest: ApiClient;
let tenant: Tenant;
const clients: SwitchyardClient[] = [];
const processes: ServerProcess[] = [];

async function startServer(ports: { http: number; sync: number }): Promise<ServerProcess> {
  const child = spawnServer({
    DATABASE_URL: db.url,
    HTTP_PORT: String(ports.http),
    SYNC_GRPC_PORT: String(ports.sync),
    JWT_SECRET: TEST_JWT_SECRET,
    BOOTSTRAP_ADMIN_EMAIL: TEST_ADMIN.email,
    BOOTSTRAP_ADMIN_PASSWORD: TEST_ADMIN.password,
    DATA_DIR: mkdtempSync(path.join(tmpdir(), 'sdk-it-')),
    LOG_LEVEL: 'info',
  });
  processes.push(child);
  await child.waitForLine(/server: ready|"msg":"ready"/, 60_000);
  return child;
}

async function stopServer(child: ServerProcess): Promise<void> {
  if (child.child.exitCode !== null) return;
  child.child.kill('SIGTERM');
  await child.exited;
}

function sdk(options: Partial<SwitchyardOptions> = {}): SwitchyardClient {
  const client = new SwitchyardClient({
    sdkKey: tenant.rawKey,
    environmentId: tenant.environmentId,
    baseUrl: `http://127.0.0.1:${httpPort}`,
    syncUrl: `127.0.0.1:${syncPort}`,
    logger: silent,
    reconnect: { baseDelayMs: 200, maxDelayMs: 1000 },
    ...options,
  });
  clients.push(client);
  return client;
}

/** Resolves when `probe` holds, checked on every event and every 50 ms; rejects after 15 s. */
async function until(what: string, probe: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!probe()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

before(async () => {
  db = await createTestDatabase({ migrate: false });
  httpPort = await stablePort();
  syncPort = await stablePort();
  server = await startServer({ http: httpPort, sync: syncPort });
  rest = api(`http://127.0.0.1:${httpPort}`);
  const root = await loginAdmin(rest);
  tenant = await seedTenant(rest, root.token, 'sdk');
  await createFlag(rest, tenant.admin.token, tenant.environmentId, onOffFlag('banner'));
});

after(async () => {
  for (const client of clients) await client.close();
  for (const child of processes) await stopServer(child);
  await db.drop();
});

describe('SwitchyardClient against the real server', () => {
  test('ready within the timeout; a REST change reaches variation and fires change', async () => {
    const client = sdk({ environmentId: undefined });
    await client.waitForReady({ timeoutMs: WAIT_MS });
    assert.equal(client.state, 'ready');
    assert.equal(client.environmentId, tenant.environmentId, 'learnt from the first message');
    assert.equal(client.stringVariation('banner', { key: 'u1' }, 'fallback'), 'OFF');

    const changes: string[][] = [];
    client.on('change', ({ flag_keys }) => changes.push(flag_keys));
    expectStatus(await put(rest, `${envFlags(tenant.environmentId)}/banner`, { token: tenant.admin.token, body: { flag: { off_variant_key: 'on' } } }), 200, 'update banner');
    await until('the change', () => client.stringVariation('banner', { key: 'u1' }, 'fallback') === 'ON');
    assert.ok(changes.some((keys) => keys.includes('banner')));
  });

  test('splits bucket exactly as the server does (project id from the stream)', async () => {
    const flag = splitFlag('split');
    await createFlag(rest, tenant.admin.token, tenant.environmentId, flag);
    const client = sdk();
    await client.waitForReady({ timeoutMs: WAIT_MS });
    await until('the split flag', () => client.variationDetail('split', { key: 'x' }, '').reason === 'SPLIT');
    for (let i = 0; i < 20; i++) {
      const answer = expectStatus(await evaluate(rest, tenant.rawKey, tenant.environmentId, `user-${i}`, { flag_key: 'split' }), 200, 'evaluate');
      assert.equal(client.variationDetail('split', { key: `user-${i}` }, '').variant_key, answer.variant_key, `user-${i}`);
    }
  });

  test('a list-segment rule via variationAsync', async () => {
    await createSegment(rest, tenant.admin.token, tenant.environmentId, { key: 'vips', context_type: 'user', kind: 'list', included_keys: ['vip-1'] });
    await createFlag(rest, tenant.admin.token, tenant.environmentId, onOffFlag('vip-banner', [{ id: 'vips', conditions: [], segment_keys: ['vips'], variant_key: 'on' }]));
    const client = sdk();
    await client.waitForReady({ timeoutMs: WAIT_MS });
    // The stream joins its environment's channel, whose snapshot may come from just before the two
    // writes (their notification still on its way): the change follows, as for the split flag.
    await until('the flag and its segment', () => client.variationDetail('vip-banner', { key: 'nobody' }, 'fallback').error_code === undefined);
    assert.equal(await client.variationAsync('vip-banner', { key: 'vip-1' }, 'fallback'), 'ON');
    assert.equal(await client.variationAsync('vip-banner', { key: 'nobody' }, 'fallback'), 'OFF');
    // Answers are cached: the synchronous call knows them now.
    assert.equal(client.stringVariation('vip-banner', { key: 'vip-1' }, 'fallback'), 'ON');
  });

  test('a deleted key: state error, stream closed, no reconnect storm', async () => {
    const second = expectStatus(await rest.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token }), 201, 'second key');
    const client = sdk({ sdkKey: second.raw_key as string });
    await client.waitForReady({ timeoutMs: WAIT_MS });
    const errors: string[] = [];
    client.on('error', ({ reason }) => errors.push(reason));
    expectStatus(await rest.delete(`/v1/management/environments/${tenant.environmentId}/sdk-keys/${second.sdk_key_id}`, { token: tenant.admin.token }), 204, 'delete key');
    await until('state error', () => client.state === 'error');
    assert.match(errors[0] ?? '', /UNAUTHENTICATED/);
    assert.equal(client.stringVariation('banner', { key: 'u1' }, 'fallback'), 'ON', 'still serves what it had');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    assert.equal(client.diagnostics().syncConnectAttempts, 1);
  });

  test('an unknown key is refused: waitForReady rejects', async () => {
    const client = sdk({ sdkKey: 'sdk_not-a-key' });
    await assert.rejects(client.waitForReady({ timeoutMs: WAIT_MS }), /refused the SDK key: UNAUTHENTICATED/);
    assert.equal(client.state, 'error');
  });

  test('server down: stale with the last values; cache file start; restarted: catches up with a change made meanwhile', async () => {
    const cacheFile = path.join(mkdtempSync(path.join(tmpdir(), 'sdk-cache-')), 'flags.json');
    const client = sdk({ cacheFile, cacheWriteIntervalMs: 0 });
    await client.waitForReady({ timeoutMs: WAIT_MS });
    const states: ClientState[] = [];
    client.on('state', ({ to }) => states.push(to));
    // Another instance on the same database, for REST while the first is down.
    const other = await startServer({ http: 0, sync: 0 });
    const otherRest = api(`http://127.0.0.1:${/"port":(\d+)/.exec(other.lines.find((line) => line.includes('REST listening')) ?? '')?.[1]}`);

    await stopServer(server);
    await until('stale', () => client.state === 'stale');
    assert.equal(client.stringVariation('banner', { key: 'u1' }, 'fallback'), 'ON', 'last known value');

    // A new client while the server is down starts from the cache file.
    const offline = sdk({ cacheFile, cacheFallbackMs: 500 });
    await offline.waitForReady({ timeoutMs: WAIT_MS });
    assert.equal(offline.state, 'stale');
    assert.equal(offline.stringVariation('banner', { key: 'u1' }, 'fallback'), 'ON');

    expectStatus(await put(otherRest, `${envFlags(tenant.environmentId)}/banner`, { token: tenant.admin.token, body: { flag: { off_variant_key: 'off' } } }), 200, 'update while down');
    server = await startServer({ http: httpPort, sync: syncPort });
    await until('ready again', () => client.state === 'ready');
    await until('the change made while down', () => client.stringVariation('banner', { key: 'u1' }, 'fallback') === 'OFF');
    await until('the cache-started client ready', () => offline.state === 'ready' && offline.stringVariation('banner', { key: 'u1' }, 'fallback') === 'OFF');
    assert.deepEqual(states, ['stale', 'ready']);
    await stopServer(other);
  });
});
