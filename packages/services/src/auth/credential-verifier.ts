import { EventEmitter } from 'node:events';
import { unauthenticated, type ApiTokenPrincipal, type ApiTokenRepository, type ChangeNotifier, type KeyPrincipal, type Principal, type SdkKeyRepository } from '@switchyard/core';
import type { ApiTokenThrottle } from './api-token-throttle.ts';
import type { ApiTokenUseRecorder } from './api-token-uses.ts';
import { SdkKeyCache } from './sdk-key-cache.ts';
import { API_TOKEN_PREFIX, sha256Hex } from './secrets.ts';
import { userPrincipalOf, type SessionRegistry } from './session-registry.ts';
import type { TokenService } from './token-service.ts';

/**
 * A client key past its `expires_at_ms` authenticates nothing (checked on every use, cached or
 * not, so no cache outlives an expiry). @throws UNAUTHENTICATED.
 */
export function refuseExpiredKey<P extends Principal>(principal: P, nowMs: number): P {
  if (principal.kind === 'client_key' && principal.client.expiresAtMs !== null && principal.client.expiresAtMs <= nowMs) {
    throw unauthenticated('the client key has expired');
  }
  return principal;
}

/** An API token past its `expires_at_ms` authenticates nothing (checked on every use, cached or not). @throws UNAUTHENTICATED. */
export function refuseExpiredToken<P extends Principal>(principal: P, nowMs: number): P {
  if (principal.kind === 'api_token' && principal.expiresAtMs !== null && principal.expiresAtMs <= nowMs) {
    throw unauthenticated('the API token has expired');
  }
  return principal;
}

/** Whether a bearer credential is an API token (`swy_...`) rather than a session's JWT. */
export const isApiToken = (bearer: string): boolean => bearer.startsWith(API_TOKEN_PREFIX);

/**
 * The channel on which every instance hears that an SDK key was revoked, or a client key created
 * or changed, or an API token revoked (payload: its id): caches forget it, its open streams end, CORS origins are re-read.
 */
export const SDK_KEY_REVOKED_CHANNEL = 'switchyard_sdk_key_revoked';

export interface Credentials {
  bearerToken?: string | undefined;
  sdkKey?: string | undefined;
}

/**
 * Exactly one credential must be presented: the rule of `verify` for every verifier (this one and
 * a gateway's, which asks the services). @throws UNAUTHENTICATED.
 */
export function verifyOneCredential(
  verifier: { verifyBearer(token: string): Promise<Principal>; verifySdkKey(rawKey: string): Promise<Principal> },
  credentials: Credentials,
): Promise<Principal> {
  const { bearerToken, sdkKey } = credentials;
  if (bearerToken !== undefined && sdkKey !== undefined) return Promise.reject(unauthenticated('present either a bearer token or an SDK key, not both'));
  if (bearerToken !== undefined) return verifier.verifyBearer(bearerToken);
  if (sdkKey !== undefined) return verifier.verifySdkKey(sdkKey);
  return Promise.reject(unauthenticated('missing credentials'));
}

export interface CredentialVerifierOptions {
  /** How long a checked SDK key is trusted without asking the database again. */
  cacheTtlMs?: number;
  /** How long an unknown SDK key is remembered as unknown. */
  negativeCacheTtlMs?: number;
  maxCachedKeys?: number;
  now?: () => number;
  /**
   * API tokens (`swy_` bearers, docs/access.md "API tokens"): where they are looked up, the
   * throttle of unknown ones per client address, and where their last use is written. Absent: every
   * `swy_` bearer is refused.
   */
  apiTokens?: {
    repository: Pick<ApiTokenRepository, 'findActiveByHash'>;
    throttle?: ApiTokenThrottle;
    uses?: Pick<ApiTokenUseRecorder, 'used'>;
  };
}

/** Longer credentials are refused unread. */
const MAX_KEY_LENGTH = 256;

/**
 * Turns a presented credential into a Principal (docs/decisions.md "Identity and access"): a bearer
 * JWT of a live session → its user, org and current role; an `x-sdk-key` → its environment. SDK keys are answered from memory
 * after the first check; a revocation anywhere reaches every instance through the notifier and
 * evicts the key at once (and `revoked` listeners — open sync streams — are told).
 */
export class CredentialVerifier {
  private readonly cache: SdkKeyCache;
  /** API tokens, cached as SDK keys are (same lifetimes, same revocation channel). */
  private readonly tokenCache: SdkKeyCache<ApiTokenPrincipal>;
  private readonly apiTokens: CredentialVerifierOptions['apiTokens'];
  private readonly events = new EventEmitter();
  private readonly now: () => number;
  private subscription: { unsubscribe(): Promise<void> } | null = null;
  /**
   * Bumped by every revocation and every cache clear. A database answer read before a bump may be
   * stale (the key was revoked while the lookup was in flight), so it is returned but not cached.
   */
  private generation = 0;
  /** SDK keys being looked up in the database, with the generation each look-up started in. */
  private readonly sdkKeyLookups = new Map<string, { generation: number; principal: Promise<KeyPrincipal> }>();

  constructor(
    private readonly tokens: TokenService,
    private readonly sdkKeys: SdkKeyRepository,
    private readonly notifier: ChangeNotifier,
    private readonly sessions: Pick<SessionRegistry, 'currentAccess'>,
    options: CredentialVerifierOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    const cacheOptions = {
      ttlMs: options.cacheTtlMs ?? 60_000,
      negativeTtlMs: options.negativeCacheTtlMs ?? 2_000,
      maxEntries: options.maxCachedKeys ?? 100_000,
      now: options.now ?? Date.now,
    };
    this.cache = new SdkKeyCache(cacheOptions);
    this.tokenCache = new SdkKeyCache<ApiTokenPrincipal>(cacheOptions);
    this.apiTokens = options.apiTokens;
    this.events.setMaxListeners(0);
  }

  /** Starts listening for revocations; until then only this instance's own revocations evict. */
  async start(): Promise<void> {
    this.subscription = await this.notifier.subscribe(
      SDK_KEY_REVOKED_CHANNEL,
      (sdkKeyId) => this.evict(sdkKeyId),
      // Notifications may have been missed while disconnected: forget everything.
      () => {
        this.generation++;
        this.cache.clear();
        this.tokenCache.clear();
      },
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.unsubscribe();
    this.subscription = null;
  }

  /** Exactly one credential must be presented. @throws UNAUTHENTICATED. */
  verify(credentials: Credentials): Promise<Principal> {
    return verifyOneCredential(this, credentials);
  }

  /**
   * A bearer token's user, with the role and bindings it has *now* (a change of either applies to
   * tokens already issued) and only while its session is live — answered from memory by the
   * SessionRegistry. `bindings` only when the membership stores some: without, the principal is
   * exactly the org role's (effectiveBindings), messages included. A `swy_` bearer is an API token
   * instead. `clientAddress`, where the caller's address is known, is what unknown API tokens are
   * throttled by.
   */
  async verifyBearer(token: string, clientAddress?: string): Promise<Principal> {
    if (isApiToken(token)) return this.verifyApiToken(token, clientAddress);
    const claims = await this.tokens.verify(token);
    return userPrincipalOf(claims, await this.sessions.currentAccess(claims));
  }

  /** The SDK-key principal from memory, or undefined when the database must be asked. */
  cachedSdkKey(rawKey: string): Principal | null | undefined {
    return this.cache.get(rawKey);
  }

  async verifySdkKey(rawKey: string): Promise<Principal> {
    const cached = this.cache.get(rawKey);
    if (cached) return refuseExpiredKey(cached, this.now());
    if (cached === null || rawKey.length === 0 || rawKey.length > MAX_KEY_LENGTH) throw unauthenticated('invalid SDK key');
    // One database look-up per key at a time: the streams of 50,000 SDKs sharing a key that
    // reconnect together (a restarted instance, an expired cache entry) would otherwise all miss
    // the cache at once and queue that many identical queries for the pool. A look-up started
    // before a revocation or a lost notification connection is not joined (its answer may be stale).
    const pending = this.sdkKeyLookups.get(rawKey);
    if (pending && pending.generation === this.generation) return refuseExpiredKey(await pending.principal, this.now());
    const lookup = { generation: this.generation, principal: this.lookUpSdkKey(rawKey) };
    this.sdkKeyLookups.set(rawKey, lookup);
    try {
      return refuseExpiredKey(await lookup.principal, this.now());
    } finally {
      if (this.sdkKeyLookups.get(rawKey) === lookup) this.sdkKeyLookups.delete(rawKey);
    }
  }

  private async lookUpSdkKey(rawKey: string): Promise<KeyPrincipal> {
    const generation = this.generation;
    const key = await this.sdkKeys.findActiveByHash(sha256Hex(rawKey));
    if (!key) {
      this.cache.rememberUnknown(rawKey);
      throw unauthenticated('invalid SDK key');
    }
    const principal: KeyPrincipal =
      key.kind === 'client'
        ? { kind: 'client_key', sdkKeyId: key.id, orgId: key.orgId, projectId: key.projectId, environmentId: key.environmentId, client: key.settings }
        : { kind: 'sdk_key', sdkKeyId: key.id, orgId: key.orgId, projectId: key.projectId, environmentId: key.environmentId };
    if (generation === this.generation) this.cache.remember(rawKey, principal);
    return principal;
  }

  /**
   * An API token from memory after the first check (as SDK keys), its expiry checked on every use.
   * Unknown ones are remembered briefly and, where the client's address is known, counted against
   * it: only what the cache cannot answer costs a database trip.
   */
  private async verifyApiToken(rawToken: string, clientAddress: string | undefined): Promise<ApiTokenPrincipal> {
    const cached = this.tokenCache.get(rawToken);
    if (cached) return this.acceptToken(cached);
    if (cached === null || rawToken.length > MAX_KEY_LENGTH || this.apiTokens === undefined) throw unauthenticated('invalid API token');
    const attempt = clientAddress === undefined ? undefined : await this.apiTokens.throttle?.begin(clientAddress);
    const generation = this.generation;
    const token = await this.apiTokens.repository.findActiveByHash(sha256Hex(rawToken));
    if (!token) {
      this.tokenCache.rememberUnknown(rawToken);
      throw unauthenticated('invalid API token');
    }
    await attempt?.succeeded();
    const principal: ApiTokenPrincipal = {
      kind: 'api_token',
      tokenId: token.id,
      name: token.name,
      orgId: token.orgId,
      role: token.role,
      scope: token.scope,
      expiresAtMs: token.expiresAtMs,
    };
    if (generation === this.generation) this.tokenCache.remember(rawToken, principal);
    return this.acceptToken(principal);
  }

  private acceptToken(principal: ApiTokenPrincipal): ApiTokenPrincipal {
    refuseExpiredToken(principal, this.now());
    this.apiTokens?.uses?.used(principal.tokenId);
    return principal;
  }

  /** Forgets a revoked key or API token here and tells `onRevoked` listeners. */
  evict(sdkKeyId: string): void {
    this.generation++;
    this.cache.evictKeyId(sdkKeyId);
    this.tokenCache.evictKeyId(sdkKeyId);
    this.events.emit('revoked', sdkKeyId);
  }

  /** Calls `listener` with the id of every key revoked from now on (sync streams close on it). */
  onRevoked(listener: (sdkKeyId: string) => void): () => void {
    this.events.on('revoked', listener);
    return () => this.events.off('revoked', listener);
  }
}
