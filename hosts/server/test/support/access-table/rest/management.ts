import { unique } from '../../rest-client.ts';
import { freshApiToken, freshDomain, freshInvitation, freshMember, freshPendingProvider, freshProvider, freshSdkKey, freshSigningSecret, freshWebhook, providerBody, webhookBody } from '../fixtures.ts';
import { ORG, OWN_ORG, PRODUCTION, PROJECT_P, STAGING, admin, freshIfAllowed, noTokens, rest, viewer, type RestDescriptor } from '../rest-descriptor.ts';

/**
 * /v1/management: projects and environments (project P), keys (staging) and signing secrets
 * (production), members, invitations, identity providers and domains (org level, never a token),
 * the org's change history.
 */

const orgPath = (orgId: string, rest = '') => `/v1/management/orgs/${orgId}${rest}`;
const MANAGE_MEMBERS = noTokens(admin('org'));
/** A system administrator invites into any org too (docs/decisions.md "Invitations"). */
const INVITE: typeof MANAGE_MEMBERS = { ...(MANAGE_MEMBERS as Extract<typeof MANAGE_MEMBERS, { kind: 'role' }>), systemAdmin: 'allowed' };

export const managementDescriptors: RestDescriptor[] = [
  rest('POST /v1/management/orgs/{org_id}/projects', admin('org'), ORG, 201, ({ world }) => ({ path: orgPath(world.orgId, '/projects'), body: { name: `acc-${unique()}` } })),
  rest('GET /v1/management/orgs/{org_id}/projects', viewer('anywhere'), ORG, 200, ({ world }) => ({ path: orgPath(world.orgId, '/projects') })),
  // The org comes from the caller's session: another org's admin creates one in its own org.
  rest('POST /v1/management/projects', admin('org'), OWN_ORG, 201, () => ({ path: '/v1/management/projects', body: { name: `acc-${unique()}` } })),
  rest('PATCH /v1/management/projects/{project_id}', admin('project'), PROJECT_P, 200, ({ world }) => ({ path: `/v1/management/projects/${world.projects.P}`, body: { client_visible_default: false } })),

  rest('POST /v1/management/orgs/{org_id}/users', noTokens(admin('org')), ORG, 201, ({ world }) => ({
    path: orgPath(world.orgId, '/users'),
    body: { email: `acc-${unique()}@example.com`, display_name: 'new member', password: `pw-${unique()}-secret` },
  })),
  rest('GET /v1/management/orgs/{org_id}/users', viewer('anywhere'), ORG, 200, ({ world }) => ({ path: orgPath(world.orgId, '/users') })),
  rest('POST /v1/management/users', noTokens(admin('org')), OWN_ORG, 201, () => ({
    path: '/v1/management/users',
    body: { email: `acc-${unique()}@example.com`, display_name: 'new member', password: `pw-${unique()}-secret` },
  })),
  // The shared member keeps its role (org_member to org_member): nothing to make fresh.
  rest('PATCH /v1/management/orgs/{org_id}/users/{user_id}', MANAGE_MEMBERS, ORG, 200, ({ world, shared }) => ({
    path: orgPath(world.orgId, `/users/${shared.memberId}`),
    body: { org_role: 'org_member' },
  })),
  rest('DELETE /v1/management/orgs/{org_id}/users/{user_id}', MANAGE_MEMBERS, ORG, 204, async (c) => ({ path: orgPath(c.world.orgId, `/users/${await freshIfAllowed(c, freshMember, c.shared.memberId)}`) })),
  rest('POST /v1/management/orgs/{org_id}/invitations', INVITE, ORG, 201, ({ world }) => ({ path: orgPath(world.orgId, '/invitations'), body: { email: `inv-${unique()}@example.com` } })),
  rest('GET /v1/management/orgs/{org_id}/invitations', INVITE, ORG, 200, ({ world }) => ({ path: orgPath(world.orgId, '/invitations') })),
  rest('DELETE /v1/management/orgs/{org_id}/invitations/{invitation_id}', INVITE, ORG, 204, async (c) => ({
    path: orgPath(c.world.orgId, `/invitations/${await freshIfAllowed(c, freshInvitation, c.shared.invitationId)}`),
  })),

  // Lifting protections that are not there: harmless to every other row (a critical staging would not be).
  rest('PATCH /v1/management/environments/{environment_id}', admin('environment'), PRODUCTION, 200, ({ world }) => ({
    path: `/v1/management/environments/${world.environments.production}`,
    body: { critical: false, require_comment: false },
  })),
  rest('POST /v1/management/projects/{project_id}/environments', admin('project'), PROJECT_P, 201, ({ world }) => ({
    path: `/v1/management/projects/${world.projects.P}/environments`,
    body: { name: `acc-${unique()}` },
  })),
  rest('GET /v1/management/projects/{project_id}/environments', viewer('project'), PROJECT_P, 200, ({ world }) => ({ path: `/v1/management/projects/${world.projects.P}/environments` })),

  rest('POST /v1/management/environments/{environment_id}/sdk-keys', admin('environment'), STAGING, 201, ({ world }) => ({ path: `/v1/management/environments/${world.environments.staging}/sdk-keys` })),
  rest('GET /v1/management/environments/{environment_id}/sdk-keys', viewer('environment'), STAGING, 200, ({ world }) => ({ path: `/v1/management/environments/${world.environments.staging}/sdk-keys` })),
  rest('PATCH /v1/management/environments/{environment_id}/sdk-keys/{sdk_key_id}', admin('environment'), STAGING, 200, ({ world, shared }) => ({
    path: `/v1/management/environments/${world.environments.staging}/sdk-keys/${shared.clientKeyId}`,
    body: { name: `acc-${unique()}` },
  })),
  rest('DELETE /v1/management/environments/{environment_id}/sdk-keys/{sdk_key_id}', admin('environment'), STAGING, 204, async (c) => ({
    path: `/v1/management/environments/${c.world.environments.staging}/sdk-keys/${await freshIfAllowed(c, freshSdkKey, c.shared.sdkKeyId)}`,
  })),
  rest('POST /v1/management/environments/{environment_id}/context-signing-secrets', admin('environment'), PRODUCTION, 201, ({ world }) => ({
    path: `/v1/management/environments/${world.environments.production}/context-signing-secrets`,
  })),
  // Listed as key management (sdk_key.create), not as a key list: admins of the environment.
  rest('GET /v1/management/environments/{environment_id}/context-signing-secrets', admin('environment'), PRODUCTION, 200, ({ world }) => ({
    path: `/v1/management/environments/${world.environments.production}/context-signing-secrets`,
  })),
  rest('DELETE /v1/management/environments/{environment_id}/context-signing-secrets/{kid}', admin('environment'), PRODUCTION, 204, async (c) => ({
    path: `/v1/management/environments/${c.world.environments.production}/context-signing-secrets/${await freshIfAllowed(c, freshSigningSecret, c.shared.kid)}`,
  })),

  // API tokens: org admins; a token never manages tokens (no escalation).
  rest('POST /v1/management/orgs/{org_id}/api-tokens', noTokens(admin('org')), ORG, 201, ({ world }) => ({ path: orgPath(world.orgId, '/api-tokens'), body: { name: `acc-${unique()}`, role: 'viewer' } })),
  rest('GET /v1/management/orgs/{org_id}/api-tokens', noTokens(admin('org')), ORG, 200, ({ world }) => ({ path: orgPath(world.orgId, '/api-tokens') })),
  rest('DELETE /v1/management/orgs/{org_id}/api-tokens/{token_id}', noTokens(admin('org')), ORG, 204, async (c) => ({
    path: orgPath(c.world.orgId, `/api-tokens/${await freshIfAllowed(c, async (world) => (await freshApiToken(world))!, c.shared.apiTokenId)}`),
  })),

  // Webhooks (docs/workflow.md "Webhooks"): webhook.manage, an org-level admin (org-wide admin tokens too).
  rest('POST /v1/management/orgs/{org_id}/webhooks', admin('org'), ORG, 201, ({ world }) => ({ path: orgPath(world.orgId, '/webhooks'), body: webhookBody() })),
  rest('GET /v1/management/orgs/{org_id}/webhooks', admin('org'), ORG, 200, ({ world }) => ({ path: orgPath(world.orgId, '/webhooks') })),
  rest('GET /v1/management/orgs/{org_id}/webhooks/{webhook_id}', admin('org'), ORG, 200, ({ world, shared }) => ({ path: orgPath(world.orgId, `/webhooks/${shared.webhookId}`) })),
  rest('PATCH /v1/management/orgs/{org_id}/webhooks/{webhook_id}', admin('org'), ORG, 200, ({ world, shared }) => ({ path: orgPath(world.orgId, `/webhooks/${shared.webhookId}`), body: { name: `acc ${unique()}` } })),
  rest('DELETE /v1/management/orgs/{org_id}/webhooks/{webhook_id}', admin('org'), ORG, 204, async (c) => ({ path: orgPath(c.world.orgId, `/webhooks/${await freshIfAllowed(c, freshWebhook, c.shared.webhookId)}`) })),
  rest('POST /v1/management/orgs/{org_id}/webhooks/{webhook_id}/rotate-secret', admin('org'), ORG, 200, ({ world, shared }) => ({ path: orgPath(world.orgId, `/webhooks/${shared.webhookId}/rotate-secret`) })),
  // Allowed: the attempt fails (nothing listens there), and the answer says so (200, status failed).
  rest('POST /v1/management/orgs/{org_id}/webhooks/{webhook_id}/test', admin('org'), ORG, 200, ({ world, shared }) => ({ path: orgPath(world.orgId, `/webhooks/${shared.webhookId}/test`) })),
  rest('GET /v1/management/orgs/{org_id}/webhooks/{webhook_id}/deliveries', admin('org'), ORG, 200, ({ world, shared }) => ({ path: orgPath(world.orgId, `/webhooks/${shared.webhookId}/deliveries`) })),
  rest('POST /v1/management/orgs/{org_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver', admin('org'), ORG, 200, ({ world, shared }) => ({
    path: orgPath(world.orgId, `/webhooks/${shared.webhookId}/deliveries/${shared.deliveryId}/redeliver`),
  })),

  // A member's bindings: org admins (a person may read its own; the shared member is nobody's self here).
  rest('GET /v1/management/orgs/{org_id}/members/{user_id}/role-bindings', MANAGE_MEMBERS, ORG, 200, ({ world, shared }) => ({ path: orgPath(world.orgId, `/members/${shared.memberId}/role-bindings`) })),
  rest('PUT /v1/management/orgs/{org_id}/members/{user_id}/role-bindings', MANAGE_MEMBERS, ORG, 200, ({ world, shared }) => ({
    path: orgPath(world.orgId, `/members/${shared.memberId}/role-bindings`),
    body: { bindings: [{ role: 'viewer', project_id: world.projects.Q }] },
  })),
  rest('DELETE /v1/management/orgs/{org_id}/members/{user_id}/role-bindings', MANAGE_MEMBERS, ORG, 200, ({ world, shared }) => ({ path: orgPath(world.orgId, `/members/${shared.memberId}/role-bindings`) })),

  // The org's change history is decided at org level (docs/access.md "Where the services check").
  rest('GET /v1/management/orgs/{org_id}/audit-log', viewer('org'), ORG, 200, ({ world }) => ({ path: orgPath(world.orgId, '/audit-log') })),

  rest('POST /v1/management/orgs/{org_id}/auth-providers', noTokens(admin('org')), ORG, 201, ({ world }) => ({ path: orgPath(world.orgId, '/auth-providers'), body: providerBody() })),
  rest('GET /v1/management/orgs/{org_id}/auth-providers', noTokens(admin('org')), ORG, 200, ({ world }) => ({ path: orgPath(world.orgId, '/auth-providers') })),
  rest('GET /v1/management/orgs/{org_id}/auth-providers/{provider_id}', noTokens(admin('org')), ORG, 200, ({ world, shared }) => ({ path: orgPath(world.orgId, `/auth-providers/${shared.providerId}`) })),
  rest('PUT /v1/management/orgs/{org_id}/auth-providers/{provider_id}', noTokens(admin('org')), ORG, 200, async (c) => ({
    path: orgPath(c.world.orgId, `/auth-providers/${await freshIfAllowed(c, async (world) => (await freshProvider(world)).id, c.shared.providerId)}`),
    body: { ...providerBody(), display_name: `Renamed ${unique()}` },
  })),
  rest('DELETE /v1/management/orgs/{org_id}/auth-providers/{provider_id}', noTokens(admin('org')), ORG, 204, async (c) => ({
    path: orgPath(c.world.orgId, `/auth-providers/${await freshIfAllowed(c, async (world) => (await freshProvider(world)).id, c.shared.providerId)}`),
  })),
  // Waiting for a second admin: asked by the org's second admin, so the org admin may confirm.
  rest('POST /v1/management/orgs/{org_id}/auth-providers/{provider_id}/confirm', noTokens(admin('org')), ORG, 200, async (c) => {
    const pending = c.allowed ? await freshPendingProvider(c.world) : c.shared.pendingProvider;
    return { path: orgPath(c.world.orgId, `/auth-providers/${pending.id}/confirm`), body: { updated_at: pending.updated_at } };
  }),

  rest('POST /v1/management/orgs/{org_id}/domains', noTokens(admin('org')), ORG, 201, ({ world }) => ({ path: orgPath(world.orgId, '/domains'), body: { domain: `acc-${unique()}.example.com` } })),
  rest('GET /v1/management/orgs/{org_id}/domains', noTokens(admin('org')), ORG, 200, ({ world }) => ({ path: orgPath(world.orgId, '/domains') })),
  // Allowed, the lookup runs and finds no TXT record (the test's DNS server has none): 409.
  rest('POST /v1/management/orgs/{org_id}/domains/{domain}/verify', noTokens(admin('org')), ORG, 409, ({ world, shared }) => ({ path: orgPath(world.orgId, `/domains/${shared.domain}/verify`) })),
  rest('DELETE /v1/management/orgs/{org_id}/domains/{domain}', noTokens(admin('org')), ORG, 204, async (c) => ({ path: orgPath(c.world.orgId, `/domains/${await freshIfAllowed(c, freshDomain, c.shared.domain)}`) })),
];
