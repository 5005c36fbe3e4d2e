import type { ChangeNotifier, PasswordHasher, Repositories } from '@switchyard/core';
import type { AuthService } from '../auth/auth-service.ts';
import { AuthProviderService } from './auth-provider-service.ts';
import { IdpMetadataSource } from './idp-metadata-source.ts';
import { createGuardedFetch } from './network-guard.ts';
import { OidcFlows } from './oidc-flow.ts';
import { SamlFlows } from './saml-flow.ts';
import { SsoLoginService } from './sso-login-service.ts';
import type { SsoOptions } from './sso-options.ts';

/**
 * Single sign-on's services over one guarded fetch: every request to an identity provider
 * (discovery, JWKS, token endpoint, SAML metadata) goes through the private-network rule.
 * `options` is read at each call, so a host may fill in `publicUrl` once its port is known.
 */
export function createSsoServices(deps: {
  repos: Pick<Repositories, 'authProviders' | 'ssoLogins' | 'ssoIdentities' | 'users' | 'orgs' | 'orgDomains' | 'sessions' | 'unitOfWork' | 'projects' | 'environments'>;
  auth: Pick<AuthService, 'openSessionFor'>;
  hasher: PasswordHasher;
  options: SsoOptions;
  /** Where ended sessions are announced to every instance. */
  notifier: ChangeNotifier;
}): { authProviders: AuthProviderService; sso: SsoLoginService } {
  const fetch = createGuardedFetch({ allowPrivateNetworks: deps.options.allowPrivateNetworks });
  const oidc = new OidcFlows({ fetch, allowInsecureHttp: deps.options.allowPrivateNetworks });
  return {
    authProviders: new AuthProviderService(deps.repos, deps.options, deps.notifier, { oidcIssuer: (settings) => oidc.checkAuthorizationEndpointOnSave(settings) }),
    sso: new SsoLoginService({
      repos: deps.repos,
      auth: deps.auth,
      hasher: deps.hasher,
      oidc,
      saml: new SamlFlows(),
      idpMetadata: new IdpMetadataSource(fetch, Date.now, deps.options.allowPrivateNetworks),
      options: deps.options,
      notifier: deps.notifier,
    }),
  };
}
