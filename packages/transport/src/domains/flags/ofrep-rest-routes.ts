import { createHash } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  RateLimitedError,
  isDomainError,
  permissionDenied,
  unauthenticated,
  type EnvironmentScope,
  type EvaluationResult,
  type Flag,
  isKeyPrincipal,
} from '@switchyard/core';
import { isDataException, isDatabaseUnavailable } from '@switchyard/postgres';
import { INPUT_REFUSED_BY_DATABASE } from '../../input/refused-by-database.ts';
import type { ContextBinding, EnvironmentSnapshot } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { OriginRefusedError } from '../client/rest-client-access.ts';
import { authenticateClientRoute } from '../client/rest-client-credentials.ts';
import { clientBodyLimit } from '../client/rest-client-body-limit.ts';
import { admitKeyRequest, countNotModified, countRateLimited } from '../client/rest-client-limits.ts';
import { JsonItem, ResultJsonCache, etagOfItems, jsonArrayBytes } from './rest-result-json.ts';
import { clientBulkStream } from '../client/rest-bulk-event-streams.ts';
import { mapContext, needsTargetingKey, type OfrepBody } from './ofrep-rest-context.ts';
import { bindContextToken, clientEvaluationContext, type ClientPrincipal } from '../client/rest-client-context.ts';
import { clientCallerOf } from '../client/rest-client-credentials.ts';
import type { ClientAnswer } from '../client/rest-client-answers.ts';

/**
 * OpenFeature Remote Evaluation Protocol (docs/decisions.md "OFREP"; open-feature/protocol service/openapi.yaml).
 * The routes live in their own encapsulated plugin so that every failure, including the ones
 * Fastify raises before a handler runs (bad JSON, schema), answers in OFREP's shapes instead of
 * the `{error, code}` of the rest of the API.
 */

type OfrepErrorCode = 'PARSE_ERROR' | 'TARGETING_KEY_MISSING' | 'INVALID_CONTEXT' | 'FLAG_NOT_FOUND' | 'GENERAL';

interface OfrepSuccess {
  key: string;
  /** Absent when the served variant has no value (ADR 0006 "code default": the SDK's default applies). */
  value?: unknown;
  reason: string;
  variant?: string;
  metadata: Record<string, string | number | boolean>;
}

interface OfrepFailure {
  key?: string;
  errorCode: OfrepErrorCode;
  errorDetails: string;
}

// --- schemas: Fastify validates with them and /v1/openapi.json is generated from them ---

const contextSchema = {
  type: 'object',
  description:
    'OpenFeature evaluation context. `targetingKey` is the context key; `kind` or `context_type` names the context type ' +
    '(default `user`); other string, number and boolean attributes are the context attributes (null, objects and arrays are ignored). ' +
    'A string attribute longer than 4096 characters (UTF-16 code units) answers 400 INVALID_CONTEXT.',
  properties: {
    targetingKey: { type: 'string', maxLength: 1024 },
    kind: { type: 'string', minLength: 1, maxLength: 200 },
    context_type: { type: 'string', minLength: 1, maxLength: 200 },
  },
  additionalProperties: true,
} as const;

const requestSchema = { type: 'object', properties: { context: contextSchema } } as const;

const successSchema = {
  type: 'object',
  description: 'Evaluation result',
  required: ['key', 'reason'],
  properties: {
    key: { type: 'string' },
    value: { description: 'The variant value; absent when the variant has none (use the code default)' },
    reason: { type: 'string', enum: ['TARGETING_MATCH', 'SPLIT', 'DEFAULT', 'DISABLED', 'PREREQUISITE_FAILED', 'ERROR'] },
    variant: { type: 'string' },
    metadata: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] } },
  },
} as const;

/** `key`: required on single-flag failures, optional where a server fault may not know it, absent on bulk ones. */
const failureSchema = (description: string, codes: readonly OfrepErrorCode[], key: 'required' | 'optional' | 'none') =>
  ({
    type: 'object',
    description,
    required: key === 'required' ? ['key', 'errorCode'] : ['errorCode'],
    properties: {
      ...(key === 'none' ? {} : { key: { type: 'string' } }),
      errorCode: { type: 'string', enum: codes },
      errorDetails: { type: 'string' },
    },
  }) as const;

const noBody = (description: string) => ({ description, type: 'null' }) as const;

const commonResponses = (key: 'optional' | 'none') =>
  ({
    401: noBody('Missing or invalid SDK key (empty body)'),
    403: {
      description:
        'The credential is not an SDK key, e.g. a user token (empty body); or the origin rules refused the request ' +
        '(docs/client-side.md "CORS and origins": a client key from an origin not in its list, a server key from a browser), ' +
        'with `errorDetails` saying why',
      type: ['object', 'null'],
      properties: { errorCode: { type: 'string', enum: ['GENERAL'] }, errorDetails: { type: 'string' } },
    },
    413: failureSchema('Body too large: over 32 KiB with a client key, over 1 MiB otherwise', ['PARSE_ERROR'], key),
    429: noBody('Rate limited (Retry-After)'),
    '5xx': failureSchema('Server error', ['GENERAL'], key),
  }) as const;

const security: Array<Record<string, string[]>> = [{ api_key: [] }, { sdk_key: [] }, { sdk_key_bearer: [] }];

const singleSchema = {
  summary: 'OFREP single flag evaluation',
  security,
  params: { type: 'object', required: ['key'], properties: { key: { type: 'string', maxLength: 1000 } } },
  body: requestSchema,
  response: {
    200: successSchema,
    400: failureSchema('Bad evaluation request', ['PARSE_ERROR', 'TARGETING_KEY_MISSING', 'INVALID_CONTEXT', 'GENERAL'], 'required'),
    404: failureSchema('Flag not found', ['FLAG_NOT_FOUND'], 'required'),
    ...commonResponses('optional'),
  },
} as const;

const bulkSchema = {
  summary: 'OFREP bulk evaluation of every flag of the SDK key’s environment',
  security,
  headers: { type: 'object', properties: { 'if-none-match': { type: 'string', description: 'ETag of a previous answer' } } },
  body: requestSchema,
  response: {
    200: {
      type: 'object',
      description: 'Every flag of the environment, in key order',
      required: ['flags'],
      headers: { ETag: { type: 'string', description: 'Changes whenever the answer for this context changes' } },
      properties: {
        flags: {
          type: 'array',
          items: { oneOf: [successSchema, failureSchema('Per-flag failure', ['TARGETING_KEY_MISSING', 'INVALID_CONTEXT', 'GENERAL'], 'required')] },
        },
        eventStreams: {
          type: 'array',
          description: 'Client keys only: the browser event stream (OFREP ADR-0008; docs/client-side.md "7. Streaming")',
          items: {
            type: 'object',
            properties: {
              type: { type: 'string', enum: ['sse'] },
              endpoint: { type: 'object', properties: { requestUri: { type: 'string' } } },
              inactivityDelaySec: { type: 'integer' },
            },
          },
        },
      },
    },
    304: noBody('Not modified: If-None-Match names the current ETag'),
    400: failureSchema('Bad evaluation request', ['PARSE_ERROR', 'INVALID_CONTEXT'], 'none'),
    ...commonResponses('none'),
  },
} as const;

// --- mapping ---

function toOfrep(result: EvaluationResult): OfrepSuccess | OfrepFailure {
  // GENERAL (a flag that could not be evaluated) and INVALID_CONTEXT have no value to serve.
  if (result.error_code === 'GENERAL' || result.error_code === 'INVALID_CONTEXT') {
    return { key: result.flag_key, errorCode: result.error_code, errorDetails: result.error_message ?? result.error_code };
  }
  const metadata: OfrepSuccess['metadata'] = {};
  if (result.rule_id) metadata.rule_id = result.rule_id;
  // PREREQUISITE_FAILED is passed on as it is (OFREP's reasons are open strings), naming the prerequisite.
  if (result.prerequisite_key) metadata.prerequisite_key = result.prerequisite_key;
  if (result.error_code) metadata.error_code = result.error_code;
  const entry: OfrepSuccess = { key: result.flag_key, reason: result.reason, metadata };
  if (result.value !== null) entry.value = result.value;
  if (result.variant_key !== '') entry.variant = result.variant_key;
  return entry;
}

/** Bulk entries' texts, kept per flag and outcome (docs/decisions.md "Evaluate route performance"). */
const bulkEntries = new ResultJsonCache((result) => JSON.stringify(toOfrep(result)));

const targetingKeyMissing = (key: string): OfrepFailure => ({
  key,
  errorCode: 'TARGETING_KEY_MISSING',
  errorDetails: 'this flag has targeting rules: context.targetingKey is required',
});

/** A flag's TARGETING_KEY_MISSING entry, kept per definition like the results' entries. */
const missingKeyItems = new WeakMap<Flag, JsonItem>();
function missingKeyItem(flag: Flag): JsonItem {
  let item = missingKeyItems.get(flag);
  if (item === undefined) {
    item = JsonItem.of(targetingKeyMissing(flag.key));
    missingKeyItems.set(flag, item);
  }
  return item;
}

/**
 * The ETags last answered per environment and request context, with the snapshot they were
 * computed from. Evaluation is a function of the definitions and the context, so while that
 * snapshot is still the environment's, a context answered before has the same answer: a poll that
 * presents that ETag gets its 304 without evaluating again. Not kept when evaluation reads more
 * than the snapshot (list segments' members are looked up at evaluation time) or records
 * something (flags under an ACTIVE experiment record an exposure per evaluation).
 *
 * One bounded table for every environment (cleared when full), keyed by the SHA-256 of the
 * context's JSON, so neither many tenants nor large contexts grow it; an entry names its snapshot
 * by a number, so no replaced snapshot is kept alive by it.
 */
const answeredEtags = new Map<string, { snapshotId: number; etag: string }>();
const MAX_REMEMBERED_ANSWERS = 50_000;
const snapshotIds = new WeakMap<EnvironmentSnapshot, number>();
let lastSnapshotId = 0;

function snapshotIdOf(snapshot: EnvironmentSnapshot): number {
  let id = snapshotIds.get(snapshot);
  if (id === undefined) {
    id = ++lastSnapshotId;
    snapshotIds.set(snapshot, id);
  }
  return id;
}

const answerKey = (environmentId: string, contextText: string): string =>
  `${environmentId}:${createHash('sha256').update(contextText).digest('base64url')}`;

/** The ETag answered for this context under this snapshot, if remembered. */
function rememberedEtag(snapshot: EnvironmentSnapshot, key: string): string | undefined {
  const entry = answeredEtags.get(key);
  return entry !== undefined && entry.snapshotId === snapshotIdOf(snapshot) ? entry.etag : undefined;
}

function rememberEtag(snapshot: EnvironmentSnapshot, key: string, etag: string): void {
  if (snapshot.listSegmentKeysByFlag.size > 0 || snapshot.experimentFlagKeys.size > 0) return;
  if (answeredEtags.size >= MAX_REMEMBERED_ANSWERS) answeredEtags.clear();
  answeredEtags.set(key, { snapshotId: snapshotIdOf(snapshot), etag });
}

// --- ETag ---

/** If-None-Match: `*` or a comma-separated list of (possibly weak) tags. */
function matchesEtag(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const trimmed = tag.trim();
    return trimmed === '*' || trimmed.replace(/^W\//, '') === etag;
  });
}

// --- errors ---

/** Requests made with a client key: their failures carry OFREP's error code only (docs/client-side.md "What a client sees"). */
const clientRequests = new WeakSet<FastifyRequest>();

const sendFailure = (reply: FastifyReply, status: number, failure: OfrepFailure): FastifyReply =>
  reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send(clientRequests.has(reply.request) ? { ...(failure.key === undefined ? {} : { key: failure.key }), errorCode: failure.errorCode } : failure);

/** The flag key of a single-flag request (failures there carry `key`; bulk failures do not). */
const keyOf = (request: FastifyRequest): string | undefined => (request.params as { key?: string } | undefined)?.key;

function failure(request: FastifyRequest, errorCode: OfrepErrorCode, errorDetails: string): OfrepFailure {
  const key = keyOf(request);
  return key === undefined ? { errorCode, errorDetails } : { key, errorCode, errorDetails };
}

/**
 * Every failure in OFREP's terms: 401/403 with no body (the protocol defines none), body and
 * context problems as 400 PARSE_ERROR / INVALID_CONTEXT, server faults as GENERAL.
 */
function handleOfrepError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  if (isDomainError(error)) {
    switch (error.code) {
      case 'UNAUTHENTICATED':
        return reply.code(401).send();
      case 'PERMISSION_DENIED':
        // The origin rules explain themselves (a developer reads this in the browser's tools).
        if (error instanceof OriginRefusedError) {
          return reply.code(403).type('application/json; charset=utf-8').send(JSON.stringify({ errorCode: 'GENERAL', errorDetails: error.message }));
        }
        return reply.code(403).send();
      case 'NOT_FOUND': // the flag vanished between the snapshot read and the evaluation
        return sendFailure(reply, 404, failure(request, 'FLAG_NOT_FOUND', error.message));
      case 'INVALID_ARGUMENT':
        return sendFailure(reply, 400, failure(request, 'INVALID_CONTEXT', error.message));
      case 'UNAVAILABLE': // a gateway whose services cannot be reached, or lost their database
        return sendFailure(reply, 503, { errorCode: 'GENERAL', errorDetails: error.message });
      case 'RESOURCE_EXHAUSTED':
        if (error instanceof RateLimitedError) void reply.header('retry-after', String(error.retryAfterSeconds));
        return reply.code(429).send();
      default:
        break;
    }
  }
  if (error.validation) {
    const path = error.validation[0]?.instancePath ?? '';
    const inContext = error.validationContext === 'body' && path.startsWith('/context');
    const what = `${error.validationContext ?? 'body'}${path.replaceAll('/', '.')}`;
    const message = `${what} ${error.validation[0]?.message ?? 'is invalid'}`;
    return sendFailure(reply, 400, failure(request, inContext ? 'INVALID_CONTEXT' : 'PARSE_ERROR', message));
  }
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return sendFailure(reply, 413, failure(request, 'PARSE_ERROR', 'request body is too large'));
  if (isDatabaseUnavailable(error)) {
    request.log.warn({ err: { message: error.message, code: error.code } }, 'database unavailable');
    return sendFailure(reply, 503, { errorCode: 'GENERAL', errorDetails: 'the database is unavailable; retry later' });
  }
  if (isDataException(error)) {
    request.log.warn({ method: request.method, route: request.routeOptions.url, sqlState: error.code }, 'the database refused a value of the request');
    return sendFailure(reply, 400, failure(request, 'PARSE_ERROR', INPUT_REFUSED_BY_DATABASE));
  }
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    // Fastify's own refusals before the handler: malformed JSON, wrong content type, ...
    return sendFailure(reply, 400, failure(request, 'PARSE_ERROR', error.message));
  }
  request.log.error({ err: error }, 'unhandled error');
  return sendFailure(reply, 500, { errorCode: 'GENERAL', errorDetails: 'internal error' });
}

// --- routes ---

/**
 * `POST /ofrep/v1/evaluate/flags/{key}` and `POST /ofrep/v1/evaluate/flags`, authenticated by a
 * server or client key (`X-API-Key`, `x-sdk-key` or `Authorization: Bearer <key>`); a client key
 * from its own origins only (docs/client-side.md). Their CORS preflights: domains/client/rest-cors.ts.
 */
export function registerOfrepRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { evaluation, verifier, clientAccess } = services;
  const scopes = new WeakMap<FastifyRequest, EnvironmentScope>();
  /** Requests made with a client key: answered by clientAnswers, never by the server-key code below. */
  const clients = new WeakMap<FastifyRequest, ClientPrincipal>();
  /** The verified context token of a client key that requires signing (absent: no binding). */
  const bindings = new WeakMap<FastifyRequest, ContextBinding>();
  const { clientAnswers } = services;
  const sendClientAnswer = (reply: FastifyReply, answer: ClientAnswer): FastifyReply => {
    if (answer.etag !== undefined) void reply.header('etag', answer.etag);
    const body = answer.bytes ?? answer.json;
    if (body === undefined) return reply.code(answer.status).send();
    return reply.code(answer.status).type('application/json; charset=utf-8').send(body);
  };

  const scopeOf = (request: FastifyRequest): EnvironmentScope => {
    const scope = scopes.get(request);
    if (scope === undefined) throw unauthenticated('missing SDK key');
    return scope;
  };

  void app.register(async (ofrep) => {
    ofrep.setErrorHandler(handleOfrepError);

    // Credentials first, before the body is even parsed: a caller without a key learns nothing.
    ofrep.addHook('onRequest', async (request, reply) => {
      const { principal } = await authenticateClientRoute(verifier, request, { bearerMayBeKey: true, userTokens: 'refuse' });
      if (!isKeyPrincipal(principal)) throw permissionDenied('OFREP needs an SDK key');
      // Where the request may come from, and the CORS headers of its answer.
      clientAccess.admit(request, reply, principal);
      // Counted by key kind; a client key's limits and 32 KiB body (docs/client-side.md "6. Limits").
      // Before the context token is checked: requests with bad tokens spend the key's tokens too.
      admitKeyRequest(services, request, principal, 'evaluation');
      if (principal.kind === 'client_key') {
        // A client key's answers are restricted (docs/client-side.md "What a client sees") and
        // personal to the context: no shared cache keeps them, every use revalidates (ETag).
        evaluation.clientScopeFor(principal, principal.environmentId);
        // Verified from keys in memory, before the body is read: a bad token is a 401 (another
        // environment's: 403). docs/client-side.md "4. Signed contexts".
        const binding = await bindContextToken(services, principal, clientCallerOf(request)?.contextToken);
        if (binding) bindings.set(request, binding);
        clients.set(request, principal);
        clientRequests.add(request);
        void reply.header('cache-control', 'private, no-cache');
      } else {
        scopes.set(request, evaluation.scopeFor(principal, principal.environmentId));
      }
      // The key's last use (docs/contract.md "Last use of a key"), once it may evaluate here.
      services.keyUses.used(principal);
    });
    ofrep.addHook('preParsing', clientBodyLimit);
    ofrep.addHook('onError', countRateLimited(services, 'evaluation'));

    ofrep.post<{ Params: { key: string }; Body: OfrepBody }>('/ofrep/v1/evaluate/flags/:key', { schema: singleSchema }, async (request, reply) => {
      const client = clients.get(request);
      if (client !== undefined) {
        const { targetingKey, context } = clientEvaluationContext(request, bindings.get(request));
        services.keyUses.contextsSeen(client, [context]);
        return sendClientAnswer(reply, await clientAnswers.single(client, request.params.key, { context, hasTargetingKey: targetingKey !== undefined }));
      }
      const scope = scopeOf(request);
      const key = request.params.key;
      const { targetingKey, context } = mapContext(request.body);
      // Attribute names (never values) for the console's suggestions (docs/contract.md "Context attributes").
      services.keyUses.contextsSeen(scope, [context]);
      const snapshot = await evaluation.snapshot(scope);
      const flag = snapshot.flags.get(key);
      if (flag === undefined) return sendFailure(reply, 404, { key, errorCode: 'FLAG_NOT_FOUND', errorDetails: `flag '${key}' not found` });
      if (targetingKey === undefined && needsTargetingKey(flag, snapshot.flags)) return sendFailure(reply, 400, targetingKeyMissing(key));
      const [result] = await evaluation.evaluate(scope, { contexts: [context], flagKey: key });
      if (result === undefined) return sendFailure(reply, 404, { key, errorCode: 'FLAG_NOT_FOUND', errorDetails: `flag '${key}' not found` });
      const entry = toOfrep(result);
      if ('errorCode' in entry) return sendFailure(reply, entry.errorCode === 'GENERAL' ? 500 : 400, entry);
      return entry;
    });

    ofrep.post<{ Body: OfrepBody; Headers: { 'if-none-match'?: string } }>('/ofrep/v1/evaluate/flags', { schema: bulkSchema }, async (request, reply) => {
      const ifNoneMatch = request.headers['if-none-match'];
      const client = clients.get(request);
      if (client !== undefined) {
        const { targetingKey, context } = clientEvaluationContext(request, bindings.get(request));
        services.keyUses.contextsSeen(client, [context]);
        // The answer names its event stream, and its ETag the stream token's window.
        const stream = clientBulkStream(services, request, client);
        const presented = stream === null ? ifNoneMatch : stream.currentWindowTags(ifNoneMatch);
        const answer = await clientAnswers.bulk(client, { context, hasTargetingKey: targetingKey !== undefined, ifNoneMatch: presented });
        if (answer.status === 304) countNotModified(services, request);
        return sendClientAnswer(reply, stream === null ? answer : stream.addTo(answer));
      }
      const scope = scopeOf(request);
      // A client polling with the ETag it holds, for a context and definitions answered before:
      // the same answer, known without evaluating again.
      const key = answerKey(scope.environmentId, JSON.stringify(request.body?.context ?? null));
      const loaded = ifNoneMatch === undefined ? undefined : evaluation.currentSnapshot(scope);
      const known = loaded === undefined ? undefined : rememberedEtag(loaded, key);
      if (known !== undefined && matchesEtag(ifNoneMatch, known)) {
        countNotModified(services, request);
        return reply.header('etag', known).code(304).send();
      }

      const { targetingKey, context } = mapContext(request.body);
      services.keyUses.contextsSeen(scope, [context]);
      const { snapshot, flags, results, outcomes } = await evaluation.evaluateFlags(scope, { contexts: [context] });
      const entries = bulkEntries.items(results, outcomes);
      if (targetingKey === undefined) {
        for (let i = 0; i < entries.length; i++) if (needsTargetingKey(flags[i], snapshot.flags)) entries[i] = missingKeyItem(flags[i]!);
      }
      // The ETag follows the answer's content: it changes exactly when a flag, a segment or the
      // context changes what this caller would see, on every instance alike.
      const etag = etagOfItems(entries);
      rememberEtag(snapshot, key, etag);
      void reply.header('etag', etag);
      if (matchesEtag(ifNoneMatch, etag)) {
        countNotModified(services, request);
        return reply.code(304).send();
      }
      return reply.type('application/json; charset=utf-8').send(jsonArrayBytes('{"flags":[', entries, ']}'));
    });
  });
}
