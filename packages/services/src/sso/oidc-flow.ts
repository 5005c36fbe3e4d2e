import { DomainError, failedPrecondition, invalidArgument, isDomainError, unauthenticated } from '@switchyard/core';
import {
  AuthorizationResponseError,
  ClientError,
  ClientSecretBasic,
  ClientSecretPost,
  type Configuration,
  ResponseBodyError,
  WWWAuthenticateChallengeError,
  allowInsecureRequests,
  authorizationCodeGrant,
  buildAuthorizationUrl,
  calculatePKCECodeChallenge,
  clockTolerance,
  customFetch,
  discovery,
  fetchUserInfo,
  randomNonce,
  randomPKCECodeVerifier,
  randomState,
  type ClientAuth,
  type IDToken,
} from 'openid-client';

/** One OIDC identity provider as an organisation configured it. */
export interface OidcProviderSettings {
  providerId: string;
  issuerUrl: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** The claim to read the person's groups from (ID token, else UserInfo); null: groups are not read. */
  groupsClaim?: string | null;
  /** Changes whenever the provider record changes: invalidates caches. */
  revision: string;
}

/** Where to send the browser, and what to keep (server-side or sealed) until the callback. */
export interface OidcAuthorization {
  url: string;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** Who the identity provider says signed in. `emailVerified` is true only if the provider said so literally. */
export interface OidcIdentity {
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
  /** The groups claim as the provider sent it, when settings.groupsClaim asked for it; read by groupsOf. */
  groups?: unknown;
}

export interface OidcFlowsOptions {
  /** Every request to identity providers goes through this (use createGuardedFetch: SSRF guard, timeout, size cap). */
  fetch: typeof fetch;
  /** Allows http:// issuers and endpoints: development and tests only (SSO_ALLOW_PRIVATE_NETWORKS). */
  allowInsecureHttp: boolean;
  /** Clock difference tolerated on the ID token's exp/iat/nbf. Default 30 s. */
  clockToleranceSeconds?: number;
  /** How long a discovery document is reused. Default 10 minutes. */
  discoveryTtlMs?: number;
  /** Clock for the discovery cache. */
  now?: () => number;
}

interface CachedDiscovery {
  configuration: Promise<Configuration>;
  expiresAtMs: number;
}

/** Bounded so that many providers (or many revisions of one) cannot grow memory without limit. */
const MAX_CACHED_DISCOVERIES = 1_000;
const DEFAULT_DISCOVERY_TTL_MS = 10 * 60_000;
const DEFAULT_CLOCK_TOLERANCE_SECONDS = 30;
/** Provider-supplied text (error codes) echoed in messages is cut to this, and to printable ASCII. */
const MAX_ECHOED_CHARS = 200;

const printable = (text: string): string => text.replace(/[^\x20-\x7e]/g, '?').slice(0, MAX_ECHOED_CHARS);

/**
 * The OpenID Connect relying party: authorization-code flow with PKCE (S256), state and nonce,
 * on openid-client. No storage and no HTTP handling: callers keep the `OidcAuthorization` between
 * `authorize` and `complete` and map the resulting identity to an account.
 *
 * Errors are DomainErrors with client-safe messages: UNAUTHENTICATED when the sign-in itself is
 * refused (state, provider error, code, ID token), UNAVAILABLE when the provider cannot be reached
 * or fails (network, timeout, 5xx), FAILED_PRECONDITION when the provider's configuration is
 * unusable (bad discovery document, unsupported client authentication).
 */
export class OidcFlows {
  private readonly discoveries = new Map<string, CachedDiscovery>();
  private readonly fetch: typeof fetch;
  private readonly allowInsecureHttp: boolean;
  private readonly clockToleranceSeconds: number;
  private readonly discoveryTtlMs: number;
  private readonly now: () => number;

  constructor(options: OidcFlowsOptions) {
    this.fetch = options.fetch;
    this.allowInsecureHttp = options.allowInsecureHttp;
    this.clockToleranceSeconds = options.clockToleranceSeconds ?? DEFAULT_CLOCK_TOLERANCE_SECONDS;
    this.discoveryTtlMs = options.discoveryTtlMs ?? DEFAULT_DISCOVERY_TTL_MS;
    this.now = options.now ?? Date.now;
  }

  /**
   * Discovery (cached per providerId+revision), then an authorization-code URL with fresh state,
   * nonce and PKCE S256. The scope always includes `openid`.
   */
  async authorize(settings: OidcProviderSettings, redirectUri: string): Promise<OidcAuthorization> {
    const redirect = plainRedirectUri(redirectUri);
    const configuration = await this.configuration(settings);
    const state = randomState();
    const nonce = randomNonce();
    const codeVerifier = randomPKCECodeVerifier();
    const scope = [...new Set(['openid', ...settings.scopes.map((s) => s.trim()).filter((s) => s.length > 0)])].join(' ');
    const url = buildAuthorizationUrl(configuration, {
      redirect_uri: redirect,
      response_type: 'code',
      scope,
      state,
      nonce,
      code_challenge: await calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
    });
    return { url: url.href, state, nonce, codeVerifier };
  }

  /**
   * Validates the callback (state first, then the provider's own error), exchanges the code with
   * the PKCE verifier and validates the ID token (signature from the provider's JWKS, iss, aud,
   * exp, iat, nonce). Claims missing from the ID token (some providers put email only in
   * UserInfo) are completed from the UserInfo endpoint, whose `sub` must match.
   */
  async complete(
    settings: OidcProviderSettings,
    callback: { query: URLSearchParams; redirectUri: string; expected: { state: string; nonce: string; codeVerifier: string } },
  ): Promise<OidcIdentity> {
    const { query, expected } = callback;
    // Checked here, before anything else, so that a forged callback never reaches the provider.
    if (query.get('state') !== expected.state) throw unauthenticated('state does not match');
    const providerError = query.get('error');
    if (providerError !== null) throw unauthenticated(`the identity provider refused the sign-in: ${printable(providerError)}`);
    if (!query.get('code')) throw unauthenticated('the identity provider sent no authorization code');

    const redirect = new URL(plainRedirectUri(callback.redirectUri));
    redirect.search = query.toString();
    const configuration = await this.configuration(settings);
    let claims: IDToken;
    let accessToken: string;
    try {
      const tokens = await authorizationCodeGrant(configuration, redirect, {
        expectedState: expected.state,
        expectedNonce: expected.nonce,
        pkceCodeVerifier: expected.codeVerifier,
        idTokenExpected: true,
      });
      const idToken = tokens.claims();
      if (!idToken) throw unauthenticated("the identity provider's ID token was refused: it is missing");
      claims = idToken;
      accessToken = tokens.access_token;
    } catch (error) {
      throw toDomainError(error, 'token');
    }

    let profile: Readonly<Record<string, unknown>> = claims;
    // Groups are often left out of ID tokens (their size) and answered by UserInfo only.
    const groupsClaim = settings.groupsClaim ?? null;
    const groupsMissing = groupsClaim !== null && claims[groupsClaim] === undefined;
    let userInfo: Readonly<Record<string, unknown>> | null = null;
    if ((typeof claims.email !== 'string' || groupsMissing) && configuration.serverMetadata().userinfo_endpoint && accessToken) {
      try {
        userInfo = await fetchUserInfo(configuration, accessToken, claims.sub);
      } catch (error) {
        throw toDomainError(error, 'userinfo');
      }
      if (typeof claims.email !== 'string') profile = userInfo;
    }
    return {
      issuer: claims.iss,
      subject: claims.sub,
      email: typeof profile.email === 'string' && profile.email.length > 0 ? profile.email : null,
      emailVerified: profile.email_verified === true,
      name: typeof profile.name === 'string' && profile.name.length > 0 ? profile.name : null,
      ...(groupsClaim === null ? {} : { groups: claims[groupsClaim] ?? userInfo?.[groupsClaim] }),
    };
  }

  /** Runs discovery now (when an admin saves a provider, to give an early clear error). Not cached. */
  async discover(settings: OidcProviderSettings): Promise<void> {
    this.discoveries.delete(cacheKey(settings));
    await this.configuration(settings);
  }

  /**
   * When an admin saves a provider: refuses (400 naming `oidc.issuer_url`) an issuer whose
   * discovery document sends browsers to an authorization endpoint on another origin. Any other
   * discovery failure (the provider is down, a network rule) is left for sign-in to report, so a
   * provider can be saved before its identity provider is reachable.
   */
  async checkAuthorizationEndpointOnSave(settings: Omit<OidcProviderSettings, 'clientSecret' | 'revision'>): Promise<void> {
    // Discovery sends no client credentials; the secret is only needed (non-empty) to build the client.
    const probe = { ...settings, clientSecret: 'unused-by-discovery', revision: `save:${randomState()}` };
    try {
      await this.discover(probe);
    } catch (error) {
      // Not a domain error: a fault of ours, not the provider's.
      if (!isDomainError(error)) throw error;
      if (error.field === FOREIGN_AUTHORIZATION_ENDPOINT) throw invalidArgument(`oidc.issuer_url: ${error.message}`, 'oidc.issuer_url');
    } finally {
      this.discoveries.delete(cacheKey(probe));
    }
  }

  /** The openid-client Configuration for a provider, from the cache when fresh. */
  private configuration(settings: OidcProviderSettings): Promise<Configuration> {
    const key = cacheKey(settings);
    const nowMs = this.now();
    const cached = this.discoveries.get(key);
    if (cached && cached.expiresAtMs > nowMs) return cached.configuration;
    this.discoveries.delete(key);
    while (this.discoveries.size >= MAX_CACHED_DISCOVERIES) {
      const oldest = this.discoveries.keys().next().value;
      if (oldest === undefined) break;
      this.discoveries.delete(oldest);
    }
    const entry: CachedDiscovery = { configuration: this.runDiscovery(settings), expiresAtMs: nowMs + this.discoveryTtlMs };
    this.discoveries.set(key, entry);
    // A failed discovery is not cached: the next attempt tries again.
    entry.configuration.catch(() => {
      if (this.discoveries.get(key) === entry) this.discoveries.delete(key);
    });
    return entry.configuration;
  }

  private async runDiscovery(settings: OidcProviderSettings): Promise<Configuration> {
    let issuer: URL;
    try {
      issuer = new URL(settings.issuerUrl);
    } catch {
      throw failedPrecondition("the identity provider's issuer URL is not a valid URL");
    }
    let configuration: Configuration;
    try {
      configuration = await discovery(
        issuer,
        settings.clientId,
        { client_secret: settings.clientSecret, [clockTolerance]: this.clockToleranceSeconds },
        clientSecretAsDiscovered(settings.clientSecret),
        {
          [customFetch]: (url, options) => this.fetch(url, options as RequestInit),
          execute: this.allowInsecureHttp ? [allowInsecureRequests] : [],
        },
      );
    } catch (error) {
      throw toDomainError(error, 'discovery');
    }
    const metadata = configuration.serverMetadata();
    if (!metadata.authorization_endpoint || !metadata.token_endpoint || !metadata.jwks_uri) {
      throw failedPrecondition("the identity provider's discovery document lacks an authorization, token or JWKS endpoint");
    }
    // The start redirects browsers to this address from our origin: an org admin's discovery
    // document must not make it an open redirect to anywhere.
    if (originOf(metadata.authorization_endpoint) !== issuer.origin) {
      throw new DomainError(
        'FAILED_PRECONDITION',
        `the identity provider's authorization_endpoint must be on the issuer's origin (${issuer.origin}), not ${printable(originOf(metadata.authorization_endpoint) ?? 'an invalid URL')}`,
        FOREIGN_AUTHORIZATION_ENDPOINT,
      );
    }
    if (chooseClientSecretMethod(metadata.token_endpoint_auth_methods_supported) === undefined) {
      throw failedPrecondition('the identity provider supports neither client_secret_basic nor client_secret_post');
    }
    return configuration;
  }
}

/** Marks the refusal of a foreign authorization endpoint (its `field`), told apart at save. */
const FOREIGN_AUTHORIZATION_ENDPOINT = 'authorization_endpoint';

function originOf(raw: string): string | null {
  try {
    return new URL(raw).origin;
  } catch {
    return null;
  }
}

const cacheKey = (settings: OidcProviderSettings): string => `${settings.providerId}\u0000${settings.revision}`;

/**
 * openid-client derives the token request's redirect_uri from the callback URL minus its whole
 * query, so a redirect URI with a query of its own could never match: refuse it up front.
 */
function plainRedirectUri(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidArgument('the redirect URI is not a valid URL', 'redirect_uri');
  }
  if (url.search !== '' || url.hash !== '') throw invalidArgument('the redirect URI must not have a query or fragment', 'redirect_uri');
  return url.href;
}

/** client_secret_basic is the OIDC default (also when the provider lists nothing); post when only that is offered. */
function chooseClientSecretMethod(supported: string[] | undefined): 'client_secret_basic' | 'client_secret_post' | undefined {
  if (!supported || supported.includes('client_secret_basic')) return 'client_secret_basic';
  if (supported.includes('client_secret_post')) return 'client_secret_post';
  return undefined;
}

/** Client authentication decided per request from the discovered metadata (known only after discovery). */
function clientSecretAsDiscovered(secret: string): ClientAuth {
  const basic = ClientSecretBasic(secret);
  const post = ClientSecretPost(secret);
  return (as, client, body, headers) =>
    chooseClientSecretMethod(as.token_endpoint_auth_methods_supported) === 'client_secret_post'
      ? post(as, client, body, headers)
      : basic(as, client, body, headers);
}

type Stage = 'discovery' | 'token' | 'userinfo';

const unavailable = (message: string): DomainError => new DomainError('UNAVAILABLE', message);

/** Status of the HTTP response an openid-client error carries as its cause, if any. */
function causeStatus(error: ClientError): number | undefined {
  const cause: unknown = error.cause;
  return cause instanceof Response ? cause.status : undefined;
}

/** The specific reason openid-client wrapped (its own wording, never the provider's token or secrets). */
function reasonOf(error: ClientError): string {
  const cause: unknown = error.cause;
  const text = cause instanceof Error && cause.message ? cause.message : error.message;
  return printable(text.replace(/^"response" body /, ''));
}

/** The token or UserInfo endpoint said no: name what it refused, with the provider's error code. */
function refusedBy(stage: Stage, code: string): DomainError {
  const reason = printable(code);
  if (reason === 'invalid_client') return unauthenticated('the identity provider refused the client credentials: invalid_client');
  if (stage === 'token') return unauthenticated(`the identity provider refused the authorization code: ${reason}`);
  return unauthenticated(`the identity provider refused the request: ${reason}`);
}

/** Maps whatever openid-client (or the fetch beneath it) threw to a DomainError safe for clients. */
function toDomainError(error: unknown, stage: Stage): unknown {
  if (isDomainError(error)) return error;
  if (error instanceof ClientError && isDomainError(error.cause)) return error.cause; // from the guarded fetch
  const what = stage === 'discovery' ? "the identity provider's discovery document" : stage === 'token' ? "the identity provider's token response" : "the identity provider's UserInfo response";

  if (error instanceof AuthorizationResponseError) {
    return unauthenticated(`the identity provider refused the sign-in: ${printable(error.error)}`);
  }
  if (error instanceof ResponseBodyError) {
    if (error.status >= 500) return unavailable(`the identity provider failed (HTTP ${error.status})`);
    if (stage === 'discovery') return failedPrecondition(`${what} could not be loaded: ${printable(error.error)}`);
    return refusedBy(stage, error.error);
  }
  if (error instanceof WWWAuthenticateChallengeError) {
    if (error.status >= 500) return unavailable(`the identity provider failed (HTTP ${error.status})`);
    const code = error.cause.map((challenge) => challenge.parameters.error).find((e) => typeof e === 'string');
    return refusedBy(stage, code ?? `HTTP ${error.status}`);
  }
  if (error instanceof ClientError) {
    switch (error.code) {
      case 'OAUTH_TIMEOUT':
      case 'OAUTH_ABORT':
        return unavailable('the identity provider did not answer in time');
      case 'OAUTH_RESPONSE_IS_NOT_CONFORM': {
        const status = causeStatus(error);
        if (status === undefined || status >= 500) return unavailable(`the identity provider failed${status ? ` (HTTP ${status})` : ''}`);
        if (stage === 'discovery') return failedPrecondition(`${what} could not be loaded (HTTP ${status})`);
        return unauthenticated(`the identity provider refused the request (HTTP ${status})`);
      }
      case 'OAUTH_RESPONSE_IS_NOT_JSON':
      case 'OAUTH_PARSE_ERROR':
        return stage === 'discovery' ? failedPrecondition(`${what} is not valid JSON`) : unavailable(`${what} is not valid JSON`);
      case 'OAUTH_HTTP_REQUEST_FORBIDDEN':
      case 'OAUTH_REQUEST_PROTOCOL_FORBIDDEN':
        return failedPrecondition("the identity provider's endpoints must use https");
      case 'OAUTH_MISSING_SERVER_METADATA':
      case 'OAUTH_INVALID_SERVER_METADATA':
        return failedPrecondition(`${what} is incomplete: ${reasonOf(error)}`);
      case 'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED':
        if (stage === 'discovery') return failedPrecondition(`${what} names a different issuer than the configured issuer URL`);
        return unauthenticated(`${what} was refused: ${reasonOf(error)}`);
      case 'OAUTH_JWT_CLAIM_COMPARISON_FAILED':
      case 'OAUTH_JWT_TIMESTAMP_CHECK_FAILED':
      case 'OAUTH_KEY_SELECTION_FAILED':
        return unauthenticated(`the identity provider's ID token was refused: ${reasonOf(error)}`);
      case 'OAUTH_INVALID_RESPONSE':
      case 'OAUTH_UNSUPPORTED_OPERATION': {
        if (stage === 'discovery') return failedPrecondition(`${what} is invalid: ${reasonOf(error)}`);
        const reason = reasonOf(error);
        return unauthenticated(/JWT|ID Token|id_token/i.test(reason) ? `the identity provider's ID token was refused: ${reason}` : `${what} was refused: ${reason}`);
      }
      default:
        return unavailable(`the identity provider could not be used: ${reasonOf(error)}`);
    }
  }
  // The standard fetch rejects with a TypeError when the network fails; openid-client passes it on.
  if (error instanceof TypeError && !('code' in error && typeof error.code === 'string' && error.code.startsWith('ERR_'))) {
    return unavailable('the identity provider could not be reached');
  }
  if (error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return unavailable('the identity provider did not answer in time');
  }
  return error;
}
