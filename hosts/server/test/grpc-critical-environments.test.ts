import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { bearer, managementClient, promisified, rejectsWithStatus, type ManagementClient, type Unary } from './support/grpc-clients.ts';
import { api, loginAdmin, seedTenant, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Critical environments over the internal gRPC port (docs/access.md "Critical environments"):
 * UpdateEnvironment, and the confirmation and comment as metadata `x-confirm-environment`,
 * `x-change-comment` (ASCII) or `x-change-comment-bin` (UTF-8 bytes).
 */

let ts: TestServer;
let management: ManagementClient;
let audit: { listAuditLog: Unary<object, Json>; client: grpc.Client };
let a: Tenant;
let b: Tenant;

const asAdmin = (extra: Record<string, string | Buffer> = {}): grpc.Metadata => {
  const metadata = bearer(a.admin.token);
  for (const [name, value] of Object.entries(extra)) metadata.set(name, value);
  return metadata;
};

const keyEntries = async (): Promise<Json[]> =>
  (await audit.listAuditLog({ org_id: a.orgId, limit: 200, resource_type: 'sdk_key' }, bearer(a.admin.token))).entries.filter((entry: Json) => entry.action === 'sdk_key.create');

before(async () => {
  ts = await startTestServer({}, { share: true });
  const client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'grpc-critical-a');
  b = await seedTenant(client, root.token, 'grpc-critical-b');
  management = managementClient(ts.server.grpcPort);
  const Service = lookup<grpc.ServiceClientConstructor>(loadProto('svc/management/v1/audit.proto'), 'svc.management.v1.AuditLogService');
  audit = promisified<{ listAuditLog: Unary<object, Json> }>(Service, ts.server.grpcPort);
});
after(async () => {
  management.close();
  audit.client.close();
  await ts.stop();
});

describe('UpdateEnvironment', () => {
  test('an admin sets the protection; unset fields stay; the records show it', async () => {
    const critical = await management.updateEnvironment({ environment_id: a.environmentId, critical: true }, asAdmin());
    assert.deepEqual(critical, { environment_id: a.environmentId, environment_name: 'production', project_id: a.projectId, critical: true, require_comment: false });
    const both = await management.updateEnvironment({ environment_id: a.environmentId, require_comment: true }, asAdmin({ 'x-confirm-environment': a.environmentId, 'x-change-comment': 'audit every change' }));
    assert.deepEqual([both.critical, both.require_comment], [true, true]);
    const { environments } = await management.listEnvironments({ project_id: a.projectId }, bearer(a.member.token));
    assert.deepEqual(environments.map((environment) => [environment.critical, environment.require_comment]), [[true, true]]);
  });

  test('an editor is refused; another org is NOT_FOUND', async () => {
    await rejectsWithStatus(management.updateEnvironment({ environment_id: a.environmentId, critical: false }, bearer(a.member.token)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.updateEnvironment({ environment_id: a.environmentId, critical: false }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
  });
});

describe('writes with metadata', () => {
  test('without the confirmation and comment: FAILED_PRECONDITION naming both, nothing written', async () => {
    const before = (await keyEntries()).length;
    const refused = await rejectsWithStatus(management.createSdkKey({ environment_id: a.environmentId }, asAdmin()), grpc.status.FAILED_PRECONDITION);
    assert.match(refused.details, new RegExp(`X-Confirm-Environment: ${a.environmentId} \\(gRPC metadata x-confirm-environment\\).* and X-Change-Comment`));
    await rejectsWithStatus(management.createSdkKey({ environment_id: a.environmentId }, asAdmin({ 'x-confirm-environment': b.environmentId, 'x-change-comment': 'c' })), grpc.status.FAILED_PRECONDITION);
    await rejectsWithStatus(management.createSdkKey({ environment_id: a.environmentId }, asAdmin({ 'x-confirm-environment': a.environmentId })), grpc.status.FAILED_PRECONDITION);
    assert.equal((await management.listSdkKeys({ environment_id: a.environmentId }, bearer(a.admin.token))).sdk_keys.length, 1);
    assert.equal((await keyEntries()).length, before);
  });

  test('with both: written, the comment (ASCII or UTF-8 bytes) in the history', async () => {
    await management.createSdkKey({ environment_id: a.environmentId }, asAdmin({ 'x-confirm-environment': a.environmentId, 'x-change-comment': 'second key for the rotation' }));
    await management.createSdkKey({ environment_id: a.environmentId }, asAdmin({ 'x-confirm-environment': a.environmentId, 'x-change-comment-bin': Buffer.from('Schlüssel für München', 'utf8') }));
    const comments = (await keyEntries()).map((entry) => entry.comment).filter((comment: string) => comment !== '');
    assert.deepEqual(comments, ['Schlüssel für München', 'second key for the rotation']);
  });

  test('a bad metadata value is INVALID_ARGUMENT', async () => {
    await rejectsWithStatus(management.createSdkKey({ environment_id: b.environmentId }, asAdminOf(b, { 'x-change-comment': 'x'.repeat(1001) })), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(management.createSdkKey({ environment_id: b.environmentId }, asAdminOf(b, { 'x-change-comment-bin': Buffer.from([0xc3, 0x28]) })), grpc.status.INVALID_ARGUMENT);
    assert.equal((await management.listSdkKeys({ environment_id: b.environmentId }, bearer(b.admin.token))).sdk_keys.length, 1);
  });
});

function asAdminOf(tenant: Tenant, extra: Record<string, string | Buffer>): grpc.Metadata {
  const metadata = bearer(tenant.admin.token);
  for (const [name, value] of Object.entries(extra)) metadata.set(name, value);
  return metadata;
}
