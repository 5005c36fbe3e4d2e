import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { DomainError } from '@switchyard/core';
import { createHttpApp, MAX_BODY_BYTES } from '@switchyard/transport/http/app.ts';
import { createLogger } from '@switchyard/transport/logging.ts';

const logged: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, callback) {
    logged.push(String(chunk));
    callback();
  },
});

let app: FastifyInstance;
let base: string;

before(async () => {
  app = createHttpApp(createLogger({ filter: 'info', json: true, destination: sink }).forModule('http'));
  app.post('/echo', { schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, count: { type: 'integer' } } } } }, async (request) => request.body);
  app.get('/domain/:code', async (request) => {
    const { code } = request.params as { code: string };
    throw new DomainError(code as 'NOT_FOUND', `domain failure ${code}`);
  });
  app.get('/crash', async () => {
    throw new Error('secret detail: SELECT * FROM users WHERE password = hunter2');
  });
  app.get('/db-down', async () => {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
});
after(() => app.close());

async function post(path: string, body: string, contentType = 'application/json'): Promise<{ status: number; body: { error: string; code: string } }> {
  const response = await fetch(base + path, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: response.status, body: (await response.json()) as { error: string; code: string } };
}

describe('REST error format', () => {
  test('a valid body passes through', async () => {
    const response = await fetch(`${base}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"a","count":2}' });
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { name: 'a', count: 2 });
  });

  test('malformed JSON → 400 INVALID_ARGUMENT', async () => {
    const { status, body } = await post('/echo', '{"name": ');
    assert.equal(status, 400);
    assert.deepEqual(body, { error: 'request body is not valid JSON', code: 'INVALID_ARGUMENT' });
  });

  test('a missing required field → 400 naming the field', async () => {
    const { status, body } = await post('/echo', '{"count": 1}');
    assert.equal(status, 400);
    assert.equal(body.code, 'INVALID_ARGUMENT');
    assert.match(body.error, /body\.name is required/);
  });

  test('a field of the wrong type → 400 naming the field', async () => {
    const { status, body } = await post('/echo', '{"name": "x", "count": "many"}');
    assert.equal(status, 400);
    assert.match(body.error, /body\.count/);
  });

  test('JSON nested deeper than 64 levels → 400', async () => {
    const deep = `${'['.repeat(65)}${']'.repeat(65)}`;
    const { status, body } = await post('/echo', deep);
    assert.equal(status, 400);
    assert.match(body.error, /deeper than 64/);
  });

  test('JSON nested 64 levels is accepted by the parser (then judged by the schema)', async () => {
    const { status, body } = await post('/echo', `{"name":"x","count":1,"nest":${'['.repeat(63)}${']'.repeat(63)}}`);
    assert.equal(status, 200, JSON.stringify(body));
  });

  test('hostile nesting (500,000 levels) is refused without crashing the server', async () => {
    const { status } = await post('/echo', '['.repeat(500_000));
    assert.equal(status, 400);
    const health = await fetch(`${base}/domain/NOT_FOUND`);
    assert.equal(health.status, 404);
  });

  test('brackets inside strings do not count as nesting', async () => {
    const { status } = await post('/echo', JSON.stringify({ name: '['.repeat(100) + '\\"{'.repeat(50) }));
    assert.equal(status, 200);
  });

  test('prototype poisoning keys are refused', async () => {
    const { status, body } = await post('/echo', '{"name":"x","__proto__":{"admin":true}}');
    assert.equal(status, 400);
    assert.equal(body.code, 'INVALID_ARGUMENT');
  });

  test('a body over 1 MiB → 413', async () => {
    const { status, body } = await post('/echo', JSON.stringify({ name: 'x'.repeat(MAX_BODY_BYTES) }));
    assert.equal(status, 413);
    assert.equal(body.code, 'RESOURCE_EXHAUSTED');
  });

  test('an unsupported content type → 415 with the error format', async () => {
    const { status, body } = await post('/echo', 'name=x', 'application/x-www-form-urlencoded');
    assert.equal(status, 415);
    assert.equal(body.code, 'INVALID_ARGUMENT');
  });

  test('an unknown route → 404 NOT_FOUND in the error format', async () => {
    const response = await fetch(`${base}/v1/nothing/here?x=1`);
    assert.equal(response.status, 404);
    assert.deepEqual(await response.json(), { error: 'no route for GET /v1/nothing/here', code: 'NOT_FOUND' });
  });

  const statuses: Array<[string, number]> = [
    ['NOT_FOUND', 404], ['INVALID_ARGUMENT', 400], ['UNAUTHENTICATED', 401], ['PERMISSION_DENIED', 403],
    ['ALREADY_EXISTS', 409], ['ABORTED', 409], ['FAILED_PRECONDITION', 409], ['RESOURCE_EXHAUSTED', 429],
    ['UNIMPLEMENTED', 501], ['UNAVAILABLE', 502], ['DEADLINE_EXCEEDED', 504], ['CANCELLED', 499],
    ['INTERNAL', 500], ['UNKNOWN', 500],
  ];
  for (const [code, status] of statuses) {
    test(`domain error ${code} → ${status}`, async () => {
      const response = await fetch(`${base}/domain/${code}`);
      assert.equal(response.status, status);
      assert.deepEqual(await response.json(), { error: `domain failure ${code}`, code });
    });
  }

  test('an unexpected error → 500 with no detail, logged server-side', async () => {
    const response = await fetch(`${base}/crash`);
    assert.equal(response.status, 500);
    const text = await response.text();
    assert.deepEqual(JSON.parse(text), { error: 'internal error', code: 'INTERNAL' });
    assert.ok(!text.includes('SELECT') && !text.includes('at '), 'no SQL or stack trace in the response');
    assert.ok(logged.some((line) => line.includes('unhandled error')));
  });

  test('a lost database → 502 UNAVAILABLE', async () => {
    const response = await fetch(`${base}/db-down`);
    assert.equal(response.status, 502);
    assert.deepEqual(await response.json(), { error: 'the database is unavailable; retry later', code: 'UNAVAILABLE' });
  });

  test('a request line with a malformed URL gets a 400, not a crash', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const url = new URL(base);
      const req = httpRequest({ host: url.hostname, port: url.port, path: '/%E0%A4%A', method: 'GET' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    assert.ok(status === 400 || status === 404, `status ${status}`);
  });
});
