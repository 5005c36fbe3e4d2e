import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { auditLogPath, readAll } from './support/audit-log.ts';
import { createFlag, envFlags, put } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * A change request applied at a time over real HTTP and PostgreSQL, in both topologies
 * (docs/workflow.md "Change requests and approvals"): `POST .../apply {execute_at_ms}` makes it
 * scheduled (listed with ?status=scheduled, in the calendar with include=change_requests), the
 * scheduler applies it at the time exactly once with two server instances on one database; a
 * version moved in between makes it conflicted with nothing written; edits and reviews are refused
 * while scheduled, cancel is not; bad times answer 400; the callers who must not schedule cannot;
 * and the scheduler's metrics on /metrics.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let approver: LoggedInUser;
let viewer: LoggedInUser;
let viewerToken: string;
/** The second instance the first test starts (it keeps running for the others). */
let other: Awaited<ReturnType<TestServer['startAnotherInstance']>>;

/** A counter or histogram count of the scheduler, summed over both instances' /metrics (either may have handled it). */
async function schedulerSample(pattern: RegExp): Promise<number> {
  let sum = 0;
  for (const server of [ts.server, other]) {
    const scrape = await server.http.inject({ method: 'GET', url: '/metrics' });
    assert.equal(scrape.statusCode, 200);
    sum += Number(pattern.exec(scrape.body)?.[1] ?? 0);
  }
  return sum;
}

const VARIANTS = [
  { key: 'on', value: 'ON' },
  { key: 'off', value: 'OFF' },
];
const policyPath = (env: string) => `/v1/management/environments/${env}/approval-policy`;
const requests = (env: string) => `/v1/environments/${env}/change-requests`;

/** Polls `read` until `accept` holds, at most 15 s. */
async function until<T>(read: () => Promise<T>, accept: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A new gated environment (one approval) with `count` disabled flags. */
async function gated(count = 1): Promise<{ env: string; keys: string[] }> {
  const env = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: `at-${unique()}` } }), 201, 'environment').environment_id;
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const key = `at-${unique()}`;
    await createFlag(client, a.admin.token, env, { flag: { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [] }, enabled: false });
    keys.push(key);
  }
  expectStatus(await put(client, policyPath(env), { token: a.admin.token, body: { required: true } }), 200, 'policy');
  return { env, keys };
}

/** An open request turning every key on, approved by `approver`. */
async function approved(env: string, keys: string[]): Promise<Json> {
  const created = expectStatus(
    await client.post(requests(env), { token: a.admin.token, body: { title: 'launch', changes: keys.map((key) => ({ flag_key: key, operations: [{ op: 'set_enabled', enabled: true }] })), submit: true } }),
    201,
    'create request',
  );
  expectStatus(await client.post(`${requests(env)}/${created.id}/reviews`, { token: approver.token, body: { verdict: 'approve' } }), 200, 'approve');
  return created;
}

const applyAt = (env: string, id: string, body: unknown, token = a.admin.token) => client.post(`${requests(env)}/${id}/apply`, { token, body });
const readRequest = async (env: string, id: string): Promise<Json> => expectStatus(await client.get(`${requests(env)}/${id}`, { token: a.admin.token }), 200, 'read request');
const readFlag = async (env: string, key: string): Promise<Json> => expectStatus(await client.get(`${envFlags(env)}/${key}`, { token: a.admin.token }), 200, 'read flag');

before(async () => {
  ts = await startTestServer({ SCHEDULES_POLL_MS: '50' });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'at-a');
  b = await seedTenant(client, root.token, 'at-b');
  approver = await seedUser(client, root.token, a.orgId, 'org_admin', 'at-approver');
  viewer = await seedUser(client, root.token, a.orgId, 'org_member', 'at-viewer');
  expectStatus(
    await put(client, `/v1/management/orgs/${a.orgId}/members/${viewer.userId}/role-bindings`, { token: a.admin.token, body: { bindings: [{ role: 'viewer', project_id: a.projectId }] } }),
    200,
    'viewer binding',
  );
  viewerToken = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/api-tokens`, { token: a.admin.token, body: { name: `ro-${unique()}`, role: 'viewer' } }), 201, 'viewer token').token;
});
after(() => ts.stop());

describe('apply at a time over REST', () => {
  test('scheduled, listed and in the calendar; applied at the time exactly once by two instances; the metrics count it', async () => {
    other = await ts.startAnotherInstance();
    const { env, keys } = await gated(2);
    const request = await approved(env, keys);
    // Far enough ahead that the listing and calendar reads below come before it even on a loaded
    // machine (at 1.5 s a run under load 19 found it applied already).
    const at = Date.now() + 6_000;
    const scheduled = expectStatus(await applyAt(env, request.id, { execute_at_ms: at }), 200, 'apply at');
    assert.equal(scheduled.status, 'scheduled');
    assert.equal(scheduled.execute_at_ms, at);
    assert.equal(scheduled.scheduled_by.type, 'user');
    assert.equal(scheduled.scheduled_by.id, a.admin.userId);
    assert.deepEqual(expectStatus(await client.get(`${requests(env)}?status=scheduled`, { token: a.member.token }), 200).change_requests.map((r: Json) => r.id), [request.id]);
    // The calendar: a bare array as before; with include=change_requests, both lists.
    assert.deepEqual(expectStatus(await client.get(`/v1/environments/${env}/scheduled-changes`, { token: a.member.token }), 200), []);
    const calendar = expectStatus(await client.get(`/v1/environments/${env}/scheduled-changes?include=change_requests`, { token: a.member.token }), 200);
    assert.deepEqual(calendar.scheduled_changes, []);
    assert.deepEqual(calendar.change_requests.map((r: Json) => [r.id, r.title, r.execute_at_ms, r.flag_keys, r.scheduled_by.id]), [[request.id, 'launch', at, keys, a.admin.userId]]);
    expectError(await client.get(`/v1/environments/${env}/scheduled-changes?include=everything`, { token: a.member.token }), 400, 'INVALID_ARGUMENT');
    assert.equal((await readFlag(env, keys[0]!)).enabled, false, 'not before its time');

    const applied = await until(() => readRequest(env, request.id), (r) => r.status !== 'scheduled', 'applied');
    assert.equal(applied.status, 'applied');
    assert.ok(applied.applied_at_ms >= at, 'not early');
    for (const key of keys) {
      const flag = await readFlag(env, key);
      assert.equal(flag.enabled, true);
      assert.equal(flag.version, 2, `${key}: written once`);
    }
    const entries = await readAll(client, a.admin.token, (query) => auditLogPath(a.orgId, { ...query, environment_id: env }));
    assert.equal(entries.filter((e) => e.action === 'change_request.apply' && e.resource_id === request.id).length, 1, 'one apply entry');
    assert.equal(entries.filter((e) => e.action === 'change_request.schedule' && e.resource_id === request.id).length, 1, 'one schedule entry');
    const flagEntries = entries.filter((e) => e.action === 'flag.update' && e.details?.change_request_id === request.id);
    assert.equal(flagEntries.length, 2, 'one entry per flag');
    assert.deepEqual(flagEntries[0]!.actor, { type: 'system', id: 'scheduler' });
    assert.deepEqual(flagEntries[0]!.details.approved_by, [approver.email]);

    // Metrics are the services process's (in the split topology, not the gateway's): read from its
    // /metrics route. Two instances share the work, so the one that applied it is either; summed
    // over both, the request is counted once, with its lateness observed once.
    assert.equal(await schedulerSample(/^switchyard_scheduler_applications_total\{kind="change_request",outcome="applied"\} (\d+)/m), 1);
    assert.equal(await schedulerSample(/^switchyard_scheduler_lateness_seconds_count\{kind="change_request"\} (\d+)/m), 1);
  });

  test('a version moved in between: conflicted with the reason at the time, nothing written, an entry', async () => {
    const { env, keys } = await gated(2);
    const request = await approved(env, keys);
    expectStatus(await applyAt(env, request.id, { execute_at_ms: Date.now() + 1500 }), 200, 'apply at');
    // An admin's audited bypass moves the second flag to version 2 before the time.
    expectStatus(await put(client, `${envFlags(env)}/${keys[1]}`, { token: a.admin.token, body: { flag: { off_variant_key: 'on' } }, headers: { 'x-approval-bypass': 'true' } }), 200, 'bypass write');
    const conflicted = await until(() => readRequest(env, request.id), (r) => r.status !== 'scheduled', 'handled');
    assert.equal(conflicted.status, 'conflicted');
    assert.equal(conflicted.conflict, `flag '${keys[1]}' is at version 2, the request was made against version 1`);
    const first = await readFlag(env, keys[0]!);
    assert.deepEqual([first.enabled, first.version], [false, 1], 'the first change was not written either');
    const entries = await readAll(client, a.admin.token, (query) => auditLogPath(a.orgId, { ...query, environment_id: env }));
    const conflict = entries.filter((e) => e.action === 'change_request.conflict' && e.resource_id === request.id);
    assert.equal(conflict.length, 1);
    assert.deepEqual(conflict[0]!.actor, { type: 'system', id: 'scheduler' });
    assert.equal(await schedulerSample(/^switchyard_scheduler_applications_total\{kind="change_request",outcome="conflicted"\} (\d+)/m), 1);
  });

  test('while scheduled: an edit and a review answer 409 naming why; cancel works and it is never applied', async () => {
    const { env, keys } = await gated(1);
    const request = await approved(env, keys);
    const at = Date.now() + 60 * 60_000;
    expectStatus(await applyAt(env, request.id, { execute_at_ms: at }), 200, 'apply at');
    const edit = await client.request('PATCH', `${requests(env)}/${request.id}`, { token: a.admin.token, body: { title: 'renamed' } });
    expectError(edit, 409, 'FAILED_PRECONDITION');
    assert.match(edit.body.error, new RegExp(`scheduled for ${new Date(at).toISOString().replace(/\./g, '\\.')}`));
    const reviewed = await client.post(`${requests(env)}/${request.id}/reviews`, { token: approver.token, body: { verdict: 'reject' } });
    expectError(reviewed, 409, 'FAILED_PRECONDITION');
    assert.match(reviewed.body.error, /scheduled/);
    expectError(await applyAt(env, request.id, undefined), 409, 'FAILED_PRECONDITION');
    const cancelled = expectStatus(await client.post(`${requests(env)}/${request.id}/cancel`, { token: a.admin.token }), 200, 'cancel');
    assert.equal(cancelled.status, 'cancelled');
    const calendar = expectStatus(await client.get(`/v1/environments/${env}/scheduled-changes?include=change_requests`, { token: a.admin.token }), 200);
    assert.deepEqual(calendar.change_requests, [], 'no longer in the calendar');
  });

  test('bad execute_at_ms answers 400; a viewer, a viewer API token, another org and no credential cannot schedule', async () => {
    const { env, keys } = await gated(1);
    const request = await approved(env, keys);
    const later = Date.now() + 60 * 60_000;
    for (const body of [{ execute_at_ms: Date.now() - 1000 }, { execute_at_ms: 'tomorrow' }, { execute_at_ms: 1.5 }, { execute_at_ms: Date.now() + 6 * 366 * 86_400_000 }, { execute_at_ms: later, extra: true }, [later]]) {
      expectError(await applyAt(env, request.id, body), 400, 'INVALID_ARGUMENT');
    }
    expectError(await applyAt(env, request.id, { execute_at_ms: later }, viewer.token), 403, 'PERMISSION_DENIED');
    expectError(await applyAt(env, request.id, { execute_at_ms: later }, viewerToken), 403, 'PERMISSION_DENIED');
    expectError(await applyAt(env, request.id, { execute_at_ms: later }, b.admin.token), 404, 'NOT_FOUND');
    const anonymous = await client.post(`${requests(env)}/${request.id}/apply`, { body: { execute_at_ms: later } });
    assert.equal(anonymous.status, 401, anonymous.text);
    const still = await readRequest(env, request.id);
    assert.deepEqual([still.status, still.execute_at_ms, still.scheduled_by], ['open', null, null], 'none of these scheduled it');
    // The approved request still applies now, with no body, as before.
    assert.equal(expectStatus(await applyAt(env, request.id, undefined), 200, 'apply now').status, 'applied');
  });
});
