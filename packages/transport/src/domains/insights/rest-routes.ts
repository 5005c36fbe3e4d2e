import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticatePresented, authenticateScoped } from '../../auth/presented-credentials.ts';
import { presentedByRequest } from '../../http/credentials.ts';
import { BEARER_ONLY, uuidParam } from '../../http/schemas.ts';
import { authenticateClientRoute } from '../client/rest-client-credentials.ts';
import { clientBodyLimit } from '../client/rest-client-body-limit.ts';
import { admitKeyRequest, countRateLimited } from '../client/rest-client-limits.ts';
import { envParams, idempotencyHeaders } from '../events/rest-routes.ts';

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
  required: ['series', 'last_evaluated_at_ms', 'status'],
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
    status: { type: 'string', enum: ['new', 'active', 'launched', 'inactive'], description: "The flag's status here over the project's status window (docs/insights.md \"Statuses\")" },
  },
} as const;

const STAGES = ['live', 'ready_for_code_removal', 'ready_to_archive', 'archived'] as const;
const STATUSES = ['new', 'active', 'launched', 'inactive'] as const;

const lifecycleResponse = {
  type: 'object',
  required: ['thresholds', 'environments', 'flags', 'truncated'],
  properties: {
    thresholds: {
      type: 'object',
      required: ['status_window_days', 'code_removal_min_age_days', 'archive_after_days', 'unchanged_fallback_days'],
      properties: {
        status_window_days: { type: 'integer' },
        code_removal_min_age_days: { type: 'integer' },
        archive_after_days: { type: 'integer' },
        unchanged_fallback_days: { type: 'integer' },
      },
    },
    environments: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'critical', 'counted', 'reports_evaluations'],
        properties: {
          id: { type: 'string' },
          name: { type: 'string' },
          critical: { type: 'boolean' },
          counted: { type: 'boolean', description: 'Whether its statuses decide the stages (the critical environments, or all when none is)' },
          reports_evaluations: { type: 'boolean', description: 'Any flag of the project evaluated here in the status window; else the configuration stands in (docs/insights.md "Fallback")' },
        },
      },
    },
    flags: {
      type: 'array',
      items: {
        type: 'object',
        required: ['key', 'lifetime', 'archived', 'stage', 'environments'],
        properties: {
          key: { type: 'string' },
          lifetime: { type: 'string', enum: ['temporary', 'permanent'] },
          archived: { type: 'boolean' },
          stage: { type: 'string', enum: STAGES },
          environments: {
            type: 'object',
            description: 'Per environment id: its status and last evaluation',
            additionalProperties: {
              type: 'object',
              required: ['status', 'last_evaluated_at_ms'],
              properties: { status: { type: 'string', enum: STATUSES }, last_evaluated_at_ms: { type: ['integer', 'null'] } },
            },
          },
        },
      },
    },
    truncated: { type: 'boolean', description: 'The project has more than 10,000 flags: those after the first 10,000 by key are left out' },
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
      return { series: answer.series.map((point) => ({ at_ms: point.atMs, variants: point.variants })), last_evaluated_at_ms: answer.lastEvaluatedAtMs, status: answer.status };
    },
  );

  // The cleanup list (docs/insights.md "Lifecycle stages"): who may read the project's flags.
  app.get<{ Params: { project_id: string }; Querystring: { stage?: string } }>(
    '/v1/projects/:project_id/flag-lifecycle',
    {
      schema: {
        tags: ['flags'],
        security: BEARER_ONLY,
        summary: "Every flag's lifecycle stage and status per environment in the project",
        params: { type: 'object', required: ['project_id'], properties: { project_id: uuidParam } },
        // Checked by the service (400 INVALID_ARGUMENT naming `stage`).
        querystring: { type: 'object', properties: { stage: { type: 'string', maxLength: 64, description: `Only flags in this stage: ${STAGES.join(', ')}` } } },
        response: { 200: lifecycleResponse },
      },
    },
    async (request) => {
      const principal = await authenticatePresented(verifier, presentedByRequest(request), 'bearer');
      return insights.projectLifecycle(principal, request.params.project_id, request.query.stage === undefined ? {} : { stage: request.query.stage });
    },
  );
}

const summaryBody = {
  type: 'object',
  description:
    'What an SDK evaluated locally since its last summary (docs/insights.md "SDK summaries"). Field types are checked by the service, which names the first bad field (400).',
  required: ['start_ms', 'end_ms', 'counts'],
  properties: {
    start_ms: { description: 'integer epoch ms: the first evaluation counted (within the last two days)' },
    end_ms: { description: 'integer epoch ms: when the summary was taken (at least start_ms, not in the future beyond 5 minutes of skew); the counts go to its UTC hour' },
    counts: {
      description: 'at most 1,000 `{flag_key, variant_key, reason, count}` (count an integer from 1 to 1,000,000,000; variant_key "" when none); counts of flags the environment does not have are dropped',
    },
  },
  examples: [{ start_ms: 1767225600000, end_ms: 1767225660000, counts: [{ flag_key: 'new-checkout', variant_key: 'on', reason: 'TARGETING_MATCH', count: 42 }] }],
} as const;

const summaryResponse = {
  type: 'object',
  required: ['received_count'],
  properties: { received_count: { type: 'integer', minimum: 0, description: 'Entries of the summary, committed (those of unknown flags dropped)' } },
} as const;

/**
 * `POST /v1/environments/{env_id}/evaluation-summaries` (docs/insights.md "SDK summaries"): what an
 * SDK (server key) or a browser (client key, origin-checked like the other client routes)
 * evaluated locally, added to the environment's hourly counts. 202 once committed; an
 * Idempotency-Key makes a resend count once.
 */
export function registerEvaluationSummaryRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { insights, verifier, clientAccess } = services;

  app.post<{ Params: { env_id: string }; Headers: { 'idempotency-key'?: string }; Body: unknown }>(
    '/v1/environments/:env_id/evaluation-summaries',
    {
      // A client key's body is at most 32 KiB; its 429s counted (docs/client-side.md "6. Limits").
      preParsing: clientBodyLimit,
      onError: countRateLimited(services, 'ingest'),
      schema: {
        tags: ['flags'],
        summary: 'Add an SDK\'s evaluation counts (at most 1,000 entries) to the flags\' insights',
        security: [{ sdk_key: [] }, { api_key: [] }],
        params: envParams,
        headers: idempotencyHeaders,
        body: summaryBody,
        response: { 202: summaryResponse },
      },
    },
    async (request, reply) => {
      // Keys only: a client key may come as its Bearer value (no context is needed here).
      const { principal } = await authenticateClientRoute(verifier, request, { bearerMayBeKey: true, userTokens: 'refuse' });
      clientAccess.admit(request, reply, principal);
      admitKeyRequest(services, request, principal, 'ingest', 1);
      // The key's own environment only (another environment's id: 404, as the ingest routes).
      const scope = await insights.scope(principal, request.params.env_id);
      const answer = await insights.recordSummary(principal, scope, request.body, { idempotencyKey: request.headers['idempotency-key'] });
      return reply.code(202).send(answer);
    },
  );
}
