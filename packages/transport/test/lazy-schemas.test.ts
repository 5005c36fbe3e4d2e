import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createHttpApp } from '../src/http/app.ts';
import { compileRouteSchemas } from '../src/http/lazy-schemas.ts';
import { createLogger } from '../src/logging.ts';

const silent = () => createLogger({ filter: 'warn', json: true, destination: new Writable({ write: (_chunk, _encoding, callback) => callback() }) }).forModule('http');

/** One route with every validated part and a response schema: 5 functions to compile (params, querystring, headers, body, the 200 serializer). */
function addWidgetRoute(app: FastifyInstance): void {
  app.post(
    '/v1/widgets/:id',
    {
      schema: {
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', pattern: '^w[0-9]+$' } } },
        querystring: { type: 'object', additionalProperties: false, properties: { dry_run: { type: 'string', enum: ['true', 'false'] } } },
        // Upper case on purpose: Fastify lower-cases header schemas (as request headers are) unless
        // a custom validator compiler is installed; the lazy one must not change that.
        headers: { type: 'object', required: ['X-Widget-Tenant'], properties: { 'X-Widget-Tenant': { type: 'string', minLength: 3 } } },
        body: { type: 'object', required: ['name'], additionalProperties: false, properties: { name: { type: 'string', maxLength: 5 } } },
        response: { 200: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' } } } },
      },
    },
    // `secret` is not in the response schema: the serializer leaves it out.
    async (request) => ({ id: (request.params as { id: string }).id, name: (request.body as { name: string }).name, secret: 'not-serialized' }),
  );
}

/**
 * Route schemas compile on first use (src/http/lazy-schemas.ts): the answers must be those of
 * Fastify compiling them at start, over real HTTP, and compileRouteSchemas must surface a schema
 * that does not compile.
 */
describe('route schemas compiled on first use', () => {
  let app: FastifyInstance;
  let base: string;

  before(async () => {
    app = createHttpApp(silent());
    addWidgetRoute(app);
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  });
  after(() => app.close());

  const post = async (path: string, body: unknown, headers: Record<string, string> = { 'x-widget-tenant': 'acme' }) => {
    const response = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  test('every part is validated as an eagerly compiled schema validates it', async () => {
    assert.deepEqual(await post('/v1/widgets/x1', { name: 'a' }), { status: 400, body: { error: 'params.id: must match pattern "^w[0-9]+$"', code: 'INVALID_ARGUMENT' } });
    assert.deepEqual(await post('/v1/widgets/w1?dry_run=maybe', { name: 'a' }), {
      status: 400,
      body: { error: 'querystring.dry_run: must be equal to one of the allowed values', code: 'INVALID_ARGUMENT' },
    });
    // Sent in lower case (fetch lower-cases it anyway), declared in upper case: found.
    assert.deepEqual(await post('/v1/widgets/w1', { name: 'a' }, { 'x-widget-tenant': 'ab' }), {
      status: 400,
      body: { error: 'headers.x-widget-tenant: must NOT have fewer than 3 characters', code: 'INVALID_ARGUMENT' },
    });
    assert.deepEqual(await post('/v1/widgets/w1', { name: 'a' }, {}), { status: 400, body: { error: 'headers.x-widget-tenant is required', code: 'INVALID_ARGUMENT' } });
    assert.deepEqual(await post('/v1/widgets/w1', {}), { status: 400, body: { error: 'body.name is required', code: 'INVALID_ARGUMENT' } });
    assert.deepEqual(await post('/v1/widgets/w1', { name: 'too long' }), { status: 400, body: { error: 'body.name: must NOT have more than 5 characters', code: 'INVALID_ARGUMENT' } });
  });

  test('a valid request passes every part, and the response keeps only what its schema names', async () => {
    assert.deepEqual(await post('/v1/widgets/w7?dry_run=true', { name: 'bolt' }), { status: 200, body: { id: 'w7', name: 'bolt' } });
  });

  test('after a failed validation the next request is judged on its own (the errors of the last call are not kept)', async () => {
    assert.equal((await post('/v1/widgets/w1', {})).status, 400);
    assert.equal((await post('/v1/widgets/w2', { name: 'ok' })).status, 200);
    assert.equal((await post('/v1/widgets/w3', { name: 'too long' })).status, 400);
  });
});

describe('compileRouteSchemas', () => {
  test('compiles what no request compiled yet, once', async () => {
    const app = createHttpApp(silent());
    addWidgetRoute(app);
    await app.ready();
    try {
      assert.equal(compileRouteSchemas(app), 5);
      assert.equal(compileRouteSchemas(app), 0);
    } finally {
      await app.close();
    }
  });

  test('a schema that does not compile starts the app, and compileRouteSchemas throws its error', async () => {
    const app = createHttpApp(silent());
    app.post('/v1/broken', { schema: { body: { type: 'object', properties: { n: { type: 'no-such-type' } } } } }, async () => ({}));
    await app.ready();
    try {
      assert.throws(() => compileRouteSchemas(app), /no-such-type|type must be/);
    } finally {
      await app.close();
    }
  });

  test('an app not made by createHttpApp has nothing pending', async () => {
    const { default: Fastify } = await import('fastify');
    const app = Fastify();
    await app.ready();
    assert.equal(compileRouteSchemas(app), 0);
    await app.close();
  });
});
