import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { authClient, bearer, managementClient, rejectsWithStatus, type AuthClient, type ManagementClient } from './support/grpc-clients.ts';
import { api, expectStatus, loginAdmin, seedTenant, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/** svc.management.v1.ManagementService CreateApiToken / ListApiTokens / DeleteApiToken (docs/access.md "API tokens"). */

let ts: TestServer;
let management: ManagementClient;
let auth: AuthClient;
let a: Tenant;
let b: Tenant;

before(async () => {
  ts = await startTestServer({}, { share: true });
  const client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'grpc-tokens-a');
  b = await seedTenant(client, root.token, 'grpc-tokens-b');
  management = managementClient(ts.server.grpcPort);
  auth = authClient(ts.server.grpcPort);
});
after(async () => {
  management.close();
  auth.close();
  await ts.stop();
});

describe('API tokens over gRPC', () => {
  test('create, list, validate, delete', async () => {
    const expiresAtMs = Date.now() + 3_600_000;
    const created = await management.createApiToken(
      { org_id: '', name: 'grpc ci', role: 'editor', scope: { project_ids: [a.projectId], environment_ids: [a.environmentId] }, expires_at_ms: expiresAtMs },
      bearer(a.admin.token),
    );
    assert.match(created.token, /^swy_/);
    assert.equal(created.api_token.name, 'grpc ci');
    assert.equal(created.api_token.role, 'editor');
    assert.deepEqual(created.api_token.scope, { project_ids: [a.projectId], environment_ids: [a.environmentId] });
    assert.equal(Number(created.api_token.expires_at_ms), expiresAtMs);
    assert.equal(created.api_token.created_by_user_id, a.admin.userId);
    assert.equal(created.api_token.created_by_email, a.admin.email);
    assert.equal(Number(created.api_token.last_used_at_ms), 0);

    const { api_tokens } = await management.listApiTokens({ org_id: a.orgId }, bearer(a.admin.token));
    assert.deepEqual(
      api_tokens.map((token) => token.id),
      [created.api_token.id],
    );
    assert.ok(!JSON.stringify(api_tokens).includes(created.token));

    // The credential check a gateway makes answers the token's principal.
    const context = (await auth.validateCredential({ bearer_token: created.token })) as unknown as Record<string, unknown>;
    assert.equal(context.tenant_id, a.orgId);
    assert.equal(context.kind, 'PRINCIPAL_KIND_API_TOKEN');

    // A token manages no tokens, another org's admin finds none, a member may not.
    await rejectsWithStatus(management.listApiTokens({ org_id: a.orgId }, bearer(created.token)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.deleteApiToken({ org_id: a.orgId, api_token_id: created.api_token.id }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(management.deleteApiToken({ org_id: b.orgId, api_token_id: created.api_token.id }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(management.createApiToken({ org_id: a.orgId, name: 'x', role: 'viewer' }, bearer(a.member.token)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.createApiToken({ org_id: a.orgId, name: '', role: 'viewer' }, bearer(a.admin.token)), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(
      management.createApiToken({ org_id: a.orgId, name: 'x', role: 'viewer', scope: { environment_ids: [b.environmentId] } }, bearer(a.admin.token)),
      grpc.status.INVALID_ARGUMENT,
    );

    assert.deepEqual(await management.deleteApiToken({ org_id: a.orgId, api_token_id: created.api_token.id }, bearer(a.admin.token)), { api_token_id: created.api_token.id });
    await rejectsWithStatus(auth.validateCredential({ bearer_token: created.token }), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(management.deleteApiToken({ org_id: a.orgId, api_token_id: created.api_token.id }, bearer(a.admin.token)), grpc.status.NOT_FOUND);
    expectStatus(await api(ts.base).get(`/v1/management/orgs/${a.orgId}/api-tokens`, { token: a.admin.token }), 200);
  });
});
