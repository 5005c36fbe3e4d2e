import assert from 'node:assert/strict';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { FastifyInstance } from 'fastify';
import { createHttpApp } from '../src/http/app.ts';
import { createLogger } from '../src/logging.ts';

/**
 * Silent REST sockets are destroyed after HTTP_IDLE_TIMEOUT_MS (src/http/idle-sockets.ts;
 * docs/security.md "Slow or greedy clients"), by a sweep over the server's sockets rather than a
 * timer per socket. The limit here is 400 ms (swept every 100 ms); the bounds leave seconds of room
 * for a busy machine, while the socket that must survive is watched for three limits' time.
 */
const IDLE_MS = 400;
/** More than a client's socket buffers take in on loopback: an answer it stops reading stays queued at the server. */
const BIG_ANSWER = 'x'.repeat(32 * 1024 * 1024);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('REST sockets silent both ways (HTTP_IDLE_TIMEOUT_MS)', () => {
  const silent = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const logger = createLogger({ filter: 'warn', json: true, destination: silent }).forModule('http');
  let app: FastifyInstance;
  let port: number;
  /** The server's side of each connection, in the order they came, with when each closed. */
  const serverSockets: Array<{ socket: Socket; closedAt?: number }> = [];

  before(async () => {
    app = createHttpApp(logger, { timeouts: { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 60_000, idleMs: IDLE_MS } });
    app.get('/v1/big', async (_request, reply) => reply.type('text/plain').send(BIG_ANSWER));
    app.get('/v1/small', async () => ({ ok: true }));
    app.server.on('connection', (socket: Socket) => {
      const entry: { socket: Socket; closedAt?: number } = { socket };
      serverSockets.push(entry);
      socket.once('close', () => (entry.closedAt = performance.now()));
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });

  after(async () => {
    await app.close();
  });

  async function open(): Promise<{ client: Socket; server: { socket: Socket; closedAt?: number } }> {
    const before = serverSockets.length;
    const client = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => client.once('connect', () => resolve()));
    while (serverSockets.length === before) await sleep(5);
    return { client, server: serverSockets[before]! };
  }

  test('a client that stops reading a large answer has its socket destroyed after the limit, not before', async () => {
    const { client, server } = await open();
    client.on('error', () => {});
    // Reads the first bytes (the answer has begun), then nothing more.
    const firstBytes = new Promise<void>((resolve) => client.once('data', () => resolve()));
    client.write('GET /v1/big HTTP/1.1\r\nHost: x\r\n\r\n');
    await firstBytes;
    client.pause();
    const stalledAt = performance.now();
    await sleep(IDLE_MS / 2);
    // Still open at half the limit, unless this wait itself took longer than the limit (a loaded
    // machine): then the check below, against the time the reading stopped, is the one that holds.
    if (performance.now() - stalledAt < IDLE_MS - 50) assert.equal(server.closedAt, undefined, 'still open at half the limit');
    const deadline = stalledAt + 10_000;
    while (server.closedAt === undefined && performance.now() < deadline) await sleep(20);
    client.destroy();
    assert.ok(server.closedAt !== undefined, 'the server destroyed the socket within 10 s');
    assert.ok(server.closedAt - stalledAt >= IDLE_MS - 50, `not before the limit (${Math.round(server.closedAt - stalledAt)} ms)`);
    assert.ok(server.socket.writableLength > 0 || server.socket.destroyed, 'the answer was still queued at the server');
  });

  test('a client that pipelines requests and never reads the answers is destroyed, its queued answers bounded', async () => {
    const { client, server } = await open();
    client.on('error', () => {});
    client.pause();
    // Keeps asking: 500 small requests every 50 ms, none of whose answers it reads. node stops
    // reading the socket once the unread answers pass its buffer mark, so the byte counts stop.
    const request = 'GET /v1/small HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(500);
    const flood = setInterval(() => {
      if (!client.destroyed) client.write(request);
    }, 50);
    const startedAt = performance.now();
    let mostQueued = 0;
    try {
      const deadline = startedAt + 10_000;
      while (server.closedAt === undefined && performance.now() < deadline) {
        mostQueued = Math.max(mostQueued, server.socket.writableLength);
        await sleep(20);
      }
    } finally {
      clearInterval(flood);
      client.destroy();
    }
    assert.ok(server.closedAt !== undefined, 'the server destroyed the flooding socket within 10 s');
    assert.ok(mostQueued < 8 * 1024 * 1024, `unread answers queued at the server stayed bounded (${mostQueued} bytes)`);
  });

  test('a connection that stays silent after opening is destroyed too', async () => {
    const { client, server } = await open();
    client.on('error', () => {});
    const openedAt = performance.now();
    const deadline = openedAt + 10_000;
    while (server.closedAt === undefined && performance.now() < deadline) await sleep(20);
    client.destroy();
    assert.ok(server.closedAt !== undefined, 'the server destroyed the silent socket within 10 s');
    assert.ok(server.closedAt - openedAt >= IDLE_MS - 50, 'not before the limit');
  });

  test('a keep-alive client asking more often than the limit keeps its socket', async () => {
    const { client, server } = await open();
    let answers = 0;
    client.on('data', (chunk: Buffer) => {
      answers += chunk.toString('latin1').split('HTTP/1.1 200').length - 1;
    });
    // Three limits' time, one small request every third of the limit.
    for (let i = 0; i < 9; i++) {
      client.write('GET /v1/small HTTP/1.1\r\nHost: x\r\n\r\n');
      await sleep(IDLE_MS / 3);
    }
    await sleep(50);
    const stillOpen = server.closedAt === undefined;
    client.destroy();
    assert.equal(answers, 9, 'every request answered 200');
    assert.ok(stillOpen, 'the socket was not destroyed while it carried requests');
  });

  test('connections that come and go leave nothing behind in the sweep (no memory held per closed socket)', async () => {
    // A separate app whose server-side sockets only this test's WeakRefs point at.
    const other = createHttpApp(logger, { timeouts: { headersMs: 10_000, requestMs: 30_000, keepAliveMs: 60_000, idleMs: 60_000 } });
    other.get('/v1/small', async () => ({ ok: true }));
    const refs: Array<WeakRef<Socket>> = [];
    let closed = 0;
    other.server.on('connection', (socket: Socket) => {
      refs.push(new WeakRef(socket));
      socket.once('close', () => closed++);
    });
    await other.listen({ port: 0, host: '127.0.0.1' });
    const otherPort = (other.server.address() as AddressInfo).port;
    try {
      for (let i = 0; i < 50; i++) {
        const response = await fetch(`http://127.0.0.1:${otherPort}/v1/small`, { headers: { connection: 'close' } });
        assert.equal(response.status, 200);
        await response.arrayBuffer();
      }
      while (closed < 50) await sleep(10);
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      let alive = refs.length;
      for (let attempt = 0; attempt < 20 && alive > 0; attempt++) {
        await sleep(20);
        gc();
        alive = refs.filter((ref) => ref.deref() !== undefined).length;
      }
      assert.equal(refs.length, 50);
      assert.equal(alive, 0, `${alive} closed sockets still held`);
    } finally {
      await other.close();
    }
  });
});
