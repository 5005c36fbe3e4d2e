import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { auditLogPath } from './support/audit-log.ts';
import { bearer } from './support/grpc-clients.ts';
import { endsWith, flagKeys, openInternalSync } from './support/sync-client.ts';
import { createFlag, envFlags, onOffFlag, projectFlags, put } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, seedUser, unique, type ApiClient, type ApiResponse, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// Role bindings through the REST API (docs/access.md "Managing bindings"), in whichever topology
// TEST_TOPOLOGY picks: the shapes, the validation, the defences, and the rights a binding gives a
// bearer token that was issued before the change.

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
/** Tenant A's project P has `production` (a.environmentId) and `staging`; project Q has `qa`. */
let staging: string;
let projectQ: string;
let qa: string;

const M = '/v1/management';
const bindingsOf = (orgId: string, userId: string) => `${M}/orgs/${orgId}/members/${userId}/role-bindings`;
const orgUsers = (orgId: string) => `${M}/orgs/${orgId}/users`;
const RECORD_FIELDS = ['bindings', 'default', 'org_role', 'user_id'];

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'bind-a');
  b = await seedTenant(client, root.token, 'bind-b');
  const create = async (path: string, name: string) => expectStatus(await client.post(path, { token: a.admin.token, body: { name } }), 201, `create ${name}`);
  staging = (await create(`${M}/projects/${a.projectId}/environments`, 'staging')).environment_id;
  projectQ = (await create(`${M}/orgs/${a.orgId}/projects`, 'q')).project_id;
  qa = (await create(`${M}/projects/${projectQ}/environments`, 'qa')).environment_id;
});
after(() => ts.stop());

/** A fresh org_member of A, logged in (its token issued before any bindings change). */
const newMember = (label: string) => seedUser(client, root.token, a.orgId, 'org_member', `${label}-${unique()}`);

async function setBindings(userId: string, bindings: unknown[]): Promise<Json> {
  return expectStatus(await put(client, bindingsOf(a.orgId, userId), { token: a.admin.token, body: { bindings } }), 200, 'PUT bindings');
}

/** A fresh on/off flag in project P (created by A's admin); returns its key. */
async function newFlag(label: string): Promise<string> {
  const key = `${label}-${unique()}`;
  await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
  return key;
}

const rulesOf = (environmentId: string, key: string) => `${envFlags(environmentId)}/${key}/rules`;
const flagIn = (environmentId: string, key: string) => `${envFlags(environmentId)}/${key}`;
const variantsIn = (environmentId: string, key: string) => `${envFlags(environmentId)}/${key}/variants`;
const RULES = { rules: [{ conditions: [], variant_key: 'on' }] };

describe('the bindings record', () => {
  test('a member without bindings: default, editor org-wide; an org_admin: default, admin', async () => {
    const member = await newMember('shape');
    const record = expectStatus(await client.get(bindingsOf(a.orgId, member.userId), { token: a.admin.token }), 200);
    assert.deepEqual(Object.keys(record).sort(), RECORD_FIELDS);
    assert.deepEqual(record, { user_id: member.userId, org_role: 'org_member', default: true, bindings: [{ role: 'editor' }] });
    const admin = expectStatus(await client.get(bindingsOf(a.orgId, a.admin.userId), { token: a.admin.token }), 200);
    assert.deepEqual(admin, { user_id: a.admin.userId, org_role: 'org_admin', default: true, bindings: [{ role: 'admin' }] });
  });

  test('PUT stores them (an environment binding gets its project), GET and the members list show them; identical entries collapse', async () => {
    const member = await newMember('put');
    const sent = [{ role: 'editor', environment_id: staging }, { role: 'viewer' }, { role: 'admin', project_id: projectQ }, { role: 'viewer' }];
    const stored = [{ role: 'editor', project_id: a.projectId, environment_id: staging }, { role: 'viewer' }, { role: 'admin', project_id: projectQ }];
    const record = await setBindings(member.userId, sent);
    assert.deepEqual(record, { user_id: member.userId, org_role: 'org_member', default: false, bindings: stored });
    assert.deepEqual(expectStatus(await client.get(bindingsOf(a.orgId, member.userId), { token: a.admin.token }), 200), record);
    const users = expectStatus(await client.get(orgUsers(a.orgId), { token: a.admin.token }), 200) as Json[];
    assert.deepEqual(users.find((user) => user.user_id === member.userId).bindings, stored);
    assert.equal(users.find((user) => user.user_id === a.admin.userId).bindings, null);
    // The same environment binding with its (right) project named collapses with the filled-in one.
    const again = await setBindings(member.userId, [{ role: 'editor', environment_id: staging }, { role: 'editor', project_id: a.projectId, environment_id: staging }]);
    assert.deepEqual(again.bindings, [{ role: 'editor', project_id: a.projectId, environment_id: staging }]);
    // An empty list is no rights at all, not the default.
    assert.deepEqual(await setBindings(member.userId, []), { user_id: member.userId, org_role: 'org_member', default: false, bindings: [] });
  });

  test('the change is in the org\'s change history, with before and after', async () => {
    const member = await newMember('audit');
    await setBindings(member.userId, [{ role: 'viewer' }]);
    const page = expectStatus(await client.get(auditLogPath(a.orgId, { resource_type: 'user', resource_id: member.userId }), { token: a.admin.token }), 200);
    const entry = page.entries.find((candidate: Json) => candidate.action === 'user.bindings_change');
    assert.ok(entry, JSON.stringify(page.entries.map((e: Json) => e.action)));
    assert.equal(entry.actor.id, a.admin.userId);
    assert.deepEqual(entry.before, { user_id: member.userId, org_role: 'org_member', default: true, bindings: [{ role: 'editor' }] });
    assert.deepEqual(entry.after, { user_id: member.userId, org_role: 'org_member', default: false, bindings: [{ role: 'viewer' }] });
  });
});

describe('validation: 400 INVALID_ARGUMENT naming the entry, nothing stored', () => {
  test('shapes', async () => {
    const member = await newMember('invalid');
    const path = bindingsOf(a.orgId, member.userId);
    const cases: Array<[string, unknown, RegExp]> = [
      ['no bindings field', {}, /bindings must be an array/],
      ['bindings not an array', { bindings: { role: 'viewer' } }, /bindings must be an array/],
      ['an unknown top-level field', { bindings: [], extra: 1 }, /unknown field extra/],
      ['101 entries', { bindings: Array.from({ length: 101 }, () => ({ role: 'viewer' })) }, /at most 100/],
      ['an entry not an object', { bindings: ['viewer'] }, /bindings\[0\] must be an object/],
      ['an unknown role', { bindings: [{ role: 'viewer' }, { role: 'owner' }] }, /bindings\[1\]\.role must be one of viewer, editor, admin/],
      ['an org role', { bindings: [{ role: 'org_admin' }] }, /bindings\[0\]\.role/],
      ['no role', { bindings: [{ project_id: a.projectId }] }, /bindings\[0\]\.role/],
      ['an unknown entry field', { bindings: [{ role: 'viewer', org_id: a.orgId }] }, /bindings\[0\] has an unknown field org_id/],
      ['an empty project id', { bindings: [{ role: 'viewer', project_id: '' }] }, /bindings\[0\]\.project_id must be an id/],
      ['a numeric environment id', { bindings: [{ role: 'viewer', environment_id: 7 }] }, /bindings\[0\]\.environment_id must be an id/],
      ['an id that is not one', { bindings: [{ role: 'viewer', project_id: 'not-a-uuid' }] }, /bindings\[0\]\.project_id: no such project/],
      ['an unknown project', { bindings: [{ role: 'viewer', project_id: randomUUID() }] }, /bindings\[0\]\.project_id: no such project in this organisation/],
      ['an unknown environment', { bindings: [{ role: 'viewer', environment_id: randomUUID() }] }, /bindings\[0\]\.environment_id: no such environment in this organisation/],
      ['an environment of another project', { bindings: [{ role: 'editor', project_id: projectQ, environment_id: staging }] }, /bindings\[0\]\.environment_id is not an environment of project/],
    ];
    for (const [what, body, message] of cases) {
      const response = await put(client, path, { token: a.admin.token, body });
      expectError(response, 400, 'INVALID_ARGUMENT', message);
      assert.ok(response.status === 400, what);
    }
    const raw = await client.request('PUT', path, { token: a.admin.token, body: 'a JSON string, not an object' });
    assert.equal(raw.status, 400, raw.text);
    assert.deepEqual(expectStatus(await client.get(path, { token: a.admin.token }), 200).default, true, 'nothing stored');
  });

  test("another org's project or environment reads exactly as an unknown one (nothing revealed)", async () => {
    const member = await newMember('foreign');
    const path = bindingsOf(a.orgId, member.userId);
    const foreignProject = await put(client, path, { token: a.admin.token, body: { bindings: [{ role: 'viewer', project_id: b.projectId }] } });
    const unknownProject = await put(client, path, { token: a.admin.token, body: { bindings: [{ role: 'viewer', project_id: randomUUID() }] } });
    expectError(foreignProject, 400, 'INVALID_ARGUMENT');
    assert.deepEqual(foreignProject.body, unknownProject.body);
    const foreignEnvironment = await put(client, path, { token: a.admin.token, body: { bindings: [{ role: 'viewer', environment_id: b.environmentId }] } });
    const unknownEnvironment = await put(client, path, { token: a.admin.token, body: { bindings: [{ role: 'viewer', environment_id: randomUUID() }] } });
    expectError(foreignEnvironment, 400, 'INVALID_ARGUMENT');
    assert.deepEqual(foreignEnvironment.body, unknownEnvironment.body);
    assert.equal(expectStatus(await client.get(path, { token: a.admin.token }), 200).default, true);
  });
});

describe('who may', () => {
  test("another org's member, an unknown user, another org: 404 NOT_FOUND on every method", async () => {
    for (const path of [bindingsOf(a.orgId, b.member.userId), bindingsOf(a.orgId, randomUUID()), bindingsOf(a.orgId, 'nope'), bindingsOf(b.orgId, b.member.userId)]) {
      expectError(await client.get(path, { token: a.admin.token }), 404, 'NOT_FOUND');
      expectError(await put(client, path, { token: a.admin.token, body: { bindings: [{ role: 'viewer' }] } }), 404, 'NOT_FOUND');
      expectError(await client.delete(path, { token: a.admin.token }), 404, 'NOT_FOUND');
    }
    assert.deepEqual(expectStatus(await client.get(bindingsOf(b.orgId, b.member.userId), { token: b.admin.token }), 200).default, true, "B's member untouched");
  });

  test('a member may read its own bindings only, and change none (403); anonymous 401; a system user 403', async () => {
    const member = await newMember('reader');
    const other = await newMember('other');
    assert.equal(expectStatus(await client.get(bindingsOf(a.orgId, member.userId), { token: member.token }), 200).user_id, member.userId);
    expectError(await client.get(bindingsOf(a.orgId, other.userId), { token: member.token }), 403, 'PERMISSION_DENIED');
    for (const target of [member.userId, other.userId]) {
      expectError(await put(client, bindingsOf(a.orgId, target), { token: member.token, body: { bindings: [{ role: 'admin' }] } }), 403, 'PERMISSION_DENIED');
      expectError(await client.delete(bindingsOf(a.orgId, target), { token: member.token }), 403, 'PERMISSION_DENIED');
    }
    expectError(await client.get(bindingsOf(a.orgId, member.userId)), 401, 'UNAUTHENTICATED');
    expectError(await put(client, bindingsOf(a.orgId, member.userId), { body: { bindings: [] } }), 401, 'UNAUTHENTICATED');
    expectError(await put(client, bindingsOf(a.orgId, member.userId), { token: root.token, body: { bindings: [] } }), 403, 'PERMISSION_DENIED');
    expectError(await put(client, bindingsOf(a.orgId, member.userId), { sdkKey: a.rawKey, body: { bindings: [] } }), 401, 'UNAUTHENTICATED');
    assert.equal(expectStatus(await client.get(bindingsOf(a.orgId, member.userId), { token: a.admin.token }), 200).default, true);
  });

  test('a removed admin (401) and a demoted admin (403) change nothing with the tokens they kept', async () => {
    const member = await newMember('target');
    const removed = await seedUser(client, root.token, a.orgId, 'org_admin', `removed-${unique()}`);
    const demoted = await seedUser(client, root.token, a.orgId, 'org_admin', `demoted-${unique()}`);
    expectStatus(await client.delete(`${orgUsers(a.orgId)}/${removed.userId}`, { token: a.admin.token }), 204);
    expectStatus(await client.request('PATCH', `${orgUsers(a.orgId)}/${demoted.userId}`, { token: a.admin.token, body: { org_role: 'org_member' } }), 200);
    expectError(await put(client, bindingsOf(a.orgId, member.userId), { token: removed.token, body: { bindings: [] } }), 401, 'UNAUTHENTICATED');
    expectError(await put(client, bindingsOf(a.orgId, member.userId), { token: demoted.token, body: { bindings: [] } }), 403, 'PERMISSION_DENIED');
    expectError(await client.delete(bindingsOf(a.orgId, member.userId), { token: demoted.token }), 403, 'PERMISSION_DENIED');
    assert.equal(expectStatus(await client.get(bindingsOf(a.orgId, member.userId), { token: a.admin.token }), 200).default, true);
  });

  test('a project admin binding does not manage members (user.manage is org-level)', async () => {
    const member = await newMember('project-admin');
    const other = await newMember('victim');
    await setBindings(member.userId, [{ role: 'admin', project_id: a.projectId }]);
    expectError(await put(client, bindingsOf(a.orgId, other.userId), { token: member.token, body: { bindings: [] } }), 403, 'PERMISSION_DENIED');
    expectError(await put(client, bindingsOf(a.orgId, member.userId), { token: member.token, body: { bindings: [{ role: 'admin' }] } }), 403, 'PERMISSION_DENIED');
  });

  test('an org_admin target: 409 FAILED_PRECONDITION for PUT and DELETE, nothing changed', async () => {
    expectError(await put(client, bindingsOf(a.orgId, a.admin.userId), { token: a.admin.token, body: { bindings: [{ role: 'viewer' }] } }), 409, 'FAILED_PRECONDITION', /org_admin/);
    expectError(await client.delete(bindingsOf(a.orgId, a.admin.userId), { token: a.admin.token }), 409, 'FAILED_PRECONDITION');
    assert.deepEqual(expectStatus(await client.get(bindingsOf(a.orgId, a.admin.userId), { token: a.admin.token }), 200).bindings, [{ role: 'admin' }]);
    // The admin's own token still has every right.
    expectStatus(await client.post(`${M}/orgs/${a.orgId}/projects`, { token: a.admin.token, body: { name: `still-${unique()}` } }), 201);
  });
});

describe('what bindings give a token already issued (no new login)', () => {
  test('{editor, staging}: rules and on/off in staging; 403 in production and on the project-level definition', async () => {
    const member = await newMember('staging-editor');
    const key = await newFlag('staging');
    // Before: the default (editor everywhere) writes variants and production.
    expectStatus(await client.post(variantsIn(a.environmentId, key), { token: member.token, body: { variants: [{ key: 'extra', value: 'X' }] } }), 202);
    await setBindings(member.userId, [{ role: 'editor', environment_id: staging }]);
    expectStatus(await put(client, rulesOf(staging, key), { token: member.token, body: RULES }), 202);
    expect(expectStatus(await put(client, flagIn(staging, key), { token: member.token, body: { enabled: false } }), 200).enabled, false);
    expectError(await put(client, rulesOf(a.environmentId, key), { token: member.token, body: RULES }), 403, 'PERMISSION_DENIED');
    expectError(await put(client, flagIn(a.environmentId, key), { token: member.token, body: { enabled: false } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(variantsIn(staging, key), { token: member.token, body: { variants: [{ key: 'more', value: 'Y' }] } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(envFlags(staging), { token: member.token, body: onOffFlag(`new-${unique()}`) }), 403, 'PERMISSION_DENIED');
    // Reads: its environment, and the project's definitions; not another environment.
    expectStatus(await client.get(flagIn(staging, key), { token: member.token }), 200);
    expectStatus(await client.get(projectFlags(a.projectId), { token: member.token }), 200);
    expectError(await client.get(flagIn(a.environmentId, key), { token: member.token }), 403, 'PERMISSION_DENIED');
    // Production is as the admin left it.
    assert.equal(expectStatus(await client.get(flagIn(a.environmentId, key), { token: a.admin.token }), 200).enabled, true);
  });

  test('{viewer}: reads everywhere, writes nothing', async () => {
    const member = await newMember('viewer');
    const key = await newFlag('viewer');
    await setBindings(member.userId, [{ role: 'viewer' }]);
    for (const environmentId of [a.environmentId, staging, qa]) expectStatus(await client.get(envFlags(environmentId), { token: member.token }), 200);
    expectStatus(await client.get(orgUsers(a.orgId), { token: member.token }), 200);
    for (const environmentId of [a.environmentId, staging]) {
      expectError(await put(client, rulesOf(environmentId, key), { token: member.token, body: RULES }), 403, 'PERMISSION_DENIED');
      expectError(await put(client, flagIn(environmentId, key), { token: member.token, body: { enabled: false } }), 403, 'PERMISSION_DENIED');
    }
  });

  test('{admin, project P}: P\'s environments and SDK keys; not project Q, not new projects, not members', async () => {
    const member = await newMember('project-admin');
    await setBindings(member.userId, [{ role: 'admin', project_id: a.projectId }]);
    expectStatus(await client.post(`${M}/projects/${a.projectId}/environments`, { token: member.token, body: { name: `env-${unique()}` } }), 201);
    const key = expectStatus(await client.post(`${M}/environments/${staging}/sdk-keys`, { token: member.token }), 201);
    // A second one: the last active server key of an environment is never revoked.
    expectStatus(await client.post(`${M}/environments/${staging}/sdk-keys`, { token: member.token }), 201);
    expectStatus(await client.get(`${M}/environments/${staging}/sdk-keys`, { token: member.token }), 200);
    expectStatus(await client.delete(`${M}/environments/${staging}/sdk-keys/${key.sdk_key_id}`, { token: member.token }), 204);
    expectError(await client.post(`${M}/projects/${projectQ}/environments`, { token: member.token, body: { name: 'no' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(`${M}/environments/${qa}/sdk-keys`, { token: member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(`${M}/environments/${qa}/sdk-keys`, { token: member.token }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(`${M}/orgs/${a.orgId}/projects`, { token: member.token, body: { name: 'no' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(orgUsers(a.orgId), { token: member.token, body: { email: `x-${unique()}@example.com`, display_name: 'x', password: 'long-enough-1' } }), 403, 'PERMISSION_DENIED');
  });

  test('on another instance too: its cached rights give way to the announced change', async () => {
    const second = await ts.startAnotherInstance();
    const other = api(`http://127.0.0.1:${second.httpPort}`);
    const member = await newMember('elsewhere');
    const key = await newFlag('elsewhere');
    // The other instance has read (and keeps) the member's rights before they change.
    expectStatus(await put(other, rulesOf(a.environmentId, key), { token: member.token, body: RULES }), 202);
    await setBindings(member.userId, [{ role: 'editor', environment_id: staging }]);
    await eventually(() => put(other, rulesOf(a.environmentId, key), { token: member.token, body: RULES }), 403, 'production on the other instance');
    expectStatus(await put(other, rulesOf(staging, key), { token: member.token, body: RULES }), 202);
    expectStatus(await client.delete(bindingsOf(a.orgId, member.userId), { token: a.admin.token }), 200);
    await eventually(() => put(other, rulesOf(a.environmentId, key), { token: member.token, body: RULES }), 202, 'production again on the other instance');
  });

  test("a bearer sync stream ends when the bindings leave its environment; its other streams go on", async () => {
    const member = await newMember('streams');
    const production = openInternalSync(ts.server.grpcPort, { environment_id: a.environmentId }, bearer(member.token));
    const kept = openInternalSync(ts.server.grpcPort, { environment_id: staging }, bearer(member.token));
    try {
      for (const stream of [production, kept]) assert.equal((await stream.next()).sequence_number, 1);
      await setBindings(member.userId, [{ role: 'viewer', environment_id: staging }]);
      const ended = await endsWith(production, grpc.status.PERMISSION_DENIED);
      assert.match(ended.details, /bindings/);
      const key = await newFlag('after-bindings');
      assert.ok(flagKeys(await kept.until((message) => flagKeys(message).includes(key))).includes(key));
      // And a new stream on production is refused.
      await endsWith(openInternalSync(ts.server.grpcPort, { environment_id: a.environmentId }, bearer(member.token)), grpc.status.PERMISSION_DENIED);
    } finally {
      production.cancel();
      kept.cancel();
    }
  });

  test('DELETE restores editor everywhere at once', async () => {
    const member = await newMember('reset');
    const key = await newFlag('reset');
    await setBindings(member.userId, [{ role: 'viewer', environment_id: staging }]);
    expectError(await put(client, rulesOf(a.environmentId, key), { token: member.token, body: RULES }), 403, 'PERMISSION_DENIED');
    const reset = expectStatus(await client.delete(bindingsOf(a.orgId, member.userId), { token: a.admin.token }), 200);
    assert.deepEqual(reset, { user_id: member.userId, org_role: 'org_member', default: true, bindings: [{ role: 'editor' }] });
    expectStatus(await put(client, rulesOf(a.environmentId, key), { token: member.token, body: RULES }), 202);
    expectStatus(await client.post(variantsIn(a.environmentId, key), { token: member.token, body: { variants: [{ key: 'back', value: 'B' }] } }), 202);
    // Still only an editor: org-level admin actions stay refused in today's words.
    expectError(await client.post(`${M}/orgs/${a.orgId}/projects`, { token: member.token, body: { name: 'no' } }), 403, 'PERMISSION_DENIED', /requires org_admin/);
    const users = expectStatus(await client.get(orgUsers(a.orgId), { token: a.admin.token }), 200) as Json[];
    assert.equal(users.find((user) => user.user_id === member.userId).bindings, null);
  });

  test('promotion to org_admin drops the bindings; a demotion does not bring them back', async () => {
    const member = await newMember('promoted');
    await setBindings(member.userId, [{ role: 'viewer' }]);
    expectStatus(await client.request('PATCH', `${orgUsers(a.orgId)}/${member.userId}`, { token: a.admin.token, body: { org_role: 'org_admin' } }), 200);
    assert.deepEqual(expectStatus(await client.get(bindingsOf(a.orgId, member.userId), { token: a.admin.token }), 200), {
      user_id: member.userId,
      org_role: 'org_admin',
      default: true,
      bindings: [{ role: 'admin' }],
    });
    expectStatus(await client.post(`${M}/orgs/${a.orgId}/projects`, { token: member.token, body: { name: `promoted-${unique()}` } }), 201);
    expectStatus(await client.request('PATCH', `${orgUsers(a.orgId)}/${member.userId}`, { token: a.admin.token, body: { org_role: 'org_member' } }), 200);
    const demoted = expectStatus(await client.get(bindingsOf(a.orgId, member.userId), { token: a.admin.token }), 200);
    assert.deepEqual([demoted.default, demoted.bindings], [true, [{ role: 'editor' }]]);
  });
});

/** Polls `probe` until it answers `status`, for at most 10 s (the notification normally takes milliseconds). */
async function eventually(probe: () => Promise<ApiResponse>, status: number, what: string): Promise<void> {
  const started = Date.now();
  let last: ApiResponse | undefined;
  while (Date.now() - started < 10_000) {
    last = await probe();
    if (last.status === status) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`${what}: still ${last?.status} ${last?.text} after 10 s`);
}

function expect(actual: unknown, expected: unknown): void {
  assert.equal(actual, expected);
}
