import { RateLimitedError, type LoginThrottleRepository } from '@switchyard/core';

export interface LoginThrottlePolicy {
  /** Failures allowed for one account from one client address inside the window. */
  maxFailuresPerAccountAndAddress: number;
  /** Failures allowed from one client address, whatever the accounts, inside the window. */
  maxFailuresPerAddress: number;
  windowMs: number;
}

/**
 * 10 wrong passwords for one account from one address, or 30 from one address in all, within
 * 15 minutes; the next attempt is refused until the oldest failure leaves the window.
 */
export const DEFAULT_LOGIN_THROTTLE: LoginThrottlePolicy = {
  maxFailuresPerAccountAndAddress: 10,
  maxFailuresPerAddress: 30,
  windowMs: 15 * 60_000,
};

/**
 * Login throttling by (account, client address) and by client address (docs/decisions.md "Login
 * throttling"), counted in PostgreSQL so that every instance behind a load balancer shares the
 * count. There is deliberately no limit per account alone: it would let anyone lock the owner
 * out by failing ten times with the owner's email. Guessing one account's password from many
 * addresses is bounded per address and by bcrypt's cost.
 */
export class LoginThrottle {
  constructor(
    private readonly failures: LoginThrottleRepository,
    private readonly policy: LoginThrottlePolicy = DEFAULT_LOGIN_THROTTLE,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Starts a login attempt. The attempt is counted as a failure *before* the password is checked
   * and the counts read afterwards, so that of N parallel attempts at most the limit get as far
   * as the password check: each one sees at least every attempt recorded before it. A refused
   * attempt is removed again, so hammering a throttled pair does not extend its lockout.
   * @throws RESOURCE_EXHAUSTED with Retry-After when either subject used up its failures.
   */
  async begin(email: string, clientAddress: string | undefined): Promise<LoginAttempt> {
    const address = clientAddress && clientAddress.length > 0 ? clientAddress : 'unknown';
    const account = `account:${email.trim().toLowerCase()}|${address}`;
    const subjects = [account, `ip:${address}`];
    const limits = new Map([
      [account, this.policy.maxFailuresPerAccountAndAddress],
      [`ip:${address}`, this.policy.maxFailuresPerAddress],
    ]);
    const startedAt = this.now();
    await this.failures.recordFailure(subjects, startedAt);
    const counts = await this.failures.failuresSince(subjects, startedAt - this.policy.windowMs);
    let retryAfterMs = 0;
    for (const { subject, count, oldestAtMs } of counts) {
      if (count > (limits.get(subject) ?? 0)) retryAfterMs = Math.max(retryAfterMs, oldestAtMs + this.policy.windowMs - startedAt);
    }
    if (retryAfterMs > 0) {
      await this.failures.forgetOne(subjects, startedAt);
      throw new RateLimitedError('too many failed logins; try again later', Math.max(1, Math.ceil(retryAfterMs / 1000)));
    }
    return {
      // The attempt stays recorded as a failure unless the password was right.
      succeeded: async () => {
        await this.failures.forgetOne(subjects, startedAt);
        // A successful login clears the pair's count (not the address's: one good password on a
        // shared address must not reset an attack on other accounts).
        await this.failures.clear(account, this.now() - this.policy.windowMs);
      },
    };
  }
}

/** A login attempt in progress: recorded as a failure until `succeeded()` is called. */
export interface LoginAttempt {
  succeeded(): Promise<void>;
}
