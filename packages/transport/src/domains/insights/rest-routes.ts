import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY, uuidParam } from '../../http/schemas.ts';

const insightsParams = {
  type: 'object',
  required: ['env_id', 'flag_id'],
  // flag_id is the flag's key, as in the other flag routes (docs/contract.md "Flags").
  properties: { env_id: uuidParam, flag_id: { type: 'string', minLength: 1, maxLength: 128 } },
} as const;

const insightsQuery = {
  type: 'object',
  properties: {
    from: { type: 'string', pattern: '^[0-9]{1,15}$', description: 'Epoch ms, inclusive (moved back to the start of its hour or UTC day). Default: 24 hours (hour) or 30 days (day) before `to`.' },
    to: { type: 'string', pattern: '^[0-9]{1,15}$', description: 'Epoch ms, exclusive. Default: now.' },
    granularity: { type: 'string', enum: ['hour', 'day'], description: 'hour (default; at most 31 days) or day (at most 400 days).' },
  },
} as const;

const insightsResponse = {
  type: 'object',
  required: ['series', 'last_evaluated_at_ms'],
  properties: {
    series: {
      type: 'array',
      description: 'Buckets with at least one evaluation, in time order; a missing bucket counted none.',
      items: {
        type: 'object',
        required: ['at_ms', 'variants'],
        properties: {
          at_ms: { type: 'integer', description: 'Start of the hour or UTC day (epoch ms)' },
          variants: { type: 'object', additionalProperties: { type: 'integer' }, description: 'Evaluations per variant key ("" for answers without a variant, e.g. errors)' },
        },
      },
    },
    last_evaluated_at_ms: { type: ['integer', 'null'], description: 'Null: never evaluated (or not since counts began)' },
  },
} as const;

/**
 * `GET /v1/environments/{env_id}/flags/{flag_id}/insights` (flag_id: the flag's key) (docs/insights.md "Reading the counts"): a
 * flag's evaluations per variant, hourly or daily, and its last evaluation. Members who may read
 * the environment's flags (bearer token).
 */
export function registerInsightsRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { insights, verifier } = services;

  app.get<{ Params: { env_id: string; flag_id: string }; Querystring: { from?: string; to?: string; granularity?: string } }>(
    '/v1/environments/:env_id/flags/:flag_id/insights',
    {
      schema: {
        tags: ['flags'],
        security: BEARER_ONLY,
        summary: "A flag's evaluation counts per variant in the environment, hourly or daily",
        params: insightsParams,
        querystring: insightsQuery,
        response: { 200: insightsResponse },
      },
    },
    async (request) => {
      const { principal, scope } = await authenticateScoped(verifier, presentedByRequest(request), 'bearer', (caller) => insights.scope(caller, request.params.env_id));
      const { from, to, granularity } = request.query;
      const answer = await insights.flagInsights(principal, scope, request.params.flag_id, {
        ...(from === undefined ? {} : { from }),
        ...(to === undefined ? {} : { to }),
        ...(granularity === undefined ? {} : { granularity }),
      });
      return { series: answer.series.map((point) => ({ at_ms: point.atMs, variants: point.variants })), last_evaluated_at_ms: answer.lastEvaluatedAtMs };
    },
  );
}
