import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { EnvironmentScope, Principal } from '@switchyard/core';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY, envParams, uuidParam } from '../../http/schemas.ts';
import { applyBody, listQuery, listResponse, policyBody, policyResponse, previewResponse, requestBody, requestParams, requestResponse, reviewBody } from './rest-schemas.ts';

const TAGS = ['change requests'];

interface EnvParams {
  env_id: string;
}
interface PolicyParams {
  environment_id: string;
}
const policyParams = { type: 'object', required: ['environment_id'], properties: { environment_id: uuidParam } } as const;
interface RequestParams extends EnvParams {
  id: string;
}

/**
 * The approval policy (`/v1/management/environments/{environment_id}/approval-policy`) and change requests
 * (`/v1/environments/{env_id}/change-requests[...]`), docs/workflow.md "Change requests and approvals"; bearer token only.
 * Every decision is the ChangeRequestService's.
 */
export function registerChangeRequestRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { changeRequests, verifier } = services;

  const resolve = (request: FastifyRequest<{ Params: EnvParams }>): Promise<{ principal: Principal; scope: EnvironmentScope }> =>
    authenticateScoped(verifier, presentedByRequest(request), 'bearer', (principal) => changeRequests.scope(principal, request.params.env_id));
  // The management routes name the environment `environment_id` (one name per path segment).
  const resolvePolicy = (request: FastifyRequest<{ Params: PolicyParams }>): Promise<{ principal: Principal; scope: EnvironmentScope }> =>
    authenticateScoped(verifier, presentedByRequest(request), 'bearer', (principal) => changeRequests.scope(principal, request.params.environment_id));

  app.get<{ Params: PolicyParams }>(
    '/v1/management/environments/:environment_id/approval-policy',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: "The environment's approval policy (defaults when never set)", params: policyParams, response: { 200: policyResponse } } },
    async (request) => {
      const { principal, scope } = await resolvePolicy(request);
      return changeRequests.getPolicy(principal, scope);
    },
  );

  app.put<{ Params: PolicyParams; Body: unknown }>(
    '/v1/management/environments/:environment_id/approval-policy',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: "Set the environment's approval policy (fields left out keep their value)", params: policyParams, body: policyBody, response: { 200: policyResponse } } },
    async (request) => {
      const { principal, scope } = await resolvePolicy(request);
      return changeRequests.putPolicy(principal, scope, request.body);
    },
  );

  app.get<{ Params: EnvParams; Querystring: { status?: string; limit?: number } }>(
    '/v1/environments/:env_id/change-requests',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: "The environment's change requests, newest first", params: envParams, querystring: listQuery, response: { 200: listResponse } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return changeRequests.list(principal, scope, request.query);
    },
  );

  app.post<{ Params: EnvParams; Body: Record<string, unknown> }>(
    '/v1/environments/:env_id/change-requests',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Create a change request (a draft, or open with submit: true)', params: envParams, body: requestBody, response: { 201: requestResponse } } },
    async (request, reply) => {
      const { principal, scope } = await resolve(request);
      const created = await changeRequests.create(principal, scope, request.body);
      return reply.code(201).send(created);
    },
  );

  app.get<{ Params: RequestParams }>(
    '/v1/environments/:env_id/change-requests/:id',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'A change request with its reviews and the approvals that count', params: requestParams, response: { 200: requestResponse } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return changeRequests.get(principal, scope, request.params.id);
    },
  );

  app.get<{ Params: RequestParams }>(
    '/v1/environments/:env_id/change-requests/:id/preview',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Each change: the state now, the state after the operations, and whether it still applies', params: requestParams, response: { 200: previewResponse } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return changeRequests.preview(principal, scope, request.params.id);
    },
  );

  app.patch<{ Params: RequestParams; Body: Record<string, unknown> }>(
    '/v1/environments/:env_id/change-requests/:id',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Edit a draft, open or conflicted request (its author; reviews of older content stop counting)', params: requestParams, body: requestBody, response: { 200: requestResponse } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return changeRequests.update(principal, scope, request.params.id, request.body);
    },
  );

  for (const [verb, summary] of [
    ['submit', 'Open a draft for review (its author)'],
    ['cancel', 'Cancel a draft, open, conflicted or scheduled request (its author, or an admin of the environment)'],
  ] as const) {
    app.post<{ Params: RequestParams }>(
      `/v1/environments/:env_id/change-requests/:id/${verb}`,
      { schema: { tags: TAGS, security: BEARER_ONLY, summary, params: requestParams, response: { 200: requestResponse } } },
      async (request) => {
        const { principal, scope } = await resolve(request);
        return changeRequests[verb](principal, scope, request.params.id);
      },
    );
  }

  app.post<{ Params: RequestParams; Body: Record<string, unknown> | null | undefined }>(
    '/v1/environments/:env_id/change-requests/:id/apply',
    {
      schema: {
        tags: TAGS,
        security: BEARER_ONLY,
        summary: 'Apply an approved request: every change or none; a change no longer current makes it conflicted. With {execute_at_ms}: the same checks now, and it becomes scheduled for that time',
        params: requestParams,
        body: applyBody,
        response: { 200: requestResponse },
      },
    },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return changeRequests.apply(principal, scope, request.params.id, request.body ?? undefined);
    },
  );

  app.post<{ Params: RequestParams; Body: Record<string, unknown> }>(
    '/v1/environments/:env_id/change-requests/:id/reviews',
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Review the current content: approve, reject or comment', params: requestParams, body: reviewBody, response: { 200: requestResponse } } },
    async (request) => {
      const { principal, scope } = await resolve(request);
      return changeRequests.review(principal, scope, request.params.id, request.body);
    },
  );
}
