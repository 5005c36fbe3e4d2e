import type { FastifyRequest } from 'fastify';
import { unauthenticated, type Principal } from '@switchyard/core';
import { bearerCredential, sdkKeyCredential, type CredentialKind } from '../../auth/presented-credentials.ts';
import type { CallerVerifier } from '../../gateway-services.ts';
import { authenticate, presentedByRequest } from '../../http/credentials.ts';

/**
 * The `X-API-Key` value (OFREP's own key header), trimmed: the minimal reading of it for the
 * signed-context paths. @throws UNAUTHENTICATED for an empty or repeated one.
 */
export function apiKeyHeader(request: FastifyRequest): string | undefined {
  const value = request.headers['x-api-key'];
  if (value === undefined) return undefined;
  const single = Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
  if (single === undefined || single.trim() === '') throw unauthenticated('invalid X-API-Key');
  return single.trim();
}

/** The key of a request, from a key header (`x-sdk-key`, else `X-API-Key`); undefined when neither is sent. */
export function keyHeader(request: FastifyRequest): string | undefined {
  return sdkKeyCredential(presentedByRequest(request)) ?? apiKeyHeader(request);
}

/**
 * A client key's context token (docs/client-side.md "4. Signed contexts"): with the key in a key
 * header, `Authorization: Bearer <token>` carries the signed context, not a credential.
 */
export const contextTokenOf = (request: FastifyRequest): string | undefined => bearerCredential(presentedByRequest(request), 'context token');

/**
 * The caller of an ingest route (events, exposures): a client key in a key header, with the
 * Bearer value as its context token; anything else exactly as `authenticate(…, accept)` (a bearer
 * user token first, then `x-sdk-key`), so server keys and users see no change.
 */
export async function authenticateClientAware(
  verifier: CallerVerifier,
  request: FastifyRequest,
  accept: CredentialKind,
): Promise<{ principal: Principal; contextToken: string | undefined }> {
  const key = keyHeader(request);
  if (key !== undefined && key.startsWith('ck_')) {
    const principal = await verifier.verifySdkKey(key);
    if (principal.kind === 'client_key') return { principal, contextToken: contextTokenOf(request) };
  }
  if (key !== undefined && request.headers['x-sdk-key'] === undefined && request.headers.authorization === undefined) {
    return { principal: await verifier.verifySdkKey(key), contextToken: undefined };
  }
  return { principal: await authenticate(verifier, request, accept), contextToken: undefined };
}
