/** A refresh token as stored: only its SHA-256 hash, never the token itself. */
export interface RefreshTokenRecord {
  id: string;
  userId: string;
  orgId: string;
  tokenHash: string;
  createdAtMs: number;
  expiresAtMs: number;
}

/**
 * Refresh tokens are single use: consuming one revokes it in the same statement, so a stolen
 * token raced against its owner works at most once (the rotation pattern of OAuth 2.1).
 */
export interface RefreshTokenRepository {
  create(input: { userId: string; orgId: string; tokenHash: string; expiresAtMs: number }): Promise<RefreshTokenRecord>;
  /** Revokes and returns the token when it is active and unexpired at `nowMs`; null otherwise. */
  consume(tokenHash: string, nowMs: number): Promise<RefreshTokenRecord | null>;
  /** Revokes every active token of the user (e.g. on password change). Returns how many. */
  revokeAllForUser(userId: string): Promise<number>;
  /**
   * Deletes at most `limit` tokens that expired (`expiresAtMs <= nowMs`; revoked or not: an expired
   * token can never be consumed), across every user; returns how many. Live tokens stay.
   */
  pruneExpired(nowMs: number, limit: number): Promise<number>;
}

/**
 * Failed logins, counted per subject (`email:<address>` or `ip:<address>`) over a sliding window,
 * shared by every instance so throttling holds behind a load balancer.
 */
export interface LoginThrottleRepository {
  /** One failure at `nowMs` for each distinct subject given (a subject listed twice counts once). */
  recordFailure(subjects: string[], nowMs: number): Promise<void>;
  /**
   * Failures of each subject at or after `sinceMs`, with the oldest one's time (to compute
   * Retry-After). Every distinct subject asked about is answered once, in the order asked; one
   * without failures has count 0 and oldestAtMs = sinceMs (so a Retry-After computed from it is 0).
   */
  failuresSince(subjects: string[], sinceMs: number): Promise<Array<{ subject: string; count: number; oldestAtMs: number }>>;
  /** Removes one failure recorded at exactly `atMs` for each subject (an attempt that turned out fine). */
  forgetOne(subjects: string[], atMs: number): Promise<void>;
  /** Forgets a subject's failures (after a successful login) and everyone's older than `beforeMs` (exclusive). */
  clear(subject: string, beforeMs: number): Promise<void>;
  /**
   * Deletes at most `limit` failures recorded before `beforeMs` (exclusive: those no throttle
   * window can count any more), of any subject; returns how many.
   */
  pruneOlderThan(beforeMs: number, limit: number): Promise<number>;
}

/**
 * Cross-instance notifications (PostgreSQL LISTEN/NOTIFY in production, in-process in tests).
 * Payloads are small strings (ids), never secrets.
 */
export interface ChangeNotifier {
  publish(channel: string, payload: string): Promise<void>;
  /**
   * Calls `onMessage` for every payload published on the channel by any instance (this one too).
   * `onReconnect` runs when the listening connection was re-established: messages may have been
   * missed, so caches must be dropped. Resolves once listening.
   */
  subscribe(channel: string, onMessage: (payload: string) => void, onReconnect?: () => void): Promise<{ unsubscribe(): Promise<void> }>;
}
