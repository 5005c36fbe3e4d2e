import { RateLimitedError, type LoginThrottleRepository } from '@switchyard/core';
import { addressBlocks } from './address-blocks.ts';

export interface LoginThrottlePolicy {
  /** Failures allowed for one account from one client (IPv4 address or IPv6 /64) inside the window. */
  maxFailuresPerAccountAndAddress: number;
  /** Failures allowed from one client (IPv4 address or IPv6 /64), whatever the accounts, inside the window. */
  maxFailuresPerAddress: number;
  /** Failures allowed from one IPv6 /48, whatever the accounts and /64s, inside the window. */
  maxFailuresPerSite: number;
  windowMs: number;
  /**
   * The per-account slow-down: after `freeFailures` failures of one account inside the window
   * (from any address), each attempt must wait `firstDelayMs` after the account's newest failure,
   * doubling with every further failure, never more than `maxDelayMs`.
   */
  accountSlowdown: { freeFailures: number; firstDelayMs: number; maxDelayMs: number };
}

/**
 * 10 wrong passwords for one account from one client, 30 from one client in all, or 100 from one
 * IPv6 /48, within 15 minutes: the next attempt there is refused until the oldest failure leaves
 * the window. After 10 failures of one account from anywhere, its attempts are spaced 1 s, 2 s,
 * 4 s, ... up to 60 s apart.
 */
export const DEFAULT_LOGIN_THROTTLE: LoginThrottlePolicy = {
  maxFailuresPerAccountAndAddress: 10,
  maxFailuresPerAddress: 30,
  maxFailuresPerSite: 100,
  windowMs: 15 * 60_000,
  accountSlowdown: { freeFailures: 10, firstDelayMs: 1_000, maxDelayMs: 60_000 },
};

/**
 * Login throttling (docs/decisions.md "Login throttling", docs/security.md "Password guessing and
 * lock-out"), counted in PostgreSQL so that every instance behind a load balancer shares the count:
 * - hard limits per (account, client), per client and per IPv6 /48, where a client is an IPv4
 *   address or an IPv6 /64 (address-blocks.ts: one host rotates through a whole /64);
 * - a per-account slow-down that bounds guessing one account from many addresses. It is a delay,
 *   never a lock: whoever tries after the delay gets the password checked, so an attacker failing
 *   with the owner's email only makes the owner wait (at most `maxDelayMs`). The waiting is the
 *   client's: the refusal is an immediate 429 with Retry-After, no request is held open.
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
   * attempt is removed again, so hammering a throttled subject does not extend its lockout.
   * @throws RESOURCE_EXHAUSTED with Retry-After when a subject used up its failures, or the
   *   account's slow-down has not yet passed.
   */
  async begin(email: string, clientAddress: string | undefined): Promise<LoginAttempt> {
    const blocks = addressBlocks(clientAddress);
    const normalizedEmail = email.trim().toLowerCase();
    const pair = `account:${normalizedEmail}|${blocks.client}`;
    const account = `email:${normalizedEmail}`;
    const limits = new Map([
      [pair, this.policy.maxFailuresPerAccountAndAddress],
      [`ip:${blocks.client}`, this.policy.maxFailuresPerAddress],
    ]);
    if (blocks.site !== undefined) limits.set(`site:${blocks.site}`, this.policy.maxFailuresPerSite);
    const subjects = [...limits.keys(), account];
    const startedAt = this.now();
    const since = startedAt - this.policy.windowMs;
    await this.failures.recordFailure(subjects, startedAt);
    const counts = await this.failures.failuresSince(subjects, since);
    let retryAfterMs = 0;
    for (const { subject, count, oldestAtMs } of counts) {
      const limit = limits.get(subject);
      if (limit !== undefined && count > limit) retryAfterMs = Math.max(retryAfterMs, oldestAtMs + this.policy.windowMs - startedAt);
    }
    const accountFailures = counts.find((entry) => entry.subject === account)?.count ?? 1;
    retryAfterMs = Math.max(retryAfterMs, await this.slowdownLeft(account, accountFailures - 1, startedAt, since));
    if (retryAfterMs > 0) {
      await this.failures.forgetOne(subjects, startedAt);
      throw new RateLimitedError('too many failed logins; try again later', Math.max(1, Math.ceil(retryAfterMs / 1000)));
    }
    return {
      // The attempt stays recorded as a failure unless the password was right.
      succeeded: async () => {
        await this.failures.forgetOne(subjects, startedAt);
        // A successful login clears the pair's count and the account's slow-down: the owner proved
        // the password. Never the address's or the block's: one good password on a shared address
        // must not reset an attack on other accounts.
        await this.failures.clear(pair, this.now() - this.policy.windowMs);
        await this.failures.clear(account, this.now() - this.policy.windowMs);
      },
    };
  }

  /**
   * How long this attempt must still wait for the account's slow-down; 0 when it may go on.
   * `others` are the account's failures in the window besides this attempt's own record (attempts
   * in flight included, so a parallel burst gets at most one attempt through per delay: whichever
   * of two attempts reads later sees the other's record within the delay).
   */
  private async slowdownLeft(account: string, others: number, startedAt: number, since: number): Promise<number> {
    const { freeFailures, firstDelayMs, maxDelayMs } = this.policy.accountSlowdown;
    if (others < freeFailures) return 0;
    // The exponent is capped so that a long run cannot overflow to Infinity (2^20 s > any cap).
    const delayMs = Math.min(maxDelayMs, firstDelayMs * 2 ** Math.min(20, others - freeFailures));
    // The newest failure that is not this attempt's own record (one record at startedAt is ours).
    const [newest, second] = await this.failures.newestFailures(account, since, 2);
    const newestOther = newest !== undefined && newest !== startedAt ? newest : second;
    if (newestOther === undefined) return 0;
    return Math.max(0, newestOther + delayMs - startedAt);
  }
}

/** A login attempt in progress: recorded as a failure until `succeeded()` is called. */
export interface LoginAttempt {
  succeeded(): Promise<void>;
}
