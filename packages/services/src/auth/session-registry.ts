import { EventEmitter } from 'node:events';
import { unauthenticated, type ChangeNotifier, type OrgRole, type Repositories, type RoleBinding, type UserPrincipal } from '@switchyard/core';

/** The channel on which every instance hears that a user's sessions or roles changed (payload: user id). */
export const SESSION_CHANGED_CHANNEL = 'switchyard_session_changed';

/** Tells every instance (this one first, through LocalEchoNotifier) to re-read the user's sessions. */
export const announceSessionChange = (notifier: ChangeNotifier, userId: string): Promise<void> =>
  notifier.publish(SESSION_CHANGED_CHANNEL, userId);

/**
 * Announces each user's change (sessions a provider opened, ended together). One notification per
 * user: a provider's users are its org's members, so the count is bounded by the org's size.
 */
export async function announceSessionChanges(notifier: ChangeNotifier, userIds: Iterable<string>): Promise<void> {
  for (const userId of new Set(userIds)) await announceSessionChange(notifier, userId);
}

/**
 * A token issued less than this before a user's state was read may name a session the state does
 * not know yet. Covers `iat`'s whole-second resolution and clock skew between instances.
 */
const NEWER_THAN_STATE_MARGIN_MS = 5_000;

/**
 * A user's rights in one org now: its org role, and its role bindings (docs/access.md "Roles and
 * bindings"); null: none stored, the org role's default.
 */
export interface OrgAccess {
  role: OrgRole;
  bindings: RoleBinding[] | null;
}

/** What one user's bearer tokens are checked against: live sessions (id → org) and rights (org → role and bindings). */
interface UserSessionState {
  liveSessions: Map<string, string>;
  access: Map<string, OrgAccess>;
  loadedAtMs: number;
}

/**
 * A bearer token's person with its rights now: `bindings` only for an org_member whose membership
 * stores some, so without them the principal is exactly the org role's (effectiveBindings),
 * refusal messages included. An org_admin is admin everywhere (a promotion drops bindings).
 */
export function userPrincipalOf(claims: { userId: string; orgId: string; isSystem: boolean; sessionId: string }, access: OrgAccess): UserPrincipal {
  const principal: UserPrincipal = { kind: 'user', userId: claims.userId, orgId: claims.orgId, role: access.role, isSystem: claims.isSystem, sessionId: claims.sessionId };
  if (access.bindings !== null && access.role === 'org_member') principal.bindings = access.bindings.map((binding) => ({ ...binding }));
  return principal;
}

/** What a bearer token says about its session. */
export interface SessionClaims {
  userId: string;
  orgId: string;
  sessionId: string;
  issuedAtMs: number;
}

export interface SessionRegistryOptions {
  /** A user's state is re-read after this long even without a notification (a safety net). */
  ttlMs?: number;
  /** Users whose state is kept in memory; the least recently used is dropped beyond it. */
  maxUsers?: number;
  now?: () => number;
}

/**
 * Answers, from memory, whether a bearer token's session is still live and what role its user has
 * now (docs/decisions.md "Sessions"). A user's state is read from PostgreSQL on first use and kept;
 * every logout, password change, role change or removal is announced on SESSION_CHANGED_CHANNEL
 * and drops the user's state on every instance, so the next request re-reads it. A request costs
 * no database round trip while the state is cached, and an ended session stops working everywhere
 * as soon as the notification arrives.
 */
export class SessionRegistry {
  private readonly users = new Map<string, UserSessionState>();
  private readonly events = new EventEmitter();
  private readonly ttlMs: number;
  private readonly maxUsers: number;
  private readonly now: () => number;
  private subscription: { unsubscribe(): Promise<void> } | null = null;
  /**
   * Bumped by every invalidation. A state read before a bump may predate the change that caused
   * it, so it answers the request that read it but is not kept.
   */
  private generation = 0;

  constructor(
    private readonly repos: Pick<Repositories, 'sessions' | 'users'>,
    private readonly notifier: ChangeNotifier,
    options: SessionRegistryOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? 60_000;
    this.maxUsers = options.maxUsers ?? 50_000;
    this.now = options.now ?? Date.now;
    this.events.setMaxListeners(0);
  }

  async start(): Promise<void> {
    this.subscription = await this.notifier.subscribe(
      SESSION_CHANGED_CHANNEL,
      (userId) => this.forget(userId),
      // Notifications may have been missed while disconnected: forget everything.
      () => this.forgetAll(),
    );
  }

  async stop(): Promise<void> {
    await this.subscription?.unsubscribe();
    this.subscription = null;
  }

  /** The role the token's user has now in the token's org (currentAccess without the bindings). */
  async currentRole(claims: SessionClaims): Promise<OrgRole> {
    return (await this.currentAccess(claims)).role;
  }

  /**
   * The role and bindings the token's user has now in the token's org, in one read of memory (a
   * bindings change is announced like a role change, so both move together).
   * @throws UNAUTHENTICATED when the session has ended or expired, or the user left the org.
   */
  async currentAccess(claims: SessionClaims): Promise<OrgAccess> {
    let state = this.cached(claims.userId) ?? (await this.load(claims.userId));
    if (!state.liveSessions.has(claims.sessionId) && claims.issuedAtMs + NEWER_THAN_STATE_MARGIN_MS > state.loadedAtMs) {
      // The token may belong to a session opened (here or on another instance) after the state
      // was read: read it again. An ended session's tokens are older and answered from memory.
      state = await this.load(claims.userId);
    }
    if (state.liveSessions.get(claims.sessionId) !== claims.orgId) throw unauthenticated('the session has ended');
    const access = state.access.get(claims.orgId);
    if (!access) throw unauthenticated('the user is no longer a member of this organisation');
    return access;
  }

  /** Drops the user's state here (the channel's handler; also callable directly). */
  forget(userId: string): void {
    this.generation++;
    this.users.delete(userId);
    this.events.emit('changed', userId);
  }

  forgetAll(): void {
    this.generation++;
    this.users.clear();
    this.events.emit('changed', null);
  }

  /**
   * Calls `listener` with the id of every user whose sessions or roles may have changed, or null
   * when every user's may have (a lost notification connection). Long-lived streams opened with a
   * bearer token re-check their session on it. Returns the unsubscribe function.
   */
  onChanged(listener: (userId: string | null) => void): () => void {
    this.events.on('changed', listener);
    return () => this.events.off('changed', listener);
  }

  /** How many users' states are held (for tests and metrics). */
  get size(): number {
    return this.users.size;
  }

  private cached(userId: string): UserSessionState | undefined {
    const state = this.users.get(userId);
    if (!state) return undefined;
    if (this.now() - state.loadedAtMs >= this.ttlMs) {
      this.users.delete(userId);
      return undefined;
    }
    // Most recently used last, so the oldest entry is the one dropped when full.
    this.users.delete(userId);
    this.users.set(userId, state);
    return state;
  }

  private async load(userId: string): Promise<UserSessionState> {
    const generation = this.generation;
    const loadedAtMs = this.now();
    const [sessions, memberships] = await Promise.all([
      this.repos.sessions.listLive(userId, loadedAtMs),
      this.repos.users.listMemberships(userId),
    ]);
    const state: UserSessionState = {
      liveSessions: new Map(sessions.map((s) => [s.id, s.orgId])),
      access: new Map(memberships.map((m) => [m.orgId, { role: m.role, bindings: m.bindings }])),
      loadedAtMs,
    };
    if (generation === this.generation) {
      this.users.set(userId, state);
      if (this.users.size > this.maxUsers) {
        const oldest = this.users.keys().next().value;
        if (oldest !== undefined) this.users.delete(oldest);
      }
    }
    return state;
  }
}
