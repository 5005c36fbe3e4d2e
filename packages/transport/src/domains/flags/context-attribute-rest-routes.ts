import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY, envParams } from '../../http/schemas.ts';

const attributesResponse = {
  type: 'object',
  required: ['attributes'],
  properties: {
    attributes: {
      type: 'array',
      description: 'Most recently seen first; at most 500 per environment. Names only: values are never kept.',
      items: {
        type: 'object',
        required: ['context_type', 'name', 'last_seen_at_ms'],
        properties: {
          context_type: { type: 'string' },
          name: { type: 'string' },
          last_seen_at_ms: { type: 'integer', description: 'When a key last evaluated a context with this attribute (epoch ms; noted at most once a minute)' },
        },
      },
    },
  },
} as const;

/**
 * `GET /v1/environments/{env_id}/context-attributes` (docs/contract.md "Context attributes"): the
 * attribute names contexts evaluated with the environment's keys used, for the console's rule editor.
 * Members who may read flags only (bearer token; SDK and client keys are not accepted).
 */
export function registerContextAttributeRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { contextAttributes, verifier } = services;

  app.get<{ Params: { env_id: string } }>(
    '/v1/environments/:env_id/context-attributes',
    {
      schema: {
        tags: ['flags'],
        security: BEARER_ONLY,
        summary: "Attribute names the environment's evaluated contexts used (names, never values)",
        params: envParams,
        response: { 200: attributesResponse },
      },
    },
    async (request) => {
      const { principal, scope } = await authenticateScoped(verifier, presentedByRequest(request), 'bearer', (caller) =>
        contextAttributes.scope(caller, request.params.env_id),
      );
      const attributes = await contextAttributes.list(principal, scope);
      return { attributes: attributes.map((a) => ({ context_type: a.contextType, name: a.name, last_seen_at_ms: a.lastSeenAtMs })) };
    },
  );
}
