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

  /**
   * Starts a login attempt. The attempt is counted as a failure *before* the password is checked
   * and the count read afterwards, so that of N parallel attempts at most `maxFailures` get as far
   * as the password check: each one sees at least every attempt recorded before it. A refused
   * attempt is removed again, so hammering a throttled account does not extend its lockout.
   * @throws RESOURCE_EXHAUSTED with Retry-After when either subject used up its failures.
   */
  async begin(email: string, clientAddress: string | undefined): Promise<LoginAttempt> {
    const subjects = this.subjects(email, clientAddress);
    const startedAt = this.now();
    await this.failures.recordFailure(subjects, startedAt);
    const counts = await this.failures.failuresSince(subjects, startedAt - this.policy.windowMs);
    let retryAfterMs = 0;
    for (const { count, oldestAtMs } of counts) {
      if (count > this.policy.maxFailures) retryAfterMs = Math.max(retryAfterMs, oldestAtMs + this.policy.windowMs - startedAt);
    }
    if (retryAfterMs > 0) {
      await this.failures.forgetOne(subjects, startedAt);
      throw new RateLimitedError('too many failed logins; try again later', Math.max(1, Math.ceil(retryAfterMs / 1000)));
    }
    return {
      // The attempt stays recorded as a failure unless the password was right.
      succeeded: async () => {
        await this.failures.forgetOne(subjects, startedAt);
        // A successful login clears the email's count (not the address's: one good password on a
        // shared address must not reset an attack on other accounts).
        await this.failures.clear(emailSubject(email), this.now() - this.policy.windowMs);
      },
    };
  }
}

/** A login attempt in progress: recorded as a failure until `succeeded()` is called. */
export interface LoginAttempt {
  succeeded(): Promise<void>;
}
