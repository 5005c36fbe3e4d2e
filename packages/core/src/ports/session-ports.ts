/**
 * A login session: what one sign-in opened (docs/decisions.md "Sessions"). Its access
 * tokens carry its id; its refresh tokens rotate inside it; ending it ends all of them.
 */
export interface SessionRecord {
  id: string;
  userId: string;
  orgId: string;
  createdAtMs: number;
  /** When its refresh tokens stop working at the latest. */
  expiresAtMs: number;
  /** Set once the session was ended (logout, password change, refresh-token reuse, removal). */
  endedAtMs: number | null;
  /** The identity provider that opened it (docs/sso.md): such a session stays in its org. */
  providerId: string | null;
}

/** Which of a user's live sessions to end. */
export interface SessionEndFilter {
  userId: string;
  /** Only this session. */
  sessionId?: string;
  /** Every session but this one (a password change keeps the session that made it). */
  exceptSessionId?: string;
  /** Only sessions in this org (a member removed from an org). */
  orgId?: string;
}

/** Login sessions. Every statement is scoped by the session's user. */
export interface SessionRepository {
  /**
   * A session opened by a provider (`providerId`) also stamps the provider's last use, and is
   * refused while the provider is not enabled in `orgId`, atomically with respect to a disable (so
   * no session slips past one: docs/security.md "Removed and demoted admins").
   * @throws NOT_FOUND when the user or org does not exist; FAILED_PRECONDITION for a provider that is
   * not enabled (or not of the org).
   */
  create(input: { userId: string; orgId: string; expiresAtMs: number; providerId?: string | null }): Promise<SessionRecord>;
  get(sessionId: string): Promise<SessionRecord | null>;
  /** The user's sessions that are not ended and not expired at `nowMs`, oldest first. */
  listLive(userId: string, nowMs: number): Promise<SessionRecord[]>;
  /** Ends the user's live sessions matching the filter at `nowMs`; returns how many it ended. */
  end(filter: SessionEndFilter, nowMs: number): Promise<number>;
  /**
   * Ends every live session the providers opened (a provider disabled or deleted); returns the
   * distinct users whose sessions ended, so that every instance can be told.
   */
  endOpenedBy(providerIds: string[], nowMs: number): Promise<string[]>;
  /**
   * Deletes up to `limit` sessions that are ended, or expired at `nowMs`, with their refresh
   * tokens (the pruner; a session that can never be used again). Returns how many.
   */
  pruneExpired(nowMs: number, limit: number): Promise<number>;
}

/** A refresh token as stored: only its hash, never the token itself. */
export interface RefreshTokenRecord {
  id: string;
  userId: string;
  orgId: string;
  sessionId: string;
  tokenHash: string;
  createdAtMs: number;
  expiresAtMs: number;
}

/** What presenting a refresh token found. */
export type RefreshTokenConsumption =
  /** The token was active and is now spent: the caller may rotate. */
  | { outcome: 'consumed'; token: RefreshTokenRecord }
  /** The token exists, unexpired, but was spent before: someone replayed it (end its session). */
  | { outcome: 'reused'; token: RefreshTokenRecord };

/**
 * Refresh tokens are single use: consuming one revokes it in the same statement, so a stolen
 * token raced against its owner works at most once, and the second presentation is recognised as
 * a reuse (the rotation pattern of OAuth 2.1).
 */
export interface RefreshTokenRepository {
  create(input: { userId: string; orgId: string; sessionId: string; tokenHash: string; expiresAtMs: number }): Promise<RefreshTokenRecord>;
  /**
   * Spends the token when it is active and unexpired at `nowMs` (`consumed`); reports `reused` for
   * an unexpired token spent before; null for an unknown or expired one.
   */
  consume(tokenHash: string, nowMs: number): Promise<RefreshTokenConsumption | null>;
  /** Revokes every active token of the user (e.g. on password change). Returns how many. */
  revokeAllForUser(userId: string): Promise<number>;
  /**
   * Deletes at most `limit` tokens that expired (`expiresAtMs <= nowMs`; revoked or not: an expired
   * token can never be consumed), across every user; returns how many. Live tokens stay.
   */
  pruneExpired(nowMs: number, limit: number): Promise<number>;
}

/** An invitation to join an org, accepted by the account holder (docs/decisions.md "Invitations"). */
export interface Invitation {
  id: string;
  orgId: string;
  /** As typed by the inviter; matched case-insensitively. */
  email: string;
  role: 'org_admin' | 'org_member';
  /** Who created it; null for invitations from before creators were recorded. */
  createdBy: { userId: string; email: string | null } | null;
  /**
   * Whether accepting it proves control of the address: its link was mailed to the address and
   * handed to no one else (SMTP configured when it was created). Decided at creation, never at
   * acceptance: a token the inviter was given proves nothing, whatever the mail setting is later.
   */
  provesAddress: boolean;
  createdAtMs: number;
  expiresAtMs: number;
  acceptedAtMs: number | null;
}

/** Invitations, stored with the token's hash only. Org-scoped except lookups by token hash. */
export interface InvitationRepository {
  /** @throws NOT_FOUND for an unknown org. */
  create(
    scope: { orgId: string },
    input: { email: string; role: Invitation['role']; tokenHash: string; expiresAtMs: number; createdBy?: Invitation['createdBy']; provesAddress?: boolean },
  ): Promise<Invitation>;
  /** Unaccepted, unexpired invitations of the org, newest first. */
  listPending(scope: { orgId: string }, nowMs: number): Promise<Invitation[]>;
  /** Withdraws an unaccepted invitation. @throws NOT_FOUND when absent (or already accepted). */
  delete(scope: { orgId: string }, invitationId: string): Promise<void>;
  /** Withdraws every unaccepted invitation `userId` created in the org (an admin removed or demoted); returns them. */
  withdrawCreatedBy(scope: { orgId: string }, userId: string): Promise<Invitation[]>;
  /** The unaccepted, unexpired invitation with this token hash, without spending it. */
  findActive(tokenHash: string, nowMs: number): Promise<Invitation | null>;
  /** Marks it accepted when still active at `nowMs` (single use: of concurrent calls one wins). */
  accept(tokenHash: string, nowMs: number): Promise<Invitation | null>;
  /** Deletes up to `limit` invitations past their expiry at `nowMs`, accepted or not (the pruner). */
  pruneExpired(nowMs: number, limit: number): Promise<number>;
}

/**
 * Failed logins, counted per subject (an account, an (account, address) pair, an address or an IPv6 block) over a sliding window,
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
  /**
   * The times of the subject's newest failures at or after `sinceMs`, newest first, at most `limit`
   * (the per-account slow-down waits from the newest failure before the attempt asking).
   */
  newestFailures(subject: string, sinceMs: number, limit: number): Promise<number[]>;
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
