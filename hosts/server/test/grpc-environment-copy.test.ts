import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { createFlag, envFlags, patch, put } from './support/flag-client.ts';
import { bearer, promisified, rejectsWithStatus, type Unary } from './support/grpc-clients.ts';
import { api, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * svc.flags.v1.EnvironmentCopyService (docs/contract.md "Environment compare and copy"): the same
 * decisions as the REST routes, over the internal gRPC port — the comparison (values as JSON
 * bytes), a copy, a protected target's metadata, and the refusals of other orgs, readers and bad
 * input.
 */

interface CopyClient {
  compareEnvironments: Unary<{ target_environment_id: string; from_environment_id: string }, Json>;
  copyEnvironment: Unary<{ target_environment_id: string; from_environment_id: string; flag_keys: string[]; include: string[]; versions?: Record<string, number> }, Json>;
  client: grpc.Client;
}

let ts: TestServer;
let client: ApiClient;
let rpc: CopyClient;
let a: Tenant;
let b: Tenant;
let staging: string;

const VARIANTS = [
  { key: 'on', value: 'ON' },
  { key: 'off', value: 'OFF' },
];

async function stagingFlag(label: string): Promise<string> {
  const key = `${label}-${unique()}`;
  await createFlag(client, a.admin.token, staging, { flag: { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [{ id: 'all', conditions: [], variant_key: 'on' }] }, enabled: true });
  return key;
}

const flagIn = async (environmentId: string, key: string): Promise<Json> => expectStatus(await client.get(`${envFlags(environmentId)}/${key}`, { token: a.admin.token }), 200);

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'grpc-copy-a');
  b = await seedTenant(client, root.token, 'grpc-copy-b');
  staging = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }), 201).environment_id;
  const Service = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/environment_copy.proto'), 'svc.flags.v1.EnvironmentCopyService');
  rpc = promisified<CopyClient>(Service, ts.server.grpcPort);
});
after(async () => {
  rpc?.client.close();
  await ts.stop();
});

describe('EnvironmentCopyService over gRPC', () => {
  test('CompareEnvironments reports the fields as JSON bytes; CopyEnvironment writes them', async () => {
    const key = await stagingFlag('g-cmp');
    const compared = await rpc.compareEnvironments({ target_environment_id: a.environmentId, from_environment_id: staging }, bearer(a.admin.token));
    const entry = compared.flags.find((flag: Json) => flag.flag_key === key);
    assert.equal(entry.written, 'from_only');
    assert.equal(entry.from_version, 1);
    assert.equal(entry.target_version, 0);
    const enabled = entry.fields.find((field: Json) => field.field === 'enabled');
    assert.equal(Buffer.from(enabled.before_json).toString('utf8'), 'false');
    assert.equal(Buffer.from(enabled.after_json).toString('utf8'), 'true');
    const rules = entry.fields.find((field: Json) => field.field === 'rules');
    assert.deepEqual(JSON.parse(Buffer.from(rules.after_json).toString('utf8')), [{ id: 'all', conditions: [], variant_key: 'on' }]);

    const copied = await rpc.copyEnvironment({ target_environment_id: a.environmentId, from_environment_id: staging, flag_keys: [key], include: ['rules', 'enabled'], versions: { [key]: 0 } }, bearer(a.admin.token));
    assert.deepEqual(copied.flags, [{ flag_key: key, before_version: 0, after_version: 1, fields: ['enabled', 'off_variant_key', 'rules'] }]);
    const written = await flagIn(a.environmentId, key);
    assert.equal(written.enabled, true);
    assert.deepEqual(written.rules, [{ id: 'all', conditions: [], variant_key: 'on' }]);
    // A stale version now: ABORTED naming the flag.
    const stale = await rejectsWithStatus(
      rpc.copyEnvironment({ target_environment_id: a.environmentId, from_environment_id: staging, flag_keys: [key], include: ['enabled'], versions: { [key]: 0 } }, bearer(a.admin.token)),
      grpc.status.ABORTED,
    );
    assert.match(stale.details, new RegExp(key));
  });

  test('a critical target: refused without x-confirm-environment, written with it', async () => {
    const critical = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'g-critical' } }), 201).environment_id;
    expectStatus(await patch(client, `/v1/management/environments/${critical}`, { token: a.admin.token, body: { critical: true } }), 200);
    const key = await stagingFlag('g-crit');
    const request = { target_environment_id: critical, from_environment_id: staging, flag_keys: [key], include: ['enabled'] };
    await rejectsWithStatus(rpc.copyEnvironment(request, bearer(a.admin.token)), grpc.status.FAILED_PRECONDITION);
    const confirmed = bearer(a.admin.token);
    confirmed.set('x-confirm-environment', critical);
    const done = await rpc.copyEnvironment(request, confirmed);
    assert.equal(done.flags[0].after_version, 1);
  });

  test("refusals: another org's member (NOT_FOUND), a viewer (PERMISSION_DENIED), no credential, bad input", async () => {
    const key = await stagingFlag('g-deny');
    const request = { target_environment_id: a.environmentId, from_environment_id: staging, flag_keys: [key], include: ['enabled'] };
    await rejectsWithStatus(rpc.copyEnvironment(request, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(rpc.compareEnvironments({ target_environment_id: b.environmentId, from_environment_id: staging }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    const root = await loginAdmin(client);
    const viewer = await seedUser(client, root.token, a.orgId, 'org_member', `g-viewer-${unique()}`);
    expectStatus(await put(client, `/v1/management/orgs/${a.orgId}/members/${viewer.userId}/role-bindings`, { token: a.admin.token, body: { bindings: [{ role: 'viewer' }] } }), 200);
    await rejectsWithStatus(rpc.copyEnvironment(request, bearer(viewer.token)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(rpc.copyEnvironment(request, new grpc.Metadata()), grpc.status.UNAUTHENTICATED);
    const bad = await rejectsWithStatus(rpc.copyEnvironment({ ...request, include: ['everything'] }, bearer(a.admin.token)), grpc.status.INVALID_ARGUMENT);
    assert.match(bad.details, /include\[0\]/);
    await rejectsWithStatus(rpc.copyEnvironment({ ...request, flag_keys: [] }, bearer(a.admin.token)), grpc.status.INVALID_ARGUMENT);
    assert.equal((await flagIn(a.environmentId, key)).version, 0);
  });
});
