import { unauthenticated, type Principal } from '@switchyard/core';
import { parseChangeIntent, withChangeIntent } from '@switchyard/services';
import type { CallerVerifier } from '../gateway-services.ts';
import { credentialOf, linkCredential } from '../remote/forwarded-credential.ts';

/** Which credentials a route or RPC accepts (docs/contract.md "Authentication"). */
export type CredentialKind = 'bearer' | 'sdk' | 'bearer_or_sdk';

/**
 * The credential headers of a request, as every transport reads them: REST headers, gRPC metadata
 * (every value of a key, to refuse duplicates) and OFREP's. `where` names them in error messages.
 */
export interface PresentedCredentials {
  authorization: string | readonly string[] | undefined;
  sdkKey: string | readonly string[] | undefined;
  where: 'header' | 'metadata';
  /**
   * The caller's address where the transport knows it (REST: request.ip): unknown API tokens are
   * throttled by it. Absent (gRPC metadata, the gateway hop's forwarded credentials): not counted.
   */
  clientAddress?: string;
  /**
   * What the request says about its writes (docs/access.md "Critical environments"): the
   * `X-Confirm-Environment` and `X-Change-Comment` headers or metadata (and, in gRPC,
   * `x-change-comment-bin`: the comment's UTF-8 bytes), as sent.
   */
  intent?: {
    confirmEnvironment: string | readonly string[] | undefined;
    changeComment: string | readonly string[] | undefined;
    changeCommentBytes?: readonly Uint8Array[];
    /** `X-Approval-Bypass` (docs/workflow.md "Change requests and approvals"). */
    approvalBypass?: string | readonly string[] | undefined;
  };
}

function single(value: string | readonly string[] | undefined, name: string, where: PresentedCredentials['where']): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (value.length === 0) return undefined;
  if (value.length > 1) throw unauthenticated(`more than one ${name} ${where} value`);
  return value[0];
}

/**
 * The token of `Authorization: Bearer <token>`, the one parser of it for every transport.
 * @throws UNAUTHENTICATED when the header is present but not of that form.
 */
export function bearerCredential(presented: PresentedCredentials, what = 'token'): string | undefined {
  const header = single(presented.authorization, 'authorization', presented.where);
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header.trim());
  if (!match?.[1]) throw unauthenticated(presented.where === 'header' ? `the Authorization header must be "Bearer <${what}>"` : `authorization metadata must be "Bearer <${what}>"`);
  return match[1];
}

/** The `x-sdk-key` value, trimmed. @throws UNAUTHENTICATED for an empty or repeated one. */
export function sdkKeyCredential(presented: PresentedCredentials): string | undefined {
  const value = single(presented.sdkKey, 'x-sdk-key', presented.where);
  if (value === undefined) return undefined;
  if (value.trim() === '') throw unauthenticated('invalid SDK key');
  return value.trim();
}

/**
 * The caller and the place its request names, in one step: authenticate, then resolve the route's
 * id for that caller (its service's scope method, which answers NOT_FOUND outside the caller's org).
 * Every scoped REST route and gRPC call goes through here.
 */
export async function authenticateScoped<Scope>(
  verifier: CallerVerifier,
  presented: PresentedCredentials,
  accept: CredentialKind,
  scopeFor: (principal: Principal) => Promise<Scope>,
): Promise<{ principal: Principal; scope: Scope }> {
  const principal = await authenticatePresented(verifier, presented, accept);
  return { principal, scope: await scopeFor(principal) };
}

/**
 * The caller of a request or call, checked against what it accepts: the one authentication step
 * of REST routes and gRPC services (OFREP adds its Bearer-carries-an-SDK-key rule on top).
 * @throws UNAUTHENTICATED when the accepted credential is missing or invalid.
 */
export async function authenticatePresented(verifier: CallerVerifier, presented: PresentedCredentials, accept: CredentialKind): Promise<Principal> {
  const token = accept === 'sdk' ? undefined : bearerCredential(presented);
  if (token !== undefined) return withPresentedIntent(await verifier.verifyBearer(token, presented.clientAddress), presented);
  const key = accept === 'bearer' ? undefined : sdkKeyCredential(presented);
  if (key !== undefined) return withPresentedIntent(await verifier.verifySdkKey(key), presented);
  const missing = accept === 'bearer' ? 'bearer token' : accept === 'sdk' ? `x-sdk-key ${presented.where}` : `bearer token or x-sdk-key ${presented.where}`;
  throw unauthenticated(presented.where === 'metadata' && accept !== 'sdk' ? 'missing authorization metadata' : `missing ${missing}`);
}

/**
 * The principal of this request, carrying the request's change intent when it sent one (validated
 * here, at the edge: 400 naming the header). The intent goes to a copy, never to the verifier's
 * principal, which its cache shares between requests; a gateway's copy keeps the credential link
 * of the original, so the hop still forwards the caller's credential (and, beside it, the intent).
 */
function withPresentedIntent(principal: Principal, presented: PresentedCredentials): Principal {
  if (presented.intent === undefined) return principal;
  const intent = parseChangeIntent(presented.intent);
  if (intent.confirmEnvironmentId === undefined && intent.comment === undefined && intent.bypassApprovals === undefined) return principal;
  const copy = withChangeIntent(principal, intent);
  const credential = credentialOf(principal);
  return credential === undefined ? copy : linkCredential(copy, credential);
}
