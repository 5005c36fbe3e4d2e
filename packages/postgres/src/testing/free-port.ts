import { createServer } from 'node:net';

/** Whether `port` (0: any) can be listened on at 127.0.0.1 now; resolves the port bound, or null. */
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

/** A TCP port free on 127.0.0.1 right now (for embedded servers started by tests and benchmarks). */
export async function freePort(): Promise<number> {
  const port = await tryListen(0);
  if (port === null) throw new Error('no free port');
  return port;
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
 * A free port outside the kernel's ephemeral range, for a server that must get the same port
 * back after a restart. Random within the range so that parallel test files rarely try the same
 * one; checked free before it is returned.
 */
export async function stablePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const candidate = STABLE_RANGE.from + Math.floor(Math.random() * (STABLE_RANGE.to - STABLE_RANGE.from));
    if ((await tryListen(candidate)) !== null) return candidate;
  }
  throw new Error(`no free port between ${STABLE_RANGE.from} and ${STABLE_RANGE.to}`);
}
