import { randomBytes } from 'node:crypto';
import {
  DomainError,
  failedPrecondition,
  invalidArgument,
  isDomainError,
  notFound,
  unauthenticated,
  type AuthProvider,
  type ChangeNotifier,
  type PasswordHasher,
  type PendingSsoLogin,
  type Repositories,
} from '@switchyard/core';
import type { AuthService, Session } from '../auth/auth-service.ts';
import { sha256Hex } from '../auth/secrets.ts';
import { browserLoginCookieName, openBrowserLogin, sealBrowserLogin, type BrowserLogin, type BrowserLoginCookie } from './browser-login-cookie.ts';
import type { IdpMetadataSource } from './idp-metadata-source.ts';
import type { OidcFlows, OidcProviderSettings } from './oidc-flow.ts';
import type { SamlFlows, SamlProviderSettings } from './saml-flow.ts';
import { SsoAccounts, type ProviderIdentity } from './sso-accounts.ts';
import { DEFAULT_GROUPS_CLAIM } from './group-bindings-input.ts';
import { GroupMapping, groupsOf } from './group-mapping.ts';
import { ssoUrls, type SsoOptions } from './sso-options.ts';

/** A login may take this long at the identity provider (typing a password, a second factor). */
export const PENDING_LOGIN_TTL_MS = 10 * 60_000;
/** The one-time code lives this long: the browser app exchanges it at once. */
export const SSO_CODE_TTL_MS = 60_000;
/**
 * Unfinished gRPC logins (OidcAuthorize, SamlSsoInitiate) one provider keeps at once; a start
 * beyond drops the oldest. Browser logins are not stored (they live in the browser's cookie).
 */
export const MAX_PENDING_LOGINS_PER_PROVIDER = 10_000;
const MAX_APP_STATE_LENGTH = 512;

/** Where the browser goes next: the identity provider, or back to the app. */
export interface SsoRedirect {
  location: string;
}

/** The start's answer: the identity provider's address, and the cookie that keeps the login. */
export interface BrowserLoginStart extends SsoRedirect {
  cookie: BrowserLoginCookie;
}

/** What a login in flight carries to the provider's answer, wherever it was kept. */
type LoginInFlight = Omit<PendingSsoLogin, 'stateHash' | 'createdAtMs' | 'expiresAtMs'>;

export interface SsoLoginDeps {
  repos: Pick<Repositories, 'authProviders' | 'ssoLogins' | 'ssoIdentities' | 'users' | 'orgs' | 'orgDomains' | 'unitOfWork'>;
  auth: Pick<AuthService, 'openSessionFor'>;
  hasher: PasswordHasher;
  oidc: OidcFlows;
  saml: SamlFlows;
  idpMetadata: IdpMetadataSource;
  options: SsoOptions;
  now?: () => number;
  /** Where a member's bindings changed by their groups at sign-in are announced (session-registry.ts). */
  notifier?: ChangeNotifier;
  /** MAX_PENDING_LOGINS_PER_PROVIDER unless told (tests use a small one). */
  maxPendingLoginsPerProvider?: number;
}

const newSecret = (): string => randomBytes(32).toString('base64url');
const alreadyUsed = () => unauthenticated('the sign-in state is expired or already used; start signing in again');

/** The OAuth error code a failed login goes back to the app with. */
function oauthErrorOf(error: DomainError): string {
  if (error.code === 'UNAVAILABLE' || error.code === 'DEADLINE_EXCEEDED') return 'temporarily_unavailable';
  if (error.code === 'UNAUTHENTICATED' || error.code === 'PERMISSION_DENIED') return 'access_denied';
  // The provider's answer itself was malformed (not base64, a DOCTYPE, ...).
  if (error.code === 'INVALID_ARGUMENT') return 'invalid_request';
  return 'server_error';
}

/**
 * Single sign-on logins (docs/sso.md), in two shapes over one mechanism:
 * - the browser flow: start → identity provider → callback (OIDC) or ACS (SAML) → a redirect to
 *   the provider's registered return address with a one-time code → exchange for a session;
 * - the gRPC calls of svc.auth.v1 OidcLoginService and SamlLoginService, whose caller runs the
 *   browser part itself and gets the session directly.
 * Each login in flight carries its nonce, PKCE verifier or SAML request id, so a provider's answer
 * is accepted only for the login it was issued to, and only once. A browser's login is sealed in
 * a cookie of that browser (browser-login-cookie.ts) and its state is spent in the database when
 * the answer comes; a gRPC caller's is stored under the hash of its state and spent the same way.
 */
export class SsoLoginService {
  private readonly accounts: SsoAccounts;
  private readonly groupMapping: GroupMapping;
  private readonly now: () => number;

  constructor(private readonly deps: SsoLoginDeps) {
    this.now = deps.now ?? Date.now;
    this.accounts = new SsoAccounts(deps.repos, deps.hasher, this.now, deps.options.onSessionsEnded, deps.options.publicUrl);
    this.groupMapping = new GroupMapping(deps.repos, deps.notifier, this.now);
  }

  /**
   * Browser flow, step 1: the identity provider's address for a login that returns to `returnUri`,
   * and the cookie the login is kept in until the provider answers (nothing is stored here, so a
   * flood of starts has nothing to fill or displace).
   */
  async startBrowserLogin(providerId: string, returnUri: string, appState?: string | null): Promise<BrowserLoginStart> {
    const provider = await this.usableProvider(providerId);
    if (!provider.redirectUris.includes(returnUri)) {
      throw invalidArgument('redirect_uri is not registered for this provider', 'redirect_uri');
    }
    if (appState && appState.length > MAX_APP_STATE_LENGTH) throw invalidArgument(`state must be at most ${MAX_APP_STATE_LENGTH} characters`, 'state');
    const box = this.loginCookieBox();
    const urls = ssoUrls(this.deps.options.publicUrl);
    const redirectUri = provider.type === 'oidc' ? urls.oidcCallback : urls.samlAcs;
    const { location, state, secrets } = await this.authorizationFor(provider, redirectUri);
    const login: BrowserLogin = {
      type: provider.type,
      providerId: provider.id,
      orgId: provider.orgId,
      returnUriHash: sha256Hex(returnUri),
      appState: appState || null,
      ...secrets,
      expiresAtMs: this.now() + PENDING_LOGIN_TTL_MS,
    };
    return {
      location,
      cookie: {
        name: browserLoginCookieName(state),
        value: sealBrowserLogin(box, state, login),
        maxAgeSeconds: PENDING_LOGIN_TTL_MS / 1000,
        crossSite: provider.type === 'saml',
      },
    };
  }

  /**
   * Browser flow, OIDC callback: the provider's answer (the callback's query) and the login cookie
   * of the browser presenting it (`browserLoginCookieName(state)`; null when it sent none). A state
   * without this browser's cookie, or spent already, is refused here (401); any later failure goes
   * back to the app's return address as `error` and `error_description`, as OAuth does.
   */
  async finishOidcBrowserLogin(query: Record<string, string>, loginCookie: string | null): Promise<SsoRedirect> {
    const pending = await this.openBrowserLoginFor(query.state, loginCookie, 'oidc');
    return this.toReturnAddress(pending, async () => this.spendAfter(pending, await this.completeOidc(pending, new URLSearchParams(query))));
  }

  /** Browser flow, SAML ACS: the POSTed SAMLResponse and RelayState, and the browser's login cookie. */
  async finishSamlBrowserLogin(input: { samlResponse: string; relayState: string; loginCookie: string | null }): Promise<SsoRedirect> {
    const pending = await this.openBrowserLoginFor(input.relayState, input.loginCookie, 'saml');
    return this.toReturnAddress(pending, async () => this.spendAfter(pending, await this.completeSaml(pending, input.samlResponse)));
  }

  /** Browser flow, last step: the one-time code (single use, 60 s) for the login response. */
  async exchangeCode(code: string): Promise<Session> {
    const grant = code ? await this.deps.repos.ssoLogins.consumeCode(sha256Hex(code), this.now()) : null;
    if (!grant) throw unauthenticated('the sign-in code is unknown, expired or already used');
    await this.usableProvider(grant.providerId);
    return this.deps.auth.openSessionFor(grant.userId, grant.orgId, grant.providerId);
  }

  /**
   * What a sign-in page may offer for one org (docs/sso.md "Signing in from the web console"): its
   * enabled providers that return to `returnUri`, by id, name and type only. Anyone may ask; an
   * unknown org has none, the same answer as an org without providers, so the answer reveals
   * nothing about which orgs exist beyond a provider's name for whoever knows the org's id.
   */
  async signInOptions(orgId: string, returnUri: string): Promise<{ providers: Array<{ provider_id: string; display_name: string; provider_type: string }> }> {
    const providers = await this.deps.repos.authProviders.list({ orgId });
    return {
      providers: providers
        .filter((provider) => provider.enabled && provider.redirectUris.includes(returnUri))
        .map((provider) => ({ provider_id: provider.id, display_name: provider.displayName, provider_type: provider.type })),
    };
  }

  /**
   * What the console's provider link (`#/sso/{provider_id}`) shows before anyone clicks: the
   * provider's name and type and its org's name, so a person sees where they are about to sign in
   * (a link must never sign someone in by itself: login CSRF). Anyone may ask; a provider that is
   * unknown, disabled or does not return to `returnUri` is NOT_FOUND, as are the others alike.
   */
  async signInOption(providerId: string, returnUri: string): Promise<{ provider_id: string; display_name: string; provider_type: string; org_id: string; org_name: string }> {
    const provider = await this.deps.repos.authProviders.findById(providerId);
    const org = provider?.enabled && provider.redirectUris.includes(returnUri) ? await this.deps.repos.orgs.get(provider.orgId) : null;
    if (!provider || !org) throw notFound('identity provider', providerId);
    return { provider_id: provider.id, display_name: provider.displayName, provider_type: provider.type, org_id: org.id, org_name: org.name };
  }

  /** The SAML service provider's metadata, to register at the IdP. */
  async samlMetadata(providerId: string): Promise<string> {
    const provider = await this.deps.repos.authProviders.findById(providerId);
    if (!provider?.saml) throw notFound('SAML provider', providerId);
    // Ours alone: answering it never reaches the IdP (its metadata address may be down or slow).
    return this.deps.saml.spMetadata({
      spEntityId: provider.saml.spEntityId,
      acsUrl: ssoUrls(this.deps.options.publicUrl).samlAcs,
      nameIdFormat: provider.saml.nameIdFormat,
    });
  }

  /** gRPC OidcAuthorize: `redirectUri` is the caller's own callback, which must be registered. */
  async oidcAuthorize(input: { providerId: string; orgId: string; redirectUri: string }): Promise<{ redirectUrl: string }> {
    const provider = await this.usableProvider(input.providerId, input.orgId, 'oidc');
    if (!provider.redirectUris.includes(input.redirectUri)) throw invalidArgument('redirect_uri is not registered for this provider', 'redirect_uri');
    const { location } = await this.begin(provider, input.redirectUri);
    return { redirectUrl: location };
  }

  /** gRPC OidcCallback: the code and state the provider sent to the caller's callback. */
  async oidcCallback(input: { providerId: string; code: string; state: string; redirectUri: string; iss?: string }): Promise<Session> {
    const pending = await this.consume(input.state, 'oidc');
    if (pending.providerId !== input.providerId || pending.redirectUri !== input.redirectUri) {
      throw unauthenticated('the sign-in state belongs to another provider or redirect_uri');
    }
    const query = new URLSearchParams({ code: input.code, state: input.state, ...(input.iss ? { iss: input.iss } : {}) });
    return this.openSession(pending, await this.completeOidc(pending, query));
  }

  /** gRPC SamlSsoInitiate: `acsUrl`, when given, must be this server's ACS address. */
  async samlInitiate(input: { providerId: string; orgId: string; acsUrl: string }): Promise<{ redirectUrl: string; relayState: string }> {
    const provider = await this.usableProvider(input.providerId, input.orgId, 'saml');
    const acsUrl = ssoUrls(this.deps.options.publicUrl).samlAcs;
    if (input.acsUrl && input.acsUrl !== acsUrl) throw invalidArgument(`acs_url must be ${acsUrl}`, 'acs_url');
    const { location, state } = await this.begin(provider, acsUrl);
    return { redirectUrl: location, relayState: state };
  }

  /** gRPC SamlAcsCallback: the SAMLResponse and RelayState the IdP posted to the caller. */
  async samlAcs(input: { providerId: string; samlResponseB64: string; relayState: string }): Promise<Session> {
    const pending = await this.consume(input.relayState, 'saml');
    if (pending.providerId !== input.providerId) throw unauthenticated('the relay state belongs to another provider');
    return this.openSession(pending, await this.completeSaml(pending, input.samlResponseB64));
  }

  /** The identity provider's address for a new login, with its state and the secrets its answer is checked against. */
  private async authorizationFor(
    provider: AuthProvider,
    redirectUri: string,
  ): Promise<{ location: string; state: string; secrets: Pick<PendingSsoLogin, 'nonce' | 'codeVerifier' | 'samlRequestId'> }> {
    if (provider.type === 'oidc') {
      const authorization = await this.deps.oidc.authorize(this.oidcSettings(provider), redirectUri);
      return {
        location: authorization.url,
        state: authorization.state,
        secrets: { nonce: authorization.nonce, codeVerifier: authorization.codeVerifier, samlRequestId: null },
      };
    }
    const state = newSecret();
    const request = await this.deps.saml.authnRequest(await this.samlSettings(provider), state);
    return { location: request.url, state, secrets: { nonce: null, codeVerifier: null, samlRequestId: request.requestId } };
  }

  /** gRPC channel: stores a login in flight and answers the identity provider's address for it. */
  private async begin(provider: AuthProvider, redirectUri: string): Promise<{ location: string; state: string }> {
    const nowMs = this.now();
    const { location, state, secrets } = await this.authorizationFor(provider, redirectUri);
    const stored = await this.deps.repos.ssoLogins.createPending(
      {
        stateHash: sha256Hex(state),
        providerId: provider.id,
        orgId: provider.orgId,
        redirectUri,
        returnUri: null,
        appState: null,
        ...secrets,
        expiresAtMs: nowMs + PENDING_LOGIN_TTL_MS,
      },
      nowMs,
      this.deps.maxPendingLoginsPerProvider ?? MAX_PENDING_LOGINS_PER_PROVIDER,
    );
    // Only a provider deleted since it was read stores nothing.
    if (!stored) throw notFound('auth provider', provider.id);
    return { location, state };
  }

  /** gRPC channel: spends the stored login in flight the state names; it must be of this protocol. */
  private async consume(state: string | undefined, type: AuthProvider['type']): Promise<PendingSsoLogin> {
    const pending = state ? await this.deps.repos.ssoLogins.consumePending(sha256Hex(state), this.now()) : null;
    const isType = type === 'oidc' ? pending?.codeVerifier !== null : pending?.samlRequestId !== null;
    // A stored login with a return address was a browser's (before browser logins moved into cookies).
    if (!pending || !isType || pending.returnUri !== null) {
      throw unauthenticated('the sign-in state is unknown, expired or already used; start signing in again');
    }
    return pending;
  }

  /**
   * Browser channel: opens the login sealed in this browser's cookie for `state`. Refused (401,
   * nothing to redirect to) when the browser has no cookie for the state (started in another
   * browser, or never started), the cookie does not open for it, the login expired, or the state
   * was spent already (a replay, also with a copied cookie).
   */
  private async openBrowserLoginFor(
    state: string | undefined,
    loginCookie: string | null,
    type: AuthProvider['type'],
  ): Promise<LoginInFlight & { stateHash: string; expiresAtMs: number }> {
    if (!state || !loginCookie) {
      throw unauthenticated(
        'this sign-in was not started in this browser (its sign-in cookie is missing or expired); start signing in again in this browser',
      );
    }
    const login = openBrowserLogin(this.loginCookieBox(), state, loginCookie);
    if (!login || login.type !== type) throw unauthenticated("the sign-in state does not match this browser's sign-in cookie; start signing in again");
    const stateHash = sha256Hex(state);
    if (login.expiresAtMs <= this.now() || (await this.deps.repos.ssoLogins.isStateSpent(stateHash))) throw alreadyUsed();
    // The address is looked up again: it must still be one of the provider's.
    const provider = await this.deps.repos.authProviders.findById(login.providerId);
    if (!provider || provider.orgId !== login.orgId) throw notFound('auth provider', login.providerId);
    const returnUri = provider.redirectUris.find((uri) => sha256Hex(uri) === login.returnUriHash);
    if (returnUri === undefined) throw failedPrecondition("the sign-in's return address is no longer registered for this provider");
    const urls = ssoUrls(this.deps.options.publicUrl);
    return {
      providerId: login.providerId,
      orgId: login.orgId,
      redirectUri: type === 'oidc' ? urls.oidcCallback : urls.samlAcs,
      returnUri,
      appState: login.appState,
      nonce: login.nonce,
      codeVerifier: login.codeVerifier,
      samlRequestId: login.samlRequestId,
      stateHash,
      expiresAtMs: login.expiresAtMs,
    };
  }

  /**
   * Spends a browser login's state once the identity provider's answer has been verified, before
   * anything is done with it: of two presentations, concurrent or not, one goes on. Spending only
   * verified answers keeps `sso_spent_states` to real sign-ins: an outsider's made-up answers
   * store nothing. The loser's refusal goes back to the app (`access_denied`).
   */
  private async spendAfter<T>(pending: { stateHash: string; expiresAtMs: number }, verified: T): Promise<T> {
    if (!(await this.deps.repos.ssoLogins.spendState(pending.stateHash, pending.expiresAtMs))) throw alreadyUsed();
    return verified;
  }

  /** Seals browser logins: the key that seals client secrets (SSO_SECRETS_KEY), under its own associated data. */
  private loginCookieBox() {
    const { secrets } = this.deps.options;
    if (!secrets) throw failedPrecondition('single sign-on in the browser needs SSO_SECRETS_KEY in the server configuration');
    return secrets;
  }

  private async completeOidc(pending: LoginInFlight, query: URLSearchParams): Promise<ProviderIdentity & { provider: AuthProvider }> {
    const provider = await this.usableProvider(pending.providerId, pending.orgId, 'oidc');
    const identity = await this.deps.oidc.complete(this.oidcSettings(provider), {
      query,
      redirectUri: pending.redirectUri,
      expected: { state: query.get('state') ?? '', nonce: pending.nonce ?? '', codeVerifier: pending.codeVerifier ?? '' },
    });
    return {
      provider,
      subject: identity.subject,
      email: identity.email,
      emailVerified: identity.emailVerified,
      displayName: identity.name,
      groups: groupsOf(identity.groups),
    };
  }

  private async completeSaml(pending: LoginInFlight, samlResponseB64: string): Promise<ProviderIdentity & { provider: AuthProvider }> {
    const provider = await this.usableProvider(pending.providerId, pending.orgId, 'saml');
    const identity = await this.deps.saml.validate(await this.samlSettings(provider), {
      samlResponseB64,
      expectedRequestId: pending.samlRequestId ?? '',
    });
    // SAML has no email_verified: the org's admin vouches for its IdP's attributes.
    return { provider, subject: identity.subject, email: identity.email, emailVerified: true, displayName: identity.displayName, groups: groupsOf(identity.groups) };
  }

  private async openSession(pending: LoginInFlight, identity: ProviderIdentity & { provider: AuthProvider }): Promise<Session> {
    const userId = await this.signIn(identity);
    return this.deps.auth.openSessionFor(userId, pending.orgId, pending.providerId);
  }

  /** The account the identity is, its bindings set from its groups (docs/sso.md "Group mapping"). */
  private async signIn(identity: ProviderIdentity & { provider: AuthProvider }): Promise<string> {
    const userId = await this.accounts.resolve(identity.provider, identity);
    await this.groupMapping.apply(identity.provider, userId, identity.groups ?? []);
    return userId;
  }

  /**
   * Finishes a browser login and answers the app's return address with a one-time code, or with
   * the reason the login was refused (a domain error; anything else is a fault and propagates).
   */
  private async toReturnAddress(pending: LoginInFlight, complete: () => Promise<ProviderIdentity & { provider: AuthProvider }>): Promise<SsoRedirect> {
    const location = new URL(pending.returnUri ?? '');
    if (pending.appState !== null) location.searchParams.set('state', pending.appState);
    try {
      const identity = await complete();
      const userId = await this.signIn(identity);
      const code = `sso_${newSecret()}`;
      await this.deps.repos.ssoLogins.createCode({
        codeHash: sha256Hex(code),
        providerId: pending.providerId,
        userId,
        orgId: pending.orgId,
        expiresAtMs: this.now() + SSO_CODE_TTL_MS,
      });
      location.searchParams.set('code', code);
    } catch (error) {
      if (!isDomainError(error)) throw error;
      location.searchParams.set('error', oauthErrorOf(error));
      location.searchParams.set('error_description', error.message.slice(0, 300));
    }
    return { location: location.toString() };
  }

  /** The provider, enabled, optionally of the given org and protocol (otherwise NOT_FOUND). */
  private async usableProvider(providerId: string, orgId?: string, type?: AuthProvider['type']): Promise<AuthProvider> {
    const provider = await this.deps.repos.authProviders.findById(providerId);
    if (!provider || (orgId !== undefined && provider.orgId !== orgId) || (type !== undefined && provider.type !== type)) {
      throw notFound('auth provider', providerId);
    }
    if (!provider.enabled) throw failedPrecondition('this identity provider is disabled');
    return provider;
  }

  private oidcSettings(provider: AuthProvider): OidcProviderSettings {
    const { oidc, clientSecretCiphertext } = provider;
    if (!oidc || clientSecretCiphertext === null) throw failedPrecondition('the OIDC provider has no client secret');
    const { secrets } = this.deps.options;
    if (!secrets) throw failedPrecondition('single sign-on with OIDC needs SSO_SECRETS_KEY in the server configuration');
    return {
      providerId: provider.id,
      issuerUrl: oidc.issuerUrl,
      clientId: oidc.clientId,
      clientSecret: secrets.open(clientSecretCiphertext, provider.id),
      scopes: oidc.scopes,
      // Read only when something depends on it (a UserInfo request may be needed for it).
      groupsClaim: provider.groupBindings.length > 0 ? (oidc.groupsClaim ?? DEFAULT_GROUPS_CLAIM) : null,
      revision: String(provider.updatedAtMs),
    };
  }

  private async samlSettings(provider: AuthProvider): Promise<SamlProviderSettings> {
    const { saml } = provider;
    if (!saml) throw failedPrecondition('not a SAML provider');
    return {
      providerId: provider.id,
      idp: await this.deps.idpMetadata.get(provider),
      spEntityId: saml.spEntityId,
      acsUrl: ssoUrls(this.deps.options.publicUrl).samlAcs,
      nameIdFormat: saml.nameIdFormat,
      groupsAttribute: provider.groupBindings.length > 0 ? (saml.groupsAttribute ?? DEFAULT_GROUPS_CLAIM) : null,
    };
  }
}
