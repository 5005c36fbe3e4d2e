/**
 * The servers the evaluate route is compared with, each run by server-process.ts in a process of
 * its own. Each answers every request with the same bytes the real route gave for a sample
 * request, so the rows differ only in the work done per request:
 *
 * - bare: reads the body and writes captured bytes (the issue's baseline: the floor of any HTTP/1.1
 *   route on this machine);
 * - JSON: reads the body, JSON.parse it and JSON.stringify an answer (the floor of any route that
 *   reads and writes JSON, whatever serves it);
 * - building: reads and parses the JSON body, builds one fresh object per result and stringifies
 *   them (the floor of any server answering 1,000 results: the all-flags rows' baseline);
 * - Fastify defaults: `Fastify()` with no options, hooks or parser of ours, and the evaluate
 *   route's schemas, whose handler sends the captured bytes (what Fastify itself costs: the
 *   distance from it to the next row is what the server's own app adds);
 * - Fastify: the server's own Fastify app (createHttpApp: same options, JSON parser, error
 *   handling and hooks, request metrics included) with the evaluate route's schemas, whose handler
 *   sends the captured bytes (the floor of the route in Fastify: everything but the credential
 *   check and the evaluation);
 * - Fastify evaluating: the same, whose handler first runs the server's own evaluation for the
 *   request (the route's work but the credential check and the answer's building), then sends the
 *   captured bytes: what the evaluation costs inside an HTTP server, caches shared with the HTTP
 *   stack, which no answer-building can save.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { ParameterValue, Principal } from '@switchyard/core';
import type { EvaluationService } from '@switchyard/services';
import { createHttpApp } from '@switchyard/transport/http/app.ts';
import { evaluateBody, evaluateResponse } from '@switchyard/transport/domains/flags/rest-schemas.ts';
import { envParams } from '@switchyard/transport/http/schemas.ts';
import type { Logger } from '@switchyard/transport/logging.ts';
import { ServerMetrics } from '@switchyard/transport/metrics.ts';

export interface ReferenceServer {
  url: string;
  close(): Promise<void>;
}

/** Response headers a server adds by itself (node sets date/connection/keep-alive, and we set the length). */
const TRANSPORT_HEADERS = new Set(['date', 'connection', 'keep-alive', 'content-length', 'transfer-encoding']);

/** The captured answer's own headers (content-type and the like), without the transport ones. */
function answerHeaders(headers: Headers): Record<string, string> {
  const fixed: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (!TRANSPORT_HEADERS.has(name)) fixed[name] = value;
  });
  return fixed;
}

async function listen(server: Server, keepAliveTimeoutMs: number): Promise<ReferenceServer> {
  server.keepAliveTimeout = keepAliveTimeoutMs;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Reads the body, as any route must, then answers the captured bytes. */
export function startBareServer(body: Buffer, headers: Headers, keepAliveTimeoutMs: number): Promise<ReferenceServer> {
  const fixed = { ...answerHeaders(headers), 'content-length': String(body.length) };
  const server = createServer((request, response) => {
    request.on('data', () => {});
    request.on('end', () => {
      response.writeHead(200, fixed);
      response.end(body);
    });
  });
  return listen(server, keepAliveTimeoutMs);
}

/** Reads and JSON.parses the body, then JSON.stringifies what `answer` makes of it (a fresh string per request). */
function startJsonAnsweringServer(headers: Headers, keepAliveTimeoutMs: number, answer: (parsed: Record<string, unknown>) => unknown): Promise<ReferenceServer> {
  const fixed = answerHeaders(headers);
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      const text = JSON.stringify(answer(JSON.parse(body.toString('utf8')) as Record<string, unknown>));
      response.writeHead(200, { ...fixed, 'content-length': String(Buffer.byteLength(text)) });
      response.end(text);
    });
  });
  return listen(server, keepAliveTimeoutMs);
}

/** The captured answer object, with the request's flag_key, as any JSON route makes it. */
export function startJsonServer(answer: object, headers: Headers, keepAliveTimeoutMs: number): Promise<ReferenceServer> {
  return startJsonAnsweringServer(headers, keepAliveTimeoutMs, (parsed) => ({ ...answer, flag_key: parsed.flag_key }));
}

/**
 * A fresh object for each of `items` (a shallow copy, as a route builds one result per flag),
 * wrapped into the answer: the floor of any server answering one result per flag.
 */
export function startBuildingServer(items: readonly object[], wrap: (built: object[]) => object, headers: Headers, keepAliveTimeoutMs: number): Promise<ReferenceServer> {
  return startJsonAnsweringServer(headers, keepAliveTimeoutMs, () => {
    const built = new Array<object>(items.length);
    for (let i = 0; i < items.length; i++) built[i] = { ...items[i]! };
    return wrap(built);
  });
}

/** What a Fastify reference server evaluating runs for each request body (requestEvaluation's). */
export type RequestEvaluation = (requestBody: Record<string, unknown>) => Promise<unknown>;

/**
 * The server's own evaluation of one request body, as the routes call it, with the credential
 * checked once, here: how the body names the context is the evaluate route's fields, or OFREP's
 * `context`.
 */
export function requestEvaluation(evaluation: EvaluationService, principal: Principal, environmentId: string, request: 'evaluate' | 'ofrep'): RequestEvaluation {
  const scope = evaluation.scopeFor(principal, environmentId);
  if (request === 'ofrep') {
    return (body) => {
      const { targetingKey, ...attributes } = (body.context ?? {}) as Record<string, ParameterValue>;
      return evaluation.evaluateFlags(scope, { contexts: [{ context_type: 'user', key: String(targetingKey), parameters: attributes }] });
    };
  }
  return (body) =>
    evaluation.evaluateFlags(scope, {
      contexts: [{ context_type: String(body.context_type), key: String(body.context_key), parameters: (body.attributes ?? {}) as Record<string, ParameterValue> }],
      flagKey: typeof body.flag_key === 'string' ? body.flag_key : undefined,
    });
}

/**
 * The server's Fastify app and the evaluate route's schemas, answering the captured answer without
 * any work (the floor of the route in Fastify: parsing, validation, hooks, sending). `body` is sent
 * in the form the route sends it: a string for one flag's answer, bytes for every flag's.
 */
export async function startFastifyServer(
  body: Buffer | string,
  logger: Logger,
  keepAliveTimeoutMs: number,
  options: { evaluate?: RequestEvaluation; ofrep?: boolean; fastifyDefaults?: boolean } = {},
): Promise<ReferenceServer> {
  // Request metrics as the server counts them: every REST request pays for them. With
  // `fastifyDefaults`, Fastify as it comes instead (no logger, timeouts, limits, hooks or parser of ours).
  const app = options.fastifyDefaults ? Fastify({ logger: false }) : createHttpApp(logger, { metrics: new ServerMetrics() });
  const { evaluate } = options;
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    if (evaluate) await evaluate(request.body as Record<string, unknown>);
    return reply.type('application/json; charset=utf-8').send(body);
  };
  if (options.ofrep) {
    // OFREP's bulk request schema is this lenient too: a context object of any attributes.
    app.post('/ofrep/v1/evaluate/flags', { schema: { body: { type: 'object', properties: { context: { type: 'object' } } } } }, handler);
  } else {
    // The route's own options: its schemas, and no per-request logger (createHttpApp).
    app.post('/v1/environments/:env_id/evaluate', { config: { requestLogger: false }, schema: { params: envParams, body: evaluateBody, response: { 200: evaluateResponse } } }, handler);
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  app.server.keepAliveTimeout = keepAliveTimeoutMs;
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
}
