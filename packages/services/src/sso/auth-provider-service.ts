import { randomUUID } from 'node:crypto';
import {
  failedPrecondition,
  invalidArgument,
  isDomainError,
  permissionDenied,
  type AuthProvider,
  type AuthProviderInput,
  type Author,
  type ChangeNotifier,
  type Principal,
  type Repositories,
} from '@switchyard/core';
import { requireAllowed, requireStillOrgAdmin } from '../authorization.ts';
import { recordChange } from '../audit/audit-trail.ts';
import { announceSessionChanges } from '../auth/session-registry.ts';
import { changesTrust, enableState } from './provider-confirmation.ts';
import { checkProviderBody, type AuthProviderBody } from './provider-input.ts';
import { DEFAULT_GROUPS_CLAIM, resolveGroupBindings } from './group-bindings-input.ts';
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
 * The OIDC client secret is sealed before it is stored and is never answered. Every write records
 * its author; enabling a provider that grants org_admin or links existing accounts takes a second
 * admin when the org has one (docs/sso.md "Confirmation"); a provider that stops being enabled, or
 * is deleted, ends the sessions it opened on every instance.
 */
export class AuthProviderService {
  private readonly now: () => number;
  private readonly checkOidcIssuer: ((settings: { providerId: string; issuerUrl: string; clientId: string; scopes: string[] }) => Promise<void>) | undefined;

  /**
   * `checks.oidcIssuer`: what saving an OIDC provider asks of its issuer beyond the address rules
   * (createSsoServices passes OidcFlows.checkAuthorizationEndpointOnSave).
   */
  constructor(
    private readonly repos: Pick<Repositories, 'authProviders' | 'users' | 'sessions' | 'unitOfWork' | 'projects' | 'environments'>,
    private readonly options: SsoOptions,
    private readonly notifier: ChangeNotifier,
    checks: { now?: () => number; oidcIssuer?: AuthProviderService['checkOidcIssuer'] } = {},
  ) {
    this.now = checks.now ?? Date.now;
    this.checkOidcIssuer = checks.oidcIssuer;
  }

  async create(principal: Principal, orgId: string, body: AuthProviderBody): Promise<AuthProviderRecord> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    const writer = await this.authorOf(principal);
    const id = randomUUID();
    const input = await this.withEnableState(orgId, await this.toInput(orgId, id, body, writer), writer);
    const provider = await this.repos.unitOfWork.run(async (tx) => {
      await requireStillOrgAdmin(tx, principal, orgId);
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

  /**
   * Replaces the provider's settings; a missing client secret keeps the stored one (unless the
   * issuer or client id changes). A provider that stops being enabled ends the sessions it opened.
   */
  async update(principal: Principal, orgId: string, providerId: string, body: AuthProviderBody): Promise<AuthProviderRecord> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    const writer = await this.authorOf(principal);
    const current = await this.repos.authProviders.get({ orgId }, providerId);
    const input = await this.withEnableState(orgId, await this.toInput(orgId, providerId, body, writer, current), writer, current);
    const { provider, endedFor } = await this.repos.unitOfWork.run(async (tx) => {
      await requireStillOrgAdmin(tx, principal, orgId);
      const updated = await tx.authProviders.update({ orgId }, input);
      await this.audit(tx, principal, 'auth_provider.update', current, updated);
      const ended = current.enabled && !updated.enabled ? await tx.sessions.endOpenedBy([providerId], this.now()) : [];
      return { provider: updated, endedFor: ended };
    });
    await announceSessionChanges(this.notifier, endedFor);
    return this.record(provider);
  }

  /**
   * A second org admin enables a provider waiting for confirmation (docs/sso.md "Confirmation").
   * `updatedAt`, when given, must be the record's `updated_at` the admin reviewed.
   * @throws PERMISSION_DENIED for the admin who asked; FAILED_PRECONDITION when the provider does
   * not wait for confirmation, or changed since `updatedAt`.
   */
  async confirm(principal: Principal, orgId: string, providerId: string, body: { updated_at?: string | null | undefined } = {}): Promise<AuthProviderRecord> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    const current = await this.repos.authProviders.get({ orgId }, providerId);
    const requester = current.enableRequestedBy;
    if (!requester) throw failedPrecondition('this identity provider is not waiting for confirmation');
    if (principal.kind !== 'user' || requester.userId === principal.userId) {
      throw permissionDenied('another org admin must confirm: the admin who enabled the provider cannot');
    }
    const reviewed = body.updated_at ?? null;
    // REST checks the format at the edge; gRPC strings arrive as they were sent.
    if (reviewed !== null && Number.isNaN(Date.parse(reviewed))) throw invalidArgument('updated_at must be an RFC 3339 date-time', 'updated_at');
    if (reviewed !== null && Date.parse(reviewed) !== current.updatedAtMs) {
      throw failedPrecondition('the provider changed since updated_at; review it again');
    }
    const provider = await this.repos.unitOfWork.run(async (tx) => {
      await requireStillOrgAdmin(tx, principal, orgId);
      const confirmed = await tx.authProviders.confirmEnable({ orgId }, providerId, { requestedByUserId: requester.userId, updatedAtMs: current.updatedAtMs });
      if (!confirmed) throw failedPrecondition('the provider changed while being confirmed; review it again');
      await this.audit(tx, principal, 'auth_provider.confirm', current, confirmed, { requested_by: requester.userId });
      return confirmed;
    });
    return this.record(provider);
  }

  /** Deletes the provider and ends the sessions it opened, on every instance. */
  async delete(principal: Principal, orgId: string, providerId: string): Promise<void> {
    requireAllowed(principal, 'auth_provider.manage', { orgId });
    const endedFor = await this.repos.unitOfWork.run(async (tx) => {
      // The org first, as every provider write and a removal take it (one lock order).
      await requireStillOrgAdmin(tx, principal, orgId);
      const provider = await tx.authProviders.get({ orgId }, providerId);
      await tx.authProviders.delete({ orgId }, providerId);
      await this.audit(tx, principal, 'auth_provider.delete', provider, null);
      return tx.sessions.endOpenedBy([providerId], this.now());
    });
    await announceSessionChanges(this.notifier, endedFor);
  }

  /** The caller as an author: its user id, and its email as it is now. */
  private async authorOf(principal: Principal): Promise<Author> {
    if (principal.kind !== 'user') throw permissionDenied('only an org admin manages identity providers');
    return { userId: principal.userId, email: (await this.repos.users.getById(principal.userId))?.email ?? null };
  }

  private async withEnableState(orgId: string, input: AuthProviderInput, writer: Author, current?: AuthProvider): Promise<AuthProviderInput> {
    const unchangedLiveProvider = current !== undefined && current.enabled && !changesTrust(current, input);
    const orgAdmins = input.enabled ? (await this.repos.users.listOrgUsers({ orgId })).filter(({ membership }) => membership.role === 'org_admin').length : 0;
    return { ...input, ...enableState({ requested: input.enabled, next: input, unchangedLiveProvider, orgAdmins, writer }) };
  }

  private async toInput(orgId: string, id: string, body: AuthProviderBody, writer: Author, current?: AuthProvider): Promise<AuthProviderInput> {
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
      linkExistingAccounts: checked.linkExistingAccounts,
      redirectUris: checked.redirectUris,
      // Not given: the stored mapping stays as it is (not checked again: a deleted project's binding just matches nothing).
      groupBindings: checked.groupBindings === null ? (current?.groupBindings ?? []) : await resolveGroupBindings(this.repos, orgId, checked.groupBindings),
      oidc: checked.oidc
        ? { issuerUrl: checked.oidc.issuerUrl, clientId: checked.oidc.clientId, scopes: checked.oidc.scopes, groupsClaim: checked.oidc.groupsClaim ?? DEFAULT_GROUPS_CLAIM }
        : null,
      saml: checked.saml ? { ...checked.saml, spEntityId: checked.saml.spEntityId ?? ssoUrls(this.options.publicUrl).samlMetadata(id) } : null,
      clientSecretCiphertext,
      enableRequestedBy: null,
      updatedBy: writer,
    };
  }

  private record(provider: AuthProvider): AuthProviderRecord {
    return authProviderRecord(provider, this.options.publicUrl);
  }

  /** Never the secret: before/after are the answered record, which has none (docs/sso.md). */
  private async audit(
    tx: Repositories,
    principal: Principal,
    action: string,
    before: AuthProvider | null,
    after: AuthProvider | null,
    details?: Record<string, unknown>,
  ): Promise<void> {
    const provider = after ?? before;
    if (!provider) return;
    await recordChange(tx, principal, {
      orgId: provider.orgId,
      action,
      resourceType: 'auth_provider',
      resourceId: provider.id,
      before: before && this.record(before),
      after: after && this.record(after),
      ...(details ? { details } : {}),
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
