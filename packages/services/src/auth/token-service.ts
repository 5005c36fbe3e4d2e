import { createHmac, randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import { unauthenticated, type OrgRole } from '@switchyard/core';

/** What an access token says about its bearer. */
export interface AccessClaims {
  userId: string;
  orgId: string;
  role: OrgRole;
  isSystem: boolean;
  /** The login session the token belongs to (docs/decisions.md "Sessions"). */
  sessionId: string;
}

/** What a verified token says: its claims and when it was issued (whole seconds, in ms). */
export interface VerifiedClaims extends AccessClaims {
  issuedAtMs: number;
}

export interface TokenServiceOptions {
  /** HS256 key, at least 32 bytes. */
  secret: string;
  ttlSeconds: number;
  issuer?: string;
  audience?: string;
  now?: () => number;
  /** How many verified tokens to keep (MAX_VERIFIED_TOKENS unless given; 0: none, every check runs jose). */
  maxVerifiedTokens?: number;
}

/** Only HS256 is accepted: `alg: none` and algorithm-confusion tokens fail verification. */
const ALGORITHMS = ['HS256'];

/**
 * Access tokens verified lately, kept by their exact text (the oldest goes first past this many):
 * at ~0.5 KB each, at most ~5 MB. Only tokens that passed verification enter, so an anonymous
 * client cannot fill it; a bearer can add one per login or refresh.
 */
export const MAX_VERIFIED_TOKENS = 10_000;

/**
 * Signs and verifies access tokens (JWT, HS256 via jose) with iss, aud, exp and jti, and checks
 * the claims' shapes on the way in: a token is trusted only if this service could have issued it.
 */
export class TokenService {
  private readonly key: Uint8Array<ArrayBuffer>;
  /**
   * The secret as a WebCrypto key for jose, imported once: given raw bytes, jose imports them on
   * every sign and verify, about half of a verification's CPU (bench/README.md "auth").
   */
  private joseKey: Promise<CryptoKey> | undefined;
  private readonly issuer: string;
  private readonly audience: string;
  private readonly now: () => number;
  /**
   * Claims of tokens verified before, with their expiry (seconds), by token text. Whether a text's
   * signature, algorithm, issuer, audience and claims pass depends only on the text and this
   * service's secret and options, so a token seen again needs only its expiry checked: a client
   * sends its access token with every request, and jose 6's WebCrypto HMAC costs ~130-160 µs of
   * CPU per verification (bench/README.md "auth"). A new secret means a new TokenService.
   */
  private readonly verified = new Map<string, { claims: VerifiedClaims; expiresAtSeconds: number }>();

  constructor(private readonly options: TokenServiceOptions) {
    this.key = new TextEncoder().encode(options.secret);
    this.issuer = options.issuer ?? 'switchyard';
    this.audience = options.audience ?? 'switchyard-api';
    this.now = options.now ?? Date.now;
  }

  private signingKey(): Promise<CryptoKey> {
    this.joseKey ??= crypto.subtle.importKey('raw', this.key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
    return this.joseKey;
  }

  get ttlSeconds(): number {
    return this.options.ttlSeconds;
  }

  async issue(claims: AccessClaims): Promise<{ token: string; expiresAtMs: number }> {
    const issuedAt = Math.floor(this.now() / 1000);
    const expiresAt = issuedAt + this.options.ttlSeconds;
    const token = await new SignJWT({ org: claims.orgId, role: claims.role, sys: claims.isSystem, sid: claims.sessionId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.userId)
      .setIssuer(this.issuer)
      .setAudience(this.audience)
      .setIssuedAt(issuedAt)
      .setExpirationTime(expiresAt)
      .setJti(randomUUID())
      .sign(await this.signingKey());
    return { token, expiresAtMs: expiresAt * 1000 };
  }

  /**
   * How a refresh token is stored: an HMAC under the signing secret, so that changing JWT_SECRET
   * ends refresh tokens as well as access tokens (a leaked secret is rotated away completely).
   */
  refreshTokenHash(refreshToken: string): string {
    return createHmac('sha256', this.key).update(`refresh-token:${refreshToken}`).digest('hex');
  }

  /** @throws UNAUTHENTICATED for anything but a valid, unexpired token of ours. */
  async verify(token: string): Promise<VerifiedClaims> {
    const known = this.verified.get(token);
    if (known !== undefined) {
      // jose's own rule: expired once the current second reaches exp.
      if (Math.floor(this.now() / 1000) < known.expiresAtSeconds) return { ...known.claims };
      this.verified.delete(token);
      throw unauthenticated('token expired');
    }
    const claims = await this.verifyText(token);
    const max = this.options.maxVerifiedTokens ?? MAX_VERIFIED_TOKENS;
    if (max > 0) {
      if (this.verified.size >= max) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(token, claims);
    }
    return { ...claims.claims };
  }

  /** Tokens kept as verified (for tests: the bound holds). */
  get verifiedTokenCount(): number {
    return this.verified.size;
  }

  private async verifyText(token: string): Promise<{ claims: VerifiedClaims; expiresAtSeconds: number }> {
    try {
      const { payload } = await jwtVerify(token, await this.signingKey(), {
        algorithms: ALGORITHMS,
        issuer: this.issuer,
        audience: this.audience,
        currentDate: new Date(this.now()),
        requiredClaims: ['sub', 'exp', 'iat'],
      });
      const { sub, org, role, sys, sid, iat, exp } = payload as { sub?: unknown; org?: unknown; role?: unknown; sys?: unknown; sid?: unknown; iat?: unknown; exp?: unknown };
      if (
        typeof sub !== 'string' || typeof org !== 'string' || (role !== 'org_admin' && role !== 'org_member') ||
        typeof sys !== 'boolean' || typeof sid !== 'string' || typeof iat !== 'number' || typeof exp !== 'number'
      ) {
        throw unauthenticated('invalid token claims');
      }
      return { claims: { userId: sub, orgId: org, role, isSystem: sys, sessionId: sid, issuedAtMs: iat * 1000 }, expiresAtSeconds: exp };
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw unauthenticated('token expired');
      throw unauthenticated('invalid token');
    }
  }
}
