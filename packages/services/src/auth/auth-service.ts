import {
  invalidArgument,
  notFound,
  permissionDenied,
  unauthenticated,
  type ChangeNotifier,
  type Membership,
  type PasswordHasher,
  type Principal,
  type Repositories,
  type User,
} from '@switchyard/core';
import { requirePassword } from '../management/input-checks.ts';
import { LoginThrottle } from './login-throttle.ts';
import { generateRefreshToken } from './secrets.ts';
import { announceSessionChange } from './session-registry.ts';
import type { TokenService } from './token-service.ts';

/** A logged-in session: a short-lived access token and a single-use refresh token. */
export interface Session {
  accessToken: string;
  expiresAtMs: number;
  /** Seconds until the access token expires. */
  expiresIn: number;
  refreshToken: string;
  userId: string;
  orgId: string;
  sessionId: string;
}

export interface UserOrg {
  orgId: string;
  orgName: string;
  role: Membership['role'];
}

/** The signed-in account as the console's header and "My account" page show it (GET /v1/auth/me). */
export interface Me {
  userId: string;
  email: string;
  displayName: string;
  orgId: string;
  orgName: string;
  role: Membership['role'];
  /** The session is in the system org (a system administrator's). */
  isSystemOrg: boolean;
  /** The session was opened by an identity provider (it sees and ends only its org's sessions). */
  singleSignOn: boolean;
}

/** One live login session of the caller's account (GET /v1/auth/sessions). */
export interface SessionSummary {
  sessionId: string;
  orgId: string;
  /** Null when the org is gone (its sessions go with it; a race at most). */
  orgName: string | null;
  createdAtMs: number;
  expiresAtMs: number;
  /** Opened by an identity provider rather than a password or an invitation. */
  singleSignOn: boolean;
  /** The session of the token that asked. */
  current: boolean;
}

/** GET /v1/auth/sessions answers at most this many sessions (the newest; "sign out everywhere else" ends them all). */
export const MAX_LISTED_SESSIONS = 100;

/** A session's refresh tokens work for 30 days from sign-in; rotation does not extend it. */
const SESSION_TTL_MS = 30 * 24 * 3600_000;

/** The same message for an unknown email and a wrong password, so neither can be told apart. */
const BAD_LOGIN = 'invalid email or password';

type AuthRepositories = Pick<Repositories, 'users' | 'orgs' | 'sessions' | 'refreshTokens' | 'loginThrottle'>;

/**
 * AuthService (svc.auth.v1): password login, refresh, logout, password change, org switching and
 * org listing, over login sessions (docs/decisions.md "Sessions"). Unknown email and wrong
 * password take the same path and the same time: both run one bcrypt comparison. Every change that
 * ends sessions is announced so that every instance's SessionRegistry stops accepting them.
 */
export class AuthService {
  private readonly timingDummy: Promise<string>;

  constructor(
    private readonly repos: AuthRepositories,
    private readonly hasher: PasswordHasher,
    private readonly tokens: TokenService,
    private readonly notifier: ChangeNotifier,
    private readonly throttle: LoginThrottle = new LoginThrottle(repos.loginThrottle),
    private readonly now: () => number = Date.now,
  ) {
    // A real hash of a random password at the same cost: comparing against it costs what a real check costs.
    this.timingDummy = hasher.hash(generateRefreshToken());
  }

  async login(input: { email: string; password: string; orgId?: string | undefined; clientAddress?: string | undefined }): Promise<Session> {
    const email = input.email.trim();
    if (email === '' || input.password === '') throw invalidArgument('email and password are required');
    const attempt = await this.throttle.begin(email, input.clientAddress);

    const user = await this.repos.users.getByEmail(email);
    const matches = await this.hasher.verify(input.password, user?.passwordHash ?? (await this.timingDummy));
    if (!user || !matches) throw unauthenticated(BAD_LOGIN);
    const membership = await this.pickMembership(user, input.orgId);
    await attempt.succeeded();
    return this.openSession(user.id, membership);
  }

  /**
   * Exchanges a refresh token (single use) for new tokens in the same session. A token presented
   * a second time means two parties hold it: the whole session ends.
   */
  async refresh(refreshToken: string): Promise<Session> {
    const nowMs = this.now();
    const presented = await this.repos.refreshTokens.consume(this.tokens.refreshTokenHash(refreshToken), nowMs);
    if (!presented) throw unauthenticated('invalid or expired refresh token');
    const { token } = presented;
    if (presented.outcome === 'reused') {
      await this.endSessions({ userId: token.userId, sessionId: token.sessionId });
      throw unauthenticated('refresh token already used; the session has ended');
    }
    const session = await this.repos.sessions.get(token.sessionId);
    if (!session || session.endedAtMs !== null || session.expiresAtMs <= nowMs) throw unauthenticated('the session has ended');
    const membership = await this.repos.users.getMembership(token.orgId, token.userId);
    if (!membership) throw unauthenticated('the user is no longer a member of this organisation');
    return this.issueTokens(session.id, session.expiresAtMs, membership);
  }

  /** Ends the caller's session: its access and refresh tokens stop working on every instance. */
  async logout(principal: Principal): Promise<void> {
    const { userId, sessionId } = this.sessionOf(principal);
    await this.endSessions({ userId, sessionId });
  }

  /**
   * Changes the caller's password after checking the current one (throttled like a login), and
   * ends every other session of the user; the caller's own session goes on.
   */
  async changePassword(
    principal: Principal,
    input: { currentPassword: string; newPassword: string; clientAddress?: string | undefined },
  ): Promise<void> {
    const { userId, sessionId } = this.sessionOf(principal);
    const newPassword = requirePassword(input.newPassword);
    const user = await this.repos.users.getById(userId);
    if (!user) throw unauthenticated('the user no longer exists');
    const attempt = await this.throttle.begin(user.email, input.clientAddress);
    if (!(await this.hasher.verify(input.currentPassword, user.passwordHash))) {
      throw permissionDenied('the current password is wrong');
    }
    await attempt.succeeded();
    await this.repos.users.setPasswordHash(userId, await this.hasher.hash(newPassword));
    await this.endSessions({ userId, exceptSessionId: sessionId });
  }

  /**
   * A new session for the same user in another org it belongs to. Not from a session an identity
   * provider opened: the provider's org controls what it vouches for, so that session stays in
   * its org (docs/sso.md "Accounts"); signing in with a password or another org's provider works.
   */
  async switchOrg(principal: Principal, targetOrgId: string): Promise<Session> {
    const { userId, sessionId } = this.sessionOf(principal);
    if ((await this.repos.sessions.get(sessionId))?.providerId) {
      throw permissionDenied('a session opened by single sign-on stays in its organisation; sign in again to use another');
    }
    const membership = await this.repos.users.getMembership(targetOrgId, userId).catch(() => null);
    if (!membership) throw permissionDenied('not a member of that organisation');
    return this.openSession(userId, membership);
  }

  /** The orgs the caller belongs to, system orgs excluded (a single sign-on session: its own org only). */
  async listUserOrgs(principal: Principal): Promise<UserOrg[]> {
    const { userId, sessionId } = this.sessionOf(principal);
    const confinedTo = (await this.repos.sessions.get(sessionId))?.providerId ? principal.orgId : null;
    const memberships = (await this.repos.users.listMemberships(userId)).filter((m) => confinedTo === null || m.orgId === confinedTo);
    const result: UserOrg[] = [];
    for (const membership of memberships) {
      const org = await this.repos.orgs.get(membership.orgId);
      if (org && !org.isSystem) result.push({ orgId: org.id, orgName: org.name, role: membership.role });
    }
    return result;
  }

  /** Who the caller is: account, org and role (the role read now, not the token's). */
  async me(principal: Principal): Promise<Me> {
    const { userId, sessionId } = this.sessionOf(principal);
    const [user, org, membership, session] = await Promise.all([
      this.repos.users.getById(userId),
      this.repos.orgs.get(principal.orgId),
      this.repos.users.getMembership(principal.orgId, userId),
      this.repos.sessions.get(sessionId),
    ]);
    if (!user || !org || !membership) throw unauthenticated('the user is no longer a member of this organisation');
    return {
      userId,
      email: user.email,
      displayName: user.displayName,
      orgId: org.id,
      orgName: org.name,
      role: membership.role,
      isSystemOrg: org.isSystem,
      singleSignOn: session?.providerId != null,
    };
  }

  /**
   * The caller's account's live sessions, oldest first (a refresh-token chain is one session; a
   * switch of org opens another). A session an identity provider opened sees only its own org's
   * sessions, as it sees only its own org (listUserOrgs): the provider vouches for nothing else.
   */
  async listSessions(principal: Principal): Promise<SessionSummary[]> {
    const { userId, sessionId } = this.sessionOf(principal);
    const confinedTo = await this.confinedOrg(principal, userId, sessionId);
    const live = (await this.repos.sessions.listLive(userId, this.now())).filter((s) => confinedTo === null || s.orgId === confinedTo);
    // Sign-ins are not capped, so the answer is: the newest ones, the caller's always among them.
    const newest = live.slice(-MAX_LISTED_SESSIONS);
    const sessions = newest.some((s) => s.id === sessionId) ? newest : [...live.filter((s) => s.id === sessionId), ...newest.slice(1)];
    const orgNames = new Map<string, string | null>();
    for (const orgId of new Set(sessions.map((s) => s.orgId))) orgNames.set(orgId, (await this.repos.orgs.get(orgId))?.name ?? null);
    return sessions.map((s) => ({
      sessionId: s.id,
      orgId: s.orgId,
      orgName: orgNames.get(s.orgId) ?? null,
      createdAtMs: s.createdAtMs,
      expiresAtMs: s.expiresAtMs,
      singleSignOn: s.providerId !== null,
      current: s.id === sessionId,
    }));
  }

  /**
   * Ends one live session of the caller's account (the caller's own too: that is a logout).
   * @throws NOT_FOUND for any id that is not a live session of the account (another user's
   * included, so ids of others cannot be told from unknown ones), or, from a single sign-on
   * session, one in another org.
   */
  async endSession(principal: Principal, targetSessionId: string): Promise<void> {
    const { userId, sessionId } = this.sessionOf(principal);
    const confinedTo = await this.confinedOrg(principal, userId, sessionId);
    const ended = await this.repos.sessions.end({ userId, sessionId: targetSessionId, ...(confinedTo === null ? {} : { orgId: confinedTo }) }, this.now());
    if (ended === 0) throw notFound('session', targetSessionId);
    await announceSessionChange(this.notifier, userId);
  }

  /** Ends every live session of the caller's account but the caller's ("log out everywhere else"); returns how many. */
  async endOtherSessions(principal: Principal): Promise<{ ended: number }> {
    const { userId, sessionId } = this.sessionOf(principal);
    const confinedTo = await this.confinedOrg(principal, userId, sessionId);
    const ended = await this.repos.sessions.end({ userId, exceptSessionId: sessionId, ...(confinedTo === null ? {} : { orgId: confinedTo }) }, this.now());
    await announceSessionChange(this.notifier, userId);
    return { ended };
  }

  /**
   * A new session for an account that just signed in another way: an accepted invitation, or an
   * identity provider (`providerId`: the session then stays in `orgId`).
   */
  async openSessionFor(userId: string, orgId: string, providerId: string | null = null): Promise<Session> {
    const membership = await this.repos.users.getMembership(orgId, userId);
    if (!membership) throw unauthenticated('not a member of this organisation');
    return this.openSession(userId, membership, providerId);
  }

  private sessionOf(principal: Principal): { userId: string; sessionId: string } {
    // An API token is no person and has no session: these routes are not for it (403, not a 401 a client would retry with a login).
    if (principal.kind === 'api_token') throw permissionDenied('an API token has no session: session routes are for people signed in');
    if (principal.kind !== 'user' || principal.sessionId === undefined) throw unauthenticated('a user session is required');
    return { userId: principal.userId, sessionId: principal.sessionId };
  }

  /**
   * The org a single sign-on session is confined to, or null for a session that is not. A session
   * that is not the caller's live one (gone, ended, expired: a token outliving it) is refused
   * rather than read as unconfined, so it never reaches the account's sessions in other orgs.
   */
  private async confinedOrg(principal: Principal, userId: string, sessionId: string): Promise<string | null> {
    const session = await this.repos.sessions.get(sessionId);
    if (!session || session.userId !== userId || session.endedAtMs !== null || session.expiresAtMs <= this.now()) {
      throw unauthenticated('the session has ended: sign in again');
    }
    return session.providerId ? principal.orgId : null;
  }

  private async endSessions(filter: { userId: string; sessionId?: string; exceptSessionId?: string }): Promise<void> {
    await this.repos.sessions.end(filter, this.now());
    await announceSessionChange(this.notifier, filter.userId);
  }

  private async pickMembership(user: User, orgId: string | undefined): Promise<Membership> {
    const memberships = await this.repos.users.listMemberships(user.id);
    const membership = orgId === undefined ? memberships[0] : memberships.find((m) => m.orgId === orgId);
    // Same answer as a bad password: a login must not reveal which orgs an account belongs to.
    if (!membership) throw unauthenticated(BAD_LOGIN);
    return membership;
  }

  private async openSession(userId: string, membership: Membership, providerId: string | null = null): Promise<Session> {
    // No announcement needed: an instance that holds the user's sessions from before this one
    // re-reads them when a token newer than what it holds names an unknown session.
    const session = await this.repos.sessions.create({ userId, orgId: membership.orgId, expiresAtMs: this.now() + SESSION_TTL_MS, providerId });
    return this.issueTokens(session.id, session.expiresAtMs, membership);
  }

  private async issueTokens(sessionId: string, sessionExpiresAtMs: number, membership: Membership): Promise<Session> {
    const org = await this.repos.orgs.get(membership.orgId);
    if (!org) throw unauthenticated('organisation no longer exists');
    const { token, expiresAtMs } = await this.tokens.issue({
      userId: membership.userId,
      orgId: org.id,
      role: membership.role,
      isSystem: org.isSystem,
      sessionId,
    });
    const refreshToken = generateRefreshToken();
    await this.repos.refreshTokens.create({
      userId: membership.userId,
      orgId: org.id,
      sessionId,
      tokenHash: this.tokens.refreshTokenHash(refreshToken),
      expiresAtMs: sessionExpiresAtMs,
    });
    return {
      accessToken: token,
      expiresAtMs,
      expiresIn: this.tokens.ttlSeconds,
      refreshToken,
      userId: membership.userId,
      orgId: org.id,
      sessionId,
    };
  }
}
