import assert from 'node:assert/strict';
import { connect as netConnect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, type TestDatabase } from '@switchyard/postgres/testing';
import { portFrom, spawnServer } from './support/server-process.ts';

const PRODUCTION = { APP_ENV: 'production', JWT_SECRET: 'process-test-secret-at-least-32-bytes!!' };

describe('configuration errors stop the process with one clear line', () => {
  test('a bad port: exit 2', async () => {
    const server = spawnServer({ HTTP_PORT: 'eighty' });
    assert.equal(await server.exited, 2);
    assert.deepEqual(server.lines, ['configuration error: HTTP_PORT must be an integer from 0 to 65535 (got "eighty")']);
  });

  test('a TLS certificate without its key: exit 2', async () => {
    const server = spawnServer({ GRPC_TLS_CERT_FILE: '/nonexistent/cert.pem' });
    assert.equal(await server.exited, 2);
    assert.deepEqual(server.lines, ['configuration error: GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE must be set together']);
  });

  test('APP_ENV=production without DATABASE_URL: exit 2', async () => {
    const server = spawnServer({ ...PRODUCTION });
    assert.equal(await server.exited, 2);
    assert.equal(server.lines.length, 1);
    assert.match(server.lines[0] ?? '', /DATABASE_URL is required when APP_ENV=production/);
  });
});

describe('graceful shutdown', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  after(() => db.drop());

  test('SIGTERM: stops accepting, finishes the request in flight, exits 0', async () => {
    const server = spawnServer({ ...PRODUCTION, DATABASE_URL: db.url });
    const port = portFrom(await server.waitForLine(/REST listening/));
    await server.waitForLine(/"msg":"ready"/);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    assert.equal(ready.status, 200);
    const lines = server.lines.join('\n');
    assert.ok(server.lines.every((line) => !line.startsWith('{') || JSON.parse(line).level !== undefined), 'production logs are JSON');
    assert.ok(!lines.includes(PRODUCTION.JWT_SECRET));

    // A request in flight: headers and half the body sent before SIGTERM, the rest after.
    const socket = netConnect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    const body = '{"padding":"0123456789"}';
    socket.write(`POST /v1/unknown HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body.slice(0, 10)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));

    server.child.kill('SIGTERM');
    await server.waitForLine(/shutting down/);
    await new Promise((resolve) => setTimeout(resolve, 200));
    socket.write(body.slice(10));
    await new Promise<void>((resolve) => socket.once('close', () => resolve()));
    assert.match(answer, /^HTTP\/1\.1 404/);
    assert.match(answer, /"code":"NOT_FOUND"/);

    assert.equal(await server.exited, 0);
    await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`), 'no longer accepting');
  });
});
