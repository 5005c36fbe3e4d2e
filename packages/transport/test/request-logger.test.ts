import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { createHttpApp } from '../src/http/app.ts';
import { createLogger } from '../src/logging.ts';

/**
 * `request.log` of REST routes (src/http/app.ts): the module logger on every route, Fastify's
 * no-op logger on a route that opts out with `config: { requestLogger: false }` (the SDK evaluate
 * route, a hot path), whose unexpected errors the error handler still logs through the module
 * logger.
 */
describe('REST request logger', () => {
  function appWithLog() {
    const lines: Array<Record<string, unknown>> = [];
    const destination = new Writable({
      write: (chunk: Buffer, _encoding, callback) => {
        for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
        callback();
      },
    });
    const logger = createLogger({ filter: 'info', json: true, destination }).forModule('http');
    const app = createHttpApp(logger);
    const seen: { [route: string]: FastifyBaseLogger } = {};
    app.get('/v1/logged', async (request) => {
      seen.logged = request.log;
      return { ok: true };
    });
    app.get('/v1/hot', { config: { requestLogger: false } }, async (request) => {
      seen.hot = request.log;
      return { ok: true };
    });
    app.get('/v1/hot-failing', { config: { requestLogger: false } }, async () => {
      throw new Error('boom in a hot route');
    });
    return { app, logger, lines, seen };
  }

  test('routes log through the module logger; an opted-out route gets a logger that writes nothing', async () => {
    const { app, logger, lines, seen } = appWithLog();
    assert.equal((await app.inject({ method: 'GET', url: '/v1/logged' })).statusCode, 200);
    assert.equal((await app.inject({ method: 'GET', url: '/v1/hot' })).statusCode, 200);
    assert.equal(seen.logged, logger, 'request.log is the module logger');
    assert.notEqual(seen.hot, logger, 'the opted-out route has a logger of its own');
    seen.hot!.error('written by a hot route');
    seen.logged!.warn('written by a logged route');
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(
      lines.map((line) => line.msg),
      ['written by a logged route'],
    );
    await app.close();
  });

  test("an opted-out route's unexpected error is answered 500 and logged through the module logger", async () => {
    const { app, lines } = appWithLog();
    const answer = await app.inject({ method: 'GET', url: '/v1/hot-failing' });
    assert.equal(answer.statusCode, 500);
    assert.deepEqual(answer.json(), { error: 'internal error', code: 'INTERNAL' });
    await new Promise((resolve) => setImmediate(resolve));
    const logged = lines.find((line) => line.msg === 'unhandled error');
    assert.ok(logged, 'the error handler logged it');
    assert.equal((logged.err as { message?: string } | undefined)?.message, 'boom in a hot route');
    await app.close();
  });
});
