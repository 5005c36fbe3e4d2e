import { RateLimitedError, type EnvironmentScope, type Principal, type RateLimit } from '@switchyard/core';
import { BucketTable, DEFAULT_MAX_BUCKETS } from './bucket-table.ts';

/** What a limit is on: rows written (events and exposures together) or list-checks answered. */
export type LimitedWork = 'ingest' | 'list_check';

/** The limits of one kind of work: per credential (an SDK key, or a user for a bearer token) and per environment. */
export interface WorkLimits {
  perKey: RateLimit;
  perEnvironment: RateLimit;
}

export type IngestRateLimits = Record<LimitedWork, WorkLimits>;

/**
 * Defaults (docs/security.md "Ingest rate limits and row quota"). Each burst is at least the
 * largest request (10,000 events or exposures, 1,000 list-checks), so a full-size request is
 * never refused by a full bucket.
 */
export const DEFAULT_INGEST_RATE_LIMITS: IngestRateLimits = {
  ingest: { perKey: { perSecond: 2_000, burst: 20_000 }, perEnvironment: { perSecond: 5_000, burst: 50_000 } },
  list_check: { perKey: { perSecond: 1_000, burst: 5_000 }, perEnvironment: { perSecond: 5_000, burst: 20_000 } },
};

const WHAT: Record<LimitedWork, string> = { ingest: 'events and exposures', list_check: 'list-checks' };

/**
 * Token buckets per credential and per environment, in this process's memory (no database round
 * trip). A request is admitted only when both of its buckets hold its cost — the number of its
 * entries, so a batch of 10,000 events costs 10,000, not 1 — and then both are charged; otherwise
 * it is refused with RESOURCE_EXHAUSTED and the seconds after which it would be admitted
 * (Retry-After), and nothing is charged.
 *
 * The services process applies it (packages/services, called by the ingest and segment
 * services), so in the split topology every gateway's requests meet the same buckets; with
 * several services instances each has its own (docs/security.md).
 */
export class IngestRateLimiter {
  private readonly buckets: BucketTable;

  constructor(
    private readonly limits: IngestRateLimits = DEFAULT_INGEST_RATE_LIMITS,
    private readonly now: () => number = Date.now,
    options: { maxBuckets?: number } = {},
  ) {
    this.buckets = new BucketTable(options.maxBuckets ?? DEFAULT_MAX_BUCKETS);
  }

  /**
   * Admits `cost` entries of `work` for the caller in the environment, or throws.
   * @throws RateLimitedError (RESOURCE_EXHAUSTED with Retry-After) when either bucket lacks the tokens.
   */
  admit(work: LimitedWork, principal: Principal, scope: EnvironmentScope, cost: number): void {
    if (cost <= 0) return;
    const nowMs = this.now();
    const limits = this.limits[work];
    const byKey = this.buckets.get(`${work}:${credentialOf(principal)}`, limits.perKey, nowMs);
    const byEnvironment = this.buckets.get(`${work}:env:${scope.environmentId}`, limits.perEnvironment, nowMs);
    const waitMs = Math.max(byKey.waitMs(cost, nowMs), byEnvironment.waitMs(cost, nowMs));
    if (waitMs > 0) {
      const whose = byKey.waitMs(cost, nowMs) >= byEnvironment.waitMs(cost, nowMs) ? 'this credential' : 'this environment';
      throw new RateLimitedError(`too many ${WHAT[work]} for ${whose}; retry later`, Math.max(1, Math.ceil(waitMs / 1000)));
    }
    byKey.take(cost, nowMs);
    byEnvironment.take(cost, nowMs);
  }
}

/** The caller's credential: the SDK key, or the user behind a bearer token. */
function credentialOf(principal: Principal): string {
  if (principal.kind === 'api_token') return `token:${principal.tokenId}`;
  return principal.kind === 'user' ? `user:${principal.userId}` : `key:${principal.sdkKeyId}`;
}
