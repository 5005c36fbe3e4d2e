import { RateLimitedError, type LoginThrottleRepository } from '@switchyard/core';

export interface LoginThrottlePolicy {
  /** Failures allowed per subject inside the window; the next attempt is refused. */
  maxFailures: number;
  windowMs: number;
}

export const DEFAULT_LOGIN_THROTTLE: LoginThrottlePolicy = { maxFailures: 10, windowMs: 15 * 60_000 };

const emailSubject = (email: string): string => `email:${email.trim().toLowerCase()}`;
const addressSubject = (address: string): string => `ip:${address}`;

/**
 * Login throttling by email and by client address (whichever trips first), counted in PostgreSQL
 * so that every instance behind a load balancer shares the count.
 */
export class LoginThrottle {
  constructor(
    private readonly failures: LoginThrottleRepository,
    private readonly policy: LoginThrottlePolicy = DEFAULT_LOGIN_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {}

  private subjects(email: string, clientAddress: string | undefined): string[] {
    return clientAddress ? [emailSubject(email), addressSubject(clientAddress)] : [emailSubject(email)];
  }

  /** @throws RESOURCE_EXHAUSTED with Retry-After when either subject used up its failures. */
  async check(email: string, clientAddress: string | undefined): Promise<void> {
    const now = this.now();
    const counts = await this.failures.failuresSince(this.subjects(email, clientAddress), now - this.policy.windowMs);
    let retryAfterMs = 0;
    for (const { count, oldestAtMs } of counts) {
      if (count >= this.policy.maxFailures) retryAfterMs = Math.max(retryAfterMs, oldestAtMs + this.policy.windowMs - now);
    }
    if (retryAfterMs > 0) {
      throw new RateLimitedError('too many failed logins; try again later', Math.max(1, Math.ceil(retryAfterMs / 1000)));
    }
  }

  async recordFailure(email: string, clientAddress: string | undefined): Promise<void> {
    await this.failures.recordFailure(this.subjects(email, clientAddress), this.now());
  }

  /** A successful login clears the email's count (not the address's: one good password on a shared address should not reset an attack). */
  async recordSuccess(email: string): Promise<void> {
    await this.failures.clear(emailSubject(email), this.now() - this.policy.windowMs);
  }
}
