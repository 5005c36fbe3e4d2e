import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError, isKeyPrincipal, OriginPatternSet, type Principal } from '@switchyard/core';
import { NO_CLIENT_METRICS, type ClientMetrics } from '@switchyard/services';

/**
 * The origin rules of docs/client-side.md "CORS and origins", in one place for every route that
 * takes a key:
 * - a client key's request must come from one of **its own** origins (a missing `Origin` only
 *   with `allow_missing_origin`), and its answers then carry the CORS headers for that origin;
 * - a server key's request must not come from a browser (an `Origin` header other than the
 *   server's own): server keys read every definition and must never ship in a page.
 * Preflights, which carry no key, are answered from the union of all client keys' origins
 * (rest-cors.ts).
 */

/** Answer headers a page's script may read: the stock OFREP provider needs both (304s and 429s). */
export const EXPOSED_HEADERS = 'ETag, Retry-After';

/** A refusal of the origin rules: 403 PERMISSION_DENIED with a message meant for the developer. */
export class OriginRefusedError extends DomainError {
  constructor(message: string) {
    super('PERMISSION_DENIED', message);
    this.name = 'OriginRefusedError';
  }
}

export const SERVER_KEY_IN_BROWSER_MESSAGE =
  'a server SDK key was sent from a browser (the request has an Origin header). Server keys read every flag definition ' +
  'and must never ship in a web page or app: create a client key (POST /v1/management/environments/{env_id}/sdk-keys ' +
  'with {"kind": "client", "name": ..., "allowed_origins": [...]}) and use that instead (docs/client-side.md)';

/** The subset of a pino logger used here. */
export interface WarnLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface ClientAccessOptions {
  /** The union of every active client key's origins (ClientOriginUnion). */
  origins: { allows(origin: string): boolean };
  /** PUBLIC_URL, read at each use (one process fills it in once its port is known); null when unset. */
  publicUrl?: () => string | null;
  /** Refusals are counted here (docs/client-side.md "6. Limits", metrics). */
  metrics?: ClientMetrics;
  log?: WarnLog;
  now?: () => number;
}

/** How long a server key seen from a browser stays quiet in the log after its line. */
const LOG_EVERY_MS = 3_600_000;
/** Keys remembered for that: a flood of distinct keys can neither grow memory nor the log without bound. */
const MAX_LOGGED_KEYS = 10_000;

export class ClientAccess {
  private readonly origins: { allows(origin: string): boolean };
  private readonly publicUrl: () => string | null;
  private readonly now: () => number;
  private readonly log: WarnLog | undefined;
  private readonly metrics: ClientMetrics;
  /** sdk_key_id → when its last "server key from a browser" line was written. */
  private readonly loggedAt = new Map<string, number>();
  /** Each client key's origins as a set, per principal object (the verifiers hand out one per cached key). */
  private readonly keyOrigins = new WeakMap<object, OriginPatternSet>();
  private publicOrigin: { url: string | null; origin: string | null } = { url: null, origin: null };

  constructor(options: ClientAccessOptions) {
    this.origins = options.origins;
    this.publicUrl = options.publicUrl ?? (() => null);
    this.now = options.now ?? Date.now;
    this.log = options.log;
    this.metrics = options.metrics ?? NO_CLIENT_METRICS;
  }

  /** Whether a preflight from `origin` is answered with CORS headers (some active client key allows it). */
  preflightAllows(origin: string | undefined): boolean {
    if (origin !== undefined && this.origins.allows(origin)) return true;
    this.metrics.originRefused('client', 'preflight');
    return false;
  }

  /**
   * The origin rules for an authenticated request to a client route; on success a client key's
   * answer gets its CORS headers (also on a later error answer, e.g. a 429, so the page can read it).
   * @throws OriginRefusedError (403).
   */
  admit(request: FastifyRequest, reply: FastifyReply, principal: Principal): void {
    if (!isKeyPrincipal(principal)) return; // a user's token: the console, same origin (an API token: no browser)
    void reply.header('vary', 'Origin');
    const origin = originOf(request);
    if (principal.kind === 'sdk_key') {
      this.refuseServerKeyFromBrowser(request, principal, reply);
      return;
    }
    if (origin === undefined) {
      if (principal.client.allowMissingOrigin) return;
      this.metrics.originRefused('client', 'missing_origin');
      throw new OriginRefusedError(
        'this client key is for browsers: the request has no Origin header (set allow_missing_origin on the key for native apps)',
      );
    }
    if (!this.patternsOf(principal).allows(origin)) {
      this.metrics.originRefused('client', 'origin');
      throw new OriginRefusedError(`origin '${origin.slice(0, 300)}' is not in this client key's allowed_origins`);
    }
    void reply.header('access-control-allow-origin', origin).header('access-control-expose-headers', EXPOSED_HEADERS);
  }

  /**
   * Refuses a server key presented from a browser (an `Origin` other than the server's own: its
   * API docs page may use one). Counted, and logged once per key per hour. Routes without CORS
   * (REST evaluate, list-check) call this directly; `reply` lets the refusal be read by the page
   * when its origin passed the preflight anyway.
   * @throws OriginRefusedError (403).
   */
  refuseServerKeyFromBrowser(request: FastifyRequest, principal: Principal, reply?: FastifyReply): void {
    if (principal.kind !== 'sdk_key') return;
    const origin = originOf(request);
    if (origin === undefined) return;
    this.metrics.serverKeyWithOrigin();
    if (this.isOwnOrigin(request, origin)) return;
    this.metrics.originRefused('server', 'server_key_in_browser');
    this.logOnce(principal.sdkKeyId, origin, request.routeOptions.url);
    if (reply !== undefined && this.origins.allows(origin)) {
      // The page could make the call, so it may read why it failed.
      void reply.header('access-control-allow-origin', origin).header('vary', 'Origin');
    }
    throw new OriginRefusedError(SERVER_KEY_IN_BROWSER_MESSAGE);
  }

  /** PUBLIC_URL's origin, or the origin the request itself was sent to (its Host). */
  private isOwnOrigin(request: FastifyRequest, origin: string): boolean {
    if (origin === this.publicOriginNow()) return true;
    return origin === `${request.protocol}://${request.host}`;
  }

  private publicOriginNow(): string | null {
    const url = this.publicUrl();
    if (url !== this.publicOrigin.url) {
      let origin: string | null = null;
      try {
        origin = url === null ? null : new URL(url).origin;
      } catch {
        origin = null;
      }
      this.publicOrigin = { url, origin };
    }
    return this.publicOrigin.origin;
  }

  private patternsOf(principal: Extract<Principal, { kind: 'client_key' }>): OriginPatternSet {
    let patterns = this.keyOrigins.get(principal);
    if (patterns === undefined) {
      patterns = new OriginPatternSet(principal.client.allowedOrigins);
      this.keyOrigins.set(principal, patterns);
    }
    return patterns;
  }

  private logOnce(sdkKeyId: string, origin: string, route: string | undefined): void {
    if (this.log === undefined) return;
    const now = this.now();
    const last = this.loggedAt.get(sdkKeyId);
    if (last !== undefined && now - last < LOG_EVERY_MS) return;
    if (last === undefined && this.loggedAt.size >= MAX_LOGGED_KEYS) {
      for (const [id, at] of this.loggedAt) if (now - at >= LOG_EVERY_MS) this.loggedAt.delete(id);
      // Still full: this many distinct keys within the hour is itself the news; start over.
      if (this.loggedAt.size >= MAX_LOGGED_KEYS) this.loggedAt.clear();
    }
    this.loggedAt.set(sdkKeyId, now);
    this.log.warn(
      { sdk_key_id: sdkKeyId, origin: origin.slice(0, 300), route },
      'a server SDK key was used from a browser and refused: it may have leaked into a web page; create a client key for browsers and rotate this one',
    );
  }
}

/** The request's `Origin`, if it sent exactly one. */
function originOf(request: FastifyRequest): string | undefined {
  const origin = request.headers.origin;
  return typeof origin === 'string' ? origin : undefined;
}
