import type { Principal } from '@switchyard/core';

/**
 * Where a cached answer is filed: the credential's kind and the credential itself, as the services'
 * own SDK-key cache files it. Hashing it first cost ~2 µs per evaluation (about a tenth of a gateway's
 * evaluate, bench/topology) and protects nothing the request's own headers do not already hold in
 * memory; the map is never logged.
 */
export function credentialCacheKey(kind: 'bearer' | 'sdk_key', rawCredential: string): string {
  return `${kind}\u0000${rawCredential}`;
}

interface Entry {
  principal: Principal;
  expiresAtMs: number;
}

export interface ValidatedCredentialCacheOptions {
  /** Cached answers at most, and also cached refusals at most. */
  maxEntries: number;
  now: () => number;
}

/**
 * A gateway's memory of what the services answered for credentials: principals until their
 * expiry, and briefly refusals. Indexed by SDK key id and by user id, so that a revocation or an
 * ended session forgets exactly the answers it makes stale. Bounded: the oldest answer goes first.
 */
export class ValidatedCredentialCache {
  private readonly known = new Map<string, Entry>();
  private readonly refused = new Map<string, number>();
  /** SDK key id or user id → the keys of its cached answers (a user may hold many tokens). */
  private readonly keysByOwner = new Map<string, Set<string>>();

  constructor(private readonly options: ValidatedCredentialCacheOptions) {}

  /** The cached principal; null for a cached refusal; undefined: ask the services. */
  get(key: string): Principal | null | undefined {
    const now = this.options.now();
    const entry = this.known.get(key);
    if (entry !== undefined) {
      if (entry.expiresAtMs > now) return entry.principal;
      this.forget(key);
    }
    const refusedUntil = this.refused.get(key);
    if (refusedUntil !== undefined) {
      if (refusedUntil > now) return null;
      this.refused.delete(key);
    }
    return undefined;
  }

  remember(key: string, principal: Principal, expiresAtMs: number): void {
    if (expiresAtMs <= this.options.now()) return;
    this.forget(key);
    if (this.known.size >= this.options.maxEntries) {
      // Map iterates in insertion order: the first key is the oldest answer.
      const oldest = this.known.keys().next();
      if (!oldest.done) this.forget(oldest.value);
    }
    this.known.set(key, { principal, expiresAtMs });
    const owner = ownerOf(principal);
    let keys = this.keysByOwner.get(owner);
    if (!keys) this.keysByOwner.set(owner, (keys = new Set()));
    keys.add(key);
    this.refused.delete(key);
  }

  rememberRefusal(key: string, untilMs: number): void {
    if (this.refused.size >= this.options.maxEntries) this.refused.clear();
    this.refused.set(key, untilMs);
  }

  /** Forgets every answer for the SDK key or API token (revoked) or the user (sessions or roles changed). */
  forgetOwner(kind: 'sdk_key' | 'user' | 'api_token', id: string): void {
    const keys = this.keysByOwner.get(`${kind}:${id}`);
    if (keys) for (const key of [...keys]) this.forget(key);
  }

  clear(): void {
    this.known.clear();
    this.refused.clear();
    this.keysByOwner.clear();
  }

  /** Cached answers (refusals not counted), for tests. */
  get size(): number {
    return this.known.size;
  }

  private forget(key: string): void {
    const entry = this.known.get(key);
    if (entry === undefined) return;
    this.known.delete(key);
    const owner = ownerOf(entry.principal);
    const keys = this.keysByOwner.get(owner);
    keys?.delete(key);
    if (keys?.size === 0) this.keysByOwner.delete(owner);
  }
}

const ownerOf = (principal: Principal): string =>
  principal.kind === 'user' ? `user:${principal.userId}` : principal.kind === 'api_token' ? `api_token:${principal.tokenId}` : `sdk_key:${principal.sdkKeyId}`;
