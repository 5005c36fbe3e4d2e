import {
  invalidArgument,
  permissionDenied,
  unauthenticated,
  type Membership,
  type PasswordHasher,
  type Repositories,
  type User,
} from '@switchyard/core';
import { LoginThrottle } from './login-throttle.ts';
import { generateRefreshToken, sha256Hex } from './secrets.ts';
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
}

export interface UserOrg {
  orgId: string;
  orgName: string;
  role: Membership['role'];
}

/** Refresh tokens live 30 days; each use replaces it with a new one. */
const REFRESH_TTL_MS = 30 * 24 * 3600_000;

/** The same message for an unknown email and a wrong password, so neither can be told apart. */
const BAD_LOGIN = 'invalid email or password';

/**
 * AuthService (svc.auth.v1): password login, refresh, org switching and org listing. Unknown email
 * and wrong password take the same path and the same time: both run one bcrypt comparison.
 */
export class AuthService {
  private readonly timingDummy: Promise<string>;

  constructor(
    private readonly repos: Pick<Repositories, 'users' | 'orgs' | 'refreshTokens' | 'loginThrottle'>,
    private readonly hasher: PasswordHasher,
    private readonly tokens: TokenService,
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

  /** Exchanges a refresh token (single use) for a new session in the same org. */
  async refresh(refreshToken: string): Promise<Session> {
    const record = await this.repos.refreshTokens.consume(sha256Hex(refreshToken), this.now());
    if (!record) throw unauthenticated('invalid or expired refresh token');
    const membership = await this.repos.users.getMembership(record.orgId, record.userId);
    if (!membership) throw unauthenticated('the user is no longer a member of this organisation');
    return this.openSession(record.userId, membership);
  }

  /** A new session for the same user in another org it belongs to. */
  async switchOrg(currentToken: string, targetOrgId: string): Promise<Session> {
    const claims = await this.tokens.verify(currentToken);
    const membership = await this.repos.users.getMembership(targetOrgId, claims.userId).catch(() => null);
    if (!membership) throw permissionDenied('not a member of that organisation');
    return this.openSession(claims.userId, membership);
  }

  /** The orgs the token's user belongs to, system orgs excluded. */
  async listUserOrgs(currentToken: string): Promise<UserOrg[]> {
    const claims = await this.tokens.verify(currentToken);
    const memberships = await this.repos.users.listMemberships(claims.userId);
    const result: UserOrg[] = [];
    for (const membership of memberships) {
      const org = await this.repos.orgs.get(membership.orgId);
      if (org && !org.isSystem) result.push({ orgId: org.id, orgName: org.name, role: membership.role });
    }
    return result;
  }

  private async pickMembership(user: User, orgId: string | undefined): Promise<Membership> {
    const memberships = await this.repos.users.listMemberships(user.id);
    const membership = orgId === undefined ? memberships[0] : memberships.find((m) => m.orgId === orgId);
    // Same answer as a bad password: a login must not reveal which orgs an account belongs to.
    if (!membership) throw unauthenticated(BAD_LOGIN);
    return membership;
  }

  private async openSession(userId: string, membership: Membership): Promise<Session> {
    const org = await this.repos.orgs.get(membership.orgId);
    if (!org) throw unauthenticated('organisation no longer exists');
    const { token, expiresAtMs } = await this.tokens.issue({ userId, orgId: org.id, role: membership.role, isSystem: org.isSystem });
    const refreshToken = generateRefreshToken();
    await this.repos.refreshTokens.create({
      userId,
      orgId: org.id,
      tokenHash: sha256Hex(refreshToken),
      expiresAtMs: this.now() + REFRESH_TTL_MS,
    });
    return {
      accessToken: token,
      expiresAtMs,
      expiresIn: this.tokens.ttlSeconds,
      refreshToken,
      userId,
      orgId: org.id,
    };
  }
}
