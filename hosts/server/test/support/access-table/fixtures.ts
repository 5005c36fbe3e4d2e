import { expectStatus, unique, type Json } from '../rest-client.ts';
import type { World } from './world.ts';

/**
 * Resources the rows act on, made with the org admin's token: shared ones (read and updated by
 * every principal) once, and fresh ones for each destructive row (delete, archive, revoke...), so
 * one principal's success does not change the next principal's answer.
 */

export interface Shared {
  flagKey: string;
  segmentKey: string;
  eventKey: string;
  experimentId: string;
  jobId: string;
  providerId: string;
  domain: string;
  sdkKeyId: string;
  /** Only client keys have settings to PATCH. */
  clientKeyId: string;
  kid: string;
  /** A member the table may demote to its own role or (wrongly) remove. */
  memberId: string;
  apiTokenId: string;
  invitationId: string;
  /** A webhook endpoint (to a closed local port) and one delivery of it (a test send). */
  webhookId: string;
  deliveryId: string;
  /** Asked by the org's second admin: waiting for another admin's confirmation. */
  pendingProvider: { id: string; updated_at: string };
}

const admin = (world: World) => world.tenant.admin.token;

export const flagBody = (key: string) => ({
  flag: { key, value_type: 'string', variants: [{ key: 'on', value: 'ON' }, { key: 'off', value: 'OFF' }], off_variant_key: 'off', rules: [] },
  enabled: true,
});

export async function freshFlag(world: World): Promise<string> {
  const key = `acc-flag-${unique()}`;
  expectStatus(await world.client.post(`/v1/environments/${world.environments.staging}/flags`, { token: admin(world), body: flagBody(key) }), 201, 'fresh flag');
  return key;
}

export async function freshArchivedFlag(world: World): Promise<string> {
  const key = await freshFlag(world);
  expectStatus(await world.client.post(`/v1/projects/${world.projects.P}/flags/${key}/archive`, { token: admin(world) }), 200, 'archive fresh flag');
  return key;
}

export async function freshSegment(world: World): Promise<string> {
  const key = `acc-seg-${unique()}`;
  expectStatus(await world.client.post(`/v1/environments/${world.environments.staging}/segments`, { token: admin(world), body: { key, context_type: 'user', kind: 'list' } }), 201, 'fresh segment');
  return key;
}

export async function freshEventDefinition(world: World): Promise<string> {
  const key = `acc_event_${unique()}`;
  expectStatus(await world.client.post(`/v1/environments/${world.environments.production}/event-definitions`, { token: admin(world), body: { key, value_type: 'bool' } }), 202, 'fresh event definition');
  return key;
}

export async function freshExperiment(world: World): Promise<string> {
  const created = expectStatus(
    await world.client.post(`/v1/environments/${world.environments.staging}/experiments`, { token: admin(world), body: { name: `acc ${unique()}`, flag_key: 'acc-checkout' } }),
    201,
    'fresh experiment',
  );
  return created.id as string;
}

export async function freshSdkKey(world: World): Promise<string> {
  const key = expectStatus(await world.client.post(`/v1/management/environments/${world.environments.staging}/sdk-keys`, { token: admin(world) }), 201, 'fresh sdk key');
  return key.sdk_key_id as string;
}

export async function freshSigningSecret(world: World): Promise<string> {
  const secret = expectStatus(await world.client.post(`/v1/management/environments/${world.environments.production}/context-signing-secrets`, { token: admin(world) }), 201, 'fresh secret');
  return secret.kid as string;
}

export async function freshMember(world: World): Promise<string> {
  const created = expectStatus(
    await world.client.post(`/v1/management/orgs/${world.orgId}/users`, { token: admin(world), body: { email: `acc-${unique()}@example.com`, display_name: 'fresh', password: `pw-${unique()}-secret` } }),
    201,
    'fresh member',
  );
  return created.user_id as string;
}

export async function freshInvitation(world: World): Promise<string> {
  const created = expectStatus(await world.client.post(`/v1/management/orgs/${world.orgId}/invitations`, { token: admin(world), body: { email: `inv-${unique()}@example.com` } }), 201, 'fresh invitation');
  return created.invitation_id as string;
}

/** A webhook to a local port nothing listens on (the access table's server allows private networks for webhooks). */
export const webhookBody = () => ({ name: `acc ${unique()}`, url: 'http://127.0.0.1:9/hook', event_types: ['flag.*'] });

export async function freshWebhook(world: World): Promise<string> {
  const created = expectStatus(await world.client.post(`/v1/management/orgs/${world.orgId}/webhooks`, { token: admin(world), body: webhookBody() }), 201, 'fresh webhook');
  return created.id as string;
}

export const providerBody = () => ({
  provider_type: 'oidc',
  display_name: `Corp ${unique()}`,
  redirect_uris: ['http://127.0.0.1/'],
  oidc: { issuer_url: 'http://127.0.0.1:9/issuer', client_id: 'access-table', client_secret: 'access-table-client-secret-0123456789' },
});

export async function freshProvider(world: World, body: Record<string, unknown> = {}): Promise<Json> {
  return expectStatus(await world.client.post(`/v1/management/orgs/${world.orgId}/auth-providers`, { token: admin(world), body: { ...providerBody(), ...body } }), 201, 'fresh provider');
}

/** Asked by the org's second admin (default role org_admin): the org admin may confirm it. */
export async function freshPendingProvider(world: World): Promise<{ id: string; updated_at: string }> {
  const pending = expectStatus(
    await world.client.post(`/v1/management/orgs/${world.orgId}/auth-providers`, { token: world.secondAdmin.token, body: { ...providerBody(), default_role: 'org_admin' } }),
    201,
    'pending provider',
  );
  return { id: pending.id as string, updated_at: pending.updated_at as string };
}

/** An API token of the org (undefined before the tokens routes exist). */
export async function freshApiToken(world: World): Promise<string | undefined> {
  const response = await world.client.post(`/v1/management/orgs/${world.orgId}/api-tokens`, { token: admin(world), body: { name: `acc-${unique()}`, role: 'viewer' } });
  return response.status === 201 ? (response.body.id as string) : undefined;
}

export async function freshDomain(world: World): Promise<string> {
  const domain = `acc-${unique()}.example.com`;
  expectStatus(await world.client.post(`/v1/management/orgs/${world.orgId}/domains`, { token: admin(world), body: { domain } }), 201, 'fresh domain');
  return domain;
}

export async function buildShared(world: World): Promise<Shared> {
  const { client } = world;
  const token = admin(world);
  const staging = world.environments.staging;
  const flagKey = await freshFlag(world);
  const segmentKey = await freshSegment(world);
  const eventKey = await freshEventDefinition(world);
  // An experiment needs a split flag and its metrics in its environment.
  expectStatus(
    await client.post(`/v1/environments/${staging}/flags`, {
      token,
      body: {
        flag: {
          key: 'acc-checkout',
          value_type: 'string',
          variants: [{ key: 'control', value: 'old' }, { key: 'treatment', value: 'new' }],
          off_variant_key: 'control',
          rules: [{ id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }] } }],
        },
        enabled: true,
      },
    }),
    201,
    'experiment flag',
  );
  expectStatus(await client.post(`/v1/environments/${staging}/event-definitions`, { token, body: { key: 'purchase', value_type: 'bool' } }), 202, 'metric');
  const experimentId = await freshExperiment(world);
  const job = expectStatus(await client.post(`/v1/experiments/${experimentId}/recompute`, { token }), 202, 'recompute');
  const provider = await freshProvider(world);
  return {
    flagKey,
    segmentKey,
    eventKey,
    experimentId,
    jobId: job.job_id as string,
    providerId: provider.id as string,
    domain: await freshDomain(world),
    sdkKeyId: await freshSdkKey(world),
    clientKeyId: expectStatus(
      await client.post(`/v1/management/environments/${staging}/sdk-keys`, { token, body: { kind: 'client', name: 'acc-client', allowed_origins: ['https://app.example.com'] } }),
      201,
      'client key',
    ).sdk_key_id,
    kid: await freshSigningSecret(world),
    memberId: await freshMember(world),
    apiTokenId: (await freshApiToken(world)) ?? '00000000-0000-4000-8000-000000000000',
    invitationId: await freshInvitation(world),
    pendingProvider: await freshPendingProvider(world),
    ...(await sharedWebhook(world)),
  };
}

async function sharedWebhook(world: World): Promise<{ webhookId: string; deliveryId: string }> {
  const webhookId = await freshWebhook(world);
  const sent = expectStatus(await world.client.post(`/v1/management/orgs/${world.orgId}/webhooks/${webhookId}/test`, { token: admin(world) }), 200, 'webhook test send');
  return { webhookId, deliveryId: sent.id as string };
}
