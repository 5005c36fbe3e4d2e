import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';

const idList = (maxItems: number) => ({ type: 'array', minItems: 1, maxItems, items: { type: 'string', minLength: 1, maxLength: 100 } }) as const;

/**
 * The create body as the OpenAPI document shows it. Fastify checks the shape; the service checks
 * it again (gRPC and the gateway hop skip this schema), refuses unknown fields naming them, and
 * checks whether the ids are the org's.
 */
export const newApiTokenBody = {
  type: 'object',
  required: ['name', 'role'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    role: { type: 'string', enum: ['viewer', 'editor', 'admin'] },
    scope: {
      type: ['object', 'null'],
      properties: { project_ids: idList(50), environment_ids: idList(200) },
    },
    expires_at_ms: { type: ['integer', 'null'] },
  },
} as const;

/** `/v1/management/orgs/{org_id}/api-tokens`: credentials for automation (docs/access.md "API tokens"); org admins only. */
export function registerApiTokenRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { apiTokens, verifier } = services;

  app.post<{ Params: { org_id: string }; Body: unknown }>(
    '/v1/management/orgs/:org_id/api-tokens',
    { schema: { body: newApiTokenBody } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await apiTokens.create(principal, request.params.org_id, request.body));
    },
  );

  app.get<{ Params: { org_id: string } }>('/v1/management/orgs/:org_id/api-tokens', async (request) => {
    const principal = await authenticate(verifier, request, 'bearer');
    return apiTokens.list(principal, request.params.org_id);
  });

  app.delete<{ Params: { org_id: string; token_id: string } }>('/v1/management/orgs/:org_id/api-tokens/:token_id', async (request, reply) => {
    const principal = await authenticate(verifier, request, 'bearer');
    await apiTokens.revoke(principal, request.params.org_id, request.params.token_id);
    return reply.code(204).send();
  });
}
