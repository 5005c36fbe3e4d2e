import { RateLimitedError, type Principal, type RateLimit } from '@switchyard/core';
import { addressBlocks } from '../auth/address-blocks.ts';
import { BucketTable, DEFAULT_MAX_BUCKETS } from '../limits/bucket-table.ts';

/**
 * What a client key's limits are on (docs/client-side.md "6. Limits"): OFREP evaluation (single
 * and bulk), exposures and events written, and browser stream opens.
 */
export const CLIENT_WORKS = ['evaluation', 'ingest', 'stream'] as const;
export type ClientWork = (typeof CLIENT_WORKS)[number];

/** The limits of one kind of work: per (client key, client address) and per client key. */
export interface ClientWorkLimits {
  perAddress: RateLimit;
  perKey: RateLimit;
}

export type ClientRateLimits = Record<ClientWork, ClientWorkLimits>;

/**
 * Defaults (docs/client-side.md "6. Limits"). Per address they leave room for many browsers behind
 * one NAT (an office polling every 30 s, the OFREP web provider's default); per key they bound
 * what one key shipped in a public page can make one instance do. `ingest` counts entries (an
 * exposure or an event each), so its bursts hold several full client requests.
 */
export const DEFAULT_CLIENT_RATE_LIMITS: ClientRateLimits = {
  evaluation: { perAddress: { perSecond: 50, burst: 500 }, perKey: { perSecond: 5_000, burst: 50_000 } },
  ingest: { perAddress: { perSecond: 100, burst: 1_000 }, perKey: { perSecond: 2_000, burst: 20_000 } },
  stream: { perAddress: { perSecond: 5, burst: 50 }, perKey: { perSecond: 500, burst: 5_000 } },
};

/**
 * The smallest ingest burst the configuration accepts: the 100 entries a client request may carry
 * (docs/client-side.md "5. Exposures and events"), so a full request is never refused by a full
 * bucket.
 */
export const CLIENT_INGEST_MIN_BURST = 100;

const WHAT: Record<ClientWork, string> = { evaluation: 'evaluation requests', ingest: 'exposures and events', stream: 'stream opens' };

/**
 * Token buckets for client keys, per (key, client address) and per key, in the memory of the
 * instance that answers the request (a gateway in the split topology: the limits hold before any
 * call to the services). A request is admitted only when both of its buckets hold its cost, and
 * then both are charged; otherwise it is refused with RateLimitedError (429, Retry-After: the
 * whole seconds until it would be admitted) and nothing is charged.
 *
 * The client address is the one the REST server derived under TRUST_PROXY (Fastify's
 * `request.ip`), counted as login throttling counts it: an IPv4 address, or an IPv6 /64 (one host
 * rotates through its whole /64). Server keys and users pass untouched: their limits are the
 * services' (IngestRateLimiter).
 *
 * Memory is bounded: each of the two tables keeps at most `maxBuckets` buckets, least recently
 * used forgotten first. They are separate tables so that an outsider churning through addresses
 * can push out per-address buckets only, never a key's own (which would reset the per-key limit).
 */
export class ClientRateLimiter {
  private readonly byAddress: BucketTable;
  private readonly byKey: BucketTable;

  constructor(
    private readonly limits: ClientRateLimits = DEFAULT_CLIENT_RATE_LIMITS,
    private readonly now: () => number = Date.now,
    options: { maxBuckets?: number } = {},
  ) {
    this.byAddress = new BucketTable(options.maxBuckets ?? DEFAULT_MAX_BUCKETS);
    this.byKey = new BucketTable(options.maxBuckets ?? DEFAULT_MAX_BUCKETS);
  }

  /**
   * Admits `cost` units of `work` (1 per request; the entries of an exposures or events request)
   * for a client key from `address`, or throws. Any other principal is admitted without a charge.
   * @throws RateLimitedError (RESOURCE_EXHAUSTED, 429 with Retry-After) when either bucket lacks the tokens.
   */
  take(work: ClientWork, principal: Principal, address: string | undefined, cost = 1): void {
    if (principal.kind !== 'client_key' || cost <= 0) return;
    const nowMs = this.now();
    const limits = this.limits[work];
    const client = addressBlocks(address).client;
    const byAddress = this.byAddress.get(`${work}:${principal.sdkKeyId}|${client}`, limits.perAddress, nowMs);
    const byKey = this.byKey.get(`${work}:${principal.sdkKeyId}`, limits.perKey, nowMs);
    const addressWaitMs = byAddress.waitMs(cost, nowMs);
    const keyWaitMs = byKey.waitMs(cost, nowMs);
    if (addressWaitMs > 0 || keyWaitMs > 0) {
      const whose = addressWaitMs >= keyWaitMs ? 'this client key from this address' : 'this client key';
      throw new RateLimitedError(`too many ${WHAT[work]} for ${whose}; retry later`, Math.max(1, Math.ceil(Math.max(addressWaitMs, keyWaitMs) / 1000)));
    }
    byAddress.take(cost, nowMs);
    byKey.take(cost, nowMs);
  }

  /** Buckets held now (both tables): what the bound is on. */
  bucketCount(): number {
    return this.byAddress.size + this.byKey.size;
  }
}
