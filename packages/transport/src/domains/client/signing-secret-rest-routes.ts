import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';

const TAGS = ['management'];
const environmentParams = { type: 'object', required: ['environment_id'], properties: { environment_id: { type: 'string', maxLength: 100 } } } as const;
const secretParams = {
  type: 'object',
  required: ['environment_id', 'kid'],
  properties: { environment_id: { type: 'string', maxLength: 100 }, kid: { type: 'string', minLength: 1, maxLength: 200 } },
} as const;
const secretRecord = {
  type: 'object',
  required: ['kid', 'environment_id', 'created_at_ms'],
  properties: { kid: { type: 'string' }, environment_id: { type: 'string' }, created_at_ms: { type: 'integer' } },
} as const;

/**
 * Context signing secrets (docs/client-side.md "4. Signed contexts"), org_admin only:
 * `POST /v1/management/environments/{environment_id}/context-signing-secrets` → 201 `{kid, secret, created_at_ms}`
 * (the secret shown this once), `GET` the same path → `[{kid, environment_id, created_at_ms}]`, and
 * `DELETE .../context-signing-secrets/{kid}` → 204. At most 10 per environment (rotation with overlap).
 */
export function registerSigningSecretRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { contextSigning, verifier } = services;

  app.post<{ Params: { environment_id: string } }>(
    '/v1/management/environments/:environment_id/context-signing-secrets',
    {
      schema: {
        tags: TAGS,
        summary: 'Create a context signing secret (HS256; shown once)',
        params: environmentParams,
        response: {
          201: {
            ...secretRecord,
            required: [...secretRecord.required, 'secret'],
            properties: { ...secretRecord.properties, secret: { type: 'string', description: 'The HMAC key (its UTF-8 bytes). Shown only in this answer.' } },
          },
        },
      },
    },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await contextSigning.createSecret(principal, request.params.environment_id));
    },
  );

  app.get<{ Params: { environment_id: string } }>(
    '/v1/management/environments/:environment_id/context-signing-secrets',
    { schema: { tags: TAGS, summary: "List an environment's context signing secrets (never the secrets)", params: environmentParams, response: { 200: { type: 'array', items: secretRecord } } } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return contextSigning.listSecrets(principal, request.params.environment_id);
    },
  );

  app.delete<{ Params: { environment_id: string; kid: string } }>(
    '/v1/management/environments/:environment_id/context-signing-secrets/:kid',
    { schema: { tags: TAGS, summary: 'Delete a context signing secret: tokens signed with it are refused at once', params: secretParams } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      await contextSigning.deleteSecret(principal, request.params.environment_id, request.params.kid);
      return reply.code(204).send();
    },
  );
}
