import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createHash } from 'node:crypto';
import { flagHistoryPath } from './support/audit-log.ts';
import { createFlag, createSegment, envFlags, put, segmentsOf } from './support/flag-client.ts';
import { api, expectError, expectRefused, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Change requests and approvals over real HTTP and PostgreSQL, in both topologies
 * (docs/workflow.md "Change requests and approvals"): the gate on direct writes (flags and segments) with its 409 naming
 * the rule, the kill-switch exemption, an audited bypass, self-approval, approvals reset by an edit,
 * min_approvals, a conflicted apply that writes nothing, a rejected request, and the callers who
 * must not approve or apply: another org's member, a viewer, an anonymous client, an SDK key, a
 * removed admin's token.
 */

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
/** A second admin of a's org (an approver other than the author). */
let reviewer: LoggedInUser;
let thirdReviewer: LoggedInUser;
/** A viewer of a's project (role bindings). */
let viewer: LoggedInUser;

const policyPath = (env: string) => `/v1/management/environments/${env}/approval-policy`;
const requests = (env: string) => `/v1/environments/${env}/change-requests`;
const setPolicy = async (env: string, body: Json) => expectStatus(await put(client, policyPath(env), { token: a.admin.token, body }), 200, 'put policy');
const VARIANTS = [
  { key: 'on', value: 'ON' },
  { key: 'off', value: 'OFF' },
];

async function newEnvironment(name: string): Promise<string> {
  return expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: `${name}-${unique()}` } }), 201, 'environment').environment_id;
}

/** A gated environment of a's project, with one enabled flag (before the policy is set). */
async function gated(policy: Json = {}): Promise<{ env: string; key: string }> {
  const env = await newEnvironment('gated');
  const key = `cr-${unique()}`;
  await createFlag(client, a.admin.token, env, { flag: { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [] }, enabled: true });
  await setPolicy(env, { required: true, ...policy });
  return { env, key };
}

const readFlag = async (env: string, key: string): Promise<Json> => expectStatus(await client.get(`${envFlags(env)}/${key}`, { token: a.admin.token }), 200, 'read flag');

async function openRequest(env: string, changes: Json[], token = a.admin.token): Promise<Json> {
  return expectStatus(await client.post(requests(env), { token, body: { title: 'turn it off', description: 'because', changes, submit: true } }), 201, 'create request');
}
const review = (env: string, id: string, token: string, verdict: string, extra: Json = {}) => client.post(`${requests(env)}/${id}/reviews`, { token, body: { verdict, ...extra } });
const apply = (env: string, id: string, token = a.admin.token) => client.post(`${requests(env)}/${id}/apply`, { token });
const offChange = (key: string) => ({ flag_key: key, operations: [{ op: 'set_enabled', enabled: false }] });

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'cr-a');
  b = await seedTenant(client, root.token, 'cr-b');
  reviewer = await seedUser(client, root.token, a.orgId, 'org_admin', 'cr-reviewer');
  thirdReviewer = await seedUser(client, root.token, a.orgId, 'org_admin', 'cr-third');
  viewer = await seedUser(client, root.token, a.orgId, 'org_member', 'cr-viewer');
  expectStatus(
    await put(client, `/v1/management/orgs/${a.orgId}/members/${viewer.userId}/role-bindings`, { token: a.admin.token, body: { bindings: [{ role: 'viewer', project_id: a.projectId }] } }),
    200,
    'viewer binding',
  );
});
after(() => ts.stop());

describe('approval policy', () => {
  test('defaults, a PUT keeps the fields left out, bad values answer 400, a member (editor) cannot set it', async () => {
    const env = await newEnvironment('policy');
    assert.deepEqual(expectStatus(await client.get(policyPath(env), { token: a.member.token }), 200), {
      environment_id: env, required: false, min_approvals: 1, allow_self_approval: false, reset_on_change: true, kill_switch_exempt: false,
    });
    assert.deepEqual(await setPolicy(env, { required: true, min_approvals: 2 }), {
      environment_id: env, required: true, min_approvals: 2, allow_self_approval: false, reset_on_change: true, kill_switch_exempt: false,
    });
    assert.equal((await setPolicy(env, { kill_switch_exempt: true })).min_approvals, 2);
    expectError(await put(client, policyPath(env), { token: a.admin.token, body: { min_approvals: 6 } }), 400, 'INVALID_ARGUMENT');
    expectError(await put(client, policyPath(env), { token: a.admin.token, body: { min_approvals: 0 } }), 400, 'INVALID_ARGUMENT');
    expectError(await put(client, policyPath(env), { token: a.admin.token, body: { required: 'yes' } }), 400, 'INVALID_ARGUMENT');
    expectError(await put(client, policyPath(env), { token: a.member.token, body: { required: false } }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(policyPath(env), { token: b.admin.token }), 404, 'NOT_FOUND');
  });
});

describe('the gate', () => {
  test('a direct flag write and a direct segment write are refused with 409 naming the rule; nothing is written', async () => {
    const env = await newEnvironment('gate');
    const key = `g-${unique()}`;
    await createFlag(client, a.admin.token, env, { flag: { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [] }, enabled: true });
    const segment = `s-${unique()}`;
    await createSegment(client, a.admin.token, env, { key: segment, context_type: 'user', kind: 'list', included_keys: ['u1'] });
    await setPolicy(env, { required: true });

    const refused = await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { enabled: false } });
    expectError(refused, 409, 'FAILED_PRECONDITION');
    assert.match(refused.body.error, /requires approval/);
    assert.match(refused.body.error, /required=true/);
    assert.equal((await readFlag(env, key)).enabled, true, 'nothing written');

    const members = await client.request('PATCH', `${segmentsOf(env)}/${segment}/members`, { token: a.admin.token, body: { add_included: ['u2'] } });
    expectError(members, 409, 'FAILED_PRECONDITION');
    assert.match(members.body.error, /requires approval/);
    const created = await client.post(segmentsOf(env), { token: a.admin.token, body: { key: `n-${unique()}`, context_type: 'user', kind: 'list' } });
    expectError(created, 409, 'FAILED_PRECONDITION');
    const stored = expectStatus(await client.get(`${segmentsOf(env)}/${segment}`, { token: a.admin.token }), 200);
    assert.equal(stored.included_count, 1, 'members unchanged');

    // A flag created through the environment's route writes its state there: refused too.
    expectError(await client.post(envFlags(env), { token: a.admin.token, body: { flag: { key: `c-${unique()}`, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [] }, enabled: true } }), 409, 'FAILED_PRECONDITION');
    // Another environment of the project is not gated.
    const other = await newEnvironment('ungated');
    expectStatus(await put(client, `${envFlags(other)}/${key}`, { token: a.admin.token, body: { enabled: true } }), 200, 'ungated write');
  });

  test('environment copy into a gated environment and a flags-as-code import writing there are refused by the same gate, nothing written', async () => {
    const source = await newEnvironment('source');
    const name = `gated-fac-${unique()}`;
    const env = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name } }), 201).environment_id;
    const key = `cp-${unique()}`;
    await createFlag(client, a.admin.token, source, { flag: { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [] }, enabled: true });
    await setPolicy(env, { required: true });
    const copied = await client.post(`/v1/environments/${env}/copy`, { token: a.admin.token, body: { from_environment_id: source, flag_keys: [key], include: ['enabled'] } });
    expectError(copied, 409, 'FAILED_PRECONDITION');
    assert.match(copied.body.error, /requires approval/);
    assert.equal((await readFlag(env, key)).enabled, false, 'not copied');

    const document = { format: 'switchyard.flags/v1', flags: [{ key, value_type: 'string', variants: VARIANTS }], environments: { [name]: { flags: { [key]: { enabled: true } } } } };
    const imported = await client.post(`/v1/projects/${a.projectId}/import`, { token: a.admin.token, body: document });
    // An import's refusal carries its outcome beside {error, code} (docs/flags-as-code.md).
    assert.equal(imported.status, 409, imported.text);
    assert.equal(imported.body.code, 'FAILED_PRECONDITION');
    assert.equal(imported.body.applied, false);
    assert.match(JSON.stringify(imported.body.refused), /requires approval/);
    assert.equal((await readFlag(env, key)).enabled, false, 'not imported');
  });

  test('kill switch: with kill_switch_exempt, turning a flag off is direct; turning it on, or off with another change, is not', async () => {
    const { env, key } = await gated({ kill_switch_exempt: false });
    expectError(await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { enabled: false } }), 409, 'FAILED_PRECONDITION');
    await setPolicy(env, { kill_switch_exempt: true });
    expectError(await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { enabled: false, flag: { off_variant_key: 'on' } } }), 409, 'FAILED_PRECONDITION');
    expectStatus(await put(client, `${envFlags(env)}/${key}`, { token: a.member.token, body: { enabled: false } }), 200, 'kill switch');
    assert.equal((await readFlag(env, key)).enabled, false);
    expectError(await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { enabled: true } }), 409, 'FAILED_PRECONDITION');
  });

  test('bypass: an admin with X-Approval-Bypass writes and the entry says so; an editor asking for it is refused; a bad value is 400', async () => {
    const { env, key } = await gated();
    const bypass = { 'x-approval-bypass': 'true' };
    expectError(await put(client, `${envFlags(env)}/${key}`, { token: a.member.token, body: { enabled: false }, headers: bypass }), 403, 'PERMISSION_DENIED');
    expectError(await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { enabled: false }, headers: { 'x-approval-bypass': 'maybe' } }), 400, 'INVALID_ARGUMENT');
    assert.equal((await readFlag(env, key)).enabled, true);
    expectStatus(await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { enabled: false }, headers: bypass }), 200, 'bypass');
    assert.equal((await readFlag(env, key)).enabled, false);
    const history = expectStatus(await client.get(flagHistoryPath(env, key), { token: a.admin.token }), 200, 'history');
    const entry = history.entries.find((e: Json) => e.action === 'flag.update');
    assert.ok(entry, JSON.stringify(history));
    assert.equal(entry.details.approval_bypassed, true);
    assert.equal(entry.actor.id, a.admin.userId);
  });
});

describe('change requests', () => {
  test('apply after an approval: the flag is written, the entry names the applier and the approvers, the request is applied', async () => {
    const { env, key } = await gated();
    const request = await openRequest(env, [offChange(key)]);
    assert.equal(request.status, 'open');
    assert.equal(request.changes[0].version, 1, 'made against the current version');
    // The content hash is sha256 over the canonical JSON (keys sorted) of the changes.
    const canonical = `[{"flag_key":${JSON.stringify(key)},"operations":[{"enabled":false,"op":"set_enabled"}],"version":1}]`;
    assert.equal(request.content_hash, createHash('sha256').update(canonical).digest('hex'));
    assert.equal(request.approvals_needed, 1);
    expectError(await apply(env, request.id), 409, 'FAILED_PRECONDITION');
    const approved = expectStatus(await review(env, request.id, reviewer.token, 'approve', { content_hash: request.content_hash }), 200, 'approve');
    assert.deepEqual(approved.approvals.map((x: Json) => x.reviewer_id), [reviewer.userId]);
    const applied = expectStatus(await apply(env, request.id), 200, 'apply');
    assert.equal(applied.status, 'applied');
    assert.deepEqual(applied.applied_by, { applier_id: a.admin.userId, approvers: [reviewer.email] });
    const flag = await readFlag(env, key);
    assert.equal(flag.enabled, false);
    assert.equal(flag.version, 2);
    const history = expectStatus(await client.get(flagHistoryPath(env, key), { token: a.admin.token }), 200, 'history');
    const entry = history.entries.find((e: Json) => e.action === 'flag.update');
    assert.equal(entry.actor.id, a.admin.userId);
    assert.equal(entry.details.change_request_id, request.id);
    assert.deepEqual(entry.details.approved_by, [reviewer.email]);
    expectError(await apply(env, request.id), 409, 'FAILED_PRECONDITION');
  });

  test('self-approval is refused unless the policy allows it', async () => {
    const { env, key } = await gated();
    const request = await openRequest(env, [offChange(key)]);
    const self = await review(env, request.id, a.admin.token, 'approve');
    expectError(self, 403, 'PERMISSION_DENIED');
    assert.match(self.body.error, /allow_self_approval/);
    await setPolicy(env, { allow_self_approval: true });
    expectStatus(await review(env, request.id, a.admin.token, 'approve'), 200, 'self approval allowed');
    expectStatus(await apply(env, request.id), 200, 'apply');
  });

  test('an edit resets the approvals (reset_on_change); a review of older content is refused', async () => {
    const { env, key } = await gated();
    const request = await openRequest(env, [offChange(key)]);
    expectStatus(await review(env, request.id, reviewer.token, 'approve'), 200);
    const edited = expectStatus(
      await client.request('PATCH', `${requests(env)}/${request.id}`, { token: a.admin.token, body: { changes: [{ flag_key: key, operations: [{ op: 'set_off_variant', variant_key: 'on' }] }] } }),
      200,
      'edit',
    );
    assert.notEqual(edited.content_hash, request.content_hash);
    assert.deepEqual(edited.approvals, []);
    assert.equal(edited.reviews.length, 1, 'the review stays in the record, for the older content');
    expectError(await apply(env, request.id), 409, 'FAILED_PRECONDITION');
    expectError(await review(env, request.id, reviewer.token, 'approve', { content_hash: request.content_hash }), 409, 'FAILED_PRECONDITION');
    // Only the author edits.
    expectError(await client.request('PATCH', `${requests(env)}/${request.id}`, { token: reviewer.token, body: { title: 'mine now' } }), 403, 'PERMISSION_DENIED');
    expectStatus(await review(env, request.id, reviewer.token, 'approve', { content_hash: edited.content_hash }), 200);
    expectStatus(await apply(env, request.id), 200, 'apply');
    assert.equal((await readFlag(env, key)).off_variant_key, 'on');
  });

  test('min_approvals: 2 needs two different approvers', async () => {
    const { env, key } = await gated({ min_approvals: 2 });
    const request = await openRequest(env, [offChange(key)]);
    expectStatus(await review(env, request.id, reviewer.token, 'approve'), 200);
    expectStatus(await review(env, request.id, reviewer.token, 'approve'), 200, 'twice by the same person');
    const short = await apply(env, request.id);
    expectError(short, 409, 'FAILED_PRECONDITION');
    assert.match(short.body.error, /1 of the 2 approvals/);
    expectStatus(await review(env, request.id, thirdReviewer.token, 'approve'), 200);
    expectStatus(await apply(env, request.id), 200, 'apply with two');
  });

  test('a conflicted apply writes nothing (two changes: none applied) and marks the request conflicted; an edit rebases it', async () => {
    const { env, key } = await gated();
    const segment = `cs-${unique()}`;
    await setPolicy(env, { required: false });
    await createSegment(client, a.admin.token, env, { key: segment, context_type: 'user', kind: 'list', included_keys: ['u1'] });
    await setPolicy(env, { required: true });
    const request = await openRequest(env, [
      { segment_key: segment, operations: [{ op: 'add_members', list: 'included', keys: ['u2'] }] },
      { flag_key: key, operations: [{ op: 'set_off_variant', variant_key: 'on' }] },
    ]);
    expectStatus(await review(env, request.id, reviewer.token, 'approve'), 200);
    // Someone changes the flag after the request was made (a bypass).
    expectStatus(await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { enabled: false }, headers: { 'x-approval-bypass': 'true' } }), 200);
    const conflicted = await apply(env, request.id);
    expectError(conflicted, 409, 'FAILED_PRECONDITION');
    assert.match(conflicted.body.error, /conflicted/);
    assert.match(conflicted.body.error, new RegExp(`flag '${key}' is at version 2, the request was made against version 1`));
    const stored = expectStatus(await client.get(`${requests(env)}/${request.id}`, { token: a.admin.token }), 200);
    assert.equal(stored.status, 'conflicted');
    assert.equal((await readFlag(env, key)).off_variant_key, 'off', 'flag not written');
    assert.equal(expectStatus(await client.get(`${segmentsOf(env)}/${segment}`, { token: a.admin.token }), 200).included_count, 1, 'segment not written');
    expectError(await apply(env, request.id), 409, 'FAILED_PRECONDITION');
    // Rebase: the author edits (versions default to the current ones); approvals reset.
    const rebased = expectStatus(
      await client.request('PATCH', `${requests(env)}/${request.id}`, {
        token: a.admin.token,
        body: { changes: [{ segment_key: segment, operations: [{ op: 'add_members', list: 'included', keys: ['u2'] }] }, { flag_key: key, operations: [{ op: 'set_off_variant', variant_key: 'on' }] }] },
      }),
      200,
    );
    assert.equal(rebased.status, 'open');
    assert.deepEqual(rebased.approvals, []);
    expectStatus(await review(env, request.id, reviewer.token, 'approve'), 200);
    expectStatus(await apply(env, request.id), 200, 'apply after rebase');
    assert.equal((await readFlag(env, key)).off_variant_key, 'on');
    assert.equal(expectStatus(await client.get(`${segmentsOf(env)}/${segment}`, { token: a.admin.token }), 200).included_count, 2);
  });

  test("an approver removed from the org no longer counts", async () => {
    const { env, key } = await gated();
    const leaving = await seedUser(client, root.token, a.orgId, 'org_member', 'cr-leaving');
    const request = await openRequest(env, [offChange(key)]);
    expectStatus(await review(env, request.id, leaving.token, 'approve'), 200);
    expectStatus(await client.delete(`/v1/management/orgs/${a.orgId}/users/${leaving.userId}`, { token: a.admin.token }), 204);
    const refused = await apply(env, request.id);
    expectError(refused, 409, 'FAILED_PRECONDITION');
    assert.match(refused.body.error, /0 of the 1 approvals/);
    assert.equal((await readFlag(env, key)).enabled, true);
  });

  test('a rejected request cannot be applied, even with an approval', async () => {
    const { env, key } = await gated();
    const request = await openRequest(env, [offChange(key)]);
    expectStatus(await review(env, request.id, thirdReviewer.token, 'approve'), 200);
    const rejected = expectStatus(await review(env, request.id, reviewer.token, 'reject', { comment: 'not now' }), 200);
    assert.equal(rejected.status, 'rejected');
    const refused = await apply(env, request.id);
    expectError(refused, 409, 'FAILED_PRECONDITION');
    assert.match(refused.body.error, /rejected/);
    assert.equal((await readFlag(env, key)).enabled, true);
    expectStatus(await client.post(`${requests(env)}/${request.id}/cancel`, { token: a.admin.token }), 200, 'cancel');
    expectError(await apply(env, request.id), 409, 'FAILED_PRECONDITION');
  });

  test('bad bodies answer 400 naming the field; an unknown flag 404', async () => {
    const { env, key } = await gated();
    expectError(await client.post(requests(env), { token: a.admin.token, body: { title: 'x', changes: [] } }), 400, 'INVALID_ARGUMENT');
    expectError(await client.post(requests(env), { token: a.admin.token, body: { title: 'x', changes: [{ flag_key: key, operations: [{ op: 'explode' }] }] } }), 400, 'INVALID_ARGUMENT');
    expectError(await client.post(requests(env), { token: a.admin.token, body: { changes: [offChange(key)] } }), 400, 'INVALID_ARGUMENT');
    expectError(await client.post(requests(env), { token: a.admin.token, body: { title: 'x', changes: [offChange(key), offChange(key)] } }), 400, 'INVALID_ARGUMENT');
    expectError(await client.post(requests(env), { token: a.admin.token, body: { title: 'x', changes: [offChange('nope')] } }), 404, 'NOT_FOUND');
    expectError(await review(env, '00000000-0000-4000-8000-000000000000', reviewer.token, 'approve'), 404, 'NOT_FOUND');
  });
});

describe('who cannot approve or apply', () => {
  test("another org's member, a viewer, an anonymous client, an SDK key, a removed admin's token", async () => {
    const { env, key } = await gated();
    const removed = await seedUser(client, root.token, a.orgId, 'org_admin', 'cr-removed');
    const request = await openRequest(env, [offChange(key)]);
    const path = `${requests(env)}/${request.id}`;

    for (const [who, token] of [['other org admin', b.admin.token], ['other org member', b.member.token]] as const) {
      expectError(await review(env, request.id, token, 'approve'), 404, 'NOT_FOUND');
      expectError(await apply(env, request.id, token), 404, 'NOT_FOUND');
      expectError(await client.get(path, { token }), 404, 'NOT_FOUND');
      void who;
    }
    expectError(await review(env, request.id, viewer.token, 'approve'), 403, 'PERMISSION_DENIED');
    expectError(await apply(env, request.id, viewer.token), 403, 'PERMISSION_DENIED');
    expectStatus(await client.get(path, { token: viewer.token }), 200, 'a viewer reads');

    expectError(await client.post(`${path}/reviews`, { body: { verdict: 'approve' } }), 401, 'UNAUTHENTICATED');
    expectError(await client.post(`${path}/apply`, {}), 401, 'UNAUTHENTICATED');
    const sdk = { 'x-sdk-key': a.rawKey };
    expectRefused(await client.post(`${path}/reviews`, { headers: sdk, body: { verdict: 'approve' } }), [401, 403], 'sdk key review');
    expectRefused(await client.post(`${path}/apply`, { headers: sdk }), [401, 403], 'sdk key apply');

    expectStatus(await client.delete(`/v1/management/orgs/${a.orgId}/users/${removed.userId}`, { token: a.admin.token }), 204);
    expectRefused(await review(env, request.id, removed.token, 'approve'), [401, 403, 404], 'removed admin review');
    expectRefused(await apply(env, request.id, removed.token), [401, 403, 404], 'removed admin apply');

    const stored = expectStatus(await client.get(path, { token: a.admin.token }), 200);
    assert.equal(stored.status, 'open');
    assert.deepEqual(stored.reviews, [], 'no review was recorded');
    assert.equal((await readFlag(env, key)).enabled, true, 'nothing applied');
  });
});
