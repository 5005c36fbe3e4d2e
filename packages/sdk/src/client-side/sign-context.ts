import { createHmac } from 'node:crypto';

/** The longest a context token may live (the server refuses `exp - iat` above it). */
export const MAX_CONTEXT_TOKEN_TTL_MS = 24 * 60 * 60 * 1000;
/** The default lifetime of a context token: one hour. */
export const DEFAULT_CONTEXT_TOKEN_TTL_MS = 60 * 60 * 1000;

/** What signs context tokens for one client key (docs/client-side.md "4. Signed contexts"). */
export interface ContextSigner {
  /** The signing secret as created (`POST .../context-signing-secrets` answers it once). */
  secret: string;
  /** Its `kid`, from the same answer. */
  kid: string;
  /** The `sdk_key_id` of the client key the browser or app uses. */
  clientKeyId: string;
}

/** The context a token vouches for: the targeting key and the attributes (scalars) it guarantees. */
export interface SignableContext {
  targetingKey: string;
  [attribute: string]: string | number | boolean;
}

const base64url = (value: string | Buffer): string => Buffer.from(value).toString('base64url');

/**
 * A context token for the browser or app to present as `Authorization: Bearer <token>` beside its
 * client key: a JWT (HS256, header `kid`) with `ck` (the client key's id), `sub` (the targeting
 * key), `ctx` (every other attribute of `context`), `iat` and `exp` (docs/client-side.md "4. Signed
 * contexts"). Sign on your server, per signed-in user, and only with attributes you know to be true.
 * @param options.ttlMs lifetime, default 1 hour, at most 24 hours.
 * @param options.nowMs the signing time (default: now).
 */
export function signContext(signer: ContextSigner, context: SignableContext, options: { ttlMs?: number; nowMs?: number } = {}): string {
  const ttlMs = options.ttlMs ?? DEFAULT_CONTEXT_TOKEN_TTL_MS;
  if (!Number.isFinite(ttlMs) || ttlMs < 1000 || ttlMs > MAX_CONTEXT_TOKEN_TTL_MS) throw new RangeError('ttlMs must be between 1 s and 24 h');
  const { targetingKey, ...attributes } = context;
  if (typeof targetingKey !== 'string' || targetingKey === '') throw new TypeError('context.targetingKey must be a non-empty string');
  for (const [name, value] of Object.entries(attributes)) {
    if (!['string', 'number', 'boolean'].includes(typeof value)) throw new TypeError(`context.${name} must be a string, number or boolean`);
    if (name === 'kind' || name === 'context_type') throw new TypeError(`context.${name} cannot be signed`);
  }
  const iat = Math.floor((options.nowMs ?? Date.now()) / 1000);
  const exp = iat + Math.floor(ttlMs / 1000);
  const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: signer.kid }));
  const payload = base64url(JSON.stringify({ ck: signer.clientKeyId, sub: targetingKey, ctx: attributes, iat, exp }));
  const signature = createHmac('sha256', Buffer.from(signer.secret, 'utf8')).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${signature}`;
}
