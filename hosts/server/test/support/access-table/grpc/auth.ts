import { unique } from '../../rest-client.ts';
import { NO_METADATA, rpc, type GrpcDescriptor } from '../grpc-descriptor.ts';
import { OWN_ORG, PUBLIC, SESSION, ORG, admin, freshIfAllowed, noTokens } from '../rest-descriptor.ts';
import { freshPendingProvider, freshProvider, providerBody } from '../fixtures.ts';
import type { Access } from '../types.ts';

/**
 * svc.auth.v1: credentials, logins and sessions take their credential in the message (none in the
 * metadata); the internal-port feeds (WatchCredentials, ChannelTokenKey) take none, reaching the
 * port being the permission; identity providers are org-admin business, never a token's.
 */

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const CREDENTIAL: Access = { kind: 'credential' };
const PROVIDERS = noTokens(admin('org'));
const grpcProvider = () => {
  const { oidc, ...rest } = providerBody();
  return { ...rest, oidc };
};

export const authRpcs: GrpcDescriptor[] = [
  rpc('svc.auth.v1.AuthService/ValidateCredential', CREDENTIAL, OWN_ORG, ({ principal }) => ({
    message: principal.bearer === undefined ? {} : { bearer_token: principal.bearer },
    metadata: NO_METADATA(),
  })),
  rpc('svc.auth.v1.AuthService/LoginWithPassword', PUBLIC, OWN_ORG, ({ world }) => ({
    message: { email: world.secondAdmin.email, password: world.secondAdmin.password },
    metadata: NO_METADATA(),
  }), 'OK', { checksPassword: true }),
  rpc('svc.auth.v1.AuthService/RefreshSession', PUBLIC, OWN_ORG, () => ({ message: { refresh_token: `unknown-${unique()}` }, metadata: NO_METADATA() }), 'UNAUTHENTICATED'),
  rpc('svc.auth.v1.AuthService/SwitchOrg', SESSION, OWN_ORG, async ({ world, principal }) => {
    const me = principal.bearer ? await world.client.get('/v1/auth/me', { token: principal.bearer }) : undefined;
    return { message: { current_token: principal.bearer ?? '', target_org_id: me?.body?.org_id ?? world.orgId }, metadata: NO_METADATA() };
  }),
  rpc('svc.auth.v1.AuthService/ListUserOrgs', SESSION, OWN_ORG, ({ principal }) => ({ message: { current_token: principal.bearer ?? '' }, metadata: NO_METADATA() })),
  rpc('svc.auth.v1.AuthService/WatchCredentials', PUBLIC, OWN_ORG, () => ({ message: {} })),
  rpc('svc.auth.v1.AuthService/ChannelTokenKey', PUBLIC, OWN_ORG, () => ({ message: {} })),

  rpc('svc.auth.v1.AuthProviderService/CreateAuthProvider', PROVIDERS, ORG, ({ world }) => ({ message: { org_id: world.orgId, provider: grpcProvider() } })),
  rpc('svc.auth.v1.AuthProviderService/ListAuthProviders', PROVIDERS, ORG, ({ world }) => ({ message: { org_id: world.orgId } })),
  rpc('svc.auth.v1.AuthProviderService/GetAuthProvider', PROVIDERS, ORG, ({ world, shared }) => ({ message: { org_id: world.orgId, provider_id: shared.providerId } })),
  rpc('svc.auth.v1.AuthProviderService/UpdateAuthProvider', PROVIDERS, ORG, async (c) => ({
    message: {
      org_id: c.world.orgId,
      provider_id: await freshIfAllowed(c, async (world) => (await freshProvider(world)).id, c.shared.providerId),
      provider: { ...grpcProvider(), display_name: `Renamed ${unique()}` },
    },
  })),
  rpc('svc.auth.v1.AuthProviderService/DeleteAuthProvider', PROVIDERS, ORG, async (c) => ({
    message: { org_id: c.world.orgId, provider_id: await freshIfAllowed(c, async (world) => (await freshProvider(world)).id, c.shared.providerId) },
  })),
  rpc('svc.auth.v1.AuthProviderService/ConfirmAuthProvider', PROVIDERS, ORG, async (c) => {
    const pending = c.allowed ? await freshPendingProvider(c.world) : c.shared.pendingProvider;
    return { message: { org_id: c.world.orgId, provider_id: pending.id, updated_at: pending.updated_at } };
  }),

  // Sign-in through an identity provider: the provider's answer is the proof; unknown ones for everyone.
  rpc('svc.auth.v1.OidcLoginService/OidcAuthorize', PUBLIC, OWN_ORG, ({ world }) => ({
    message: { provider_id: UNKNOWN_ID, org_id: world.orgId, redirect_uri: 'http://127.0.0.1/' },
    metadata: NO_METADATA(),
  }), 'NOT_FOUND'),
  rpc('svc.auth.v1.OidcLoginService/OidcCallback', PUBLIC, OWN_ORG, () => ({
    message: { provider_id: UNKNOWN_ID, code: 'c', state: `s-${unique()}`, redirect_uri: 'http://127.0.0.1/' },
    metadata: NO_METADATA(),
  }), 'UNAUTHENTICATED'),
  rpc('svc.auth.v1.SamlLoginService/SamlSsoInitiate', PUBLIC, OWN_ORG, ({ world }) => ({
    message: { provider_id: UNKNOWN_ID, org_id: world.orgId, acs_url: 'http://127.0.0.1/acs' },
    metadata: NO_METADATA(),
  }), 'NOT_FOUND'),
  rpc('svc.auth.v1.SamlLoginService/SamlAcsCallback', PUBLIC, OWN_ORG, () => ({
    message: { provider_id: UNKNOWN_ID, saml_response_b64: 'eA==', relay_state: `r-${unique()}` },
    metadata: NO_METADATA(),
  }), 'UNAUTHENTICATED'),
];
