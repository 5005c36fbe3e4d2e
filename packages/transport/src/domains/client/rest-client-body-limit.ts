import { Transform, type Readable } from 'node:stream';
import { errorCodes, type FastifyReply, type FastifyRequest } from 'fastify';
import { recordedKeyKind } from './rest-client-limits.ts';

/**
 * Largest body of a request authenticated by a client key (docs/client-side.md "6. Limits"):
 * 32 KiB, against 1 MiB for server keys and users (MAX_BODY_BYTES). A browser sends one context,
 * or at most 100 exposures or events, so 32 KiB is ample, and a key anyone can copy from a page
 * cannot make an instance read and parse megabytes per request.
 */
export const MAX_CLIENT_BODY_BYTES = 32 * 1024;

/**
 * Whether the request presents a client key: the key's kind is in its prefix (`ck_`; server keys
 * start with `sdk_`), in `x-sdk-key`, `x-api-key` or `Authorization: Bearer`. A forged value with
 * that prefix gets the smaller limit and then its 401: nothing is gained by claiming it.
 */
function presentsClientKey(request: FastifyRequest): boolean {
  const { headers } = request;
  // Any of them: whichever one authentication ends up reading, a client key gets the client limit.
  for (const key of [headers['x-sdk-key'], headers['x-api-key']]) if (typeof key === 'string' && key.trimStart().startsWith('ck_')) return true;
  const authorization = headers.authorization;
  return typeof authorization === 'string' && /^\s*Bearer\s+ck_/i.test(authorization);
}

const tooLarge = (): Error => new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE();

/** Passes the body on until more than `limit` bytes have come, then fails with Fastify's 413 error. */
function limitedTo(payload: Readable, limit: number): Readable {
  let received = 0;
  const limited = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      received += chunk.length;
      if (received > limit) callback(tooLarge());
      else callback(null, chunk);
    },
  });
  // A request aborted midway fails the body read, as it would without this stream.
  payload.on('error', (error) => limited.destroy(error));
  return payload.pipe(limited);
}

/**
 * preParsing hook of the routes client keys use: a client key's body may be at most
 * MAX_CLIENT_BODY_BYTES. The body limit of a Fastify route is fixed, not per caller, so the
 * route keeps the general 1 MiB and this hook narrows it before the body is read: a declared
 * Content-Length over the limit is refused at once, a chunked body as soon as its bytes pass it.
 * The refusal is Fastify's own body-too-large error, so each route's error handler answers 413
 * in its shape (OFREP's `{errorCode: PARSE_ERROR}`, else `{error, code: RESOURCE_EXHAUSTED}`).
 *
 * The key kind is the authenticated one when an onRequest hook recorded it (OFREP authenticates
 * there), else the presented key's prefix (exposures and events authenticate in their handler).
 */
export function clientBodyLimit(request: FastifyRequest, _reply: FastifyReply, payload: Readable, done: (error: Error | null, payload?: Readable) => void): void {
  // A callback, not an async function: every server-key OFREP call passes here, without a promise.
  const kind = recordedKeyKind(request);
  if (kind === 'server' || (kind === undefined && !presentsClientKey(request))) return done(null, payload);
  const declared = Number(request.headers['content-length']);
  if (declared > MAX_CLIENT_BODY_BYTES) return done(tooLarge());
  done(null, limitedTo(payload, MAX_CLIENT_BODY_BYTES));
}
