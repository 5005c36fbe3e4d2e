import type { AuthProvider, Author } from '@switchyard/core';
import { parseIdpMetadata } from './saml-metadata.ts';
import { type RoleBindingRecord } from '../role-bindings/role-binding-records.ts';
import { DEFAULT_GROUPS_CLAIM, groupBindingRecords } from './group-bindings-input.ts';
import { ssoUrls } from './sso-options.ts';

/**
 * The auth provider record of docs/sso.md "Providers", for REST and gRPC: the contract's record plus
 * `default_role`, `redirect_uris`, and the addresses to register at the identity provider.
 * The client secret never appears: `client_secret_set` says whether one is stored.
 */
export interface AuthProviderRecord {
  id: string;
  org_id: string;
  provider_type: AuthProvider['type'];
  display_name: string;
  enabled: boolean;
  /** `pending_confirmation`: enabled by one admin, waiting for another's confirmation (not usable yet). */
  status: 'enabled' | 'disabled' | 'pending_confirmation';
  default_role: AuthProvider['defaultRole'];
  link_existing_accounts: boolean;
  redirect_uris: string[];
  /** Role bindings per identity-provider group, applied at each sign-in of an org_member (docs/sso.md "Group mapping"). */
  group_bindings: Array<{ group: string; bindings: RoleBindingRecord[] }>;
  /** Who asked to enable it, while `status` is `pending_confirmation`. */
  enable_requested_by: AuthorRecord | null;
  /** Null for providers saved before authors were recorded. */
  created_by: AuthorRecord | null;
  updated_by: AuthorRecord | null;
  /** When it last opened a session (null: never). */
  last_used_at: string | null;
  created_at: string;
  updated_at: string;
  /** Where a browser starts signing in through this provider. */
  start_url: string;
  /** SAML only: the assertion consumer service address to register at the IdP. */
  acs_url?: string;
  oidc?: { issuer_url: string; client_id: string; scopes: string[]; client_secret_set: boolean; callback_url: string; groups_claim: string };
  saml?: {
    idp_metadata_url: string | null;
    idp_metadata_xml: string | null;
    name_id_format: string | null;
    sp_entity_id: string;
    /** The assertion attribute read for the person's groups. */
    groups_attribute: string;
    acs_url: string;
    sp_metadata_url: string;
    /**
     * Where the start sends browsers (the IdP's HTTP-Redirect SingleSignOnService), read from the
     * pasted metadata; null when the metadata is fetched from its address at sign-in.
     */
    idp_sso_url: string | null;
  };
}

/** The pasted metadata's sign-in address (it was parsed when saved; http only if it was allowed then). */
function ssoUrlOf(xml: string | null): string | null {
  if (xml === null) return null;
  try {
    return parseIdpMetadata(xml, 'saml.idp_metadata_xml', { allowHttp: true }).ssoRedirectUrl;
  } catch {
    return null;
  }
}

/** An account that wrote something, with its email as it was when it wrote. */
export interface AuthorRecord {
  user_id: string;
  email: string | null;
}

const iso = (ms: number): string => new Date(ms).toISOString();

export const authorRecord = (author: Author | null): AuthorRecord | null => (author ? { user_id: author.userId, email: author.email } : null);

/** What the record's `status` says about the provider. */
export const providerStatus = (provider: Pick<AuthProvider, 'enabled' | 'enableRequestedBy'>): AuthProviderRecord['status'] =>
  provider.enabled ? 'enabled' : provider.enableRequestedBy ? 'pending_confirmation' : 'disabled';

export function authProviderRecord(provider: AuthProvider, publicUrl: string): AuthProviderRecord {
  const urls = ssoUrls(publicUrl);
  const record: AuthProviderRecord = {
    id: provider.id,
    org_id: provider.orgId,
    provider_type: provider.type,
    display_name: provider.displayName,
    enabled: provider.enabled,
    status: providerStatus(provider),
    default_role: provider.defaultRole,
    link_existing_accounts: provider.linkExistingAccounts,
    redirect_uris: [...provider.redirectUris],
    group_bindings: groupBindingRecords(provider.groupBindings),
    enable_requested_by: authorRecord(provider.enableRequestedBy),
    created_by: authorRecord(provider.createdBy),
    updated_by: authorRecord(provider.updatedBy),
    last_used_at: provider.lastUsedAtMs === null ? null : iso(provider.lastUsedAtMs),
    created_at: iso(provider.createdAtMs),
    updated_at: iso(provider.updatedAtMs),
    start_url: urls.start(provider.id),
  };
  if (provider.oidc) {
    record.oidc = {
      issuer_url: provider.oidc.issuerUrl,
      client_id: provider.oidc.clientId,
      scopes: [...provider.oidc.scopes],
      client_secret_set: provider.clientSecretCiphertext !== null,
      callback_url: urls.oidcCallback,
      groups_claim: provider.oidc.groupsClaim ?? DEFAULT_GROUPS_CLAIM,
    };
  }
  if (provider.saml) {
    record.acs_url = urls.samlAcs;
    record.saml = {
      idp_metadata_url: provider.saml.idpMetadataUrl,
      idp_metadata_xml: provider.saml.idpMetadataXml,
      name_id_format: provider.saml.nameIdFormat,
      sp_entity_id: provider.saml.spEntityId,
      groups_attribute: provider.saml.groupsAttribute ?? DEFAULT_GROUPS_CLAIM,
      acs_url: urls.samlAcs,
      sp_metadata_url: urls.samlMetadata(provider.id),
      idp_sso_url: ssoUrlOf(provider.saml.idpMetadataXml),
    };
  }
  return record;
}
