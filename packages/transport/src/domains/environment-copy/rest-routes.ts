import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EnvironmentScope, Principal } from '@switchyard/core';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY, envParams } from '../../http/schemas.ts';
import { comparisonResponse, compareQuery, copyBody, copyResponse } from './rest-schemas.ts';

const TAGS = ['environments'];

interface EnvParams {
  env_id: string;
}

/**
 * `GET /v1/environments/{env_id}/compare?from_environment_id=...` and `POST
 * /v1/environments/{env_id}/copy` (docs/contract.md "Environment compare and copy"), bearer token
 * only: `env_id` is the target. Every decision is the EnvironmentCopyService's; a write into a
 * protected target takes `X-Confirm-Environment` / `X-Change-Comment` as every write does.
 */
export function registerEnvironmentCopyRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { environmentCopy, verifier } = services;

  async function resolve(request: FastifyRequest<{ Params: EnvParams }>): Promise<{ principal: Principal; scope: EnvironmentScope }> {
    return authenticateScoped(verifier, presentedByRequest(request), 'bearer', (principal) => environmentCopy.scope(principal, request.params.env_id));
  }

  app.get<{ Params: EnvParams; Querystring: { from_environment_id: string } }>(
    '/v1/environments/:env_id/compare',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'Which flags differ between another environment of the project and this one, and how',
        params: envParams,
        querystring: compareQuery,
        response: { 200: comparisonResponse },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return environmentCopy.compare(principal, scope, request.query.from_environment_id);
    },
  );

  app.post<{ Params: EnvParams; Body: unknown }>(
    '/v1/environments/:env_id/copy',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: "Copy chosen flags' configuration from another environment of the project into this one (all or nothing)",
        params: envParams,
        body: copyBody,
        response: { 200: copyResponse },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return environmentCopy.copy(principal, scope, request.body);
    },
  );
}
