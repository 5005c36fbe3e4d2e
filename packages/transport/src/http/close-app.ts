import type { FastifyInstance } from 'fastify';
import { SHUTDOWN_GRACE_MS } from '../shutdown-sequence.ts';

/**
 * Stops the REST server: no new connections, idle keep-alive connections closed at once (Fastify),
 * requests in flight answered, and after `graceMs` every connection still open destroyed. Without
 * that bound, a client holding a connection with a half-sent request kept the stop waiting for the
 * keep-alive timeout (72 s): node stops checking its headers timeout once the server closes.
 */
export async function closeHttpApp(app: FastifyInstance, graceMs = SHUTDOWN_GRACE_MS): Promise<void> {
  const closing = app.close();
  const deadline = setTimeout(() => app.server.closeAllConnections(), graceMs);
  try {
    await closing;
  } finally {
    clearTimeout(deadline);
  }
}
