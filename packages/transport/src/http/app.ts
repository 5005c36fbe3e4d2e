import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from '../config.ts';
import type { Logger } from '../logging.ts';
import { MAX_PATH_PARAM_LENGTH, answerClientError, answerFrameworkError, installErrorHandling } from './error-handling.ts';
import { installJsonBodyParser } from './json-body.ts';
import { installStringContentCheck } from './string-content.ts';

/** Largest accepted request body (docs/contract.md "Events, exposures and idempotency": 1 MiB per body; 413 beyond). */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Trusts the `hops` addresses nearest to us: the socket's peer and then X-Forwarded-For from the
 * right. The client address is the next entry — the one the outermost trusted proxy saw — and
 * never an entry further left, which whoever sent the request could have written.
 */
const trustHops = (hops: number) => (_address: string, hop: number): boolean => hop < hops;

/**
 * The Fastify instance every REST route is registered on: hardened JSON parsing, the `{error, code}`
 * error format everywhere, and one debug line per request instead of Fastify's two info lines
 * (the SDK routes are hot paths).
 */
export interface HttpRequestObserver {
  /** One answered request: `route` is the route pattern, undefined when no route matched. */
  httpRequest(method: string, route: string | undefined, status: number, milliseconds: number): void;
}

export function createHttpApp(
  logger: Logger,
  options: { trustProxy?: false | number | string; timeouts?: HttpTimeouts; metrics?: HttpRequestObserver } = {},
): FastifyInstance {
  const timeouts = options.timeouts ?? DEFAULT_HTTP_TIMEOUTS;
  const app = Fastify({
    // Slow clients (docs/security.md): headers and the whole request must arrive in
    // time, idle keep-alive connections and silent sockets are closed. node:http checks the first
    // two every `connectionsCheckingInterval`, so that runs often enough for the limits to hold.
    http: {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs),
    },
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    connectionTimeout: timeouts.idleMs,
    loggerInstance: logger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: MAX_BODY_BYTES,
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: answerFrameworkError,
    clientErrorHandler: answerClientError,
    requestIdHeader: 'x-request-id',
    // A hop count trusts that many proxies nearest to us (Fastify takes it as a function); a list
    // of addresses/CIDRs is passed on as is.
    trustProxy: typeof options.trustProxy === 'number' ? trustHops(options.trustProxy) : (options.trustProxy ?? false),
    return503OnClosing: true,
    ajv: { customOptions: { allErrors: false, coerceTypes: false, removeAdditional: false, allowUnionTypes: true } },
    // Fastify makes a child logger per request by default; with our redaction paths that costs
    // ~2 µs on every SDK call. Requests share the module logger instead, and the few lines we log
    // per request carry `reqId` themselves.
    childLoggerFactory: (logger) => logger,
  });
  installJsonBodyParser(app);
  installStringContentCheck(app);
  installErrorHandling(app);
  // Request metrics: a callback hook (no promise), the route pattern (never the URL) and Fastify's
  // own elapsed time, so nothing is stored per request.
  const metrics = options.metrics;
  if (metrics) {
    app.addHook('onResponse', (request, reply, done) => {
      metrics.httpRequest(request.method, request.routeOptions.url, reply.statusCode, reply.elapsedTime);
      done();
    });
  }
  // Only when debug is on: an onResponse hook costs every request (a promise and a hook-runner
  // step) even when it logs nothing, and the SDK routes are hot paths.
  if (logger.isLevelEnabled('debug')) {
    app.addHook('onResponse', async (request, reply) => {
      request.log.debug(
        // The route pattern, or the bare path for unknown routes: query strings may carry anything.
        { reqId: request.id, method: request.method, url: request.routeOptions.url ?? request.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        'request',
      );
    });
  }
  return app;
}
