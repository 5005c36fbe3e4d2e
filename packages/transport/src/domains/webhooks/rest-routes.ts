import type { FastifyInstance } from 'fastify';
import type { WebhookEndpointInput } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { BEARER_ONLY, EMPTY_RESPONSE } from '../../http/schemas.ts';

const TAGS = ['management'];
const id = { type: 'string', minLength: 1, maxLength: 100 } as const;
const idArray = { type: 'array', maxItems: 50, items: id } as const;
const orgParams = { type: 'object', required: ['org_id'], properties: { org_id: id } } as const;
const webhookParams = { type: 'object', required: ['org_id', 'webhook_id'], properties: { org_id: id, webhook_id: id } } as const;
const deliveryParams = { type: 'object', required: ['org_id', 'webhook_id', 'delivery_id'], properties: { org_id: id, webhook_id: id, delivery_id: id } } as const;

const filters = {
  type: 'object',
  additionalProperties: false,
  properties: { project_ids: idArray, environment_ids: idArray },
  description: 'Empty lists: every project / environment. Else only entries of the projects and environments named.',
} as const;

const writableProperties = {
  name: { type: 'string', minLength: 1, maxLength: 100 },
  url: { type: 'string', minLength: 1, maxLength: 2048, description: 'https:// on a public address (WEBHOOK_ALLOW_PRIVATE_NETWORKS=true lifts it).' },
  enabled: { type: 'boolean' },
  event_types: {
    type: 'array',
    minItems: 1,
    maxItems: 20,
    items: { type: 'string', minLength: 1, maxLength: 100, pattern: '^[a-z0-9_.*-]+$' },
    description: 'Globs over change-history actions: `*` is any run of characters (`flag.*`, `*`).',
  },
  filters,
  format: { type: 'string', enum: ['standard', 'slack'] },
} as const;

/** The create body: name, url and event_types are needed; the rest has defaults (enabled, no filters, standard). */
const createBody = { type: 'object', additionalProperties: false, required: ['name', 'url', 'event_types'], properties: writableProperties } as const;
/** The update body: any of the fields; those left out keep their values. */
const updateBody = { type: 'object', additionalProperties: false, properties: writableProperties } as const;

const webhookRecord = {
  type: 'object',
  required: ['id', 'name', 'url', 'enabled', 'event_types', 'filters', 'format', 'consecutive_failures', 'created_at_ms', 'updated_at_ms'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    url: { type: 'string' },
    enabled: { type: 'boolean' },
    event_types: { type: 'array', items: { type: 'string' } },
    filters: { type: 'object', properties: { project_ids: { type: 'array', items: { type: 'string' } }, environment_ids: { type: 'array', items: { type: 'string' } } } },
    format: { type: 'string', enum: ['standard', 'slack'] },
    disabled_reason: { type: 'string', description: 'Why the platform disabled it (410, 20 failed attempts in a row).' },
    consecutive_failures: { type: 'integer' },
    previous_secret_expires_at_ms: { type: 'integer', description: 'During a rotation: until when the previous secret signs too.' },
    created_at_ms: { type: 'integer' },
    updated_at_ms: { type: 'integer' },
  },
} as const;
const webhookWithSecret = {
  ...webhookRecord,
  required: [...webhookRecord.required, 'secret'],
  properties: { ...webhookRecord.properties, secret: { type: 'string', description: '`whsec_` + base64: shown this once; verify signatures with it.' } },
} as const;
const deliveryRecord = {
  type: 'object',
  required: ['id', 'endpoint_id', 'message_id', 'event_type', 'status', 'attempts', 'created_at_ms'],
  properties: {
    id: { type: 'string' },
    endpoint_id: { type: 'string' },
    message_id: { type: 'string', description: 'The `webhook-id` sent: the change-history entry id (`test_...` for a test send).' },
    event_type: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'sending', 'delivered', 'failed'] },
    attempts: { type: 'integer' },
    next_attempt_at_ms: { type: 'integer' },
    status_code: { type: 'integer' },
    duration_ms: { type: 'integer' },
    error: { type: 'string' },
    response: { type: 'string', description: 'The first 1 KiB of the last answer.' },
    created_at_ms: { type: 'integer' },
    finished_at_ms: { type: 'integer' },
  },
} as const;
const deliveryPage = {
  type: 'object',
  required: ['deliveries', 'next_cursor'],
  properties: { deliveries: { type: 'array', items: deliveryRecord }, next_cursor: { type: ['string', 'null'] } },
} as const;
const pageQuery = {
  type: 'object',
  properties: { cursor: { type: 'string', minLength: 1, maxLength: 100 }, limit: { type: 'string', pattern: '^[0-9]{1,4}$' } },
} as const;

type WebhookParams = { org_id: string; webhook_id: string };

/**
 * `/v1/management/orgs/{org_id}/webhooks` (docs/workflow.md "Webhooks"): the org's endpoints, for
 * holders of `webhook.manage` (org admins, org-level admin bindings, org-wide admin API tokens).
 */
export function registerWebhookRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { webhooks, verifier } = services;
  const base = '/v1/management/orgs/:org_id/webhooks';

  app.post<{ Params: { org_id: string }; Body: WebhookEndpointInput }>(
    base,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Create a webhook endpoint (its secret is in this answer only)', params: orgParams, body: createBody, response: { 201: webhookWithSecret } } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return reply.code(201).send(await webhooks.create(principal, request.params.org_id, request.body));
    },
  );

  app.get<{ Params: { org_id: string } }>(
    base,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: "The org's webhook endpoints, never their secrets", params: orgParams, response: { 200: { type: 'array', items: webhookRecord } } } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return webhooks.list(principal, request.params.org_id);
    },
  );

  app.get<{ Params: WebhookParams }>(
    `${base}/:webhook_id`,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'One webhook endpoint', params: webhookParams, response: { 200: webhookRecord } } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return webhooks.get(principal, request.params.org_id, request.params.webhook_id);
    },
  );

  app.patch<{ Params: WebhookParams; Body: WebhookEndpointInput }>(
    `${base}/:webhook_id`,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Change a webhook endpoint (fields left out keep their values); enabling resets its failures', params: webhookParams, body: updateBody, response: { 200: webhookRecord } } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return webhooks.update(principal, request.params.org_id, request.params.webhook_id, request.body);
    },
  );

  app.delete<{ Params: WebhookParams }>(
    `${base}/:webhook_id`,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Delete a webhook endpoint and its delivery log', params: webhookParams, response: { 204: EMPTY_RESPONSE } } },
    async (request, reply) => {
      const principal = await authenticate(verifier, request, 'bearer');
      await webhooks.remove(principal, request.params.org_id, request.params.webhook_id);
      return reply.code(204).send();
    },
  );

  app.post<{ Params: WebhookParams }>(
    `${base}/:webhook_id/rotate-secret`,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'A new secret (in this answer only); the previous one signs too for 24 h', params: webhookParams, response: { 200: webhookWithSecret } } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return webhooks.rotateSecret(principal, request.params.org_id, request.params.webhook_id);
    },
  );

  app.post<{ Params: WebhookParams }>(
    `${base}/:webhook_id/test`,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Send a webhook.test message now; success enables a disabled endpoint again', params: webhookParams, response: { 200: deliveryRecord } } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return webhooks.testSend(principal, request.params.org_id, request.params.webhook_id);
    },
  );

  app.get<{ Params: WebhookParams; Querystring: { cursor?: string; limit?: string } }>(
    `${base}/:webhook_id/deliveries`,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: "The endpoint's delivery log, newest first", params: webhookParams, querystring: pageQuery, response: { 200: deliveryPage } } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      const { cursor, limit } = request.query;
      return webhooks.listDeliveries(principal, request.params.org_id, request.params.webhook_id, { cursor: cursor ?? null, limit: limit === undefined ? null : Number(limit) });
    },
  );

  app.post<{ Params: WebhookParams & { delivery_id: string } }>(
    `${base}/:webhook_id/deliveries/:delivery_id/redeliver`,
    { schema: { tags: TAGS, security: BEARER_ONLY, summary: 'Send a delivery again (a fresh round of attempts, from now)', params: deliveryParams, response: { 200: deliveryRecord } } },
    async (request) => {
      const principal = await authenticate(verifier, request, 'bearer');
      return webhooks.redeliver(principal, request.params.org_id, request.params.webhook_id, request.params.delivery_id);
    },
  );
}
