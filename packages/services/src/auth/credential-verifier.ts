import { EventEmitter } from 'node:events';
import { unauthenticated, type ChangeNotifier, type KeyPrincipal, type Principal, type SdkKeyRepository } from '@switchyard/core';
import { SdkKeyCache } from './sdk-key-cache.ts';
import { sha256Hex } from './secrets.ts';
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

/**
 * The channel on which every instance hears that an SDK key was revoked, or a client key created
 * or changed (payload: its id): caches forget it, its open streams end, CORS origins are re-read.
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
}

/**
 * Turns a presented credential into a Principal (docs/decisions.md "Identity and access"): a bearer
 * JWT of a live session → its user, org and current role; an `x-sdk-key` → its environment. SDK keys are answered from memory
 * after the first check; a revocation anywhere reaches every instance through the notifier and
 * evicts the key at once (and `revoked` listeners — open sync streams — are told).
 */
export class CredentialVerifier {
  private readonly cache: SdkKeyCache;
  private readonly events = new EventEmitter();
  private readonly now: () => number;
  private subscription: { unsubscribe(): Promise<void> } | null = null;
  /**
   * Bumped by every revocation and every cache clear. A database answer read before a bump may be
   * stale (the key was revoked while the lookup was in flight), so it is returned but not cached.
   */
  private generation = 0;

  constructor(
    private readonly tokens: TokenService,
    private readonly sdkKeys: SdkKeyRepository,
    private readonly notifier: ChangeNotifier,
    private readonly sessions: Pick<SessionRegistry, 'currentAccess'>,
    options: CredentialVerifierOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.cache = new SdkKeyCache({
      ttlMs: options.cacheTtlMs ?? 60_000,
      negativeTtlMs: options.negativeCacheTtlMs ?? 2_000,
      maxEntries: options.maxCachedKeys ?? 100_000,
      now: options.now ?? Date.now,
    });
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
   * exactly the org role's (effectiveBindings), messages included.
   */
  async verifyBearer(token: string): Promise<Principal> {
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
    if (cached === null || rawKey.length === 0 || rawKey.length > 256) throw unauthenticated('invalid SDK key');
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
    return refuseExpiredKey(principal, this.now());
  }

  /** Forgets a revoked key here and tells `onRevoked` listeners. */
  evict(sdkKeyId: string): void {
    this.generation++;
    this.cache.evictKeyId(sdkKeyId);
    this.events.emit('revoked', sdkKeyId);
  }

  /** Calls `listener` with the id of every key revoked from now on (sync streams close on it). */
  onRevoked(listener: (sdkKeyId: string) => void): () => void {
    this.events.on('revoked', listener);
    return () => this.events.off('revoked', listener);
  }
}
