import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** What a sweep last saw of one socket: its byte count, and since when it has not moved. */
interface Progress {
  bytes: number;
  sinceMs: number;
}

/** How often the sweep runs: a quarter of the limit, at most every second (the limit then holds to about a second). */
const sweepIntervalMs = (idleMs: number): number => Math.max(25, Math.min(1_000, Math.floor(idleMs / 4)));

/**
 * Destroys a REST socket that has carried no byte either way for `idleMs`: a client that stops
 * reading its answer, or holds a connection open in any state the other limits do not cover
 * (docs/security.md "Slow or greedy clients", `HTTP_IDLE_TIMEOUT_MS`).
 *
 * node's own idle timeout (`server.timeout`, Fastify's `connectionTimeout`) does this with a timer
 * per socket, created anew for every request and re-armed on every read and write: work on every
 * request of the SDK hot paths. Here one interval timer for the whole server compares each open
 * socket's byte count with what it saw the last time, so a request costs nothing, and a socket is
 * destroyed between `idleMs` and `idleMs` plus one sweep interval after its last byte. The sweeps
 * stop when the server closes.
 */
export function destroyIdleSockets(server: Server, idleMs: number): void {
  const sockets = new Map<Socket, Progress>();
  server.on('connection', (socket: Socket) => {
    sockets.set(socket, { bytes: 0, sinceMs: performance.now() });
    socket.once('close', () => sockets.delete(socket));
  });
  const sweep = (): void => {
    const now = performance.now();
    for (const [socket, seen] of sockets) {
      // Both counts include what is still queued in node: an answer written in full to a client
      // that reads none of it does not move them again.
      const bytes = socket.bytesRead + (socket.bytesWritten ?? 0);
      if (bytes !== seen.bytes) {
        seen.bytes = bytes;
        seen.sinceMs = now;
      } else if (now - seen.sinceMs >= idleMs) {
        sockets.delete(socket);
        socket.destroy();
      }
    }
  };
  const timer = setInterval(sweep, sweepIntervalMs(idleMs));
  // The sweeps never keep the process alive on their own.
  timer.unref();
  server.once('close', () => clearInterval(timer));
}
