import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { createFlag, envFlags, put } from './support/flag-client.ts';
import { bearer, promisified, rejectsWithStatus, type Unary } from './support/grpc-clients.ts';
import { api, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * svc.flags.v1.ChangeRequestService (docs/workflow.md "Change requests and approvals"): the REST decisions over the
 * internal gRPC port, bodies and answers as JSON bytes — the policy, a request approved by someone
 * else and applied, self-approval refused, a conflicted apply writing nothing, and the refusals of
 * another org, a reader, a missing credential and malformed bytes.
 */

interface Call {
  environment_id: string;
  change_request_id?: string;
  body_json?: Buffer;
}
type Method = Unary<Call, { json: Buffer }>;
interface Client {
  putApprovalPolicy: Method;
  getApprovalPolicy: Method;
  createChangeRequest: Method;
  getChangeRequest: Method;
  reviewChangeRequest: Method;
  applyChangeRequest: Method;
  listChangeRequests: Method;
  client: grpc.Client;
}

let ts: TestServer;
let client: ApiClient;
let rpc: Client;
let a: Tenant;
let b: Tenant;
let reviewer: LoggedInUser;
let env: string;

const body = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8');
const answer = (reply: { json: Buffer }): Json => JSON.parse(Buffer.from(reply.json).toString('utf8'));
const VARIANTS = [
  { key: 'on', value: 'ON' },
  { key: 'off', value: 'OFF' },
];

async function gatedFlag(): Promise<string> {
  const key = `gcr-${unique()}`;
  await rpc.putApprovalPolicy({ environment_id: env, body_json: body({ required: false }) }, bearer(a.admin.token));
  await createFlag(client, a.admin.token, env, { flag: { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [] }, enabled: true });
  await rpc.putApprovalPolicy({ environment_id: env, body_json: body({ required: true }) }, bearer(a.admin.token));
  return key;
}

const create = async (key: string) =>
  answer(await rpc.createChangeRequest({ environment_id: env, body_json: body({ title: 'off', changes: [{ flag_key: key, operations: [{ op: 'set_enabled', enabled: false }] }], submit: true }) }, bearer(a.admin.token)));

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'grpc-cr-a');
  b = await seedTenant(client, root.token, 'grpc-cr-b');
  reviewer = await seedUser(client, root.token, a.orgId, 'org_member', 'grpc-cr-reviewer');
  env = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: `gated-${unique()}` } }), 201).environment_id;
  const Service = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/change_requests.proto'), 'svc.flags.v1.ChangeRequestService');
  rpc = promisified<Client>(Service, ts.server.grpcPort);
});
after(async () => {
  rpc?.client.close();
  await ts.stop();
});

describe('ChangeRequestService over gRPC', () => {
  test('policy, create, self-approval refused, approval by another editor, apply', async () => {
    const key = await gatedFlag();
    assert.equal(answer(await rpc.getApprovalPolicy({ environment_id: env }, bearer(a.member.token))).required, true);
    const request = await create(key);
    assert.equal(request.status, 'open');
    await rejectsWithStatus(rpc.reviewChangeRequest({ environment_id: env, change_request_id: request.id, body_json: body({ verdict: 'approve' }) }, bearer(a.admin.token)), grpc.status.PERMISSION_DENIED);
    await rejectsWithStatus(rpc.applyChangeRequest({ environment_id: env, change_request_id: request.id }, bearer(a.admin.token)), grpc.status.FAILED_PRECONDITION);
    const approved = answer(await rpc.reviewChangeRequest({ environment_id: env, change_request_id: request.id, body_json: body({ verdict: 'approve' }) }, bearer(reviewer.token)));
    assert.deepEqual(approved.approvals.map((x: Json) => x.reviewer_email), [reviewer.email]);
    const applied = answer(await rpc.applyChangeRequest({ environment_id: env, change_request_id: request.id }, bearer(a.admin.token)));
    assert.equal(applied.status, 'applied');
    assert.equal(expectStatus(await client.get(`${envFlags(env)}/${key}`, { token: a.admin.token }), 200).enabled, false);
  });

  test('apply at a time: body_json {execute_at_ms} schedules it (a bad time is INVALID_ARGUMENT, a reader is refused); the calendar lists it in change_requests_json', async () => {
    const key = await gatedFlag();
    const request = await create(key);
    await rpc.reviewChangeRequest({ environment_id: env, change_request_id: request.id, body_json: body({ verdict: 'approve' }) }, bearer(reviewer.token));
    const at = Date.now() + 60 * 60_000;
    await rejectsWithStatus(rpc.applyChangeRequest({ environment_id: env, change_request_id: request.id, body_json: body({ execute_at_ms: Date.now() - 1 }) }, bearer(a.admin.token)), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(rpc.applyChangeRequest({ environment_id: env, change_request_id: request.id, body_json: body({ execute_at_ms: at }) }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    const scheduled = answer(await rpc.applyChangeRequest({ environment_id: env, change_request_id: request.id, body_json: body({ execute_at_ms: at }) }, bearer(a.admin.token)));
    assert.deepEqual([scheduled.status, scheduled.execute_at_ms, scheduled.scheduled_by.id], ['scheduled', at, a.admin.userId]);
    const Schedules = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/scheduled_changes.proto'), 'svc.flags.v1.ScheduledChangeService');
    const schedules = promisified<{ listScheduledChanges: Unary<Json, { scheduled_changes: Json[]; change_requests_json: Buffer }>; client: grpc.Client }>(Schedules, ts.server.grpcPort);
    try {
      const listed = await schedules.listScheduledChanges({ environment_id: env }, bearer(a.member.token));
      assert.deepEqual(listed.scheduled_changes, []);
      assert.deepEqual(JSON.parse(Buffer.from(listed.change_requests_json).toString('utf8')).map((r: Json) => [r.id, r.execute_at_ms, r.flag_keys]), [[request.id, at, [key]]]);
    } finally {
      schedules.client.close();
    }
    await rejectsWithStatus(rpc.reviewChangeRequest({ environment_id: env, change_request_id: request.id, body_json: body({ verdict: 'comment', comment: 'late' }) }, bearer(reviewer.token)), grpc.status.FAILED_PRECONDITION);
    assert.equal(expectStatus(await client.get(`${envFlags(env)}/${key}`, { token: a.admin.token }), 200).enabled, true, 'nothing written yet');
  });

  test('a conflicted apply writes nothing and marks the request conflicted', async () => {
    const key = await gatedFlag();
    const request = await create(key);
    await rpc.reviewChangeRequest({ environment_id: env, change_request_id: request.id, body_json: body({ verdict: 'approve' }) }, bearer(reviewer.token));
    expectStatus(await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { flag: { off_variant_key: 'on' } }, headers: { 'x-approval-bypass': 'true' } }), 200, 'bypass');
    await rejectsWithStatus(rpc.applyChangeRequest({ environment_id: env, change_request_id: request.id }, bearer(a.admin.token)), grpc.status.FAILED_PRECONDITION);
    assert.equal(answer(await rpc.getChangeRequest({ environment_id: env, change_request_id: request.id }, bearer(a.admin.token))).status, 'conflicted');
    assert.equal(expectStatus(await client.get(`${envFlags(env)}/${key}`, { token: a.admin.token }), 200).enabled, true, 'not turned off');
  });

  test('the gate over gRPC: a direct segment write is FAILED_PRECONDITION; an admin passes with x-approval-bypass metadata, an editor is refused', async () => {
    await gatedFlag();
    const Segments = lookup<grpc.ServiceClientConstructor>(loadProto('svc/segments/v1/segments.proto'), 'svc.segments.v1.SegmentationService');
    const segments = promisified<{ mutateSegment: Unary<object, Json>; client: grpc.Client }>(Segments, ts.server.grpcPort);
    try {
      const create = (key: string) => ({ environment_id: env, kind: 'SEGMENT_MUTATION_KIND_CREATE', list_segment: { key, context_type: 'user' } });
      await rejectsWithStatus(segments.mutateSegment(create(`gs-${unique()}`), bearer(a.admin.token)), grpc.status.FAILED_PRECONDITION);
      const asEditor = bearer(a.member.token);
      asEditor.set('x-approval-bypass', 'true');
      await rejectsWithStatus(segments.mutateSegment(create(`gs-${unique()}`), asEditor), grpc.status.PERMISSION_DENIED);
      const asAdmin = bearer(a.admin.token);
      asAdmin.set('x-approval-bypass', 'true');
      const key = `gs-${unique()}`;
      await segments.mutateSegment(create(key), asAdmin);
      expectStatus(await client.get(`/v1/environments/${env}/segments/${key}`, { token: a.admin.token }), 200, 'created with a bypass');
    } finally {
      segments.client.close();
    }
  });

  test('refusals: another org, no credential, malformed bytes, an unknown request', async () => {
    const key = await gatedFlag();
    const request = await create(key);
    await rejectsWithStatus(rpc.reviewChangeRequest({ environment_id: env, change_request_id: request.id, body_json: body({ verdict: 'approve' }) }, bearer(b.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(rpc.applyChangeRequest({ environment_id: env, change_request_id: request.id }, bearer(b.member.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(rpc.applyChangeRequest({ environment_id: env, change_request_id: request.id }, new grpc.Metadata()), grpc.status.UNAUTHENTICATED);
    await rejectsWithStatus(rpc.createChangeRequest({ environment_id: env, body_json: Buffer.from([0xff, 0xfe]) }, bearer(a.admin.token)), grpc.status.INVALID_ARGUMENT);
    await rejectsWithStatus(rpc.getChangeRequest({ environment_id: env, change_request_id: '00000000-0000-4000-8000-000000000000' }, bearer(a.admin.token)), grpc.status.NOT_FOUND);
    await rejectsWithStatus(rpc.getChangeRequest({ environment_id: env }, bearer(a.admin.token)), grpc.status.INVALID_ARGUMENT);
  });
});
