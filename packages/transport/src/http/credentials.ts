import type { FastifyRequest } from 'fastify';
import type { Principal } from '@switchyard/core';
import { authenticatePresented, type CredentialKind, type PresentedCredentials } from '../auth/presented-credentials.ts';
import type { CallerVerifier } from '../gateway-services.ts';

export type { CredentialKind };

/** A REST request's credential headers. */
export const presentedByRequest = (request: FastifyRequest): PresentedCredentials => ({
  authorization: request.headers.authorization,
  sdkKey: request.headers['x-sdk-key'],
  where: 'header',
  clientAddress: request.ip,
  intent: {
    confirmEnvironment: request.headers['x-confirm-environment'],
    changeComment: request.headers['x-change-comment'],
    approvalBypass: request.headers['x-approval-bypass'],
  },
});

/**
 * The caller of a request, checked against what the route accepts. Every route calls this itself
 * (no prefix-based middleware), so no path spelling can reach a handler without it.
 * @throws UNAUTHENTICATED when the accepted credential is missing or invalid.
 */
export function authenticate(verifier: CallerVerifier, request: FastifyRequest, kind: CredentialKind): Promise<Principal> {
  return authenticatePresented(verifier, presentedByRequest(request), kind);
}
