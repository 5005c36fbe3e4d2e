import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { bearer, managementClient, rejectsWithStatus, type ManagementClient } from './support/grpc-clients.ts';
import { createFlag, envFlags, onOffFlag, put } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// ManagementService GetRoleBindings / SetRoleBindings / ResetRoleBindings and ListUsers' bindings
// on the services' gRPC port: the same rules as REST (docs/access.md "Managing bindings").

let ts: TestServer;
let client: ApiClient;
let management: ManagementClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
let staging: string;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  management = managementClient(ts.server.grpcPort);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'grpc-bind-a');
  b = await seedTenant(client, root.token, 'grpc-bind-b');
  staging = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }), 201).environment_id;
});
after(async () => {
  management.close();
  await ts.stop();
});

const newMember = (label: string) => seedUser(client, root.token, a.orgId, 'org_member', `${label}-${unique()}`);

describe('ManagementService role bindings over gRPC', () => {
  test('Get, Set (project filled in, empty ids absent), ListUsers, Reset', async () => {
    const member = await newMember('grpc');
    const admin = bearer(a.admin.token);
    assert.deepEqual(await management.getRoleBindings({ user_id: member.userId }, admin), {
      user_id: member.userId,
      org_role: 'org_member',
      is_default: true,
      bindings: [{ role: 'editor', project_id: '', environment_id: '' }],
    });
    const set = await management.setRoleBindings(
      { org_id: a.orgId, user_id: member.userId, bindings: [{ role: 'editor', project_id: '', environment_id: staging }, { role: 'viewer' }] },
      admin,
    );
    const stored = [{ role: 'editor', project_id: a.projectId, environment_id: staging }, { role: 'viewer', project_id: '', environment_id: '' }];
    assert.deepEqual(set, { user_id: member.userId, org_role: 'org_member', is_default: false, bindings: stored });
    const { users } = await management.listUsers({}, admin);
    const listed = users.find((user) => user.user_id === member.userId)!;
    assert.deepEqual([listed.bindings_set, listed.bindings], [true, stored]);
    const adminListed = users.find((user) => user.user_id === a.admin.userId)!;
    assert.deepEqual([adminListed.bindings_set, adminListed.bindings], [false, []]);
    // The member's REST token (issued before) has the new rights at once.
    const key = `grpc-${unique()}`;
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
    expectError(await put(client, `${envFlags(a.environmentId)}/${key}`, { token: member.token, body: { enabled: false } }), 403, 'PERMISSION_DENIED');
    expectStatus(await put(client, `${envFlags(staging)}/${key}`, { token: member.token, body: { enabled: false } }), 200);
    const reset = await management.resetRoleBindings({ user_id: member.userId }, admin);
    assert.deepEqual([reset.is_default, reset.bindings], [true, [{ role: 'editor', project_id: '', environment_id: '' }]]);
    expectStatus(await put(client, `${envFlags(a.environmentId)}/${key}`, { token: member.token, body: { enabled: true } }), 200);
  });

  test('the same refusals as REST: INVALID_ARGUMENT naming the entry, NOT_FOUND, PERMISSION_DENIED, FAILED_PRECONDITION, UNAUTHENTICATED', async () => {
    const member = await newMember('grpc-refused');
    const admin = bearer(a.admin.token);
    const invalid = await rejectsWithStatus(management.setRoleBindings({ user_id: member.userId, bindings: [{ role: 'viewer' }, { role: 'owner' }] }, admin), grpc.status.INVALID_ARGUMENT);
    assert.match(invalid.details, /bindings\[1\]\.role/);
    const foreign = await rejectsWithStatus(management.setRoleBindings({ user_id: member.userId, bindings: [{ role: 'viewer', environment_id: b.environmentId }] }, admin), grpc.status.INVALID_ARGUMENT);
    assert.match(foreign.details, /bindings\[0\]\.environment_id: no such environment in this organisation/);
    const tooMany = Array.from({ length: 101 }, () => ({ role: 'viewer' }));
    await rejectsWithStatus(management.setRoleBindings({ user_id: member.userId, bindings: tooMany }, admin), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(management.getRoleBindings({ user_id: b.member.userId }, admin), grpc.status.NOT_FOUND);
    await rejectsWithStatus(management.setRoleBindings({ org_id: b.orgId, user_id: b.member.userId, bindings: [] }, admin), grpc.status.NOT_FOUND);
    await rejectsWithStatus(management.resetRoleBindings({ user_id: randomUUID() }, admin), grpc.status.NOT_FOUND);
    await rejectsWithStatus(management.setRoleBindings({ user_id: member.userId, bindings: [{ role: 'admin' }] }, bearer(member.token)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(management.setRoleBindings({ user_id: a.admin.userId, bindings: [] }, admin), grpc.status.FAILED_PRECONDITION);
    await rejectsWithStatus(management.getRoleBindings({ user_id: member.userId }), grpc.status.UNAUTHENTICATED);
    assert.equal((await management.getRoleBindings({ user_id: member.userId }, bearer(member.token))).is_default, true, 'a member reads its own');
  });
});
