import assert from 'node:assert/strict';
import { channel } from 'node:diagnostics_channel';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import { createHttpApp } from '../src/http/app.ts';
import type { HttpRequestObserver } from '../src/http/request-accounting.ts';
import { createLogger } from '../src/logging.ts';

/**
 * REST request accounting (src/http/request-accounting.ts; docs/decisions.md "Metrics"): each
 * server stamps its own requests' start from node:http's diagnostics channel and lets go of the
 * channel when closed. node:test runs this file in a process of its own, so no other server
 * subscribes meanwhile.
 */
type Seen = Array<{ route: string | undefined; status: number; ms: number }>;

describe('REST request accounting', () => {
  const started = channel('http.server.request.start');
  const silent = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const logger = createLogger({ filter: 'warn', json: true, destination: silent }).forModule('http');

  /** An app counting into `seen`, with one route that answers after `delayMs`. */
  async function startApp(seen: Seen, delayMs: number) {
    const observer: HttpRequestObserver = { httpRequest: (_method, route, status, ms) => seen.push({ route, status, ms }) };
    const app = createHttpApp(logger, { metrics: observer });
    app.get('/v1/slow', async () => {
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      return { ok: true };
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
  }

  test('two servers in one process time their own requests, and a closed server leaves the channel', async () => {
    assert.equal(started.hasSubscribers, false);
    const slowSeen: Seen = [];
    const fastSeen: Seen = [];
    const slow = await startApp(slowSeen, 50);
    const fast = await startApp(fastSeen, 0);
    try {
      assert.equal(started.hasSubscribers, true);
      const clientStart = performance.now();
      assert.equal((await fetch(`${slow.base}/v1/slow`)).status, 200);
      const clientMs = performance.now() - clientStart;
      assert.equal((await fetch(`${fast.base}/no/such/route`)).status, 404);
      // Each server saw its own request only: the route's pattern, or none (unmatched) for the 404.
      assert.deepEqual(slowSeen.map(({ route, status }) => ({ route, status })), [{ route: '/v1/slow', status: 200 }]);
      assert.deepEqual(fastSeen.map(({ route, status }) => ({ route, status })), [{ route: undefined, status: 404 }]);
      // The handler waited 50 ms (timers never fire early by more than a millisecond's rounding);
      // the server's time is inside what the client waited.
      assert.ok(slowSeen[0]!.ms >= 49 && slowSeen[0]!.ms <= clientMs, `server ${slowSeen[0]!.ms} ms, client ${clientMs} ms`);
    } finally {
      await slow.app.close();
      await fast.app.close();
    }
    assert.equal(started.hasSubscribers, false, 'closed servers unsubscribed');
  });
});
