import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { makeCertificates } from '../../../hosts/server/test/support/certificates.ts';
import { eventually } from '../../../hosts/server/test/support/flag-fixtures.ts';
import { SwitchyardClient, type ClientState, type SwitchyardOptions } from '../src/index.ts';
import { silent } from './fixtures.ts';
import { boolFlagMessage, snapshotMessage, startFakeSyncServer, type FakeSyncServer } from './fake-sync-server.ts';

/**
 * SyncConnection and the client's states against a hand-driven FlagSyncService (a grpc-js server:
 * the same server library the real server uses).
 */

const servers: FakeSyncServer[] = [];
const clients: SwitchyardClient[] = [];
after(async () => {
  for (const client of clients) await client.close();
  for (const server of servers) await server.stop();
});

async function setup(options: Partial<SwitchyardOptions> = {}): Promise<{ server: FakeSyncServer; client: SwitchyardClient; states: ClientState[] }> {
  const server = await startFakeSyncServer();
  servers.push(server);
  const client = new SwitchyardClient({
    sdkKey: 'sdk_test',
    baseUrl: 'http://127.0.0.1:1',
    syncUrl: `127.0.0.1:${server.port}`,
    logger: silent,
    events: { enabled: false },
    reconnect: { baseDelayMs: 20, maxDelayMs: 50 },
    ...options,
  });
  clients.push(client);
  const states: ClientState[] = [];
  client.on('state', ({ to }) => states.push(to));
  return { server, client, states };
}

function nextEvent<T>(client: SwitchyardClient, event: 'change' | 'stale' | 'ready' | 'error', timeoutMs = 15_000): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} event`)), timeoutMs);
    client.once(event as 'change', ((value: T) => {
      clearTimeout(timer);
      resolve(value);
    }) as never);
  });
}

describe('sync stream', () => {
  test('snapshot → ready; increments apply in order and fire change; the key is sent as x-sdk-key', async () => {
    const { server, client, states } = await setup();
    const stream = await server.nextStream();
    assert.equal(stream.sdkKey, 'sdk_test');
    assert.equal(stream.call.request.environment_id, '', 'no environmentId: the key\'s own');
    assert.equal(client.boolVariation('a', { key: 'u' }, true), true);
    assert.equal(client.variationDetail('a', { key: 'u' }, true).error_code, 'CLIENT_NOT_READY');
    stream.send(snapshotMessage(1, [boolFlagMessage('a', false)]));
    await client.waitForReady({ timeoutMs: 15_000 });
    assert.equal(client.state, 'ready');
    assert.equal(client.environmentId, 'env-1');
    assert.equal(client.boolVariation('a', { key: 'u' }, true), false);

    const changed = nextEvent<{ flag_keys: string[] }>(client, 'change');
    stream.send({ sequence_number: 2, flags: [boolFlagMessage('a', true), boolFlagMessage('b', true)], environment_id: 'env-1', project_id: 'proj-1' });
    assert.deepEqual((await changed).flag_keys, ['a', 'b']);
    assert.equal(client.boolVariation('a', { key: 'u' }, false), true);

    const removed = nextEvent<{ flag_keys: string[] }>(client, 'change');
    stream.send({ sequence_number: 3, removed_flag_keys: ['b'], environment_id: 'env-1', project_id: 'proj-1' });
    assert.deepEqual((await removed).flag_keys, ['b']);
    assert.equal(client.variationDetail('b', { key: 'u' }, false).error_code, 'FLAG_NOT_FOUND');
    assert.deepEqual(states, ['ready']);
  });

  test('a sequence gap drops the stream and reconnects for a fresh snapshot', async () => {
    const { server, client } = await setup();
    const first = await server.nextStream();
    first.send(snapshotMessage(1, [boolFlagMessage('a', false)]));
    await client.waitForReady({ timeoutMs: 15_000 });
    first.send({ sequence_number: 3, flags: [boolFlagMessage('a', true)] });
    const second = await server.nextStream();
    assert.equal(client.boolVariation('a', { key: 'u' }, true), false, 'the message after the gap was not applied');
    second.send(snapshotMessage(1, [boolFlagMessage('a', true)]));
    await nextEvent(client, 'change');
    assert.equal(client.boolVariation('a', { key: 'u' }, false), true);
  });

  test('UNAVAILABLE: stale while serving the last definitions, then ready again after a new snapshot', async () => {
    const { server, client, states } = await setup();
    const first = await server.nextStream();
    first.send(snapshotMessage(1, [boolFlagMessage('a', true)]));
    await client.waitForReady({ timeoutMs: 15_000 });
    const stale = nextEvent<{ reason: string }>(client, 'stale');
    first.fail(grpc.status.UNAVAILABLE, 'shutting down');
    assert.match((await stale).reason, /UNAVAILABLE/);
    assert.equal(client.state, 'stale');
    assert.equal(client.boolVariation('a', { key: 'u' }, false), true, 'last known value');
    const second = await server.nextStream();
    const ready = nextEvent(client, 'ready');
    second.send(snapshotMessage(1, [boolFlagMessage('a', true)]));
    await ready;
    assert.deepEqual(states, ['ready', 'stale', 'ready']);
  });

  for (const code of [grpc.status.UNAUTHENTICATED, grpc.status.PERMISSION_DENIED, grpc.status.NOT_FOUND]) {
    test(`${grpc.status[code]}: state error, waitForReady rejects, no reconnect`, async () => {
      const { server, client } = await setup();
      const errors: string[] = [];
      client.on('error', ({ reason }) => errors.push(reason));
      (await server.nextStream()).fail(code, 'the SDK key was revoked');
      await assert.rejects(client.waitForReady({ timeoutMs: 15_000 }), (error: Error) => error.name === 'SdkKeyRefusedError' && error.message.includes(grpc.status[code]));
      assert.equal(client.state, 'error');
      assert.equal(errors.length, 1);
      assert.match(errors[0]!, /the SDK key was revoked/, 'the server\'s grpc-message, decoded');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(server.streams.length, 1, 'never reconnects');
      assert.equal(client.diagnostics().syncConnectAttempts, 1);
    });
  }

  test('TLS: https:// with the CA in `tls.ca` syncs; without trusting the CA the client retries (never a refusal)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'switchyard-sdk-tls-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const certs = makeCertificates(dir);
    const credentials = grpc.ServerCredentials.createSsl(null, [{ cert_chain: readFileSync(certs.serverCert), private_key: readFileSync(certs.serverKey) }]);
    const server = await startFakeSyncServer(0, credentials);
    servers.push(server);
    server.onStream = (stream) => stream.send(snapshotMessage(1, [boolFlagMessage('a', true)]));
    const options = { sdkKey: 'sdk_test', baseUrl: 'http://127.0.0.1:1', syncUrl: `https://127.0.0.1:${server.port}`, logger: silent, events: { enabled: false }, reconnect: { baseDelayMs: 20, maxDelayMs: 50 } };

    const trusting = new SwitchyardClient({ ...options, tls: { ca: readFileSync(certs.ca) } });
    clients.push(trusting);
    await trusting.waitForReady({ timeoutMs: 15_000 });
    assert.equal(trusting.boolVariation('a', { key: 'u' }, false), true);
    assert.equal(server.streams[0]?.sdkKey, 'sdk_test');

    const untrusting = new SwitchyardClient(options);
    clients.push(untrusting);
    await eventually('the client that does not trust the server retries', async () => untrusting.diagnostics().syncConnectAttempts >= 3);
    assert.equal(untrusting.state, 'initializing', 'a TLS failure is retried, not a refusal');
    assert.equal(server.streams.length, 1, 'no stream from the client that does not trust the server');
  });

  test('waitForReady rejects on timeout while nothing arrives', async () => {
    const { client } = await setup();
    await assert.rejects(client.waitForReady({ timeoutMs: 50 }), /no definitions within 50 ms/);
  });

  test('a server that is down: retries with backoff (no storm), then connects when it comes up', async () => {
    const probe = await startFakeSyncServer();
    const port = probe.port;
    await probe.stop();
    const client = new SwitchyardClient({
      sdkKey: 'sdk_test',
      baseUrl: 'http://127.0.0.1:1',
      syncUrl: `127.0.0.1:${port}`,
      logger: silent,
      events: { enabled: false },
      reconnect: { baseDelayMs: 100, maxDelayMs: 400 },
    });
    clients.push(client);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const attempts = client.diagnostics().syncConnectAttempts;
    assert.ok(attempts >= 2 && attempts <= 40, `attempts in 1 s: ${attempts}`);
    const server = await startFakeSyncServer(port);
    servers.push(server);
    server.onStream = (stream) => stream.send(snapshotMessage(1, [boolFlagMessage('a', true)]));
    await client.waitForReady({ timeoutMs: 15_000 });
    assert.equal(client.boolVariation('a', { key: 'u' }, false), true);
  });
});
