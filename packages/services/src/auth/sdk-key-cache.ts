import type { ApiTokenPrincipal, KeyPrincipal } from '@switchyard/core';

/** What the cache holds: SDK and client keys, and (in a second instance) API tokens. */
type SdkKeyPrincipal = KeyPrincipal | ApiTokenPrincipal;

/** The id a revocation names. */
const idOf = (principal: SdkKeyPrincipal): string => (principal.kind === 'api_token' ? principal.tokenId : principal.sdkKeyId);

interface Entry<P> {
  principal: P;
  expiresAtMs: number;
}

/**
 * In-memory answers for SDK keys, keyed by the presented key so the hot path is one Map lookup
 * (no hashing, no database). Entries expire after `ttlMs` as a safety net; revocations evict at
 * once through `evictKeyId` (driven by LISTEN/NOTIFY). Keys that were not found are remembered
 * briefly too, so garbage keys cannot turn into one database query each. Both maps are bounded.
 */
export class SdkKeyCache<P extends SdkKeyPrincipal = KeyPrincipal> {
  private readonly known = new Map<string, Entry<P>>();
  private readonly rawKeysById = new Map<string, string>();
  private readonly unknown = new Map<string, number>();

  constructor(
    private readonly options: { ttlMs: number; negativeTtlMs: number; maxEntries: number; now: () => number },
  ) {}

  /** The principal for a cached active key; null for a cached unknown key; undefined: ask the database. */
  get(rawKey: string): P | null | undefined {
    const now = this.options.now();
    const entry = this.known.get(rawKey);
    if (entry !== undefined) {
      if (entry.expiresAtMs > now) return entry.principal;
      this.known.delete(rawKey);
      this.rawKeysById.delete(idOf(entry.principal));
    }
    const unknownUntil = this.unknown.get(rawKey);
    if (unknownUntil !== undefined) {
      if (unknownUntil > now) return null;
      this.unknown.delete(rawKey);
    }
    return undefined;
  }

  remember(rawKey: string, principal: P): void {
    if (this.known.size >= this.options.maxEntries) this.evictOldest(this.known);
    this.known.set(rawKey, { principal, expiresAtMs: this.options.now() + this.options.ttlMs });
    this.rawKeysById.set(idOf(principal), rawKey);
    this.unknown.delete(rawKey);
  }

  rememberUnknown(rawKey: string): void {
    if (this.unknown.size >= this.options.maxEntries) this.unknown.clear();
    this.unknown.set(rawKey, this.options.now() + this.options.negativeTtlMs);
  }

  evictKeyId(sdkKeyId: string): void {
    const rawKey = this.rawKeysById.get(sdkKeyId);
    if (rawKey === undefined) return;
    this.rawKeysById.delete(sdkKeyId);
    this.known.delete(rawKey);
  }

  clear(): void {
    this.known.clear();
    this.rawKeysById.clear();
    this.unknown.clear();
  }

  private evictOldest(map: Map<string, Entry<P>>): void {
    // Map iterates in insertion order: the first entry is the oldest.
    const oldest = map.keys().next();
    if (oldest.done) return;
    const entry = map.get(oldest.value);
    map.delete(oldest.value);
    if (entry) this.rawKeysById.delete(idOf(entry.principal));
  }
}
