import { decodeProtectedHeader, jwtVerify } from 'jose';
import {
  CONTEXT_TOKEN_SKEW_S,
  checkContextClaims,
  environmentOfKid,
  permissionDenied,
  unauthenticated,
  type ContextTokenClaims,
  type EnvironmentScope,
  type Principal,
} from '@switchyard/core';
import type { ContextSigningKeys } from './context-signing-keys.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Longest token read at all (a header value; a few attributes fit well inside). */
export const MAX_CONTEXT_TOKEN_LENGTH = 8_192;

/** What a client request's context is bound to: the key's signing mode and the token's claims. */
export interface ContextBinding {
  mode: 'key' | 'context';
  claims: ContextTokenClaims;
}

/** Told each verification's outcome (the signature-failure metric). */
export type ContextTokenOutcome = 'ok' | 'missing' | 'invalid' | 'other_environment';

/**
 * Verifies a client request's context token (docs/client-side.md "4. Signed contexts") from the
 * keys in memory (ContextSigningKeys): no round trip once an environment's keys are loaded.
 * 1. a client key whose `context_signing` is `off`: no binding (a token is ignored);
 * 2. no token: 401;
 * 3. a header `kid` naming another environment: 403 (that environment's token, presented here);
 * 4. a kid this environment does not hold (unknown, deleted), a bad signature, not HS256: 401;
 * 5. the claims (core checkContextClaims): `ck` this key, `sub`, `ctx`, `iat`/`exp` (≤ 24 h): else 401.
 */
export class ContextTokenVerifier {
  constructor(
    private readonly keys: ContextSigningKeys,
    private readonly now: () => number = Date.now,
    private readonly onOutcome: (outcome: ContextTokenOutcome) => void = () => {},
  ) {}

  /** @throws UNAUTHENTICATED or PERMISSION_DENIED as above. */
  async bind(principal: Principal, token: string | undefined): Promise<ContextBinding | null> {
    if (principal.kind !== 'client_key' || principal.client.contextSigning === 'off') return null;
    try {
      const claims = await this.verify(principal, token);
      this.onOutcome('ok');
      return { mode: principal.client.contextSigning, claims };
    } catch (error) {
      this.onOutcome(token === undefined ? 'missing' : (error as { code?: string }).code === 'PERMISSION_DENIED' ? 'other_environment' : 'invalid');
      throw error;
    }
  }

  private async verify(principal: Extract<Principal, { kind: 'client_key' }>, token: string | undefined): Promise<ContextTokenClaims> {
    if (token === undefined || token === '') throw unauthenticated('this client key needs a signed context token (Authorization: Bearer <token>)');
    if (token.length > MAX_CONTEXT_TOKEN_LENGTH) throw unauthenticated('invalid context token');
    let kid: unknown;
    let alg: unknown;
    try {
      ({ kid, alg } = decodeProtectedHeader(token));
    } catch {
      throw unauthenticated('invalid context token');
    }
    if (typeof kid !== 'string' || alg !== 'HS256') throw unauthenticated('invalid context token: HS256 with a kid is required');
    const kidEnvironment = environmentOfKid(kid);
    if (kidEnvironment !== undefined && UUID.test(kidEnvironment) && kidEnvironment.toLowerCase() !== principal.environmentId.toLowerCase()) {
      throw permissionDenied("the context token is signed with another environment's secret");
    }
    const scope: EnvironmentScope = { orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId };
    const held = this.keys.keys(scope, principal);
    const key = (held instanceof Promise ? await held : held).get(kid);
    if (key === undefined) throw unauthenticated('invalid context token: unknown kid');
    let payload: Record<string, unknown>;
    try {
      // exp and iat are checked again, with the 24 h cap, by checkContextClaims.
      ({ payload } = await jwtVerify(token, key, { algorithms: ['HS256'], clockTolerance: CONTEXT_TOKEN_SKEW_S, currentDate: new Date(this.now()) }));
    } catch {
      throw unauthenticated('invalid or expired context token');
    }
    const claims = checkContextClaims(payload, principal.sdkKeyId, this.now());
    if (typeof claims === 'string') throw unauthenticated(`invalid context token: ${claims}`);
    return claims;
  }
}
