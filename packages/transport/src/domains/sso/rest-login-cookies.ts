import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BrowserLoginCookie } from '@switchyard/services';

/**
 * The `Set-Cookie` of a browser sign-in in flight (docs/sso.md "The browser flow"): `__Host-`
 * names need `Secure`, `Path=/` and no `Domain`; `HttpOnly` keeps it from scripts. Browsers
 * accept `Secure` cookies from `http://localhost` and `http://127.0.0.1` (development).
 */
export function setLoginCookie(reply: FastifyReply, cookie: BrowserLoginCookie): void {
  const sameSite = cookie.crossSite ? 'None' : 'Lax';
  reply.header('set-cookie', `${cookie.name}=${cookie.value}; Max-Age=${cookie.maxAgeSeconds}; Path=/; Secure; HttpOnly; SameSite=${sameSite}`);
}

/** Ends a login's cookie once its answer has come (spent either way). */
export function clearLoginCookie(reply: FastifyReply, name: string, crossSite: boolean): void {
  reply.header('set-cookie', `${name}=; Max-Age=0; Path=/; Secure; HttpOnly; SameSite=${crossSite ? 'None' : 'Lax'}`);
}

/**
 * The value of the request's cookie `name`, or null. The Cookie header is bounded by the HTTP
 * header limit; the first cookie of that name counts (browsers send the most specific first).
 */
export function readCookie(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (typeof header !== 'string') return null;
  for (const pair of header.split(';')) {
    const separator = pair.indexOf('=');
    if (separator > 0 && pair.slice(0, separator).trim() === name) return pair.slice(separator + 1).trim();
  }
  return null;
}
