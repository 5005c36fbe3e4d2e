import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { auditLogPath, flagHistoryPath } from './support/audit-log.ts';
import { createFlag, envFlags, put } from './support/flag-client.ts';
import { api, expectError, expectRefused, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Revert through a change request, the change-request caps, and approvals shown as they count
 * now, over real HTTP and PostgreSQL in both topologies (docs/workflow.md "Revert", "Change
 * requests"): in an environment whose policy requires approval a revert opens a request (202)
 * holding the operations back to the entry's before state, prerequisites included; a bypass or an
 * exempt kill switch still writes directly; the callers who must not open one (another org, a
 * viewer, a viewer's API token, a removed admin, an anonymous client); 200 unfinished requests per
 * environment and 100 reviews per request; an approval by someone removed or demoted since is not
 * shown as counting.
 */

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
let reviewer: LoggedInUser;
let viewer: LoggedInUser;

const VARIANTS = [
  { key: 'on', value: 'ON' },
  { key: 'off', value: 'OFF' },
];
const BETA = { id: 'beta', conditions: [{ attribute: 'plan', op: 'eq', values: ['beta'] }], variant_key: 'on' };
const policyPath = (env: string) => `/v1/management/environments/${env}/approval-policy`;
const requests = (env: string) => `/v1/environments/${env}/change-requests`;
const setPolicy = async (env: string, body: Json) => expectStatus(await put(client, policyPath(env), { token: a.admin.token, body }), 200, 'put policy');
const readFlag = async (env: string, key: string): Promise<Json> => expectStatus(await client.get(`${envFlags(env)}/${key}`, { token: a.admin.token }), 200, 'read flag');
const revert = (env: string, key: string, entryId: string, token: string, headers: Record<string, string> = {}) =>
  client.post(`${envFlags(env)}/${key}/revert`, { token, body: { audit_entry_id: entryId }, headers });
const review = (env: string, id: string, token: string, verdict: string, extra: Json = {}) => client.post(`${requests(env)}/${id}/reviews`, { token, body: { verdict, ...extra } });
const listRequests = async (env: string): Promise<Json[]> => expectStatus(await client.get(requests(env), { token: a.admin.token }), 200, 'list').change_requests;

async function newEnvironment(name: string): Promise<string> {
  return expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: `${name}-${unique()}` } }), 201, 'environment').environment_id;
}

/**
 * An environment with a flag `key` (on, rule beta, off variant off) and a prerequisite flag, then
 * one change of `key` (off, off variant on, no rules, the prerequisite added): its entry is the
 * one to revert. The policy is set after, when given.
 */
async function changedFlag(policy?: Json): Promise<{ env: string; key: string; gate: string; entryId: string }> {
  const env = await newEnvironment('revert');
  const key = `rv-${unique()}`;
  const gate = `gate-${unique()}`;
  await createFlag(client, a.admin.token, env, { flag: { key: gate, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [] }, enabled: true });
  await createFlag(client, a.admin.token, env, { flag: { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [BETA] }, enabled: true });
  expectStatus(
    await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { enabled: false, flag: { off_variant_key: 'on', rules: [], prerequisites: [{ flag_key: gate, variant_keys: ['on'] }] } } }),
    200,
    'the change to revert',
  );
  const history = expectStatus(await client.get(flagHistoryPath(env, key), { token: a.admin.token }), 200, 'history');
  const entry = history.entries.find((e: Json) => e.action === 'flag.update');
  assert.ok(entry, JSON.stringify(history.entries.map((e: Json) => e.action)));
  if (policy) await setPolicy(env, policy);
  return { env, key, gate, entryId: entry.id };
}

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'rv-a');
  b = await seedTenant(client, root.token, 'rv-b');
  reviewer = await seedUser(client, root.token, a.orgId, 'org_admin', 'rv-reviewer');
  viewer = await seedUser(client, root.token, a.orgId, 'org_member', 'rv-viewer');
  expectStatus(
    await put(client, `/v1/management/orgs/${a.orgId}/members/${viewer.userId}/role-bindings`, { token: a.admin.token, body: { bindings: [{ role: 'viewer', project_id: a.projectId }] } }),
    200,
    'viewer binding',
  );
});
after(() => ts.stop());

describe('revert where approval is required', () => {
  test('opens a change request (202) with the operations back to the before state; nothing is written until it is approved and applied', async () => {
    const { env, key, gate, entryId } = await changedFlag({ required: true });
    const changedVersion = (await readFlag(env, key)).version;
    assert.equal(changedVersion, 2, 'created at 1, changed once');

    const answer = await revert(env, key, entryId, a.member.token);
    assert.equal(answer.status, 202, answer.text);
    const request = answer.body.change_request;
    assert.equal(request.status, 'open');
    assert.equal(request.title, `Revert ${key} to before ${entryId}`);
    assert.equal(request.author.id, a.member.userId);
    assert.deepEqual(request.changes, [
      {
        flag_key: key,
        version: 2,
        operations: [
          { op: 'set_rules', rules: [BETA], version: 2 },
          { op: 'set_enabled', enabled: true },
          { op: 'set_off_variant', variant_key: 'off' },
          { op: 'set_prerequisites', prerequisites: [] },
        ],
      },
    ]);
    assert.deepEqual([request.approvals, request.approvals_needed, request.reviews], [[], 1, []]);
    // The answer is the request as GET shows it.
    assert.deepEqual(expectStatus(await client.get(`${requests(env)}/${request.id}`, { token: a.admin.token }), 200, 'get'), request);
    const unchanged = await readFlag(env, key);
    assert.deepEqual([unchanged.version, unchanged.enabled, unchanged.prerequisites], [2, false, [{ flag_key: gate, variant_keys: ['on'] }]], 'nothing written yet');

    const entries = expectStatus(await client.get(auditLogPath(a.orgId, { resource_type: 'change_request' }), { token: a.admin.token }), 200, 'audit').entries;
    const created = entries.find((e: Json) => e.resource_id === request.id && e.action === 'change_request.create');
    assert.ok(created, 'a change_request.create entry');
    assert.equal(created.details.reverts_entry_id, entryId);
    assert.equal(created.details.reverts_action, 'flag.update');

    expectStatus(await review(env, request.id, reviewer.token, 'approve', { content_hash: request.content_hash }), 200, 'approve');
    expectStatus(await client.post(`${requests(env)}/${request.id}/apply`, { token: a.member.token }), 200, 'apply');
    const reverted = await readFlag(env, key);
    assert.deepEqual(
      [reverted.version, reverted.enabled, reverted.off_variant_key, reverted.rules.map((r: Json) => r.id), reverted.prerequisites],
      [3, true, 'off', ['beta'], []],
    );
  });

  test('a flag changed after the request was opened makes its apply conflicted (set_rules was made against the version then)', async () => {
    const { env, key, entryId } = await changedFlag({ required: true });
    const request = expectStatus(await revert(env, key, entryId, a.admin.token), 202, 'revert').change_request;
    expectStatus(await review(env, request.id, reviewer.token, 'approve'), 200);
    expectStatus(await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { flag: { off_variant_key: 'off' } }, headers: { 'x-approval-bypass': 'true' } }), 200, 'bypass edit');
    const refused = await client.post(`${requests(env)}/${request.id}/apply`, { token: a.admin.token });
    expectError(refused, 409, 'FAILED_PRECONDITION');
    assert.match(refused.body.error, /is at version 3, the request was made against version 2/);
    assert.equal((await readFlag(env, key)).enabled, false);
  });

  test('with X-Approval-Bypass an admin of the environment reverts directly (200); an editor asking for it is refused (403)', async () => {
    const { env, key, entryId } = await changedFlag({ required: true });
    expectError(await revert(env, key, entryId, a.member.token, { 'x-approval-bypass': 'true' }), 403, 'PERMISSION_DENIED');
    const flag = expectStatus(await revert(env, key, entryId, a.admin.token, { 'x-approval-bypass': 'true' }), 200, 'bypass revert');
    assert.deepEqual([flag.enabled, flag.version, flag.prerequisites], [true, 3, []]);
    const history = expectStatus(await client.get(flagHistoryPath(env, key), { token: a.admin.token }), 200, 'history');
    const entry = history.entries.find((e: Json) => e.action === 'flag.revert');
    assert.equal(entry.details.approval_bypassed, true);
    assert.deepEqual(await listRequests(env), [], 'no request opened');
  });

  test('a revert that only turns the flag off is written directly where the policy exempts the kill switch; another is a request', async () => {
    const env = await newEnvironment('kill');
    const key = `ks-${unique()}`;
    await createFlag(client, a.admin.token, env, { flag: { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [] }, enabled: false });
    expectStatus(await put(client, `${envFlags(env)}/${key}`, { token: a.admin.token, body: { enabled: true } }), 200, 'turn on');
    const history = expectStatus(await client.get(flagHistoryPath(env, key), { token: a.admin.token }), 200, 'history');
    const turnedOn = history.entries.find((e: Json) => e.action === 'flag.update');
    await setPolicy(env, { required: true, kill_switch_exempt: true });
    const flag = expectStatus(await revert(env, key, turnedOn.id, a.member.token), 200, 'kill switch revert');
    assert.equal(flag.enabled, false);
    // Reverting the revert turns it on again: not exempt.
    const again = expectStatus(await client.get(flagHistoryPath(env, key), { token: a.admin.token }), 200).entries.find((e: Json) => e.action === 'flag.revert');
    assert.equal(expectStatus(await revert(env, key, again.id, a.member.token), 202, 'turning on is a request').change_request.status, 'open');
  });

  test('without required, revert stays direct (200) and restores the prerequisites too', async () => {
    const { env, key, entryId } = await changedFlag();
    const flag = expectStatus(await revert(env, key, entryId, a.member.token), 200, 'revert');
    assert.deepEqual([flag.enabled, flag.off_variant_key, flag.rules.map((r: Json) => r.id), flag.prerequisites, flag.version], [true, 'off', ['beta'], [], 3]);
    assert.deepEqual(await listRequests(env), []);
  });

  test("another org's member, a viewer, a viewer's API token, a removed admin and an anonymous client open no request", async () => {
    const { env, key, entryId } = await changedFlag({ required: true });
    for (const token of [b.admin.token, b.member.token]) expectError(await revert(env, key, entryId, token), 404, 'NOT_FOUND');
    expectError(await revert(env, key, entryId, viewer.token), 403, 'PERMISSION_DENIED');
    const viewerToken = expectStatus(
      await client.post(`/v1/management/orgs/${a.orgId}/api-tokens`, { token: a.admin.token, body: { name: `viewer-${unique()}`, role: 'viewer' } }),
      201,
      'viewer token',
    ).token;
    expectError(await revert(env, key, entryId, viewerToken), 403, 'PERMISSION_DENIED');
    const removed = await seedUser(client, root.token, a.orgId, 'org_admin', 'rv-removed');
    expectStatus(await client.delete(`/v1/management/orgs/${a.orgId}/users/${removed.userId}`, { token: a.admin.token }), 204);
    expectRefused(await revert(env, key, entryId, removed.token), [401, 403, 404], 'removed admin');
    expectError(await client.post(`${envFlags(env)}/${key}/revert`, { body: { audit_entry_id: entryId } }), 401, 'UNAUTHENTICATED');
    // Another org's entry through this flag's route, or this entry through another org's: not found.
    expectError(await revert(b.environmentId, key, entryId, b.admin.token), 404, 'NOT_FOUND');
    assert.deepEqual(await listRequests(env), [], 'no request was opened');
    assert.equal((await readFlag(env, key)).version, 2, 'nothing written');
  });

  test('an API token with write rights opens the request as its author, as it may make any request', async () => {
    const { env, key, entryId } = await changedFlag({ required: true });
    const editorToken = expectStatus(
      await client.post(`/v1/management/orgs/${a.orgId}/api-tokens`, { token: a.admin.token, body: { name: `editor-${unique()}`, role: 'editor', scope: { environment_ids: [env] } } }),
      201,
      'editor token',
    );
    const request = expectStatus(await revert(env, key, entryId, editorToken.token), 202, 'token revert').change_request;
    assert.equal(request.author.id, editorToken.id);
    // It never approves (a person's second look).
    expectError(await review(env, request.id, editorToken.token, 'approve'), 403, 'PERMISSION_DENIED');
  });
});

describe('caps', () => {
  /** Inserts change requests straight into the table (the cap is what is tested, not 200 creates). */
  async function insertRequests(env: string, statuses: string[]): Promise<void> {
    const sql = ts.db.sql;
    for (const status of statuses) {
      await sql`
        INSERT INTO change_requests (org_id, project_id, environment_id, title, changes, content_hash, status, author_id, created_at_ms, updated_at_ms)
        VALUES (${a.orgId}, ${a.projectId}, ${env}, 'filler', '[]'::jsonb, 'h', ${status}, ${a.admin.userId}, 1, 1)`;
    }
  }

  test('200 unfinished requests per environment (draft, open, conflicted, scheduled): the next create or revert is 409 naming the limit; applied and cancelled ones do not count', async () => {
    const { env, key, entryId } = await changedFlag({ required: true });
    const statuses = [...Array(50).fill('draft'), ...Array(50).fill('open'), ...Array(49).fill('conflicted'), ...Array(50).fill('scheduled'), ...Array(30).fill('applied'), ...Array(30).fill('cancelled')];
    await insertRequests(env, statuses);
    const body = { title: 'one more', changes: [{ flag_key: key, operations: [{ op: 'set_enabled', enabled: true }] }] };
    const last = expectStatus(await client.post(requests(env), { token: a.member.token, body }), 201, 'the 200th');
    const over = await client.post(requests(env), { token: a.member.token, body });
    expectError(over, 409, 'FAILED_PRECONDITION');
    assert.match(over.body.error, /200 unfinished change requests/);
    assert.match(over.body.error, /MAX_ACTIVE_CHANGE_REQUESTS_PER_ENVIRONMENT/);
    expectError(await revert(env, key, entryId, a.member.token), 409, 'FAILED_PRECONDITION');
    // The cap is per environment: another one is not affected.
    const other = await newEnvironment('uncapped');
    const otherKey = `oc-${unique()}`;
    await createFlag(client, a.admin.token, other, { flag: { key: otherKey, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [] }, enabled: false });
    expectStatus(await client.post(requests(other), { token: a.member.token, body: { ...body, changes: [{ flag_key: otherKey, operations: [{ op: 'set_enabled', enabled: true }] }] } }), 201, 'another environment');
    // Cancelling one makes room for one.
    expectStatus(await client.post(`${requests(env)}/${last.id}/cancel`, { token: a.member.token }), 200, 'cancel');
    expectStatus(await client.post(requests(env), { token: a.member.token, body }), 201, 'room again');
    expectError(await client.post(requests(env), { token: a.member.token, body }), 409, 'FAILED_PRECONDITION');
  });

  test('racing creates cannot pass the cap together: of 10 at once with room for 4, exactly 4 are created', async () => {
    const { env, key } = await changedFlag({ required: true });
    await insertRequests(env, Array(196).fill('open'));
    const body = { title: 'race', changes: [{ flag_key: key, operations: [{ op: 'set_enabled', enabled: true }] }] };
    const answers = await Promise.all(Array.from({ length: 10 }, () => client.post(requests(env), { token: a.member.token, body })));
    assert.deepEqual(answers.map((r) => r.status).sort(), [201, 201, 201, 201, 409, 409, 409, 409, 409, 409]);
    const [row] = await ts.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM change_requests WHERE environment_id = ${env} AND status IN ('draft', 'open', 'conflicted', 'scheduled')`;
    assert.equal(row!.n, 200);
  });

  test('100 reviews per request, comments included: the next one (even a viewer\'s comment) is 409 naming the limit', async () => {
    const { env, key } = await changedFlag({ required: true });
    const request = expectStatus(
      await client.post(requests(env), { token: a.member.token, body: { title: 'busy', changes: [{ flag_key: key, operations: [{ op: 'set_enabled', enabled: true }] }], submit: true } }),
      201,
    );
    const sql = ts.db.sql;
    for (let i = 0; i < 98; i++) {
      await sql`
        INSERT INTO change_request_reviews (change_request_id, reviewer_id, verdict, comment, content_hash, at_ms)
        VALUES (${request.id}, ${randomUUID()}, 'comment', ${`filler ${i}`}, ${request.content_hash}, ${i + 1})`;
    }
    expectStatus(await review(env, request.id, viewer.token, 'comment', { comment: 'the 99th' }), 200, '99th');
    const hundredth = expectStatus(await review(env, request.id, reviewer.token, 'approve'), 200, '100th');
    assert.equal(hundredth.reviews.length, 100);
    const over = await review(env, request.id, viewer.token, 'comment', { comment: 'one too many' });
    expectError(over, 409, 'FAILED_PRECONDITION');
    assert.match(over.body.error, /100 reviews/);
    assert.match(over.body.error, /MAX_REVIEWS_PER_REQUEST/);
    expectError(await review(env, request.id, a.admin.token, 'reject'), 409, 'FAILED_PRECONDITION');
    const stored = expectStatus(await client.get(`${requests(env)}/${request.id}`, { token: a.admin.token }), 200);
    assert.equal(stored.reviews.length, 100);
    // The approval given within the cap still counts.
    assert.deepEqual(stored.approvals.map((x: Json) => x.reviewer_id), [reviewer.userId]);
  });
});

describe('approvals shown as they count now', () => {
  test('an approver removed from the org, or demoted to viewer, is not listed as counting (GET and list); the review stays', async () => {
    const { env, key } = await changedFlag({ required: true, min_approvals: 2 });
    const leaving = await seedUser(client, root.token, a.orgId, 'org_member', 'rv-leaving');
    const demoted = await seedUser(client, root.token, a.orgId, 'org_member', 'rv-demoted');
    const request = expectStatus(
      await client.post(requests(env), { token: a.admin.token, body: { title: 'two approvals', changes: [{ flag_key: key, operations: [{ op: 'set_enabled', enabled: true }] }], submit: true } }),
      201,
    );
    expectStatus(await review(env, request.id, leaving.token, 'approve'), 200);
    const both = expectStatus(await review(env, request.id, demoted.token, 'approve'), 200);
    assert.deepEqual(new Set(both.approvals.map((x: Json) => x.reviewer_id)), new Set([leaving.userId, demoted.userId]));

    expectStatus(await client.delete(`/v1/management/orgs/${a.orgId}/users/${leaving.userId}`, { token: a.admin.token }), 204);
    const afterRemoval = expectStatus(await client.get(`${requests(env)}/${request.id}`, { token: a.admin.token }), 200);
    assert.deepEqual(afterRemoval.approvals.map((x: Json) => x.reviewer_id), [demoted.userId]);

    expectStatus(
      await put(client, `/v1/management/orgs/${a.orgId}/members/${demoted.userId}/role-bindings`, { token: a.admin.token, body: { bindings: [{ role: 'viewer', project_id: a.projectId }] } }),
      200,
      'demote',
    );
    const shown = expectStatus(await client.get(`${requests(env)}/${request.id}`, { token: a.admin.token }), 200);
    assert.deepEqual(shown.approvals, []);
    assert.equal(shown.reviews.length, 2, 'the reviews stay in the record');
    const listed = (await listRequests(env)).find((r) => r.id === request.id);
    assert.deepEqual(listed.approvals, []);
    // The apply counts the same way.
    const refused = await client.post(`${requests(env)}/${request.id}/apply`, { token: a.admin.token });
    expectError(refused, 409, 'FAILED_PRECONDITION');
    assert.match(refused.body.error, /0 of the 2 approvals/);
  });
});
