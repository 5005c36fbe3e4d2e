import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { authenticate, presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY } from '../../http/schemas.ts';
import { auditLogQuery, auditPageSchema, flagHistoryParams, flagHistoryQuery, orgParams } from './rest-schemas.ts';

interface PageQuery {
  cursor?: string;
  limit?: string;
}

const limitOf = (query: PageQuery): number | null => (query.limit === undefined ? null : Number(query.limit));

/** The change history (docs/contract.md "Change history"): bearer tokens of org members only. */
export function registerAuditRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { auditLog, verifier } = services;

  app.get<{ Params: { org_id: string }; Querystring: PageQuery & { resource_type?: string; resource_id?: string; environment_id?: string } }>(
    '/v1/management/orgs/:org_id/audit-log',
    {
      schema: {
        security: BEARER_ONLY,
        summary: "A page of the org's change history, newest first",
        params: orgParams,
        querystring: auditLogQuery,
        response: { 200: auditPageSchema },
      },
    },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      const { resource_type, resource_id, environment_id, cursor } = request.query;
      return auditLog.list(principal, request.params.org_id, {
        resourceType: resource_type ?? null,
        resourceId: resource_id ?? null,
        environmentId: environment_id ?? null,
        cursor: cursor ?? null,
        limit: limitOf(request.query),
      });
    },
  );

  app.get<{ Params: { env_id: string; flag_id: string }; Querystring: PageQuery }>(
    '/v1/environments/:env_id/flags/:flag_id/history',
    {
      schema: {
        tags: ['flags'],
        security: BEARER_ONLY,
        summary: "A page of a flag's history in an environment (its definition's changes included), newest first",
        params: flagHistoryParams,
        querystring: flagHistoryQuery,
        response: { 200: auditPageSchema },
      },
    },
    async (request) => {
      const { principal, scope } = await authenticateScoped(verifier, presentedByRequest(request), 'bearer', (caller) =>
        auditLog.scope(caller, request.params.env_id),
      );
      return auditLog.flagHistory(principal, scope, request.params.flag_id, { cursor: request.query.cursor ?? null, limit: limitOf(request.query) });
    },
  );
}
