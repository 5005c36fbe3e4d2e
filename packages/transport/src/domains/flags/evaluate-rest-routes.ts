import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { EvaluationContext, EvaluationResult, ParameterValue, Principal } from '@switchyard/core';
import { toParameters, type Evaluation } from '@switchyard/services';
import type { GatewayServices } from '../../gateway-services.ts';
import { authenticate } from '../../http/credentials.ts';
import { SDK_KEY_ONLY, envParams } from '../../http/schemas.ts';
import { ResultJsonCache, ResultTextCache } from './rest-result-json.ts';
import { evaluateBody, evaluateResponse } from './rest-schemas.ts';

type Attributes = Record<string, ParameterValue | null> | null;

interface EvaluateBody {
  context_key: string;
  context_type: string;
  flag_key?: string | null;
  attributes?: Attributes;
  contexts?: Array<{ context_type: string; key: string; attributes?: Attributes }>;
}

/** The evaluate answer of docs/contract.md "Flags and evaluation" for one flag. */
function answer(result: EvaluationResult) {
  return {
    evaluated: true,
    flag_key: result.flag_key,
    variant_key: result.variant_key,
    is_enabled: result.is_enabled,
    value: result.value,
    reason: result.reason,
    prerequisite_key: result.prerequisite_key,
    error_code: result.error_code,
    error_message: result.error_message,
  };
}

/** Answers' texts, kept per flag definition and outcome: as a string for one flag, as bytes to join for all. */
const renderAnswer = (result: EvaluationResult): string => JSON.stringify(answer(result));
const oneFlagAnswers = new ResultTextCache(renderAnswer);
const answers = new ResultJsonCache(renderAnswer);

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * Sends one flag's answer or every flag's, as kept JSON text (Fastify sends a string or a buffer
 * as it is; the response schema documents it).
 */
function send(reply: FastifyReply, { results, outcomes }: Evaluation, flagKey: string | undefined): void {
  const json = flagKey !== undefined ? oneFlagAnswers.text(results, outcomes, 0) : answers.array('{"evaluated":true,"flags":[', results, outcomes, ']}');
  reply.type(JSON_TYPE).send(json);
}

/** The request's context first, then any further contexts of a multi-context input. */
function contextsOf(body: EvaluateBody): EvaluationContext[] {
  const contexts: EvaluationContext[] = [{ context_type: body.context_type, key: body.context_key, parameters: toParameters(body.attributes) }];
  if (body.contexts !== undefined) {
    for (const extra of body.contexts) contexts.push({ context_type: extra.context_type, key: extra.key, parameters: toParameters(extra.attributes) });
  }
  return contexts;
}

/**
 * `POST /v1/environments/{env_id}/evaluate`: remote evaluation for SDKs, x-sdk-key only (a bearer
 * token is not accepted: 401). This is the hot path: the key comes from the verifier's memory when
 * it can, flags from the environment's in-memory snapshot, and the response schema lets Fastify
 * serialise without JSON.stringify's reflection.
 */
export function registerEvaluateRoutes(app: FastifyInstance, services: GatewayServices): void {
  const { evaluation, verifier, clientAccess, keyUses } = services;

  app.post<{ Params: { env_id: string }; Body: EvaluateBody }>(
    '/v1/environments/:env_id/evaluate',
    {
      // A hot path whose handler sends once and logs nothing: no per-request logger (createHttpApp).
      config: { requestLogger: false },
      schema: {
        tags: ['evaluation'],
        security: SDK_KEY_ONLY,
        summary: 'Evaluate one flag, or every flag of the environment, for a context',
        params: envParams,
        body: evaluateBody,
        response: { 200: evaluateResponse },
      },
    },
    (request, reply) => {
      const header = request.headers['x-sdk-key'];
      // A key seen recently is answered from memory; anything else (unknown, absent, malformed)
      // takes the full check, and the rest of the request waits for it.
      const principal = typeof header === 'string' ? verifier.cachedSdkKey(header) : undefined;
      if (!principal) return authenticate(verifier, request, 'sdk').then((checked) => evaluateAndSend(checked, request, reply));
      return evaluateAndSend(principal, request, reply);
    },
  );

  /**
   * Evaluates and sends the answer: at once when the evaluation needs nothing awaited (the usual
   * case: no promise, no turn of the microtask queue), else once it is done.
   */
  function evaluateAndSend(principal: Principal, request: FastifyRequest<{ Params: { env_id: string }; Body: EvaluateBody }>, reply: FastifyReply): Promise<void> | undefined {
    // A server key from a browser is refused (docs/client-side.md "CORS and origins"); SDKs send no Origin.
    if (request.headers.origin !== undefined) clientAccess.refuseServerKeyFromBrowser(request, principal);
    const scope = evaluation.scopeFor(principal, request.params.env_id);
    keyUses.used(principal);
    const body = request.body;
    const flagKey = body.flag_key ?? undefined;
    const asked = { contexts: contextsOf(body), flagKey };
    const now = evaluation.evaluateNow(scope, asked);
    // Attribute names (never values) for the console's suggestions, once the contexts were accepted.
    keyUses.contextsSeen(scope, asked.contexts);
    if (now === undefined) return evaluation.evaluateFlags(scope, asked).then((done) => send(reply, done, flagKey));
    send(reply, now, flagKey);
    return undefined;
  }
}
