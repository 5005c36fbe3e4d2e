import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DomainError, originAllowed, permissionDenied, unauthenticated } from '@switchyard/core';
import type { GatewayServices } from '../../gateway-services.ts';
import { EVENT_STREAM_PATH } from './rest-bulk-event-streams.ts';

const querySchema = {
  type: 'object',
  required: ['channel'],
  properties: { channel: { type: 'string', minLength: 1, maxLength: 512, description: 'The channel token the bulk OFREP answer named' } },
} as const;

const originOf = (request: FastifyRequest): string | undefined => {
  const origin = request.headers.origin;
  return typeof origin === 'string' && origin !== '' ? origin : undefined;
};

/**
 * `GET /ofrep/v1/event-stream?channel=<token>`: the browser event stream a client key's bulk
 * OFREP answer names (docs/client-side.md "7. Streaming"). The token is opened and its key
 * checked as any request's key is (revoked or expired: 401). A page's `Origin` must be in the
 * key's list (403), and is echoed for CORS; a request without one is not a cross-origin page.
 * Caps: 429 with Retry-After. Then `text/event-stream` until the key is revoked, expires, or the
 * server stops.
 */
export function registerClientStreamRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { verifier, evaluation } = services;
  app.get<{ Querystring: { channel: string } }>(
    EVENT_STREAM_PATH,
    { schema: { summary: 'Browser event stream of a client key (OFREP eventStreams, text/event-stream)', querystring: querySchema } },
    async (request, reply) => {
      const streams = services.clientStreams;
      if (streams === undefined || !streams.tokens.ready()) throw new DomainError('UNAVAILABLE', 'event streams are not available yet; retry later');
      const grant = streams.tokens.open(request.query.channel);
      if (grant === 'expired') throw unauthenticated('the channel token has expired: fetch the bulk evaluation again');
      if (grant === 'malformed') throw unauthenticated('invalid channel token');
      const principal = await verifier.verifySdkKey(grant.rawKey);
      if (principal.kind !== 'client_key') throw permissionDenied('event streams are for client keys');
      const origin = originOf(request);
      if (origin !== undefined && !originAllowed(principal.client.allowedOrigins, origin)) throw permissionDenied('this origin is not allowed for the client key');
      const scope = evaluation.clientScopeFor(principal, principal.environmentId);
      const caller = { sdkKeyId: principal.sdkKeyId, rawKey: grant.rawKey, keyExpiresAtMs: principal.client.expiresAtMs, address: request.ip, origin };
      streams.admit(caller);
      reply.hijack();
      streams.open(scope, caller, reply.raw);
    },
  );
}
