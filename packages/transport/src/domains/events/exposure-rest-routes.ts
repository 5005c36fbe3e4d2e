import type { FastifyInstance } from 'fastify';
import { MAX_EVENTS_PER_REQUEST, type IncomingExposure } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateClientRoute } from '../client/rest-client-credentials.ts';
import { clientBodyLimit } from '../client/rest-client-body-limit.ts';
import { admitKeyRequest, countRateLimited } from '../client/rest-client-limits.ts';
import { SDK_OR_BEARER, envParams, idempotencyHeaders, ingestResponse, tooManyEntries } from './rest-routes.ts';

/** Field types are documented, not enforced: a bad entry is rejected alone (see rest-routes.ts). */
const exposureSchema = {
  type: 'object',
  description: 'Who saw which variant of a flag. The flag must be an active flag of the environment and the variant one of its variants.',
  properties: {
    flag_key: { description: 'string, required' },
    variant_key: { description: 'string, required: a variant key of the flag' },
    attributes: {
      description:
        'object of scalars: the context\'s attributes as evaluated. Client keys only (docs/client-side.md "5. Exposures and events"): the server evaluates the context again and accepts only the variant it serves',
    },
    context_type: { description: 'string, required (at most 64 characters)' },
    context_key: { description: 'string, required (at most 512 characters)' },
    timestamp_ms: { description: 'integer >= 0 or null: client time in epoch ms; absent, null or 0: the time the server received it' },
  },
  examples: [{ flag_key: 'new-checkout', variant_key: 'treatment', context_type: 'user', context_key: 'user-42' }],
} as const;

const exposuresBody = {
  description: '`{exposures: [...]}` (docs/contract.md "Events, exposures and idempotency"), or the bare array; at most 10,000 exposures.',
  anyOf: [
    { type: 'object', required: ['exposures'], properties: { exposures: { type: 'array', items: exposureSchema } } },
    { type: 'array', items: exposureSchema },
  ],
} as const;

/**
 * `POST /v1/environments/{env_id}/exposures` (docs/contract.md "Events, exposures and idempotency"), SDK key or bearer: exposures feed
 * experiment participants. 202 `{accepted_count, rejected_keys, rejected}` once the accepted ones are
 * committed; rejected entries report their flag key and why.
 */
export function registerExposureRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { ingest, verifier, clientAccess } = services;

  app.post<{ Params: { env_id: string }; Headers: { 'idempotency-key'?: string }; Body: { exposures: IncomingExposure[] } | IncomingExposure[] }>(
    '/v1/environments/:env_id/exposures',
    {
      // A client key's body is at most 32 KiB; its 429s counted (docs/client-side.md "6. Limits").
      preParsing: clientBodyLimit,
      onError: countRateLimited(services, 'ingest'),
      schema: {
        tags: ['exposures'],
        summary: 'Record which variant contexts were exposed to (at most 10,000 per request)',
        security: SDK_OR_BEARER,
        params: envParams,
        headers: idempotencyHeaders,
        body: exposuresBody,
        response: { 202: ingestResponse },
      },
    },
    async (request, reply) => {
      // A client key's Bearer value is its signed context (docs/client-side.md "5. Exposures and events").
    const { principal, contextToken } = await authenticateClientRoute(verifier, request, { bearerMayBeKey: false, userTokens: 'accept' });
      clientAccess.admit(request, reply, principal);
      const exposures = Array.isArray(request.body) ? request.body : request.body.exposures;
      admitKeyRequest(services, request, principal, 'ingest', exposures.length);
      const scope = await ingest.scope(principal, request.params.env_id);
      if (exposures.length > MAX_EVENTS_PER_REQUEST) return tooManyEntries(reply, exposures.length, 'exposures');
      const answer = await ingest.ingestExposures(principal, scope, exposures, { idempotencyKey: request.headers['idempotency-key'], contextToken });
      return reply.code(202).send(answer);
    },
  );
}
