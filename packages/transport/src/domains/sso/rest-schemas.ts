import { nonEmptyString } from '../../http/schemas.ts';

const url = { type: 'string', minLength: 1, maxLength: 2048 } as const;
const nullableText = (maxLength: number) => ({ type: ['string', 'null'], maxLength }) as const;
const nullableId = { type: ['string', 'null'], format: 'uuid' } as const;

/** A role binding (docs/access.md "Roles and bindings"); the services check the ids are the org's. */
const roleBinding = {
  type: 'object',
  required: ['role'],
  additionalProperties: false,
  properties: { role: { type: 'string', enum: ['viewer', 'editor', 'admin'] }, project_id: nullableId, environment_id: nullableId },
} as const;

/** Role bindings per identity-provider group (docs/sso.md "Group mapping"). Absent on update: kept. */
const groupBindings = {
  type: ['array', 'null'],
  maxItems: 100,
  items: {
    type: 'object',
    required: ['group', 'bindings'],
    additionalProperties: false,
    properties: {
      group: { type: 'string', minLength: 1, maxLength: 256 },
      bindings: { type: 'array', maxItems: 100, items: roleBinding },
    },
  },
} as const;

/**
 * An auth provider as written by an org admin (docs/sso.md "Providers"): `oidc` for an OpenID
 * Connect provider, `saml` for a SAML IdP. The services check the rest (exactly one metadata
 * source, addresses, the secret kept when an update leaves it out).
 */
export const authProviderBody = {
  type: 'object',
  required: ['display_name', 'redirect_uris'],
  additionalProperties: false,
  properties: {
    provider_type: { type: 'string', enum: ['oidc', 'saml'] },
    display_name: nonEmptyString,
    enabled: { type: ['boolean', 'null'] },
    default_role: { type: ['string', 'null'], enum: ['org_admin', 'org_member', null] },
    link_existing_accounts: { type: ['boolean', 'null'] },
    redirect_uris: { type: 'array', minItems: 1, maxItems: 20, items: url },
    group_bindings: groupBindings,
    oidc: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: {
        issuer_url: url,
        client_id: { type: 'string', minLength: 1, maxLength: 500 },
        client_secret: nullableText(2000),
        scopes: { type: ['array', 'null'], maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 100 } },
        groups_claim: nullableText(256),
      },
    },
    saml: {
      type: ['object', 'null'],
      additionalProperties: false,
      properties: {
        idp_metadata_url: { type: ['string', 'null'], maxLength: 2048 },
        idp_metadata_xml: nullableText(256 * 1024),
        name_id_format: nullableText(200),
        sp_entity_id: nullableText(1024),
        groups_attribute: nullableText(256),
      },
    },
  },
} as const;

/** A second admin's confirmation: optionally the `updated_at` of the record it reviewed. */
export const confirmProviderBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: { updated_at: { type: ['string', 'null'], format: 'date-time' } },
} as const;

/** The browser's start: where to return (a registered address) and the app's own state. */
export const ssoStartQuery = {
  type: 'object',
  required: ['redirect_uri'],
  properties: { redirect_uri: url, state: { type: 'string', maxLength: 512 } },
} as const;

export const signInOptionsQuery = {
  type: 'object',
  required: ['org_id', 'redirect_uri'],
  properties: { org_id: { type: 'string', format: 'uuid' }, redirect_uri: url },
} as const;

export const signInOptionsResponse = {
  type: 'object',
  required: ['providers'],
  properties: {
    providers: {
      type: 'array',
      items: {
        type: 'object',
        required: ['provider_id', 'display_name', 'provider_type'],
        properties: { provider_id: { type: 'string' }, display_name: { type: 'string' }, provider_type: { type: 'string', enum: ['oidc', 'saml'] } },
      },
    },
  },
} as const;

export const signInOptionParams = {
  type: 'object',
  required: ['provider_id'],
  properties: { provider_id: { type: 'string', format: 'uuid' } },
} as const;

export const signInOptionQuery = {
  type: 'object',
  required: ['redirect_uri'],
  properties: { redirect_uri: url },
} as const;

export const signInOptionResponse = {
  type: 'object',
  required: ['provider_id', 'display_name', 'provider_type', 'org_id', 'org_name'],
  properties: {
    provider_id: { type: 'string' },
    display_name: { type: 'string' },
    provider_type: { type: 'string', enum: ['oidc', 'saml'] },
    org_id: { type: 'string' },
    org_name: { type: 'string' },
  },
} as const;

/** What an OpenID provider sends back to the callback (RFC 6749 §4.1.2, RFC 9207's iss). */
export const oidcCallbackQuery = {
  type: 'object',
  required: ['state'],
  properties: {
    state: { type: 'string', minLength: 1, maxLength: 512 },
    code: { type: 'string', maxLength: 4096 },
    iss: { type: 'string', maxLength: 2048 },
    error: { type: 'string', maxLength: 256 },
    error_description: { type: 'string', maxLength: 2048 },
    error_uri: { type: 'string', maxLength: 2048 },
    session_state: { type: 'string', maxLength: 1024 },
  },
} as const;

/** The HTTP-POST binding's form fields (SAML bindings §3.5). */
export const samlAcsBody = {
  type: 'object',
  required: ['SAMLResponse', 'RelayState'],
  properties: {
    // base64 of at most 256 KiB of XML, with room for line breaks some IdPs add.
    SAMLResponse: { type: 'string', minLength: 1, maxLength: 400_000 },
    RelayState: { type: 'string', minLength: 1, maxLength: 512 },
  },
} as const;

export const ssoExchangeBody = {
  type: 'object',
  required: ['code'],
  properties: { code: { type: 'string', minLength: 1, maxLength: 200 } },
} as const;
