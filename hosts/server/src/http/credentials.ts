import type { FastifyRequest } from 'fastify';
import { unauthenticated, type Principal } from '@switchyard/core';
import type { CallerVerifier } from './routes/gateway-services.ts';

/** Which credentials a route accepts (docs/contract.md "Authentication"). */
export type CredentialKind = 'bearer' | 'sdk' | 'bearer_or_sdk';

function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match?.[1]) throw unauthenticated('the Authorization header must be "Bearer <token>"');
  return match[1];
}

function sdkKey(request: FastifyRequest): string | undefined {
  const value = request.headers['x-sdk-key'];
  if (value === undefined) return undefined;
  if (Array.isArray(value) || value.trim() === '') throw unauthenticated('invalid SDK key');
  return value.trim();
}

/**
 * The caller of a request, checked against what the route accepts. Every route calls this itself
 * (no prefix-based middleware), so no path spelling can reach a handler without it.
 * @throws UNAUTHENTICATED when the accepted credential is missing or invalid.
 */
export async function authenticate(verifier: CallerVerifier, request: FastifyRequest, kind: CredentialKind): Promise<Principal> {
  const token = kind === 'sdk' ? undefined : bearerToken(request);
  const key = kind === 'bearer' ? undefined : sdkKey(request);
  if (token !== undefined) return verifier.verifyBearer(token);
  if (key !== undefined) return verifier.verifySdkKey(key);
  throw unauthenticated(
    kind === 'bearer' ? 'missing bearer token' : kind === 'sdk' ? 'missing x-sdk-key header' : 'missing bearer token or x-sdk-key header',
  );
}
