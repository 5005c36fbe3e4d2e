import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ClientAccess } from './rest-client-access.ts';

/**
 * CORS preflights of the client routes (docs/client-side.md "CORS and origins").
 *
 * Hand-written rather than `@fastify/cors`: that plugin decides from the request alone (one
 * origin list or function per app), while here the preflight — which carries no credential — is
 * answered from the union of every client key's origins, and the actual request is checked
 * against *its own key's* list after authentication (ClientAccess.admit). That second half needs
 * the principal, which only the route's own authentication step has; `@fastify/cors` would add a
 * global hook that sets headers before it is known. What remains is one small OPTIONS handler.
 */

/** A client route: its path (a Fastify pattern, as registered) and the methods browsers may call. */
export interface ClientRoute {
  url: string;
  methods: readonly ('GET' | 'POST')[];
}

/**
 * The routes a browser may call with a client key. The browser stream's route (another part of
 * docs/client-side.md) joins by passing its own list to registerClientCors.
 */
export const CLIENT_ROUTES: readonly ClientRoute[] = [
  { url: '/ofrep/v1/evaluate/flags', methods: ['POST'] },
  { url: '/ofrep/v1/evaluate/flags/:key', methods: ['POST'] },
  { url: '/v1/environments/:env_id/exposures', methods: ['POST'] },
  { url: '/v1/environments/:env_id/events', methods: ['POST'] },
  { url: '/v1/environments/:env_id/events/batch', methods: ['POST'] },
  { url: '/v1/environments/:env_id/evaluation-summaries', methods: ['POST'] },
];

/**
 * Request headers a page may send: the key (`X-API-Key`, `x-sdk-key`), a key or signed context
 * token (`Authorization`), JSON bodies, ETag revalidation, and idempotent retries of events.
 */
export const ALLOWED_HEADERS = 'authorization, content-type, if-none-match, x-api-key, x-sdk-key, idempotency-key';

/**
 * How long a browser may reuse a preflight answer (Chromium caps it at 2 hours). Only the
 * preflight is cached: every actual request is still checked against its key, so a revoked key or
 * a removed origin is refused at once whatever the browser remembers.
 */
export const PREFLIGHT_MAX_AGE_SECONDS = 7_200;

const clientRouteUrls = new Set<string>(CLIENT_ROUTES.map((route) => route.url));

/** Whether the request was routed to one of the client routes (for hooks shared with them, e.g. limits). */
export function isClientRouteRequest(request: FastifyRequest, routes: ReadonlySet<string> = clientRouteUrls): boolean {
  const url = request.routeOptions.url;
  return url !== undefined && routes.has(url);
}

/**
 * `OPTIONS` on each client route: 204 with the CORS headers when some active client key allows
 * the `Origin`; otherwise 403 without any (the browser then refuses the actual request itself).
 * Answered before and without authentication, from memory.
 */
export function registerClientCors(app: FastifyInstance, access: ClientAccess, routes: readonly ClientRoute[] = CLIENT_ROUTES): void {
  for (const route of routes) {
    const methods = route.methods.join(', ');
    app.options(
      route.url,
      // A hot path that logs nothing: no per-request logger (createHttpApp).
      { config: { requestLogger: false }, schema: { hide: true } },
      (request, reply) => {
        const origin = request.headers.origin;
        if (typeof origin !== 'string' || !access.preflightAllows(origin)) {
          void reply.code(403).header('vary', 'Origin').send({ error: 'this origin is not allowed by any client key', code: 'PERMISSION_DENIED' });
          return;
        }
        void reply
          .code(204)
          .header('access-control-allow-origin', origin)
          .header('access-control-allow-methods', methods)
          .header('access-control-allow-headers', ALLOWED_HEADERS)
          .header('access-control-max-age', String(PREFLIGHT_MAX_AGE_SECONDS))
          .header('vary', 'Origin')
          .send();
      },
    );
  }
}
