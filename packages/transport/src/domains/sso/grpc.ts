import type * as grpc from '@grpc/grpc-js';
import type { AuthProviderBody, AuthProviderRecord, AuthProviderService, CredentialVerifier, SsoLoginService } from '@switchyard/services';
import { authenticateCall } from '../../grpc/grpc-credentials.ts';
import { unary } from '../../grpc/grpc-errors.ts';
import { loadProto, lookup } from '../../grpc/proto.ts';
import type { Logger } from '../../logging.ts';
import { loginResponse } from '../auth/grpc.ts';

const SSO_PROTO = loadProto('svc/auth/v1/sso.proto');
const definition = (name: string) => lookup<grpc.ServiceClientConstructor>(SSO_PROTO, `svc.auth.v1.${name}`).service;

type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;

interface OidcSettingsMessage {
  issuer_url: string;
  client_id: string;
  client_secret: string;
  scopes: string[];
  groups_claim: string;
}
interface SamlSettingsMessage {
  idp_metadata_url: string;
  idp_metadata_xml: string;
  name_id_format: string;
  sp_entity_id: string;
  groups_attribute: string;
}
interface RoleBindingMessage {
  role: string;
  project_id: string;
  environment_id: string;
}
interface AuthProviderInputMessage {
  provider_type: string;
  display_name: string;
  disabled: boolean;
  default_role: string;
  redirect_uris: string[];
  oidc: OidcSettingsMessage | null;
  saml: SamlSettingsMessage | null;
  no_account_linking: boolean;
  group_bindings: { entries: Array<{ group: string; bindings: RoleBindingMessage[] }> } | null;
}

/** proto3 has no absent strings: "" means not given, which the services' checks understand. */
const bodyOf = (input: AuthProviderInputMessage | null): AuthProviderBody => ({
  provider_type: input?.provider_type,
  display_name: input?.display_name,
  enabled: !(input?.disabled ?? false),
  default_role: input?.default_role,
  link_existing_accounts: !(input?.no_account_linking ?? false),
  redirect_uris: input?.redirect_uris ?? [],
  oidc: input?.oidc ?? null,
  saml: input?.saml ?? null,
  // Unset message: keep the stored mapping; "" ids are absent (the services' checks understand).
  group_bindings: input?.group_bindings ? input.group_bindings.entries : null,
});

/** The record as a message; the secret is not in the record, so it cannot be answered. */
const providerMessage = (record: AuthProviderRecord) => ({
  ...record,
  last_used_at: record.last_used_at ?? '',
  enable_requested_by: record.enable_requested_by && { ...record.enable_requested_by, email: record.enable_requested_by.email ?? '' },
  created_by: record.created_by && { ...record.created_by, email: record.created_by.email ?? '' },
  updated_by: record.updated_by && { ...record.updated_by, email: record.updated_by.email ?? '' },
  acs_url: record.acs_url ?? '',
  oidc: record.oidc ?? null,
  group_bindings: record.group_bindings,
  saml: record.saml
    ? {
        ...record.saml,
        idp_metadata_url: record.saml.idp_metadata_url ?? '',
        idp_metadata_xml: record.saml.idp_metadata_xml ?? '',
        name_id_format: record.saml.name_id_format ?? '',
        idp_sso_url: record.saml.idp_sso_url ?? '',
      }
    : null,
});

/**
 * svc.auth.v1 AuthProviderService, OidcLoginService and SamlLoginService on the internal gRPC
 * port (proto/svc/auth/v1/sso.proto), over the same services as the REST routes.
 */
export function addSsoGrpcServices(
  server: grpc.Server,
  deps: { authProviders: AuthProviderService; sso: SsoLoginService; verifier: CredentialVerifier; logger: Logger },
): void {
  const { authProviders, sso, verifier, logger } = deps;
  const caller = (call: Call<unknown>) => authenticateCall(verifier, call.metadata, 'bearer');

  server.addService(definition('AuthProviderService'), {
    createAuthProvider: unary(logger, async (call: Call<{ org_id: string; provider: AuthProviderInputMessage | null }>) =>
      providerMessage(await authProviders.create(await caller(call), call.request.org_id, bodyOf(call.request.provider))),
    ),
    listAuthProviders: unary(logger, async (call: Call<{ org_id: string }>) => ({
      providers: (await authProviders.list(await caller(call), call.request.org_id)).map(providerMessage),
    })),
    getAuthProvider: unary(logger, async (call: Call<{ org_id: string; provider_id: string }>) =>
      providerMessage(await authProviders.get(await caller(call), call.request.org_id, call.request.provider_id)),
    ),
    updateAuthProvider: unary(logger, async (call: Call<{ org_id: string; provider_id: string; provider: AuthProviderInputMessage | null }>) =>
      providerMessage(await authProviders.update(await caller(call), call.request.org_id, call.request.provider_id, bodyOf(call.request.provider))),
    ),
    confirmAuthProvider: unary(logger, async (call: Call<{ org_id: string; provider_id: string; updated_at: string }>) =>
      providerMessage(
        await authProviders.confirm(await caller(call), call.request.org_id, call.request.provider_id, { updated_at: call.request.updated_at || null }),
      ),
    ),
    deleteAuthProvider: unary(logger, async (call: Call<{ org_id: string; provider_id: string }>) => {
      await authProviders.delete(await caller(call), call.request.org_id, call.request.provider_id);
      return { provider_id: call.request.provider_id };
    }),
  });

  server.addService(definition('OidcLoginService'), {
    oidcAuthorize: unary(logger, async (call: Call<{ provider_id: string; org_id: string; redirect_uri: string }>) => {
      const { redirectUrl } = await sso.oidcAuthorize({ providerId: call.request.provider_id, orgId: call.request.org_id, redirectUri: call.request.redirect_uri });
      return { redirect_url: redirectUrl };
    }),
    oidcCallback: unary(logger, async (call: Call<{ provider_id: string; code: string; state: string; redirect_uri: string; iss: string }>) => {
      const { provider_id, code, state, redirect_uri, iss } = call.request;
      return loginResponse(await sso.oidcCallback({ providerId: provider_id, code, state, redirectUri: redirect_uri, iss }));
    }),
  });

  server.addService(definition('SamlLoginService'), {
    samlSsoInitiate: unary(logger, async (call: Call<{ provider_id: string; org_id: string; acs_url: string }>) => {
      const { redirectUrl, relayState } = await sso.samlInitiate({ providerId: call.request.provider_id, orgId: call.request.org_id, acsUrl: call.request.acs_url });
      return { redirect_url: redirectUrl, relay_state: relayState };
    }),
    samlAcsCallback: unary(logger, async (call: Call<{ provider_id: string; saml_response_b64: string; relay_state: string }>) => {
      const { provider_id, saml_response_b64, relay_state } = call.request;
      return loginResponse(await sso.samlAcs({ providerId: provider_id, samlResponseB64: saml_response_b64, relayState: relay_state }));
    }),
  });
}
