import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { DEFAULT_HTTP_TIMEOUTS, type HttpTimeouts } from '../config.ts';
import type { Logger } from '../logging.ts';
import { MAX_PATH_PARAM_LENGTH, answerClientError, answerFrameworkError, installErrorHandling } from './error-handling.ts';
import { destroyIdleSockets } from './idle-sockets.ts';
import { installJsonBodyParser } from './json-body.ts';
import { lazySchemas } from './lazy-schemas.ts';
import { installRequestAccounting, type HttpRequestObserver } from './request-accounting.ts';
import { installStringContentCheck } from './string-content.ts';

export type { HttpRequestObserver } from './request-accounting.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the route's `request.log` is Fastify's no-op logger instead of ours (see createHttpApp). */
    requestLogger?: boolean;
  }
}

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
export function createHttpApp(
  logger: Logger,
  options: { trustProxy?: false | number | string; timeouts?: HttpTimeouts; metrics?: HttpRequestObserver } = {},
): FastifyInstance {
  const timeouts = options.timeouts ?? DEFAULT_HTTP_TIMEOUTS;
  // Each route's validators and serializers are compiled on its first request (lazy-schemas.ts):
  // compiling them all made most of a server's start.
  const schemas = lazySchemas();
  const app = Fastify({
    // Slow clients (docs/security.md): headers and the whole request must arrive in
    // time, idle keep-alive connections and silent sockets are closed. node:http checks the first
    // two every `connectionsCheckingInterval`, so that runs often enough for the limits to hold;
    // silent sockets are found by destroyIdleSockets' sweep, not by a timer on every socket.
    http: {
      headersTimeout: timeouts.headersMs,
      requestTimeout: timeouts.requestMs,
      connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs),
    },
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    // Fastify gets no logger of its own: with one, it attaches a 'finish' and an 'error' listener
    // to every response to time it and log its end (measured on a bare Fastify app: about 3 µs per
    // request), and we log no request lines. Requests still log through ours: `request.log` and
    // `reply.log`, Fastify's warnings about a request included, come from the child logger factory
    // below; only `app.log` (server-level lines, none of ours) is silent.
    logger: false,
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
    ajv: { customOptions: { allErrors: false, coerceTypes: false, removeAdditional: false, allowUnionTypes: true }, onCreate: schemas.onAjvCreate },
    schemaController: schemas.schemaController,
  });
  schemas.register(app);
  // Every request's `request.log` is the module logger itself: a child per request, with our
  // redaction paths, would cost ~2 µs on every SDK call, and the few lines we log per request
  // carry `reqId` themselves. Fastify checks what a factory of ours returns on every request,
  // though (seven methods looked up twice each, about 3,000 instructions), so a route can opt out
  // with `config: { requestLogger: false }`: it then keeps Fastify's own factory, which Fastify
  // skips when it has no logger, and its `request.log` is Fastify's no-op logger. The error
  // handler logs through the module logger either way; Fastify's warnings about misuse of a reply
  // on such a route go unlogged (the SDK evaluate route, whose handler sends once).
  const fastifyChildLoggerFactory = app.childLoggerFactory;
  app.setChildLoggerFactory(() => logger as FastifyBaseLogger);
  app.addHook('onRoute', (route) => {
    if (route.config?.requestLogger === false) route.childLoggerFactory = fastifyChildLoggerFactory;
  });
  destroyIdleSockets(app.server, timeouts.idleMs);
  installJsonBodyParser(app);
  installStringContentCheck(app);
  installErrorHandling(app, logger);
  // Request metrics by route pattern (never the URL), with no listener on the response.
  if (options.metrics) installRequestAccounting(app, options.metrics);
  // Only when debug is on: an onResponse hook costs every request (listeners on the response, a
  // hook-runner step) even when it logs nothing, and the SDK routes are hot paths.
  if (logger.isLevelEnabled('debug')) {
    app.addHook('onResponse', async (request, reply) => {
      logger.debug(
        // The route pattern, or the bare path for unknown routes: query strings may carry anything.
        { reqId: request.id, method: request.method, url: request.routeOptions.url ?? request.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
        'request',
      );
    });
  }
  return app;
}
