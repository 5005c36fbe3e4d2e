import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
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
/** A JWT segment's JSON object, or undefined for anything else. */
function parseSegment(segment: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** HS256 over `header.payload`, compared in constant time (RFC 7515 §5.2). */
function signatureMatches(key: KeyObject, header: string, payload: string, signature: string): boolean {
  const expected = createHmac('sha256', key).update(`${header}.${payload}`).digest();
  const presented = Buffer.from(signature, 'base64url');
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

/**
 * HS256 is verified with node:crypto's HMAC rather than jose's jwtVerify: jose goes through
 * WebCrypto, about twenty times the cost of one HMAC on the same machine (bench/client/
 * signed-context.bench.ts), and a token is checked on every client request. Tests sign their
 * tokens with jose's SignJWT, so the two agree independently.
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
    const parts = token.split('.');
    const header = parts.length === 3 ? parseSegment(parts[0]!) : undefined;
    if (header === undefined) throw unauthenticated('invalid context token');
    const { kid, alg, crit } = header;
    if (typeof kid !== 'string' || alg !== 'HS256' || crit !== undefined) throw unauthenticated('invalid context token: HS256 with a kid is required');
    const kidEnvironment = environmentOfKid(kid);
    if (kidEnvironment !== undefined && UUID.test(kidEnvironment) && kidEnvironment.toLowerCase() !== principal.environmentId.toLowerCase()) {
      throw permissionDenied("the context token is signed with another environment's secret");
    }
    const scope: EnvironmentScope = { orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId };
    const held = this.keys.keys(scope, principal);
    const key = (held instanceof Promise ? await held : held).get(kid);
    if (key === undefined) throw unauthenticated('invalid context token: unknown kid');
    if (!signatureMatches(key, parts[0]!, parts[1]!, parts[2]!)) throw unauthenticated('invalid context token: bad signature');
    const payload = parseSegment(parts[1]!);
    if (payload === undefined) throw unauthenticated('invalid context token');
    if (payload.nbf !== undefined && !(typeof payload.nbf === 'number' && payload.nbf - CONTEXT_TOKEN_SKEW_S <= this.now() / 1000)) {
      throw unauthenticated('invalid context token: not valid yet (nbf)');
    }
    // exp and iat, with the 24 h cap and the skew, are checked by checkContextClaims.
    const claims = checkContextClaims(payload, principal.sdkKeyId, this.now());
    if (typeof claims === 'string') throw unauthenticated(`invalid context token: ${claims}`);
    return claims;
  }
}
