import { invalidArgument, type AuthProvider, type AuthProviderType, type GroupBinding, type OidcSettings, type OrgRole, type SamlSettings } from '@switchyard/core';
import { optionalRole, requireName } from '../management/input-checks.ts';
import { checkClaimName, checkGroupBindings, type GroupBindingBody } from './group-bindings-input.ts';

/** A provider as written by an admin (REST body or gRPC message; "" and null mean absent). */
export interface AuthProviderBody {
  provider_type?: string | undefined;
  display_name?: string | undefined;
  enabled?: boolean | null | undefined;
  default_role?: string | null | undefined;
  link_existing_accounts?: boolean | null | undefined;
  redirect_uris?: string[] | undefined;
  oidc?: { issuer_url?: string; client_id?: string; client_secret?: string | null; scopes?: string[] | null; groups_claim?: string | null } | null | undefined;
  saml?:
    | { idp_metadata_url?: string | null; idp_metadata_xml?: string | null; name_id_format?: string | null; sp_entity_id?: string | null; groups_attribute?: string | null }
    | null
    | undefined;
  /** Absent (or null): an update keeps the stored mapping; [] removes it (docs/sso.md "Group mapping"). */
  group_bindings?: GroupBindingBody[] | null | undefined;
}

export const MAX_REDIRECT_URIS = 20;
const MAX_URL_LENGTH = 2_048;
const MAX_SCOPES = 20;
export const DEFAULT_OIDC_SCOPES = ['openid', 'email', 'profile'];
/** RFC 6749 §3.3 scope-token characters. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,100}$/;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The parts of a provider checked without I/O; network and metadata checks follow in the service. */
export interface CheckedProviderBody {
  type: AuthProviderType;
  displayName: string;
  enabled: boolean;
  defaultRole: OrgRole;
  linkExistingAccounts: boolean;
  redirectUris: string[];
  /** Ids not yet checked against the org (resolveGroupBindings does, with I/O); null: not given (an update keeps the stored one). */
  groupBindings: GroupBinding[] | null;
  oidc: (OidcSettings & { clientSecret: string | null }) | null;
  saml: Omit<SamlSettings, 'spEntityId'> & { spEntityId: string | null } | null;
}

const optional = (value: string | null | undefined): string | null => {
  const trimmed = (value ?? '').trim();
  return trimmed === '' ? null : trimmed;
};

function requireText(value: string | null | undefined, field: string, max: number): string {
  const text = optional(value);
  if (text === null) throw invalidArgument(`${field} is required`, field);
  if (text.length > max) throw invalidArgument(`${field} must be at most ${max} characters`, field);
  return text;
}

/**
 * A browser-flow return address: absolute, http(s), no credentials or fragment; plain http only
 * for loopback hosts (a developer's machine), as OAuth does for native apps. Matched exactly later.
 */
function checkRedirectUri(raw: string, field: string): string {
  if (raw.length > MAX_URL_LENGTH) throw invalidArgument(`${field} must be at most ${MAX_URL_LENGTH} characters`, field);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalidArgument(`${field} must be an absolute URL`, field);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    throw invalidArgument(`${field} must use https (http only for localhost)`, field);
  }
  if (url.username !== '' || url.password !== '' || url.hash !== '' || raw.includes('#')) {
    throw invalidArgument(`${field} must not contain credentials or a fragment`, field);
  }
  return raw;
}

/**
 * Checks a provider body. On update, `current` supplies the type (which cannot change) and
 * keeps the stored client secret when none is given.
 */
export function checkProviderBody(body: AuthProviderBody, current?: AuthProvider): CheckedProviderBody {
  // PostgreSQL text and jsonb cannot hold U+0000 (JSON.stringify writes it as an escape).
  if (JSON.stringify(body).includes('\\u0000')) throw invalidArgument('the provider settings must not contain U+0000 characters');
  const typeGiven = optional(body.provider_type);
  if (typeGiven !== null && typeGiven !== 'oidc' && typeGiven !== 'saml') throw invalidArgument('provider_type must be oidc or saml', 'provider_type');
  if (current && typeGiven !== null && typeGiven !== current.type) {
    throw invalidArgument('provider_type cannot change; create another provider instead', 'provider_type');
  }
  const type = (typeGiven ?? current?.type) as AuthProviderType | undefined;
  if (type === undefined) throw invalidArgument('provider_type is required (oidc or saml)', 'provider_type');

  const uris = body.redirect_uris ?? [];
  if (!Array.isArray(uris) || uris.length === 0) throw invalidArgument('redirect_uris needs at least one address', 'redirect_uris');
  if (uris.length > MAX_REDIRECT_URIS) throw invalidArgument(`redirect_uris holds at most ${MAX_REDIRECT_URIS} addresses`, 'redirect_uris');
  const redirectUris = [...new Set(uris.map((uri, i) => checkRedirectUri(String(uri), `redirect_uris[${i}]`)))];

  const checked: CheckedProviderBody = {
    type,
    displayName: requireName(body.display_name, 'display_name'),
    enabled: body.enabled ?? true,
    defaultRole: optionalRole(body.default_role, 'org_member'),
    // Absent: on, as every provider linked before the setting existed (docs/sso.md "Accounts").
    linkExistingAccounts: body.link_existing_accounts ?? true,
    redirectUris,
    groupBindings: checkGroupBindings(body.group_bindings),
    oidc: null,
    saml: null,
  };
  if (type === 'oidc') {
    if (body.saml) throw invalidArgument('an oidc provider takes oidc settings, not saml', 'saml');
    const oidc = body.oidc;
    if (!oidc) throw invalidArgument('oidc settings are required', 'oidc');
    const scopes = (oidc.scopes ?? []).map((scope) => String(scope).trim()).filter((scope) => scope !== '');
    if (scopes.length > MAX_SCOPES) throw invalidArgument(`oidc.scopes holds at most ${MAX_SCOPES} scopes`, 'oidc.scopes');
    for (const scope of scopes) if (!SCOPE_TOKEN.test(scope)) throw invalidArgument(`oidc.scopes has an invalid scope: ${JSON.stringify(scope.slice(0, 100))}`, 'oidc.scopes');
    const clientSecret = optional(oidc.client_secret);
    if (clientSecret === null && !current?.clientSecretCiphertext) throw invalidArgument('oidc.client_secret is required', 'oidc.client_secret');
    if (clientSecret !== null && clientSecret.length > 2_000) throw invalidArgument('oidc.client_secret must be at most 2000 characters', 'oidc.client_secret');
    const issuerUrl = requireText(oidc.issuer_url, 'oidc.issuer_url', MAX_URL_LENGTH);
    const clientId = requireText(oidc.client_id, 'oidc.client_id', 500);
    // The stored secret was given for one issuer and client: kept for another, it would be sent
    // to whatever the new issuer_url names (docs/sso.md "Security").
    if (clientSecret === null && current?.oidc && (issuerUrl !== current.oidc.issuerUrl || clientId !== current.oidc.clientId)) {
      throw invalidArgument('oidc.client_secret is required when oidc.issuer_url or oidc.client_id changes: the stored secret is sent only to the issuer it was saved for', 'oidc.client_secret');
    }
    checked.oidc = {
      issuerUrl,
      clientId,
      // None given: what sign-in needs (the subject, the email and whether it is verified, a name).
      scopes: [...new Set(['openid', ...(scopes.length === 0 ? DEFAULT_OIDC_SCOPES : scopes)])],
      groupsClaim: checkClaimName(oidc.groups_claim, 'oidc.groups_claim', current?.oidc?.groupsClaim),
      clientSecret,
    };
  } else {
    if (body.oidc) throw invalidArgument('a saml provider takes saml settings, not oidc', 'oidc');
    const saml = body.saml;
    if (!saml) throw invalidArgument('saml settings are required', 'saml');
    const metadataUrl = optional(saml.idp_metadata_url);
    const metadataXml = optional(saml.idp_metadata_xml);
    if ((metadataUrl === null) === (metadataXml === null)) {
      throw invalidArgument('saml needs exactly one of idp_metadata_url and idp_metadata_xml', 'saml.idp_metadata_url');
    }
    if (metadataUrl !== null && metadataUrl.length > MAX_URL_LENGTH) {
      throw invalidArgument(`saml.idp_metadata_url must be at most ${MAX_URL_LENGTH} characters`, 'saml.idp_metadata_url');
    }
    const spEntityId = optional(saml.sp_entity_id);
    if (spEntityId !== null && spEntityId.length > 1_024) throw invalidArgument('saml.sp_entity_id must be at most 1024 characters', 'saml.sp_entity_id');
    const nameIdFormat = optional(saml.name_id_format);
    if (nameIdFormat !== null && nameIdFormat.length > 200) throw invalidArgument('saml.name_id_format must be at most 200 characters', 'saml.name_id_format');
    const groupsAttribute = checkClaimName(saml.groups_attribute, 'saml.groups_attribute', current?.saml?.groupsAttribute);
    checked.saml = { idpMetadataUrl: metadataUrl, idpMetadataXml: metadataXml, nameIdFormat, spEntityId, groupsAttribute };
  }
  return checked;
}
