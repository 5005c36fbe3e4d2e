import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, RateLimitedError, isDomainError } from '@switchyard/core';
import { isDataException, isDatabaseUnavailable } from '@switchyard/postgres';
import { INPUT_REFUSED_BY_DATABASE } from '../input/refused-by-database.ts';
import type { Logger } from '../logging.ts';
import { ServicesUnavailableError } from '../remote/grpc-status-errors.ts';
import { HTTP_STATUS_BY_CODE, codeForStatus } from './error-status.ts';

/** Fastify's default `maxParamLength`: a longer path parameter is refused before routing (414). */
export const MAX_PATH_PARAM_LENGTH = 100;

interface ErrorBody {
  error: string;
  code: string;
}

/** Formats Fastify's schema-validation failure so it names the field: `body.email: must be string`. */
function validationMessage(error: FastifyError): string {
  const first = error.validation?.[0];
  if (!first) return error.message;
  const context = error.validationContext ?? 'body';
  const field = first.instancePath ? `${context}${first.instancePath.replaceAll('/', '.')}` : context;
  const missing = (first.params as { missingProperty?: string } | undefined)?.missingProperty;
  // The path of the object lacking the property too: `body.configs.0.parameter_key is required`.
  if (missing) return `${field}.${missing} is required`;
  return `${field}: ${first.message ?? 'is invalid'}`;
}

/**
 * Turns any error into `{error, code}` with the right status. Domain errors keep their message;
 * client mistakes caught by Fastify (bad JSON, schema, size) become 4xx; a lost database is 502
 * UNAVAILABLE; a value the database refused (SQLSTATE class 22) is 400 INVALID_ARGUMENT, logged at
 * warn with its route; everything else is a 500 whose details go to the log only (never the response).
 */
export function installErrorHandling(app: FastifyInstance, logger: Logger): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    let status: number;
    let body: ErrorBody;
    if (isDomainError(error)) {
      // 503 for a gateway that cannot reach its services (retrying is right); otherwise the table.
      status = error instanceof ServicesUnavailableError ? 503 : HTTP_STATUS_BY_CODE[error.code];
      body = { error: error.message, code: error.code };
      if (error instanceof RateLimitedError) void reply.header('retry-after', String(error.retryAfterSeconds));
    } else if (error.validation) {
      status = 400;
      body = { error: validationMessage(error), code: 'INVALID_ARGUMENT' };
    } else if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // 413 is the one place the status is not the code's table entry: the size limit is a
      // transport rule, and RESOURCE_EXHAUSTED is the gRPC name for it.
      status = 413;
      body = { error: 'request body is too large', code: 'RESOURCE_EXHAUSTED' };
    } else if (isDatabaseUnavailable(error)) {
      status = HTTP_STATUS_BY_CODE.UNAVAILABLE;
      body = { error: 'the database is unavailable; retry later', code: 'UNAVAILABLE' };
      logger.warn({ reqId: request.id, err: { message: error.message, code: error.code } }, 'database unavailable');
    } else if (isDataException(error)) {
      // A value PostgreSQL refused that the edge let through: the caller's input, so 400 — with
      // neither the statement nor the value (the driver's message may quote it) in the answer.
      status = 400;
      body = { error: INPUT_REFUSED_BY_DATABASE, code: 'INVALID_ARGUMENT' };
      logger.warn(
        { reqId: request.id, method: request.method, route: request.routeOptions.url, sqlState: error.code },
        'the database refused a value of the request',
      );
    } else if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      status = error.statusCode;
      body = { error: error.message, code: codeForStatus(status) };
    } else {
      status = 500;
      body = { error: 'internal error', code: 'INTERNAL' };
      logger.error({ reqId: request.id, err: error }, 'unhandled error');
    }
    void reply.code(status).type('application/json; charset=utf-8').send(body);
  });

  app.setNotFoundHandler((request, reply) => {
    void reply.code(404).send({ error: `no route for ${request.method} ${request.url.split('?')[0]}`, code: 'NOT_FOUND' });
  });
}

/**
 * Fastify's refusals made before any route is found, in the `{error, code}` format like every
 * other answer (Fastify's own body names neither): a URL whose percent-encoding is not UTF-8
 * (a lone surrogate written as `%ED%A0%80`, a stray `%C0`) is 400, a path parameter longer than
 * the router's 100 characters is 414. The text is fixed: the URL itself is not echoed.
 */
export function answerFrameworkError(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    void reply.code(414).type('application/json; charset=utf-8').send({ error: `a path parameter is longer than ${MAX_PATH_PARAM_LENGTH} characters`, code: 'INVALID_ARGUMENT' });
    return;
  }
  const status = typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 400;
  const message = error.code === 'FST_ERR_BAD_URL' ? 'the URL is not valid: a path segment is not percent-encoded UTF-8' : 'the request cannot be routed';
  void reply.code(status).type('application/json; charset=utf-8').send({ error: message, code: codeForStatus(status) });
}

/** What node:http refused before Fastify saw a request, with the status that names it. */
const CLIENT_ERRORS: Record<string, { status: number; reason: string; body: ErrorBody }> = {
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, reason: 'Request Timeout', body: { error: 'the request did not arrive in time', code: 'DEADLINE_EXCEEDED' } },
  HPE_HEADER_OVERFLOW: {
    status: 431,
    reason: 'Request Header Fields Too Large',
    body: { error: 'the request line and headers are larger than 16 KiB', code: 'INVALID_ARGUMENT' },
  },
};
const MALFORMED_REQUEST = { status: 400, reason: 'Bad Request', body: { error: 'the request is not valid HTTP', code: 'INVALID_ARGUMENT' } };

/**
 * node:http's refusals of a request it could not parse (a URL and headers over its 16 KiB, a
 * request too slow, bytes that are not HTTP), in the `{error, code}` format like every other
 * answer, written on the socket as Fastify's own handler does, which then closes it.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const answer = (error.code !== undefined ? CLIENT_ERRORS[error.code] : undefined) ?? MALFORMED_REQUEST;
  const body = JSON.stringify(answer.body);
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${answer.status} ${answer.reason}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: application/json; charset=utf-8\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy(error);
}

export { DomainError };
