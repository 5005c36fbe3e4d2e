import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { BEARER_ONLY, EMPTY_RESPONSE } from '../../http/schemas.ts';

const TAGS = ['management'];
const nullableInteger = { type: ['integer', 'null'] } as const;
const idArray = { type: 'array', items: { type: 'string' } } as const;

/** An API token record (docs/access.md "API tokens"); `token` in the create answer only. */
const apiTokenRecord = {
  type: 'object',
  required: ['id', 'name', 'role', 'scope', 'token_prefix', 'created_by', 'created_at_ms', 'expires_at_ms', 'last_used_at_ms'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    role: { type: 'string', enum: ['viewer', 'editor', 'admin'] },
    scope: { type: 'object', properties: { project_ids: idArray, environment_ids: idArray }, description: 'No lists: the whole org.' },
    token_prefix: { type: 'string', description: 'The first 12 characters of the token.' },
    created_by: { type: ['object', 'null'], properties: { user_id: { type: 'string' }, email: { type: 'string' } } },
    created_at_ms: { type: 'integer' },
    expires_at_ms: nullableInteger,
    last_used_at_ms: { ...nullableInteger, description: 'Written at most once a minute.' },
  },
} as const;
const createdApiToken = {
  ...apiTokenRecord,
  required: [...apiTokenRecord.required, 'token'],
  properties: { ...apiTokenRecord.properties, token: { type: 'string', description: '`swy_...`, shown this once: send it as `Authorization: Bearer <token>`.' } },
} as const;
const orgParams = { type: 'object', required: ['org_id'], properties: { org_id: { type: 'string', minLength: 1, maxLength: 100 } } } as const;

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
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Create an API token (org admins)', params: orgParams, body: newApiTokenBody, response: { 201: createdApiToken } } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await apiTokens.create(principal, request.params.org_id, request.body));
    },
  );

  app.get<{ Params: { org_id: string } }>(
    '/v1/management/orgs/:org_id/api-tokens',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: "The org's active API tokens, never their plaintext", params: orgParams, response: { 200: { type: 'array', items: apiTokenRecord } } } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return apiTokens.list(principal, request.params.org_id);
    },
  );

  app.delete<{ Params: { org_id: string; token_id: string } }>(
    '/v1/management/orgs/:org_id/api-tokens/:token_id',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Revoke an API token at once (every instance and gateway)', response: { 204: EMPTY_RESPONSE } } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      await apiTokens.revoke(principal, request.params.org_id, request.params.token_id);
      return reply.code(204).send();
    },
  );
}
