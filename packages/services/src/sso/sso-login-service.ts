import { randomBytes } from 'node:crypto';
import {
  DomainError,
  failedPrecondition,
  invalidArgument,
  isDomainError,
  notFound,
  unauthenticated,
  type AuthProvider,
  type PasswordHasher,
  type PendingSsoLogin,
  type Repositories,
} from '@switchyard/core';
import type { AuthService, Session } from '../auth/auth-service.ts';
import { sha256Hex } from '../auth/secrets.ts';
import type { IdpMetadataSource } from './idp-metadata-source.ts';
import type { OidcFlows, OidcProviderSettings } from './oidc-flow.ts';
import type { SamlFlows, SamlProviderSettings } from './saml-flow.ts';
import { SsoAccounts, type ProviderIdentity } from './sso-accounts.ts';
import { ssoUrls, type SsoOptions } from './sso-options.ts';

/** A login may take this long at the identity provider (typing a password, a second factor). */
export const PENDING_LOGIN_TTL_MS = 10 * 60_000;
/** The one-time code lives this long: the browser app exchanges it at once. */
export const SSO_CODE_TTL_MS = 60_000;
/**
 * Unfinished logins one provider keeps at once; a start beyond drops the oldest (starts are
 * unauthenticated: a flood may displace logins in flight, never fill the table or refuse people).
 */
export const MAX_PENDING_LOGINS_PER_PROVIDER = 10_000;
const MAX_APP_STATE_LENGTH = 512;

/** Where the browser goes next: the identity provider, or back to the app. */
export interface SsoRedirect {
  location: string;
}

export interface SsoLoginDeps {
  repos: Pick<Repositories, 'authProviders' | 'ssoLogins' | 'ssoIdentities' | 'users' | 'unitOfWork'>;
  auth: Pick<AuthService, 'openSessionFor'>;
  hasher: PasswordHasher;
  oidc: OidcFlows;
  saml: SamlFlows;
  idpMetadata: IdpMetadataSource;
  options: SsoOptions;
  now?: () => number;
  /** MAX_PENDING_LOGINS_PER_PROVIDER unless told (tests use a small one). */
  maxPendingLoginsPerProvider?: number;
}

const newSecret = (): string => randomBytes(32).toString('base64url');

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
 * Each login in flight is stored under the hash of its state (or RelayState), spent by the
 * answer that presents it, and carries its nonce, PKCE verifier or SAML request id, so a
 * provider's answer is accepted only for the login it was issued to.
 */
export class SsoLoginService {
  private readonly accounts: SsoAccounts;
  private readonly now: () => number;

  constructor(private readonly deps: SsoLoginDeps) {
    this.now = deps.now ?? Date.now;
    this.accounts = new SsoAccounts(deps.repos, deps.hasher, this.now, deps.options.onSessionsEnded);
  }

  /** Browser flow, step 1: the identity provider's address for a login that returns to `returnUri`. */
  async startBrowserLogin(providerId: string, returnUri: string, appState?: string | null): Promise<SsoRedirect> {
    const provider = await this.usableProvider(providerId);
    if (!provider.redirectUris.includes(returnUri)) {
      throw invalidArgument('redirect_uri is not registered for this provider', 'redirect_uri');
    }
    if (appState && appState.length > MAX_APP_STATE_LENGTH) throw invalidArgument(`state must be at most ${MAX_APP_STATE_LENGTH} characters`, 'state');
    const urls = ssoUrls(this.deps.options.publicUrl);
    const redirectUri = provider.type === 'oidc' ? urls.oidcCallback : urls.samlAcs;
    const { location } = await this.begin(provider, { redirectUri, returnUri, appState: appState || null });
    return { location };
  }

  /**
   * Browser flow, OIDC callback: the provider's answer (the callback's query). A state that names
   * no login in flight is refused here (401); any later failure goes back to the app's return
   * address as `error` and `error_description`, as OAuth does.
   */
  async finishOidcBrowserLogin(query: Record<string, string>): Promise<SsoRedirect> {
    const pending = await this.consume(query.state, 'oidc', 'browser');
    return this.toReturnAddress(pending, () => this.completeOidc(pending, new URLSearchParams(query)));
  }

  /** Browser flow, SAML ACS: the POSTed SAMLResponse and RelayState. */
  async finishSamlBrowserLogin(input: { samlResponse: string; relayState: string }): Promise<SsoRedirect> {
    const pending = await this.consume(input.relayState, 'saml', 'browser');
    return this.toReturnAddress(pending, () => this.completeSaml(pending, input.samlResponse));
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
    const { location } = await this.begin(provider, { redirectUri: input.redirectUri, returnUri: null, appState: null });
    return { redirectUrl: location };
  }

  /** gRPC OidcCallback: the code and state the provider sent to the caller's callback. */
  async oidcCallback(input: { providerId: string; code: string; state: string; redirectUri: string; iss?: string }): Promise<Session> {
    const pending = await this.consume(input.state, 'oidc', 'grpc');
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
    const { location, state } = await this.begin(provider, { redirectUri: acsUrl, returnUri: null, appState: null });
    return { redirectUrl: location, relayState: state };
  }

  /** gRPC SamlAcsCallback: the SAMLResponse and RelayState the IdP posted to the caller. */
  async samlAcs(input: { providerId: string; samlResponseB64: string; relayState: string }): Promise<Session> {
    const pending = await this.consume(input.relayState, 'saml', 'grpc');
    if (pending.providerId !== input.providerId) throw unauthenticated('the relay state belongs to another provider');
    return this.openSession(pending, await this.completeSaml(pending, input.samlResponseB64));
  }

  /** Stores a login in flight and answers the identity provider's address for it. */
  private async begin(
    provider: AuthProvider,
    target: { redirectUri: string; returnUri: string | null; appState: string | null },
  ): Promise<{ location: string; state: string }> {
    const nowMs = this.now();
    let state: string;
    let location: string;
    let secrets: Pick<PendingSsoLogin, 'nonce' | 'codeVerifier' | 'samlRequestId'>;
    if (provider.type === 'oidc') {
      const authorization = await this.deps.oidc.authorize(this.oidcSettings(provider), target.redirectUri);
      ({ state } = authorization);
      location = authorization.url;
      secrets = { nonce: authorization.nonce, codeVerifier: authorization.codeVerifier, samlRequestId: null };
    } else {
      state = newSecret();
      const request = await this.deps.saml.authnRequest(await this.samlSettings(provider), state);
      location = request.url;
      secrets = { nonce: null, codeVerifier: null, samlRequestId: request.requestId };
    }
    const stored = await this.deps.repos.ssoLogins.createPending(
      { stateHash: sha256Hex(state), providerId: provider.id, orgId: provider.orgId, ...target, ...secrets, expiresAtMs: nowMs + PENDING_LOGIN_TTL_MS },
      nowMs,
      this.deps.maxPendingLoginsPerProvider ?? MAX_PENDING_LOGINS_PER_PROVIDER,
    );
    // Only a provider deleted since it was read stores nothing.
    if (!stored) throw notFound('auth provider', provider.id);
    return { location, state };
  }

  /** Spends the login in flight the state names; it must be of this protocol and this channel. */
  private async consume(state: string | undefined, type: AuthProvider['type'], channel: 'browser' | 'grpc'): Promise<PendingSsoLogin> {
    const pending = state ? await this.deps.repos.ssoLogins.consumePending(sha256Hex(state), this.now()) : null;
    const isBrowser = pending?.returnUri !== null;
    const isType = type === 'oidc' ? pending?.codeVerifier !== null : pending?.samlRequestId !== null;
    if (!pending || !isType || isBrowser !== (channel === 'browser')) {
      throw unauthenticated('the sign-in state is unknown, expired or already used; start signing in again');
    }
    return pending;
  }

  private async completeOidc(pending: PendingSsoLogin, query: URLSearchParams): Promise<ProviderIdentity & { provider: AuthProvider }> {
    const provider = await this.usableProvider(pending.providerId, pending.orgId, 'oidc');
    const identity = await this.deps.oidc.complete(this.oidcSettings(provider), {
      query,
      redirectUri: pending.redirectUri,
      expected: { state: query.get('state') ?? '', nonce: pending.nonce ?? '', codeVerifier: pending.codeVerifier ?? '' },
    });
    return { provider, subject: identity.subject, email: identity.email, emailVerified: identity.emailVerified, displayName: identity.name };
  }

  private async completeSaml(pending: PendingSsoLogin, samlResponseB64: string): Promise<ProviderIdentity & { provider: AuthProvider }> {
    const provider = await this.usableProvider(pending.providerId, pending.orgId, 'saml');
    const identity = await this.deps.saml.validate(await this.samlSettings(provider), {
      samlResponseB64,
      expectedRequestId: pending.samlRequestId ?? '',
    });
    // SAML has no email_verified: the org's admin vouches for its IdP's attributes.
    return { provider, subject: identity.subject, email: identity.email, emailVerified: true, displayName: identity.displayName };
  }

  private async openSession(pending: PendingSsoLogin, identity: ProviderIdentity & { provider: AuthProvider }): Promise<Session> {
    const userId = await this.accounts.resolve(identity.provider, identity);
    return this.deps.auth.openSessionFor(userId, pending.orgId, pending.providerId);
  }

  /**
   * Finishes a browser login and answers the app's return address with a one-time code, or with
   * the reason the login was refused (a domain error; anything else is a fault and propagates).
   */
  private async toReturnAddress(pending: PendingSsoLogin, complete: () => Promise<ProviderIdentity & { provider: AuthProvider }>): Promise<SsoRedirect> {
    const location = new URL(pending.returnUri ?? '');
    if (pending.appState !== null) location.searchParams.set('state', pending.appState);
    try {
      const identity = await complete();
      const userId = await this.accounts.resolve(identity.provider, identity);
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
    };
  }
}
