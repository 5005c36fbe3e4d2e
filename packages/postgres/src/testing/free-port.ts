import { createServer } from 'node:net';

/** Whether `port` can be listened on at 127.0.0.1 now: the port, or null. */
function tryListen(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : null));
    });
  });
}

/**
 * The kernel hands out ports from its ephemeral range (Linux: 32768-60999) both for `listen(0)`
 * and as the source port of every outgoing connection. A server that is stopped and restarted on
 * the same port (an outage test, an SDK reconnecting to "the same server") can find that port
 * taken in between by any client connection of a busy test run. Ports below the range are never
 * handed out that way.
 */
const STABLE_RANGE = { from: 20_000, to: 32_000 };

/**
 * A free port outside the kernel's ephemeral range, for a server that binds it later: a process
 * started with it, an embedded PostgreSQL, a server restarted on it. A port from `listen(0)` would
 * be free only at that moment: any connection of a busy test run may take it as its source port
 * before the server binds it. Random within the range so that parallel test files rarely try the
 * same one; checked free before it is returned.
 */
export async function stablePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const candidate = STABLE_RANGE.from + Math.floor(Math.random() * (STABLE_RANGE.to - STABLE_RANGE.from));
    if ((await tryListen(candidate)) !== null) return candidate;
  }
  throw new Error(`no free port between ${STABLE_RANGE.from} and ${STABLE_RANGE.to}`);
}
