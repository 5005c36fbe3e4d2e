/**
 * The claims of a context token (docs/client-side.md "4. Signed contexts"), checked after its
 * signature: a JWT (HS256, header `kid`) a customer's backend signs for one client key.
 */
export interface ContextTokenClaims {
  /** `ck`: the sdk_key_id of the client key the token is for. */
  clientKeyId: string;
  /** `sub`: the targeting key the token vouches for. */
  targetingKey: string;
  /** `ctx`: the attributes the token vouches for (scalars only, as evaluation reads them). */
  attributes: Record<string, string | number | boolean>;
  issuedAtS: number;
  expiresAtS: number;
}

/** Longest lifetime of a context token: `exp` at most this long after `iat` (longer: refused). */
export const MAX_CONTEXT_TOKEN_TTL_S = 24 * 60 * 60;
/** Clock skew tolerated between the signer and this server, on `iat` and `exp`. */
export const CONTEXT_TOKEN_SKEW_S = 60;
/** Attributes a token may vouch for (a token is a header: keep it small). */
export const MAX_CONTEXT_TOKEN_ATTRIBUTES = 50;

const isScalar = (value: unknown): value is string | number | boolean =>
  typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));

/**
 * The claims of a verified payload, or why they are refused (the token is then 401):
 * 1. `ck` must name the presenting client key (a token for another key of the same environment is
 *    not transferable);
 * 2. `sub` a non-empty string; `ctx` absent or an object of scalars;
 * 3. `iat` and `exp` integers, `exp` after now and at most MAX_CONTEXT_TOKEN_TTL_S after `iat`,
 *    `iat` not in the future (beyond the skew).
 */
export function checkContextClaims(payload: Record<string, unknown>, clientKeyId: string, nowMs: number): ContextTokenClaims | string {
  const { ck, sub, ctx, iat, exp } = payload;
  if (typeof ck !== 'string' || ck !== clientKeyId) return 'the token is for another client key (ck)';
  if (typeof sub !== 'string' || sub === '' || sub.length > 1024) return 'the token has no targeting key (sub)';
  if (!Number.isSafeInteger(iat) || !Number.isSafeInteger(exp)) return 'the token needs integer iat and exp';
  const issuedAtS = iat as number;
  const expiresAtS = exp as number;
  const nowS = nowMs / 1000;
  if (expiresAtS - issuedAtS > MAX_CONTEXT_TOKEN_TTL_S) return `the token lives longer than ${MAX_CONTEXT_TOKEN_TTL_S} s (exp - iat)`;
  if (expiresAtS <= issuedAtS) return 'the token expires before it is issued';
  if (expiresAtS + CONTEXT_TOKEN_SKEW_S <= nowS) return 'the token has expired';
  if (issuedAtS - CONTEXT_TOKEN_SKEW_S > nowS) return 'the token is issued in the future';
  const attributes: Record<string, string | number | boolean> = {};
  if (ctx !== undefined) {
    if (typeof ctx !== 'object' || ctx === null || Array.isArray(ctx)) return 'ctx must be an object';
    const entries = Object.entries(ctx);
    if (entries.length > MAX_CONTEXT_TOKEN_ATTRIBUTES) return `ctx holds more than ${MAX_CONTEXT_TOKEN_ATTRIBUTES} attributes`;
    for (const [name, value] of entries) {
      if (name === 'targetingKey' || name === 'kind' || name === 'context_type') return `ctx cannot vouch for ${name}`;
      if (!isScalar(value)) return `ctx.${name} must be a string, number or boolean`;
      attributes[name] = value;
    }
  }
  return { clientKeyId: ck, targetingKey: sub, attributes, issuedAtS, expiresAtS };
}

/** The environment a kid names (`<environment_id>.<random>`), or undefined for another shape. */
export function environmentOfKid(kid: string): string | undefined {
  const dot = kid.indexOf('.');
  return dot > 0 ? kid.slice(0, dot) : undefined;
}

/** A context as evaluation reads it: key, type and scalar attributes. */
export interface BindableContext {
  key: string | undefined;
  parameters: Record<string, string | number | boolean>;
}

/**
 * A request's context under its verified token (docs/client-side.md "4. Signed contexts"):
 * - `key`: the targeting key is the token's `sub` (absent in the request: `sub` is used; another: refused);
 * - `context`: in addition, every attribute the token vouches for (`ctx`) takes the token's value,
 *   whatever the request said; attributes it does not vouch for stay the request's.
 * @returns the bound context, or null when the request names another targeting key.
 */
export function applyContextBinding<T extends BindableContext>(mode: 'key' | 'context', claims: ContextTokenClaims, context: T): T | null {
  if (context.key !== undefined && context.key !== claims.targetingKey) return null;
  const bound = { ...context, key: claims.targetingKey };
  if (mode === 'context') bound.parameters = { ...context.parameters, ...claims.attributes };
  return bound;
}
