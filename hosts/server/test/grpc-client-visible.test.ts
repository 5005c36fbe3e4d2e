import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { bearer, managementClient, rejectsWithStatus, type ManagementClient } from './support/grpc-clients.ts';
import { flagClient, payload, type FeatureFlagInput, type FlagClient } from './support/grpc-flag-clients.ts';
import { api, loginAdmin, seedTenant, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * `client_visible` over gRPC (docs/client-side.md "What a client sees"): FeatureFlag.client_visible
 * on MutateFlag (unset: the project default on CREATE, unchanged on UPDATE) and
 * ManagementService.UpdateProject's client_visible_default.
 */
let it: TestServer;
let flags: FlagClient;
let management: ManagementClient;
let tenant: Tenant;
let admin: grpc.Metadata;

before(async () => {
  it = await startTestServer({}, { share: true });
  const rest = api(it.base);
  tenant = await seedTenant(rest, (await loginAdmin(rest)).token, 'grpc-visible');
  flags = flagClient(it.server.grpcPort);
  management = managementClient(it.server.grpcPort);
  admin = bearer(tenant.admin.token);
});
after(async () => {
  flags.close();
  management.close();
  await it.stop();
});

const boolFlag = (key: string, fields: Partial<FeatureFlagInput> = {}): FeatureFlagInput => ({
  key,
  value_type: 'FLAG_VALUE_TYPE_BOOL',
  enabled: true,
  variants: [
    { key: 'on', value: { bool_value: true } },
    { key: 'off', value: { bool_value: false } },
  ],
  off_variant_key: 'off',
  rules: [{ rule_payload: payload({ conditions: [] }), variant_key: 'on' }],
  ...fields,
});
const mutate = (kind: string, flag: FeatureFlagInput, version?: number) =>
  flags.mutateFlag({ environment_id: tenant.environmentId, kind, flag, ...(version === undefined ? {} : { version }) }, admin);

describe('client_visible over gRPC', () => {
  test('MutateFlag: unset takes the project default on CREATE and stays on UPDATE; set values win', async () => {
    const hidden = await mutate('MUTATION_KIND_CREATE', boolFlag('g-default'));
    assert.equal(hidden.flag?.client_visible, false, 'the project default (false)');
    const shown = await mutate('MUTATION_KIND_CREATE', boolFlag('g-shown', { client_visible: true }));
    assert.equal(shown.flag?.client_visible, true);
    const kept = await mutate('MUTATION_KIND_UPDATE', boolFlag('g-shown', { enabled: false }), shown.version);
    assert.equal(kept.flag?.client_visible, true, 'unset on UPDATE: unchanged');
    const hiddenAgain = await mutate('MUTATION_KIND_UPDATE', boolFlag('g-shown', { enabled: false, client_visible: false }), kept.version);
    assert.equal(hiddenAgain.flag?.client_visible, false);
    assert.equal((await flags.getFlag({ environment_id: tenant.environmentId, flag_key: 'g-shown' }, admin)).client_visible, false);
  });

  test('UpdateProject: org admins set the default new flags take; members are refused', async () => {
    await rejectsWithStatus(
      management.updateProject({ project_id: tenant.projectId, client_visible_default: true }, bearer(tenant.member.token)),
      grpc.status.PERMISSION_DENIED,
    );
    const project = await management.updateProject({ project_id: tenant.projectId, client_visible_default: true }, admin);
    assert.equal(project.client_visible_default, true);
    assert.equal(project.project_id, tenant.projectId);
    const listed = await management.listProjects({ org_id: tenant.orgId }, admin);
    assert.equal(listed.projects.find((p) => p.project_id === tenant.projectId)?.client_visible_default, true);
    const created = await mutate('MUTATION_KIND_CREATE', boolFlag('g-after-default'));
    assert.equal(created.flag?.client_visible, true, 'the new project default');
    await management.updateProject({ project_id: tenant.projectId, client_visible_default: false }, admin);
  });
});
