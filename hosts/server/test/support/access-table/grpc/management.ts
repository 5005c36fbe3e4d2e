import { unique } from '../../rest-client.ts';
import { freshApiToken, freshSdkKey, freshSigningSecret, freshWebhook } from '../fixtures.ts';
import { rpc, type GrpcDescriptor } from '../grpc-descriptor.ts';
import type { Access } from '../types.ts';
import { ORG, PRODUCTION, PROJECT_P, STAGING, SYSTEM, admin, freshIfAllowed, noTokens, viewer } from '../rest-descriptor.ts';

/** svc.management.v1: the same decisions as the REST management routes, over the internal port. */
export const managementRpcs: GrpcDescriptor[] = [
  // Webhooks (docs/workflow.md "Webhooks"): webhook.manage, as on REST.
  rpc('svc.management.v1.WebhookService/CreateWebhook', admin('org'), ORG, ({ world }) => ({ message: { org_id: world.orgId, name: `acc ${unique()}`, url: 'http://127.0.0.1:9/hook', event_types: ['flag.*'] } })),
  rpc('svc.management.v1.WebhookService/ListWebhooks', admin('org'), ORG, ({ world }) => ({ message: { org_id: world.orgId } })),
  rpc('svc.management.v1.WebhookService/GetWebhook', admin('org'), ORG, ({ world, shared }) => ({ message: { org_id: world.orgId, webhook_id: shared.webhookId } })),
  rpc('svc.management.v1.WebhookService/UpdateWebhook', admin('org'), ORG, ({ world, shared }) => ({ message: { org_id: world.orgId, webhook_id: shared.webhookId, update_fields: ['name'], name: `acc ${unique()}` } })),
  rpc('svc.management.v1.WebhookService/DeleteWebhook', admin('org'), ORG, async (c) => ({ message: { org_id: c.world.orgId, webhook_id: await freshIfAllowed(c, freshWebhook, c.shared.webhookId) } })),
  rpc('svc.management.v1.WebhookService/RotateWebhookSecret', admin('org'), ORG, ({ world, shared }) => ({ message: { org_id: world.orgId, webhook_id: shared.webhookId } })),
  rpc('svc.management.v1.WebhookService/TestWebhook', admin('org'), ORG, ({ world, shared }) => ({ message: { org_id: world.orgId, webhook_id: shared.webhookId } })),
  rpc('svc.management.v1.WebhookService/ListWebhookDeliveries', admin('org'), ORG, ({ world, shared }) => ({ message: { org_id: world.orgId, webhook_id: shared.webhookId } })),
  rpc('svc.management.v1.WebhookService/RedeliverWebhookDelivery', admin('org'), ORG, ({ world, shared }) => ({ message: { org_id: world.orgId, webhook_id: shared.webhookId, delivery_id: shared.deliveryId } })),
  rpc('svc.management.v1.ManagementService/CreateOrg', SYSTEM, ORG, () => ({ message: { name: `acc-org-${unique()}` } })),
  rpc('svc.management.v1.ManagementService/ListOrgs', SYSTEM, ORG, () => ({ message: {} })),
  rpc('svc.management.v1.ManagementService/CreateProject', admin('org'), ORG, ({ world }) => ({ message: { org_id: world.orgId, name: `acc-${unique()}` } })),
  rpc('svc.management.v1.ManagementService/ListProjects', viewer('anywhere'), ORG, ({ world }) => ({ message: { org_id: world.orgId } })),
  rpc('svc.management.v1.ManagementService/UpdateProject', admin('project'), PROJECT_P, ({ world }) => ({ message: { project_id: world.projects.P, client_visible_default: false } })),
  rpc('svc.management.v1.ManagementService/CreateEnvironment', admin('project'), PROJECT_P, ({ world }) => ({ message: { project_id: world.projects.P, name: `acc-${unique()}` } })),
  rpc('svc.management.v1.ManagementService/UpdateEnvironment', admin('environment'), PRODUCTION, ({ world }) => ({ message: { environment_id: world.environments.production, critical: false } })),
  rpc('svc.management.v1.ManagementService/CreateApiToken', noTokens(admin('org')), ORG, ({ world }) => ({ message: { org_id: world.orgId, name: `acc-${unique()}`, role: 'viewer' } })),
  rpc('svc.management.v1.ManagementService/ListApiTokens', noTokens(admin('org')), ORG, ({ world }) => ({ message: { org_id: world.orgId } })),
  rpc('svc.management.v1.ManagementService/DeleteApiToken', noTokens(admin('org')), ORG, async (c) => ({
    message: { org_id: c.world.orgId, api_token_id: await freshIfAllowed(c, async (world) => (await freshApiToken(world))!, c.shared.apiTokenId) },
  })),
  rpc('svc.management.v1.ManagementService/GetRoleBindings', noTokens(admin('org')), ORG, ({ world, shared }) => ({ message: { org_id: world.orgId, user_id: shared.memberId } })),
  rpc('svc.management.v1.ManagementService/SetRoleBindings', noTokens(admin('org')), ORG, ({ world, shared }) => ({
    message: { org_id: world.orgId, user_id: shared.memberId, bindings: [{ role: 'viewer', project_id: world.projects.Q }] },
  })),
  rpc('svc.management.v1.ManagementService/ResetRoleBindings', noTokens(admin('org')), ORG, ({ world, shared }) => ({ message: { org_id: world.orgId, user_id: shared.memberId } })),
  rpc('svc.management.v1.ManagementService/ListEnvironments', viewer('project'), PROJECT_P, ({ world }) => ({ message: { project_id: world.projects.P } })),
  rpc('svc.management.v1.ManagementService/CreateSdkKey', admin('environment'), STAGING, ({ world }) => ({ message: { environment_id: world.environments.staging } })),
  rpc('svc.management.v1.ManagementService/ListSdkKeys', viewer('environment'), STAGING, ({ world }) => ({ message: { environment_id: world.environments.staging } })),
  rpc('svc.management.v1.ManagementService/DeleteSdkKey', admin('environment'), STAGING, async (c) => ({
    message: { environment_id: c.world.environments.staging, sdk_key_id: await freshIfAllowed(c, freshSdkKey, c.shared.sdkKeyId) },
  })),
  rpc('svc.management.v1.ManagementService/UpdateSdkKey', admin('environment'), STAGING, ({ world, shared }) => ({
    message: { environment_id: world.environments.staging, sdk_key_id: shared.clientKeyId, settings: { name: `acc-${unique()}` } },
  })),
  rpc('svc.management.v1.ManagementService/CreateContextSigningSecret', admin('environment'), PRODUCTION, ({ world }) => ({ message: { environment_id: world.environments.production } })),
  rpc('svc.management.v1.ManagementService/ListContextSigningSecrets', admin('environment'), PRODUCTION, ({ world }) => ({ message: { environment_id: world.environments.production } })),
  rpc('svc.management.v1.ManagementService/DeleteContextSigningSecret', admin('environment'), PRODUCTION, async (c) => ({
    message: { environment_id: c.world.environments.production, kid: await freshIfAllowed(c, freshSigningSecret, c.shared.kid) },
  })),
  // "A system-org caller may create users in any org" (management.proto): gRPC has no /v1/admin.
  rpc('svc.management.v1.ManagementService/CreateUser', { ...(noTokens(admin('org')) as Extract<Access, { kind: 'role' }>), systemAdmin: 'allowed' }, ORG, ({ world }) => ({
    message: { org_id: world.orgId, email: `acc-${unique()}@example.com`, display_name: 'grpc member', password: `pw-${unique()}-secret` },
  })),
  rpc('svc.management.v1.ManagementService/ListUsers', viewer('anywhere'), ORG, ({ world }) => ({ message: { org_id: world.orgId } })),

  rpc('svc.management.v1.AuditLogService/ListAuditLog', viewer('org'), ORG, ({ world }) => ({ message: { org_id: world.orgId } })),
  rpc('svc.management.v1.AuditLogService/GetFlagHistory', viewer('environment'), STAGING, ({ world, shared }) => ({ message: { environment_id: world.environments.staging, flag_key: shared.flagKey } })),
];
