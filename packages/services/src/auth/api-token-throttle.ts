import { RateLimitedError, type LoginThrottleRepository } from '@switchyard/core';
import { addressBlocks } from './address-blocks.ts';

export interface ApiTokenThrottlePolicy {
  /** Unknown `swy_` tokens one client (IPv4 address or IPv6 /64) may present inside the window. */
  maxFailuresPerAddress: number;
  /** ... and one IPv6 /48. */
  maxFailuresPerSite: number;
  windowMs: number;
}

/** As failed logins (login-throttle.ts): 30 per client, 100 per IPv6 /48, within 15 minutes. No per-account slow-down: a guess names no account. */
export const DEFAULT_API_TOKEN_THROTTLE: ApiTokenThrottlePolicy = { maxFailuresPerAddress: 30, maxFailuresPerSite: 100, windowMs: 15 * 60_000 };

/**
 * Counts presentations of `swy_` tokens that are not known, per client address, in the login
 * throttle's table (shared by every instance) under subjects of their own (`api-token-ip:`,
 * `api-token-site:`), so failed tokens and failed logins never use up each other's quota. Only
 * presentations the verifier's cache cannot answer get here: a token answered from memory costs
 * nothing, and a refused one is remembered briefly (negative cache), so the database sees at most
 * one lookup per distinct guess. A guess cannot succeed anyway (256 random bits); the throttle
 * bounds the database work a flood of guesses causes.
 */
export class ApiTokenThrottle {
  constructor(
    private readonly failures: LoginThrottleRepository,
    private readonly policy: ApiTokenThrottlePolicy = DEFAULT_API_TOKEN_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Counted as a failure before the lookup (as LoginThrottle does, so parallel guesses cannot all
   * slip under the limit), forgotten again by `succeeded`.
   * @throws RESOURCE_EXHAUSTED with Retry-After once the client used up its failures.
   */
  async begin(clientAddress: string): Promise<{ succeeded(): Promise<void> }> {
    const blocks = addressBlocks(clientAddress);
    const limits = new Map([[`api-token-ip:${blocks.client}`, this.policy.maxFailuresPerAddress]]);
    if (blocks.site !== undefined) limits.set(`api-token-site:${blocks.site}`, this.policy.maxFailuresPerSite);
    const subjects = [...limits.keys()];
    const startedAt = this.now();
    await this.failures.recordFailure(subjects, startedAt);
    const counts = await this.failures.failuresSince(subjects, startedAt - this.policy.windowMs);
    let retryAfterMs = 0;
    for (const { subject, count, oldestAtMs } of counts) {
      const limit = limits.get(subject);
      if (limit !== undefined && count > limit) retryAfterMs = Math.max(retryAfterMs, oldestAtMs + this.policy.windowMs - startedAt);
    }
    if (retryAfterMs > 0) {
      await this.failures.forgetOne(subjects, startedAt);
      throw new RateLimitedError('too many invalid API tokens from this address; try again later', Math.max(1, Math.ceil(retryAfterMs / 1000)));
    }
    return { succeeded: () => this.failures.forgetOne(subjects, startedAt) };
  }
}
