import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { flagHistoryPath, readAll } from './support/audit-log.ts';
import { createFlag, envFlags, put } from './support/flag-client.ts';
import { bearer, promisified, rejectsWithStatus, type Unary } from './support/grpc-clients.ts';
import { api, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * svc.flags.v1.ScheduledChangeService (docs/workflow.md "Scheduled changes", "Revert"): the same
 * decisions as REST over the internal gRPC port — create (operations as JSON bytes), contention,
 * list, edit, cancel, the scheduler applying one, revert (a change request where approval is
 * required) — and the refusals of another org, a viewer, a missing credential and malformed operations.
 */

interface ScheduleClient {
  createScheduledChange: Unary<Json, Json>;
  listScheduledChanges: Unary<Json, Json>;
  getScheduledChange: Unary<Json, Json>;
  updateScheduledChange: Unary<Json, Json>;
  cancelScheduledChange: Unary<Json, Json>;
  revertFlag: Unary<Json, Json>;
  client: grpc.Client;
}

let ts: TestServer;
let client: ApiClient;
let rpc: ScheduleClient;
let a: Tenant;
let b: Tenant;
let viewerToken: string;

const ops = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8');
const opsOf = (message: Json) => JSON.parse(Buffer.from(message.operations_json).toString('utf8'));

async function newFlag(label: string): Promise<string> {
  const key = `${label}-${unique()}`;
  await createFlag(client, a.admin.token, a.environmentId, {
    flag: { key, value_type: 'string', variants: [{ key: 'on', value: 'ON' }, { key: 'off', value: 'OFF' }], off_variant_key: 'off', rules: [{ id: 'beta', conditions: [{ attribute: 'plan', op: 'eq', values: ['beta'] }], variant_key: 'on' }] },
    enabled: false,
  });
  return key;
}

before(async () => {
  ts = await startTestServer({ SCHEDULES_POLL_MS: '50' });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'grpc-sched-a');
  b = await seedTenant(client, root.token, 'grpc-sched-b');
  viewerToken = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/api-tokens`, { token: a.admin.token, body: { name: 'reader', role: 'viewer' } }), 201, 'viewer token').token;
  const Service = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/scheduled_changes.proto'), 'svc.flags.v1.ScheduledChangeService');
  rpc = promisified<ScheduleClient>(Service, ts.server.grpcPort);
});
after(async () => {
  rpc?.client.close();
  await ts.stop();
});

describe('ScheduledChangeService over gRPC', () => {
  test('create, contention, list, edit, cancel', async () => {
    const key = await newFlag('g-crud');
    const at = Date.now() + 24 * 60 * 60_000;
    const first = await rpc.createScheduledChange({ environment_id: a.environmentId, flag_key: key, execute_at_ms: at, operations_json: ops([{ op: 'set_enabled', enabled: true }]), comment: 'launch' }, bearer(a.admin.token));
    assert.equal(first.scheduled_change.status, 'pending');
    assert.deepEqual(opsOf(first.scheduled_change), [{ op: 'set_enabled', enabled: true }]);
    assert.deepEqual(first.contending, []);
    const second = await rpc.createScheduledChange({ environment_id: a.environmentId, flag_key: key, execute_at_ms: at + 1, operations_json: ops([{ op: 'set_enabled', enabled: false }]) }, bearer(a.admin.token));
    assert.deepEqual(second.contending.map((c: Json) => c.id), [first.scheduled_change.id]);
    const listed = await rpc.listScheduledChanges({ environment_id: a.environmentId, flag_key: key }, bearer(a.admin.token));
    assert.deepEqual(listed.scheduled_changes.map((c: Json) => c.id), [first.scheduled_change.id, second.scheduled_change.id]);
    const edited = await rpc.updateScheduledChange({ environment_id: a.environmentId, flag_key: key, id: first.scheduled_change.id, execute_at_ms: at + 60_000, version: 1 }, bearer(a.admin.token));
    assert.equal(edited.scheduled_change.execute_at_ms, at + 60_000);
    assert.equal(edited.scheduled_change.comment, 'launch', 'an absent comment is unchanged');
    const cancelled = await rpc.cancelScheduledChange({ environment_id: a.environmentId, flag_key: key, id: first.scheduled_change.id }, bearer(a.admin.token));
    assert.equal(cancelled.status, 'cancelled');
    await rejectsWithStatus(rpc.cancelScheduledChange({ environment_id: a.environmentId, flag_key: key, id: first.scheduled_change.id }, bearer(a.admin.token)), grpc.status.FAILED_PRECONDITION);
    await rejectsWithStatus(rpc.createScheduledChange({ environment_id: a.environmentId, flag_key: key, execute_at_ms: at, operations_json: Buffer.from('not json') }, bearer(a.admin.token)), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(rpc.createScheduledChange({ environment_id: a.environmentId, flag_key: key, execute_at_ms: at, operations_json: ops([{ op: 'remove_rule', rule_id: 'gone' }]) }, bearer(a.admin.token)), grpc.status.FAILED_PRECONDITION);
  });

  test('the scheduler applies it; revert puts the before state back', async () => {
    const key = await newFlag('g-apply');
    const made = await rpc.createScheduledChange({ environment_id: a.environmentId, flag_key: key, execute_at_ms: Date.now() + 1000, operations_json: ops([{ op: 'set_enabled', enabled: true }]) }, bearer(a.admin.token));
    const deadline = Date.now() + 15_000;
    let got: Json;
    do {
      await new Promise((resolve) => setTimeout(resolve, 50));
      got = await rpc.getScheduledChange({ environment_id: a.environmentId, flag_key: key, id: made.scheduled_change.id }, bearer(a.admin.token));
    } while (got.status === 'pending' && Date.now() < deadline);
    assert.equal(got.status, 'applied');
    assert.ok(got.applied_at_ms >= got.execute_at_ms);
    const entries = await readAll(client, a.admin.token, (query) => flagHistoryPath(a.environmentId, key, query));
    const applied = entries.find((e) => e.action === 'flag.scheduled_change')!;
    const answer = await rpc.revertFlag({ environment_id: a.environmentId, flag_key: key, audit_entry_id: applied.id }, bearer(a.admin.token));
    assert.equal(answer.change_request_json, undefined, 'no approval required: written');
    assert.equal(answer.flag.enabled, false, 'back to before the schedule');
    assert.equal(expectStatus(await client.get(`${envFlags(a.environmentId)}/${key}`, { token: a.admin.token }), 200).version, 3);
  });

  test("another org's admin, a viewer and no credential are refused; nothing is written", async () => {
    const key = await newFlag('g-guard');
    const made = await rpc.createScheduledChange({ environment_id: a.environmentId, flag_key: key, execute_at_ms: Date.now() + 60 * 60_000, operations_json: ops([{ op: 'set_enabled', enabled: true }]) }, bearer(a.admin.token));
    expectStatus(await put(client, `${envFlags(a.environmentId)}/${key}`, { token: a.admin.token, body: { enabled: false, flag: { off_variant_key: 'on' } } }), 200);
    const [entry] = await readAll(client, a.admin.token, (query) => flagHistoryPath(a.environmentId, key, query));
    const create = { environment_id: a.environmentId, flag_key: key, execute_at_ms: Date.now() + 60 * 60_000, operations_json: ops([{ op: 'set_enabled', enabled: true }]) };
    const ref = { environment_id: a.environmentId, flag_key: key, id: made.scheduled_change.id };
    const revert = { environment_id: a.environmentId, flag_key: key, audit_entry_id: entry!.id };
    for (const [metadata, status] of [
      [bearer(b.admin.token), grpc.status.NOT_FOUND],
      [new grpc.Metadata(), grpc.status.UNAUTHENTICATED],
    ] as const) {
      await rejectsWithStatus(rpc.listScheduledChanges({ environment_id: a.environmentId }, metadata), status);
      await rejectsWithStatus(rpc.createScheduledChange(create, metadata), status);
      await rejectsWithStatus(rpc.cancelScheduledChange(ref, metadata), status);
      await rejectsWithStatus(rpc.revertFlag(revert, metadata), status);
    }
    await rpc.listScheduledChanges({ environment_id: a.environmentId }, bearer(viewerToken));
    await rejectsWithStatus(rpc.createScheduledChange(create, bearer(viewerToken)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(rpc.cancelScheduledChange(ref, bearer(viewerToken)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(rpc.revertFlag(revert, bearer(viewerToken)), grpc.status.PERMISSION_DENIED);
    const still = await rpc.getScheduledChange(ref, bearer(a.admin.token));
    assert.equal(still.status, 'pending');
  });

  test('where approval is required, RevertFlag answers the change request it opened (its REST JSON); with x-approval-bypass an admin writes', async () => {
    const env = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: `g-gated-${unique()}` } }), 201).environment_id;
    const key = `g-gated-${unique()}`;
    await createFlag(client, a.admin.token, env, { flag: { key, value_type: 'string', variants: [{ key: 'on', value: 'ON' }, { key: 'off', value: 'OFF' }], off_variant_key: 'off', rules: [] }, enabled: true });
    expectStatus(await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { enabled: false } }), 200);
    const [entry] = await readAll(client, a.admin.token, (query) => flagHistoryPath(env, key, query));
    expectStatus(await put(client, `/v1/management/environments/${env}/approval-policy`, { token: a.admin.token, body: { required: true } }), 200);
    const revert = { environment_id: env, flag_key: key, audit_entry_id: entry!.id };

    const answer = await rpc.revertFlag(revert, bearer(a.member.token));
    assert.equal(answer.flag, undefined, 'nothing written');
    const request = JSON.parse(Buffer.from(answer.change_request_json).toString('utf8'));
    assert.equal(request.status, 'open');
    assert.equal(request.title, `Revert ${key} to before ${entry!.id}`);
    assert.deepEqual(request.changes[0].operations.map((o: Json) => o.op), ['set_rules', 'set_enabled', 'set_off_variant', 'set_prerequisites']);
    assert.deepEqual(request.changes[0].operations[1], { op: 'set_enabled', enabled: true });
    assert.deepEqual(expectStatus(await client.get(`/v1/environments/${env}/change-requests/${request.id}`, { token: a.admin.token }), 200), request);
    assert.equal(expectStatus(await client.get(`${envFlags(env)}/${key}`, { token: a.admin.token }), 200).enabled, false);

    await rejectsWithStatus(rpc.revertFlag(revert, bearer(viewerToken)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(rpc.revertFlag(revert, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    const bypass = bearer(a.member.token);
    bypass.set('x-approval-bypass', 'true');
    await rejectsWithStatus(rpc.revertFlag(revert, bypass), grpc.status.PERMISSION_DENIED);
    const admin = bearer(a.admin.token);
    admin.set('x-approval-bypass', 'true');
    const written = await rpc.revertFlag(revert, admin);
    assert.equal(written.flag.enabled, true);
    const listed = expectStatus(await client.get(`/v1/environments/${env}/change-requests`, { token: a.admin.token }), 200).change_requests;
    assert.deepEqual(listed.map((r: Json) => r.id), [request.id], 'one request: the member\'s');
  });
});
