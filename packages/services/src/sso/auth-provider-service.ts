import { randomUUID } from 'node:crypto';
import { failedPrecondition, invalidArgument, isDomainError, type AuthProvider, type AuthProviderInput, type Principal, type Repositories } from '@switchyard/core';
import { requireAllowed } from '../authorization.ts';
import { recordChange } from '../audit/audit-trail.ts';
import { checkProviderBody, type AuthProviderBody } from './provider-input.ts';
import { authProviderRecord, type AuthProviderRecord } from './provider-records.ts';
import { checkProviderUrl } from './network-guard.ts';
import { parseIdpMetadata } from './saml-metadata.ts';
import { ssoUrls, type SsoOptions } from './sso-options.ts';

/** Identity providers one org may have: plenty for staged roll-outs, not a way to fill a table. */
export const MAX_PROVIDERS_PER_ORG = 20;

/**
 * Provider management (docs/sso.md "Providers"): org_admin only, inside its own org (another org's
 * provider is NOT_FOUND). Addresses are checked against the private-network rule when saved, and
 * inline SAML metadata is parsed, so a mistake shows up here rather than at someone's sign-in.
 * The OIDC client secret is sealed before it is stored and is never answered.
 */
export class AuthProviderService {
  private readonly now: () => number;
  private readonly checkOidcIssuer: ((settings: { providerId: string; issuerUrl: string; clientId: string; scopes: string[] }) => Promise<void>) | undefined;

  /**
   * `checks.oidcIssuer`: what saving an OIDC provider asks of its issuer beyond the address rules
   * (createSsoServices passes OidcFlows.checkAuthorizationEndpointOnSave).
   */
  constructor(
    private readonly repos: Pick<Repositories, 'authProviders' | 'unitOfWork'>,
    private readonly options: SsoOptions,
    checks: { now?: () => number; oidcIssuer?: AuthProviderService['checkOidcIssuer'] } = {},
  ) {
    this.now = checks.now ?? Date.now;
    this.checkOidcIssuer = checks.oidcIssuer;
  }

  async create(principal: Principal, orgId: string, body: AuthProviderBody): Promise<AuthProviderRecord> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    const id = randomUUID();
    const input = await this.toInput(id, body);
    const provider = await this.repos.unitOfWork.run(async (tx) => {
      const created = await tx.authProviders.create({ orgId }, input, MAX_PROVIDERS_PER_ORG);
      await this.audit(tx, principal, 'auth_provider.create', null, created);
      return created;
    });
    return this.record(provider);
  }

  async list(principal: Principal, orgId: string): Promise<AuthProviderRecord[]> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    return (await this.repos.authProviders.list({ orgId })).map((provider) => this.record(provider));
  }

  async get(principal: Principal, orgId: string, providerId: string): Promise<AuthProviderRecord> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    return this.record(await this.repos.authProviders.get({ orgId }, providerId));
  }

  /** Replaces the provider's settings; a missing client secret keeps the stored one. */
  async update(principal: Principal, orgId: string, providerId: string, body: AuthProviderBody): Promise<AuthProviderRecord> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    const current = await this.repos.authProviders.get({ orgId }, providerId);
    const input = await this.toInput(providerId, body, current);
    const provider = await this.repos.unitOfWork.run(async (tx) => {
      const updated = await tx.authProviders.update({ orgId }, input);
      await this.audit(tx, principal, 'auth_provider.update', current, updated);
      return updated;
    });
    return this.record(provider);
  }

  async delete(principal: Principal, orgId: string, providerId: string): Promise<void> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    await this.repos.unitOfWork.run(async (tx) => {
      const provider = await tx.authProviders.get({ orgId }, providerId);
      await tx.authProviders.delete({ orgId }, providerId);
      await this.audit(tx, principal, 'auth_provider.delete', provider, null);
    });
  }

  private async toInput(id: string, body: AuthProviderBody, current?: AuthProvider): Promise<AuthProviderInput> {
    const checked = checkProviderBody(body, current);
    const network = { allowPrivateNetworks: this.options.allowPrivateNetworks };
    let clientSecretCiphertext: string | null = null;
    if (checked.oidc) {
      await checkProviderUrl(checked.oidc.issuerUrl, 'oidc.issuer_url', network);
      await this.checkOidcIssuer?.({ providerId: id, issuerUrl: checked.oidc.issuerUrl, clientId: checked.oidc.clientId, scopes: checked.oidc.scopes });
      if (checked.oidc.clientSecret !== null) {
        if (!this.options.secrets) {
          throw failedPrecondition('storing an OIDC client secret needs SSO_SECRETS_KEY in the server configuration (docs/sso.md)');
        }
        clientSecretCiphertext = this.options.secrets.seal(checked.oidc.clientSecret, id);
      } else {
        clientSecretCiphertext = current?.clientSecretCiphertext ?? null;
      }
    }
    if (checked.saml?.idpMetadataUrl) await checkProviderUrl(checked.saml.idpMetadataUrl, 'saml.idp_metadata_url', network);
    if (checked.saml?.idpMetadataXml) parseInlineMetadata(checked.saml.idpMetadataXml, this.options.allowPrivateNetworks);
    return {
      id,
      type: checked.type,
      displayName: checked.displayName,
      enabled: checked.enabled,
      defaultRole: checked.defaultRole,
      redirectUris: checked.redirectUris,
      oidc: checked.oidc ? { issuerUrl: checked.oidc.issuerUrl, clientId: checked.oidc.clientId, scopes: checked.oidc.scopes } : null,
      saml: checked.saml ? { ...checked.saml, spEntityId: checked.saml.spEntityId ?? ssoUrls(this.options.publicUrl).samlMetadata(id) } : null,
      clientSecretCiphertext,
    };
  }

  private record(provider: AuthProvider): AuthProviderRecord {
    return authProviderRecord(provider, this.options.publicUrl);
  }

  /** Never the secret: before/after are the answered record, which has none (docs/sso.md). */
  private async audit(tx: Repositories, principal: Principal, action: string, before: AuthProvider | null, after: AuthProvider | null): Promise<void> {
    const provider = after ?? before;
    if (!provider) return;
    await recordChange(tx, principal, {
      orgId: provider.orgId,
      action,
      resourceType: 'auth_provider',
      resourceId: provider.id,
      before: before && this.record(before),
      after: after && this.record(after),
    }, this.now());
  }
}

/** Parses pasted IdP metadata, naming the field in the message (REST shows the message only). */
function parseInlineMetadata(xml: string, allowHttp: boolean): void {
  const field = 'saml.idp_metadata_xml';
  try {
    parseIdpMetadata(xml, field, { allowHttp });
  } catch (error) {
    if (isDomainError(error) && error.code === 'INVALID_ARGUMENT') throw invalidArgument(`${field}: ${error.message}`, field);
    throw error;
  }
}
