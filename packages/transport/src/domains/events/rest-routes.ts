import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MAX_EVENTS_PER_REQUEST, REJECTION_REASONS, type IncomingEvent } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticateClientRoute } from '../client/rest-client-credentials.ts';
import { clientBodyLimit } from '../client/rest-client-body-limit.ts';
import { admitKeyRequest, countRateLimited } from '../client/rest-client-limits.ts';
import { uuidParam } from '../../http/schemas.ts';

const TAGS = ['events'];
/** docs/contract.md "Authentication": event routes take an SDK key or a bearer token. */
export const SDK_OR_BEARER: ReadonlyArray<Record<string, readonly string[]>> = [{ sdk_key: [] }, { api_key: [] }, { bearer_jwt: [] }];

export const envParams = { type: 'object', required: ['env_id'], properties: { env_id: uuidParam } } as const;

export const idempotencyHeaders = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      description: 'A repeat of the key within 24 hours (per environment) stores nothing and gets the first answer.',
    },
  },
} as const;

/**
 * One event. Field types are documented, not enforced here: a field that is missing or of the
 * wrong type rejects that event alone (its metric key goes to rejected_keys, the reason to rejected), so one bad event
 * never costs the others of a batch. Only a body that is not events at all is a 400 — and an
 * entry without a metric_key is not an event (the ingest service refuses it, naming the field).
 */
const eventSchema = {
  type: 'object',
  description: 'A metric event. The key must be a registered event definition and the value must fit its type.',
  properties: {
    metric_key: { description: 'string, required: the key of an event definition of the environment (missing or empty: 400 for the whole request)' },
    context_type: { description: 'string, required (at most 64 characters), e.g. user' },
    context_key: { description: 'string, required (at most 512 characters)' },
    value: {
      description: 'bool definition: true/false (absent or null means true); int: an integer; double: any number',
    },
    timestamp_ms: { description: 'integer >= 0 or null: client time in epoch ms; absent, null or 0: the time the server received it' },
  },
  examples: [{ metric_key: 'checkout', context_type: 'user', context_key: 'user-42', value: 19.99, timestamp_ms: 1767225600000 }],
} as const;

const batchBody = {
  description: 'Either a bare array of events or an object whose `events` is that array (at most 10,000 events).',
  anyOf: [
    { type: 'array', items: eventSchema },
    { type: 'object', required: ['events'], properties: { events: { type: 'array', items: eventSchema } } },
  ],
} as const;

export const ingestResponse = {
  type: 'object',
  required: ['accepted_count', 'rejected_keys'],
  properties: {
    accepted_count: { type: 'integer', minimum: 0, description: 'Entries stored (committed) by this request' },
    rejected_keys: {
      type: 'array',
      items: { type: 'string' },
      description: 'The key of each rejected entry, once per key ("" for an entry without one)',
    },
    rejected: {
      type: 'array',
      description:
        'Each rejected entry, in request order, and why (docs/contract.md "Why an entry is rejected"). Absent only when an Idempotency-Key repeat replays an answer stored before this field existed.',
      items: {
        type: 'object',
        required: ['index', 'key', 'reason'],
        properties: {
          index: { type: 'integer', minimum: 0, description: 'The entry\'s position in the request (0-based; 0 for the single-event route)' },
          key: { type: 'string', description: 'Its metric key (events) or flag key (exposures); "" when it has none' },
          reason: { type: 'string', description: `A stable code, one of ${REJECTION_REASONS.join(', ')} (new codes may be added: treat an unknown one as "rejected")` },
          field: { type: 'string', description: 'For missing_field, invalid_field and field_too_long: the field (e.g. context_key, value, timestamp_ms)' },
        },
      },
    },
  },
} as const;

interface EnvParams {
  env_id: string;
}
interface IdempotencyHeaders {
  'idempotency-key'?: string;
}

/**
 * 413 with code RESOURCE_EXHAUSTED, as for a body over 1 MiB: the count limit is a size limit
 * of the request (the code's usual 429 would tell the client to retry the same thing later).
 */
export function tooManyEntries(reply: FastifyReply, count: number, what: string): FastifyReply {
  return reply.code(413).send({ error: `at most ${MAX_EVENTS_PER_REQUEST} ${what} per request (got ${count})`, code: 'RESOURCE_EXHAUSTED' });
}

/**
 * SDK routes (docs/contract.md "Events and exposures"): `POST /v1/environments/{env_id}/events` (one event) and `.../events/batch`
 * (a bare array or `{events: [...]}`), with a key (`x-sdk-key` or `X-API-Key`; a client key from its
 * own origins only, docs/client-side.md) or a bearer token. 202
 * `{accepted_count, rejected_keys, rejected}` once the accepted events are committed to PostgreSQL.
 */
export function registerEventRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { ingest, verifier, clientAccess } = services;

  async function handle(
    request: FastifyRequest<{ Params: EnvParams; Headers: IdempotencyHeaders }>,
    reply: FastifyReply,
    events: IncomingEvent[],
    single: boolean,
  ): Promise<FastifyReply> {
    // A client key's Bearer value is its signed context (docs/client-side.md "5. Exposures and events").
    const { principal, contextToken } = await authenticateClientRoute(verifier, request, { bearerMayBeKey: false, userTokens: 'accept' });
    clientAccess.admit(request, reply, principal);
    admitKeyRequest(services, request, principal, 'ingest', events.length);
    const scope = await ingest.scope(principal, request.params.env_id);
    if (events.length > MAX_EVENTS_PER_REQUEST) return tooManyEntries(reply, events.length, 'events');
    const answer = await ingest.ingestEvents(principal, scope, events, { idempotencyKey: request.headers['idempotency-key'], single, contextToken });
    return reply.code(202).send(answer);
  }

  // A client key's body is at most 32 KiB; its 429s counted (docs/client-side.md "6. Limits").
  const clientHooks = { preParsing: clientBodyLimit, onError: countRateLimited(services, 'ingest') };

  app.post<{ Params: EnvParams; Headers: IdempotencyHeaders; Body: IncomingEvent }>(
    '/v1/environments/:env_id/events',
    {
      ...clientHooks,
      schema: {
        tags: TAGS,
        summary: 'Send one metric event',
        security: SDK_OR_BEARER,
        params: envParams,
        headers: idempotencyHeaders,
        body: eventSchema,
        response: { 202: ingestResponse },
      },
    },
    (request, reply) => handle(request, reply, [request.body], true),
  );

  app.post<{ Params: EnvParams; Headers: IdempotencyHeaders; Body: IncomingEvent[] | { events: IncomingEvent[] } }>(
    '/v1/environments/:env_id/events/batch',
    {
      ...clientHooks,
      schema: {
        tags: TAGS,
        summary: 'Send up to 10,000 metric events (a bare array or {events: [...]}); each is accepted or rejected on its own',
        security: SDK_OR_BEARER,
        params: envParams,
        headers: idempotencyHeaders,
        body: batchBody,
        response: { 202: ingestResponse },
      },
    },
    (request, reply) => handle(request, reply, Array.isArray(request.body) ? request.body : request.body.events, false),
  );
}
