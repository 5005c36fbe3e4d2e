import type { AuthProviderType } from '@switchyard/core';
import { sha256Hex } from '../auth/secrets.ts';
import type { SecretBox } from './secret-box.ts';

/**
 * A browser sign-in in flight, as the provider's answer needs it (docs/sso.md "The browser flow").
 * It lives in the browser that started it, sealed in a cookie, not in the database: a flood of
 * anonymous starts then stores nothing and so displaces nobody's login, and the answer is accepted
 * only together with the cookie of the browser that started it.
 */
export interface BrowserLogin {
  type: AuthProviderType;
  providerId: string;
  orgId: string;
  /**
   * SHA-256 (hex) of the app's return address. The address itself is found again among the
   * provider's `redirect_uris` when the answer comes, so it must still be registered then, and the
   * cookie stays small.
   */
  returnUriHash: string;
  appState: string | null;
  nonce: string | null;
  codeVerifier: string | null;
  samlRequestId: string | null;
  expiresAtMs: number;
}

/** What the transport sets on the start's redirect (an `HttpOnly`, `Secure`, `Path=/` cookie). */
export interface BrowserLoginCookie {
  name: string;
  value: string;
  maxAgeSeconds: number;
  /**
   * True for SAML: the IdP's HTTP-POST to the ACS is a cross-site POST, which carries only a
   * `SameSite=None` cookie. An OIDC callback is a top-level GET, which `SameSite=Lax` allows.
   */
  crossSite: boolean;
}

/**
 * The cookie a login is kept in: one per login (the name comes from its state), so two tabs signing
 * in at once do not overwrite each other. `__Host-`: only this origin over https can set it, for
 * the whole origin, so a sibling subdomain cannot plant one.
 */
export const browserLoginCookieName = (state: string): string => `__Host-switchyard-sso-${sha256Hex(state).slice(0, 16)}`;

/** Sealed for one state: a cookie opens only with the state it was issued with. */
const boundTo = (state: string): string => `switchyard-sso-browser-login\n${sha256Hex(state)}`;

/** The sealed fields under short names: a cookie holds 4 KiB at most. */
interface SealedFields {
  t: AuthProviderType;
  p: string;
  o: string;
  r: string;
  /**
   * The app's state as base64url of its UTF-8: JSON would escape a control character into six
   * bytes; this is at most 4/3 × 3 bytes per character, so 512 characters always fit the cookie.
   */
  a: string | null;
  n: string | null;
  v: string | null;
  q: string | null;
  e: number;
}

export function sealBrowserLogin(box: SecretBox, state: string, login: BrowserLogin): string {
  const fields: SealedFields = {
    t: login.type,
    p: login.providerId,
    o: login.orgId,
    r: login.returnUriHash,
    a: login.appState === null ? null : Buffer.from(login.appState, 'utf8').toString('base64url'),
    n: login.nonce,
    v: login.codeVerifier,
    q: login.samlRequestId,
    e: login.expiresAtMs,
  };
  return box.seal(JSON.stringify(fields), boundTo(state));
}

const isText = (value: unknown): value is string => typeof value === 'string';
const isOptionalText = (value: unknown): value is string | null => value === null || typeof value === 'string';

/** The login sealed for `state`, or null when the cookie is not one (another state, key or tampered). */
export function openBrowserLogin(box: SecretBox, state: string, sealed: string): BrowserLogin | null {
  let fields: Partial<SealedFields>;
  try {
    fields = JSON.parse(box.open(sealed, boundTo(state))) as Partial<SealedFields>;
  } catch {
    return null;
  }
  const { t, p, o, r, a, n, v, q, e } = fields;
  if ((t !== 'oidc' && t !== 'saml') || !isText(p) || !isText(o) || !isText(r) || !Number.isSafeInteger(e)) return null;
  if (!isOptionalText(a) || !isOptionalText(n) || !isOptionalText(v) || !isOptionalText(q)) return null;
  return {
    type: t,
    providerId: p,
    orgId: o,
    returnUriHash: r,
    appState: a === null ? null : Buffer.from(a, 'base64url').toString('utf8'),
    nonce: n,
    codeVerifier: v,
    samlRequestId: q,
    expiresAtMs: e as number,
  };
}
