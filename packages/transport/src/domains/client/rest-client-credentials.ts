import type { FastifyRequest } from 'fastify';
import { permissionDenied, unauthenticated, type Principal } from '@switchyard/core';
import { bearerCredential, type PresentedCredentials } from '../../auth/presented-credentials.ts';
import type { CallerVerifier } from '../../gateway-services.ts';

/**
 * The credential of a request to a client route (OFREP, exposures, events, the browser stream):
 * docs/client-side.md "Keys". The key travels in `X-API-Key` (OFREP's own scheme), `x-sdk-key`, or
 * — on OFREP, when neither is sent — `Authorization: Bearer <key>` (the stock providers' header).
 *
 * When a key header carries the key, `Authorization: Bearer <token>` is **not** a user token: it
 * is the signed context token of a client key whose `context_signing` is not `off`
 * (docs/client-side.md "Signed contexts"). This function is the one place that tells the two
 * apart; whoever verifies context tokens reads `contextToken` from here (or from
 * `clientCallerOf(request)` once the request is authenticated) and nowhere else.
 */
export type ClientRouteCredential =
  /** A key, and the Bearer token sent beside it (a context token, unverified), if any. */
  | { key: string; contextToken?: string }
  /** No key header: the Bearer token is a user's (events and exposures accept one; OFREP refuses it). */
  | { userToken: string };

/** Every JWT starts with base64url('{"'); keys start with `sdk_` or `ck_`. */
const looksLikeJwt = (credential: string): boolean => credential.startsWith('eyJ');

/** A header's one value, trimmed. @throws UNAUTHENTICATED for an empty or repeated one. */
function keyHeader(request: FastifyRequest, name: 'x-api-key' | 'x-sdk-key'): string | undefined {
  const value = request.headers[name];
  if (value === undefined) return undefined;
  if (Array.isArray(value) && value.length > 1) throw unauthenticated(`more than one ${name} header value`);
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) throw unauthenticated('invalid SDK key');
  return text;
}

/**
 * The request's credential, read from its headers (nothing verified yet).
 * @param bearerMayBeKey OFREP: a Bearer value that is not a JWT is the key itself.
 * @throws UNAUTHENTICATED when no credential is presented, or it is malformed or ambiguous.
 */
export function clientRouteCredential(request: FastifyRequest, options: { bearerMayBeKey: boolean }): ClientRouteCredential {
  const apiKey = keyHeader(request, 'x-api-key');
  const sdkKey = keyHeader(request, 'x-sdk-key');
  if (apiKey !== undefined && sdkKey !== undefined && apiKey !== sdkKey) throw unauthenticated('X-API-Key and x-sdk-key name different keys');
  const presented: PresentedCredentials = { authorization: request.headers.authorization, sdkKey: undefined, where: 'header' };
  const key = apiKey ?? sdkKey;
  if (key !== undefined) {
    const contextToken = bearerCredential(presented, 'context token');
    return contextToken === undefined ? { key } : { key, contextToken };
  }
  const bearer = bearerCredential(presented, options.bearerMayBeKey ? 'sdk key' : 'token');
  if (bearer === undefined) throw unauthenticated(options.bearerMayBeKey ? 'missing SDK key' : 'missing bearer token or x-sdk-key header');
  if (options.bearerMayBeKey && !looksLikeJwt(bearer)) return { key: bearer };
  return { userToken: bearer };
}

/** The authenticated caller of a client-route request, and its (unverified) context token. */
export interface ClientCaller {
  principal: Principal;
  contextToken?: string;
}

const callers = new WeakMap<FastifyRequest, ClientCaller>();

/** The caller `authenticateClientRoute` found for this request, if it ran. */
export const clientCallerOf = (request: FastifyRequest): ClientCaller | undefined => callers.get(request);

/**
 * Authenticates a client-route request. A user token is verified (an invalid one stays a 401)
 * and then accepted only where `userTokens` says so: OFREP answers keys only (403).
 * @throws UNAUTHENTICATED (401) or PERMISSION_DENIED (403).
 */
export async function authenticateClientRoute(
  verifier: CallerVerifier,
  request: FastifyRequest,
  options: { bearerMayBeKey: boolean; userTokens: 'accept' | 'refuse' },
): Promise<ClientCaller> {
  const credential = clientRouteCredential(request, options);
  let caller: ClientCaller;
  if ('userToken' in credential) {
    const principal = await verifier.verifyBearer(credential.userToken);
    if (options.userTokens === 'refuse') throw permissionDenied('OFREP needs an SDK key, not a user token');
    caller = { principal };
  } else {
    const principal = await verifier.verifySdkKey(credential.key);
    caller = credential.contextToken === undefined ? { principal } : { principal, contextToken: credential.contextToken };
  }
  callers.set(request, caller);
  return caller;
}
