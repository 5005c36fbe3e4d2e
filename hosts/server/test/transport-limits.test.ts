import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { loadConfig } from '@switchyard/transport/config.ts';
import { HealthService } from '@switchyard/transport/grpc/health-service.ts';
import { createHttpApp } from '@switchyard/transport/http/app.ts';
import { createLogger } from '@switchyard/transport/logging.ts';
import { api, loginAdmin, seedTenant, type Tenant } from './support/rest-client.ts';
import { endsWith, openSync, sdkKeyMetadata, type OpenStream } from './support/sync-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` every 20 ms; fails after `timeoutMs` (generous: the event, not the bound, is the point). */
async function eventually(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

let it: TestServer;
let tenant: Tenant;
const open: OpenStream[] = [];

before(async () => {
  // Short limits, so the tests can wait for the event with a generous bound.
  it = await startTestServer({
    HTTP_HEADERS_TIMEOUT_MS: '500',
    HTTP_REQUEST_TIMEOUT_MS: '1000',
    SYNC_MAX_STREAMS_PER_KEY: '2',
    GRPC_MAX_CONCURRENT_STREAMS: '2',
  });
  const rest = api(it.base);
  tenant = await seedTenant(rest, (await loginAdmin(rest)).token, 'limits');
});

after(async () => {
  for (const stream of open) stream.cancel();
  await it.stop();
});

describe('REST slow clients', () => {
  test('a connection that sends half a request header is answered 408 and closed after HTTP_HEADERS_TIMEOUT_MS', async () => {
    const socket = connect(it.server.httpPort, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const startedAt = Date.now();
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    // node:http's default is 60 s (checked every 30 s); 20 s is generous for a 0.5 s limit.
    const outcome = await Promise.race([closed.then(() => 'closed'), sleep(20_000).then(() => 'still open')]);
    socket.destroy();
    assert.equal(outcome, 'closed', 'the server closed the connection');
    assert.match(answer, /^HTTP\/1\.1 408/);
    assert.ok(Date.now() - startedAt >= 400, 'not before the limit');
  });
});

describe('per-SDK-key cap on sync streams (SYNC_MAX_STREAMS_PER_KEY=2)', () => {
  test('stream 3 of one key ends with RESOURCE_EXHAUSTED; after one closes a new one is accepted', async () => {
    const request = { environment_id: tenant.environmentId };
    const first = openSync(it.server.syncGrpcPort, request, sdkKeyMetadata(tenant.rawKey));
    const second = openSync(it.server.syncGrpcPort, request, sdkKeyMetadata(tenant.rawKey));
    open.push(first, second);
    await first.next(20_000);
    await second.next(20_000);

    const third = openSync(it.server.syncGrpcPort, request, sdkKeyMetadata(tenant.rawKey));
    const refused = await endsWith(third, grpc.status.RESOURCE_EXHAUSTED, 20_000);
    assert.match(refused.details, /already has 2 open streams/);
    assert.equal(third.messages.length, 0);
    assert.equal(await it.openSyncStreams(), 2);

    first.cancel();
    await eventually(async () => (await it.openSyncStreams()) === 1, 'the cancelled stream to free its slot');
    const fourth = openSync(it.server.syncGrpcPort, request, sdkKeyMetadata(tenant.rawKey));
    open.push(fourth);
    assert.equal((await fourth.next(20_000)).full_snapshot, true);
  });
});

describe('gRPC concurrent streams per connection (GRPC_MAX_CONCURRENT_STREAMS=2)', () => {
  test('one connection gets at most 2 open calls; the third starts only when one ends', async () => {
    // Health Watch calls stay open and answer at once: three of them on ONE connection.
    const client = new HealthService(`127.0.0.1:${it.server.grpcPort}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as grpc.Client & {
      watch(request: { service: string }): grpc.ClientReadableStream<{ status: string }>;
    };
    const watch = (): { call: grpc.ClientReadableStream<{ status: string }>; statuses: string[]; errors: grpc.ServiceError[] } => {
      const call = client.watch({ service: '' });
      const statuses: string[] = [];
      const errors: grpc.ServiceError[] = [];
      call.on('data', (message: { status: string }) => statuses.push(message.status));
      call.on('error', (error: grpc.ServiceError) => errors.push(error));
      return { call, statuses, errors };
    };
    try {
      const first = watch();
      const second = watch();
      await eventually(() => first.statuses.length > 0 && second.statuses.length > 0, 'the first two calls to be answered');
      const third = watch();
      // A negative check: the third call must not be answered while two are open. The longer
      // the wait the stronger the check; a slow machine only makes it weaker, never flaky.
      await sleep(1_500);
      assert.deepEqual(third.statuses, [], 'the third call waits for a free stream');
      first.call.cancel();
      await eventually(() => third.statuses.length > 0 || third.errors.length > 0, 'the third call to start (or be refused) once the first ended');
      if (third.errors.length > 0) {
        // Node 22 and later: the waiting call's HEADERS reach the server with the first call's
        // RST_STREAM, before node:http2 has let go of the reset stream, and it refuses the call
        // (ENHANCE_YOUR_CALM, RESOURCE_EXHAUSTED to the client) instead of serving it; Node 20 serves it.
        // The limit still holds, and the slot is free for the next call.
        assert.ok(Number(process.versions.node.split('.')[0]) >= 22, `refused on Node ${process.version}: ${third.errors[0]?.message}`);
        assert.equal(third.errors[0]?.code, grpc.status.RESOURCE_EXHAUSTED, third.errors[0]?.message);
        const fourth = watch();
        await eventually(() => fourth.statuses.length > 0, 'a later call to start in the freed slot');
        assert.deepEqual(fourth.statuses, ['SERVING']);
        fourth.call.cancel();
      } else {
        assert.deepEqual(third.statuses, ['SERVING']);
        third.call.cancel();
      }
      second.call.cancel();
    } finally {
      client.close();
    }
  });
});

describe('client address behind a proxy (TRUST_PROXY)', () => {
  async function clientAddress(trustProxy: string, forwardedFor: string): Promise<string> {
    const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() });
    const app = createHttpApp(createLogger({ filter: 'warn', json: true, destination: sink }).forModule('http'), { trustProxy: loadConfig({ TRUST_PROXY: trustProxy }).trustProxy });
    // A route that reflects what every per-address limit (login throttling) sees.
    app.get('/ip', async (request) => ({ ip: request.ip }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (app.server.address() as { port: number }).port;
      const response = await fetch(`http://127.0.0.1:${port}/ip`, { headers: { 'x-forwarded-for': forwardedFor } });
      return ((await response.json()) as { ip: string }).ip;
    } finally {
      await app.close();
    }
  }

  test('TRUST_PROXY=true believes one hop: the rightmost X-Forwarded-For entry, not the client-written leftmost one', async () => {
    assert.equal(await clientAddress('true', '6.6.6.6, 1.2.3.4'), '1.2.3.4');
    assert.equal(await clientAddress('true', '7.7.7.7, 1.2.3.4'), '1.2.3.4', 'a different spoofed entry: the same client address');
  });

  test('a hop count, a proxy list, and false', async () => {
    assert.equal(await clientAddress('2', '6.6.6.6, 5.5.5.5, 1.2.3.4'), '5.5.5.5');
    assert.equal(await clientAddress('127.0.0.1, 10.0.0.0/8', '6.6.6.6, 5.5.5.5, 10.1.2.3'), '5.5.5.5');
    assert.equal(await clientAddress('false', '6.6.6.6, 1.2.3.4'), '127.0.0.1');
  });
});
