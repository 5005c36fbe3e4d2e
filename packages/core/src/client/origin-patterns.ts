/**
 * Client keys' allowed origins (docs/client-side.md "CORS and origins"): an exact
 * `scheme://host[:port]` origin as browsers send it, or a leading-wildcard subdomain pattern
 * `https://*.example.com` (any subdomain, at any depth, not the bare domain). Pure: used by the
 * services to validate a key's settings and by the transports to check a request's `Origin`.
 */

export const MAX_ALLOWED_ORIGINS = 50;
export const MAX_ORIGIN_LENGTH = 255;

/** An origin without its default port, lower case: how browsers serialise one. */
const ORIGIN = /^(https?):\/\/(\*\.)?([a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::(\d{1,5}))?$/;

/**
 * The problem with an allowed-origin entry, or undefined when it is valid. Entries are compared
 * exactly, so the entry must be written as a browser sends it: lower case, no path, no trailing
 * slash, no default port.
 */
export function originPatternProblem(pattern: string): string | undefined {
  if (pattern.length > MAX_ORIGIN_LENGTH) return `an origin is at most ${MAX_ORIGIN_LENGTH} characters`;
  const match = ORIGIN.exec(pattern);
  if (!match) return `'${pattern}' is not an origin: write scheme://host[:port] (lower case, no path), or https://*.example.com`;
  const [, scheme, wildcard, host, port] = match;
  if (wildcard && host!.startsWith('[')) return `'${pattern}': a wildcard needs a domain name`;
  if (wildcard && !host!.includes('.')) return `'${pattern}': a wildcard must leave at least two labels (https://*.example.com)`;
  if (port !== undefined) {
    const number = Number(port);
    if (number < 1 || number > 65_535 || String(number) !== port) return `'${pattern}': invalid port`;
    if ((scheme === 'https' && number === 443) || (scheme === 'http' && number === 80)) {
      return `'${pattern}': browsers omit the default port; write ${scheme}://${wildcard ?? ''}${host}`;
    }
  }
  return undefined;
}

/** Whether `origin` (a request's `Origin` header) is allowed by one of `patterns`. */
export function originAllowed(patterns: readonly string[], origin: string): boolean {
  for (const pattern of patterns) {
    const star = pattern.indexOf('://*.');
    if (star < 0) {
      if (pattern === origin) return true;
      continue;
    }
    // https://*.example.com allows https://a.example.com and https://a.b.example.com (with the same
    // port part): the scheme must match, and the host must end in ".example.com" with a label before.
    const scheme = pattern.slice(0, star + 3);
    const suffix = pattern.slice(star + 4); // ".example.com[:port]"
    if (origin.startsWith(scheme) && origin.endsWith(suffix)) {
      const label = origin.slice(scheme.length, origin.length - suffix.length);
      if (/^[a-z0-9-]+(?:\.[a-z0-9-]+)*$/.test(label)) return true;
    }
  }
  return false;
}
