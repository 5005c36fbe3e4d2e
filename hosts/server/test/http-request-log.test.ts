import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Writable } from 'node:stream';
import { createHttpApp } from '@switchyard/transport/http/app.ts';
import { createLogger } from '@switchyard/transport/logging.ts';

/** A Fastify app of createHttpApp at `filter`, with one route, and the JSON lines it logged. */
async function appLoggingAt(filter: string) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  const app = createHttpApp(createLogger({ filter, json: true, destination: sink }).forModule('http'));
  app.get('/items/:id', async () => ({ ok: true }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  return { app, base, requestLines: () => lines.filter((line) => line.msg === 'request') };
}

describe('request log line', () => {
  test('at debug: one line per request with the route pattern and status, no query string', async () => {
    const { app, base, requestLines } = await appLoggingAt('debug');
    try {
      assert.equal((await fetch(`${base}/items/42?token=secret-in-query`)).status, 200);
      assert.equal((await fetch(`${base}/nowhere?token=secret-in-query`)).status, 404);
      const lines = requestLines();
      assert.equal(lines.length, 2);
      assert.deepEqual(
        lines.map((line) => [line.method, line.url, line.status]),
        [
          ['GET', '/items/:id', 200],
          ['GET', '/nowhere', 404],
        ],
      );
      assert.ok(lines.every((line) => typeof line.reqId === 'string' && typeof line.ms === 'number'));
      assert.ok(!JSON.stringify(lines).includes('secret-in-query'));
      assert.ok(app.printRoutes({ includeHooks: true }).includes('onResponse'));
    } finally {
      await app.close();
    }
  });

  test('above debug: no request line, and no per-request hook to pay for', async () => {
    const { app, base, requestLines } = await appLoggingAt('info');
    try {
      assert.equal((await fetch(`${base}/items/42`)).status, 200);
      assert.deepEqual(requestLines(), []);
      assert.ok(!app.printRoutes({ includeHooks: true }).includes('onResponse'), 'no onResponse hook is registered');
    } finally {
      await app.close();
    }
  });
});
