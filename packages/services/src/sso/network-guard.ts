import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOptions } from 'node:dns';
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { DomainError, invalidArgument } from '@switchyard/core';
import { ipv4FromGroups, ipv6Groups } from '../net/ip-address.ts';

/**
 * SSRF guard for identity-provider addresses (OIDC issuer URLs, SAML metadata URLs).
 *
 * An organisation admin types these URLs and the server fetches them, so without a guard an admin
 * could make the server probe its own network: the cloud metadata service (169.254.169.254), the
 * database, an internal admin port. Addresses that are not on the public internet are therefore
 * refused unless the operator sets SSO_ALLOW_PRIVATE_NETWORKS=true (development, tests, or an
 * identity provider that genuinely lives on the private network).
 *
 * Two layers: `checkProviderUrl` validates the URL when it is saved (clear error for the admin),
 * and `createGuardedFetch` re-checks every address at connect time, because DNS may answer
 * differently between the check and the use (DNS rebinding).
 */

const ALLOW_HINT = 'set SSO_ALLOW_PRIVATE_NETWORKS=true to allow it';

/** IANA special-purpose ranges that are not globally reachable, plus multicast and reserved space. */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", includes the unspecified 0.0.0.0
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, includes cloud metadata 169.254.169.254
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // deprecated 6to4 relay anycast
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, includes broadcast 255.255.255.255
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // deprecated IPv4-compatible addresses
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID, ...)
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // deprecated site-local
  ['ff00::', 8], // multicast
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/**
 * IPv4 addresses an IPv6 address leads to: IPv4-mapped (::ffff:a.b.c.d, ::ffff:0:0/96),
 * IPv4-translated (::ffff:0:a.b.c.d, ::ffff:0:0:0/96, stateless IP/ICMP translation), the
 * well-known NAT64 prefix (64:ff9b::/96) and 6to4 (2002::/16). The stack or a gateway turns those
 * into the embedded IPv4 address, so `64:ff9b::7f00:1` and `::ffff:0:7f00:1` are as local as
 * 127.0.0.1. Every notation (dotted tail, hex groups, leading zeros, upper case) parses to the
 * same groups first.
 */
function embeddedIpv4(groups: number[]): string | null {
  const g = (i: number): number => groups[i] ?? 0;
  const zeroUpTo = (n: number): boolean => groups.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(5) && g(5) === 0xffff) return ipv4FromGroups(g(6), g(7));
  if (zeroUpTo(4) && g(4) === 0xffff && g(5) === 0) return ipv4FromGroups(g(6), g(7));
  if (g(0) === 0x64 && g(1) === 0xff9b && groups.slice(2, 6).every((x) => x === 0)) return ipv4FromGroups(g(6), g(7));
  if (g(0) === 0x2002) return ipv4FromGroups(g(1), g(2));
  return null;
}

/**
 * Whether an IP address is loopback, private, link-local, unspecified, CGNAT, multicast, reserved
 * or documentation space (IPv4 and IPv6, including IPv6 forms that embed such an IPv4 address).
 * Anything that is not a valid IP address counts as non-public: the guard fails closed.
 */
export function isNonPublicAddress(ip: string): boolean {
  const address = ip.startsWith('[') && ip.endsWith(']') ? ip.slice(1, -1) : ip;
  const withoutZone = address.split('%')[0] ?? '';
  const family = isIP(withoutZone);
  if (family === 4) return NON_PUBLIC.check(withoutZone, 'ipv4');
  if (family !== 6) return true;
  // A zone id (fe80::1%eth0) only exists for link-local scopes.
  if (withoutZone !== address) return true;
  const groups = ipv6Groups(withoutZone);
  if (!groups) return true;
  const v4 = embeddedIpv4(groups);
  if (v4 !== null && NON_PUBLIC.check(v4, 'ipv4')) return true;
  return NON_PUBLIC.check(withoutZone, 'ipv6');
}

export interface NetworkGuardOptions {
  /** SSO_ALLOW_PRIVATE_NETWORKS: development and tests, or an identity provider on the private network. */
  allowPrivateNetworks: boolean;
  /** What a refusal tells the operator to set (default: SSO_ALLOW_PRIVATE_NETWORKS; webhooks name theirs). */
  allowHint?: string;
}

/** The host of a URL without the brackets WHATWG keeps around IPv6 literals. */
const bareHost = (url: URL): string => (url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname);

async function resolveAll(host: string): Promise<string[]> {
  const answers = await new Promise<LookupAddress[]>((resolve, reject) => {
    dnsLookup(host, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });
  return answers.map((answer) => answer.address);
}

/**
 * Validates an identity-provider URL typed by an admin: https only (http too when private networks
 * are allowed, the development setting), no user name or password (they would be sent to whoever
 * the host is, and are never how OIDC/SAML authenticate), no fragment, and a host that resolves
 * only to public addresses. Literal IP addresses are checked without DNS.
 * @throws INVALID_ARGUMENT naming `field`.
 */
export async function checkProviderUrl(raw: string, field: string, opts: NetworkGuardOptions): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw invalidArgument(`${field} is not a valid URL`, field);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && opts.allowPrivateNetworks)) {
    throw invalidArgument(`${field} must be an https:// URL`, field);
  }
  if (url.username !== '' || url.password !== '') {
    throw invalidArgument(`${field} must not contain a user name or password`, field);
  }
  // `new URL('https://a/#').hash` is empty, so look at the text: '#' can only start a fragment.
  if (url.hash !== '' || raw.includes('#')) throw invalidArgument(`${field} must not contain a fragment`, field);

  const host = bareHost(url);
  let addresses: string[];
  if (isIP(host) !== 0) {
    addresses = [host];
  } else {
    try {
      addresses = await resolveAll(host);
    } catch {
      throw invalidArgument(`${field} host '${host}' does not resolve`, field);
    }
    if (addresses.length === 0) throw invalidArgument(`${field} host '${host}' does not resolve`, field);
  }
  if (!opts.allowPrivateNetworks && addresses.some(isNonPublicAddress)) {
    throw invalidArgument(`${field} resolves to a private or loopback address; ${opts.allowHint ?? ALLOW_HINT}`, field);
  }
  return url;
}

export interface GuardedFetchOptions extends NetworkGuardOptions {
  /** Whole-request budget: connect, send, headers and body. Default 5 s. */
  timeoutMs?: number;
  /** Largest response body accepted. Default 1 MiB: discovery documents and JWKS are a few KiB. */
  maxResponseBytes?: number;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

const privateAddressRefused = (host: string, hint = ALLOW_HINT): DomainError =>
  new DomainError('FAILED_PRECONDITION', `${host} resolves to a private or loopback address; ${hint}`);

/**
 * A `dns.lookup` replacement for sockets: refuses the connection when any answer is non-public.
 * Checking every answer (not only the one used) keeps the rule the same as `checkProviderUrl`.
 */
function guardedLookup(allowPrivateNetworks: boolean, hint?: string): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true } as LookupAllOptions, (error, addresses) => {
      if (error) return callback(error, '', 0);
      if (!allowPrivateNetworks && addresses.some((a) => isNonPublicAddress(a.address))) {
        return callback(privateAddressRefused(hostname, hint) as unknown as NodeJS.ErrnoException, '', 0);
      }
      if ((options as LookupOptions).all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), '', 0);
      return callback(null, first.address, first.family);
    });
  };
}

/** Statuses whose Response must have a null body (the constructor throws otherwise). */
const NULL_BODY_STATUSES = new Set([204, 205, 304]);

async function requestBody(body: RequestInit['body'], headers: Headers): Promise<Buffer | undefined> {
  if (body === null || body === undefined) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof URLSearchParams) {
    if (!headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
    return Buffer.from(body.toString(), 'utf8');
  }
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  // Blob, FormData, ReadableStream: let the platform serialise them (it also sets content-type).
  const serialised = new Request('http://body.invalid/', { method: 'POST', body, duplex: 'half' } as RequestInit);
  const type = serialised.headers.get('content-type');
  if (type !== null && !headers.has('content-type')) headers.set('content-type', type);
  return Buffer.from(await serialised.arrayBuffer());
}

/**
 * A `fetch` for talking to identity providers, built on node:http(s) so that the socket's own
 * DNS lookup can refuse non-public addresses (the address connected to is the address checked;
 * a second resolution by a rebinding DNS server cannot slip through). It also:
 * - follows no redirects (3xx is returned as is): a redirect could point anywhere, and OIDC
 *   discovery, JWKS and token requests never need one;
 * - bounds the whole exchange by `timeoutMs` and the response body by `maxResponseBytes`, so a
 *   slow or hostile provider cannot tie up the server or its memory (also when private networks
 *   are allowed);
 * - buffers the (small) body before resolving, so size and time errors reject the fetch itself.
 *
 * Failures are DomainErrors: FAILED_PRECONDITION for a refused address, UNAVAILABLE for
 * unreachable hosts, timeouts and oversized responses. An aborted `signal` rejects with its reason,
 * as the standard fetch does. The URL scheme is the caller's policy (`checkProviderUrl`,
 * openid-client's https-only default), not this function's.
 */
export function createGuardedFetch(opts: GuardedFetchOptions): typeof fetch {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxResponseBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const lookup = guardedLookup(opts.allowPrivateNetworks, opts.allowHint);

  return async function guardedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const fromRequest = input instanceof Request ? input : undefined;
    const url = new URL(fromRequest ? fromRequest.url : input instanceof URL ? input.href : String(input));
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`unsupported URL scheme ${url.protocol}`);
    const host = bareHost(url);
    const signal = init?.signal ?? fromRequest?.signal ?? undefined;
    signal?.throwIfAborted();
    // Sockets skip `lookup` for literal IP addresses: check those here.
    if (isIP(host) !== 0 && !opts.allowPrivateNetworks && isNonPublicAddress(host)) throw privateAddressRefused(host, opts.allowHint);

    const headers = new Headers(fromRequest?.headers);
    new Headers(init?.headers).forEach((value, name) => headers.set(name, value));
    const method = (init?.method ?? fromRequest?.method ?? 'GET').toUpperCase();
    const body = await requestBody(init?.body ?? (fromRequest?.body ? await fromRequest.arrayBuffer() : undefined), headers);
    if (body !== undefined) headers.set('content-length', String(body.length));

    const plainHeaders: Record<string, string> = {};
    headers.forEach((value, name) => {
      plainHeaders[name] = value;
    });
    const options: RequestOptions = {
      method,
      headers: plainHeaders,
      lookup,
      agent: false, // a fresh socket per request: a pooled one might have been opened without the guard
    };

    return new Promise<Response>((resolve, reject) => {
      let settled = false;
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const request = send(url, options);
      const finish = (error: unknown, response?: Response): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (error !== undefined) {
          request.destroy();
          reject(error);
        } else if (response) {
          resolve(response);
        }
      };
      const timer = setTimeout(
        () => finish(new DomainError('UNAVAILABLE', `${url.host} did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onAbort = (): void => finish(signal?.reason ?? new DOMException('the request was aborted', 'AbortError'));
      signal?.addEventListener('abort', onAbort, { once: true });

      request.on('error', (error) => {
        if (error instanceof DomainError) return finish(error);
        finish(new DomainError('UNAVAILABLE', `could not reach ${url.host}`));
      });
      request.on('response', (incoming: IncomingMessage) => {
        const tooLarge = (): DomainError =>
          new DomainError('UNAVAILABLE', `the response from ${url.host} is larger than ${maxResponseBytes} bytes`);
        const declared = Number(incoming.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxResponseBytes) return finish(tooLarge());
        const chunks: Buffer[] = [];
        let received = 0;
        incoming.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received > maxResponseBytes) return finish(tooLarge());
          chunks.push(chunk);
        });
        incoming.on('error', () => finish(new DomainError('UNAVAILABLE', `the connection to ${url.host} broke`)));
        incoming.on('aborted', () => finish(new DomainError('UNAVAILABLE', `the connection to ${url.host} broke`)));
        incoming.on('end', () => {
          const status = incoming.statusCode ?? 0;
          // The Response constructor only takes 200-599; anything else is not a usable answer.
          if (status < 200 || status > 599) return finish(new DomainError('UNAVAILABLE', `${url.host} sent an invalid HTTP status`));
          const responseHeaders = new Headers();
          for (let i = 0; i + 1 < incoming.rawHeaders.length; i += 2) {
            responseHeaders.append(incoming.rawHeaders[i] ?? '', incoming.rawHeaders[i + 1] ?? '');
          }
          const response = new Response(NULL_BODY_STATUSES.has(status) ? null : Buffer.concat(chunks), {
            status,
            statusText: incoming.statusMessage ?? '',
            headers: responseHeaders,
          });
          Object.defineProperty(response, 'url', { value: url.href });
          finish(undefined, response);
        });
      });
      request.end(body);
    });
  };
}
