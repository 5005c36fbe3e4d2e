import type { SecretBox } from './secret-box.ts';

/** What single sign-on needs from configuration (docs/sso.md "Configuration"). */
export interface SsoOptions {
  /**
   * The address browsers and identity providers reach the REST API at (PUBLIC_URL, no trailing
   * slash): the OIDC callback, the SAML ACS and SP metadata addresses are built from it.
   */
  publicUrl: string;
  /** SSO_ALLOW_PRIVATE_NETWORKS: issuers and metadata on loopback/private/link-local addresses (and plain http). */
  allowPrivateNetworks: boolean;
  /** Encrypts OIDC client secrets at rest; null when SSO_SECRETS_KEY is not configured. */
  secrets: SecretBox | null;
  /** Told the account whose sessions a sign-in ended (a claim by verified domain): every instance drops them. */
  onSessionsEnded?: (userId: string) => Promise<void>;
}

/** The fixed addresses of the SSO routes under the public URL. */
export const ssoUrls = (publicUrl: string) => ({
  oidcCallback: `${publicUrl}/v1/auth/oidc/callback`,
  samlAcs: `${publicUrl}/v1/auth/saml/acs`,
  samlMetadata: (providerId: string) => `${publicUrl}/v1/auth/saml/${providerId}/metadata`,
  start: (providerId: string) => `${publicUrl}/v1/auth/sso/${providerId}/start`,
});
