import { channel } from 'node:diagnostics_channel';
import type { IncomingMessage, Server } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** What counts the answered requests (the server's metrics). */
export interface HttpRequestObserver {
  /** One answered request: `route` is the route pattern, undefined when no route matched. */
  httpRequest(method: string, route: string | undefined, status: number, milliseconds: number): void;
}

/** node:http publishes every request it begins here, before any `request` listener runs. */
const requestStart = channel('http.server.request.start');

/** When node:http began a request (performance.now()), written on its IncomingMessage. */
const STARTED_AT = Symbol('switchyard.requestStartedAt');

type StampedRequest = IncomingMessage & { [STARTED_AT]?: number };

/**
 * Counts every answered REST request (method, route pattern, status, duration) without adding
 * anything to the response (docs/decisions.md "Metrics": REST request accounting).
 *
 * Fastify's own way, an onResponse hook, attaches a 'finish' and an 'error' listener to every
 * response and removes them again: about 3 µs per request on a bare Fastify app with the evaluate
 * route's schemas, about 1 µs in the server's whole app. Instead:
 *
 * - node:http publishes the start of each request on the `http.server.request.start` diagnostics
 *   channel (before routing); the subscriber stamps the time on the request, for this server's
 *   requests only (several servers may share a process);
 * - an onSend hook, which Fastify runs for every answer it sends (a route's, an error's, a 404's,
 *   a framework error's), records it: the duration runs from the request's start to its answer
 *   being handed to node:http.
 *
 * A request injected without a socket (`app.inject`) has no start and counts a duration of 0.
 */
export function installRequestAccounting(app: FastifyInstance, observer: HttpRequestObserver): void {
  const server: Server = app.server;
  const stampStart = (message: unknown): void => {
    const started = message as { request: StampedRequest; server: Server };
    if (started.server === server) started.request[STARTED_AT] = performance.now();
  };
  requestStart.subscribe(stampStart);
  app.addHook('onClose', (_instance, done) => {
    requestStart.unsubscribe(stampStart);
    done();
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    const startedAt = (request.raw as StampedRequest)[STARTED_AT];
    observer.httpRequest(request.method, request.routeOptions.url, reply.statusCode, startedAt === undefined ? 0 : performance.now() - startedAt);
    done(null, payload);
  });
}
