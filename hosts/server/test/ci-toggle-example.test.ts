import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { createFlag, envFlags, onOffFlag, projectFlags, put } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/** examples/ci-toggle.sh against a real server, with a token that is editor on one environment only. */

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let staging: string;
let token: string;

async function toggle(environmentId: string, flagKey: string, state?: string, comment?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const args = ['examples/ci-toggle.sh', environmentId, flagKey, ...(state === undefined ? [] : [state])];
  const env = { ...process.env, SWITCHYARD_URL: ts.base, SWITCHYARD_TOKEN: token, ...(comment === undefined ? {} : { SWITCHYARD_COMMENT: comment }) };
  return run('bash', args, { cwd: ROOT, env }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
  );
}

const enabledIn = async (environmentId: string, flagKey: string): Promise<boolean> =>
  expectStatus(await client.get(`${envFlags(environmentId)}/${flagKey}`, { token: a.admin.token }), 200).enabled as boolean;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'ci-a');
  b = await seedTenant(client, root.token, 'ci-b');
  staging = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }), 201).environment_id;
  await createFlag(client, a.admin.token, a.environmentId, onOffFlag('new-checkout'));
  await put(client, `${envFlags(a.environmentId)}/new-checkout`, { token: a.admin.token, body: { enabled: false } });
  await put(client, `${envFlags(staging)}/new-checkout`, { token: a.admin.token, body: { enabled: false } });
  token = expectStatus(
    await client.post(`/v1/management/orgs/${a.orgId}/api-tokens`, { token: a.admin.token, body: { name: 'ci', role: 'editor', scope: { environment_ids: [a.environmentId] } } }),
    201,
  ).token;
});
after(() => ts.stop());

describe('examples/ci-toggle.sh', () => {
  test('turns the flag on, then off, in the token\'s environment', async () => {
    assert.equal(await enabledIn(a.environmentId, 'new-checkout'), false);
    const on = await toggle(a.environmentId, 'new-checkout');
    assert.equal(on.code, 0, on.stderr);
    assert.match(on.stdout, /flag new-checkout is on in environment/);
    assert.equal(await enabledIn(a.environmentId, 'new-checkout'), true);
    assert.equal(await enabledIn(staging, 'new-checkout'), false, 'the other environment is untouched');
    const off = await toggle(a.environmentId, 'new-checkout', 'off');
    assert.equal(off.code, 0, off.stderr);
    assert.equal(await enabledIn(a.environmentId, 'new-checkout'), false);
  });

  test('in a critical environment that requires a comment: refused without SWITCHYARD_COMMENT, kept in the history with it', async () => {
    const path = `/v1/management/environments/${a.environmentId}`;
    expectStatus(await client.request('PATCH', path, { token: a.admin.token, body: { critical: true, require_comment: true } }), 200);
    try {
      const refused = await toggle(a.environmentId, 'new-checkout', 'on');
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /refused \(409\).*X-Change-Comment/);
      assert.equal(await enabledIn(a.environmentId, 'new-checkout'), false);
      const on = await toggle(a.environmentId, 'new-checkout', 'on', 'deploy 4f2c9e1');
      assert.equal(on.code, 0, on.stderr);
      assert.equal(await enabledIn(a.environmentId, 'new-checkout'), true);
      const history = expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/audit-log?environment_id=${a.environmentId}&limit=1`, { token: a.admin.token }), 200);
      const [newest] = history.entries;
      assert.equal(newest.comment, 'deploy 4f2c9e1');
      assert.equal(newest.actor.type, 'api_token');
      assert.equal(newest.actor.name, 'ci');
      const off = await toggle(a.environmentId, 'new-checkout', 'off', 'rollback');
      assert.equal(off.code, 0, off.stderr);
    } finally {
      // Lifting it is a write into the protected environment: the admin confirms and comments.
      expectStatus(
        await client.request('PATCH', path, { token: a.admin.token, body: { critical: false, require_comment: false }, headers: { 'x-confirm-environment': a.environmentId, 'x-change-comment': 'test over' } }),
        200,
      );
    }
  });

  test('the same token is refused everywhere else', async () => {
    const elsewhere = await toggle(staging, 'new-checkout');
    assert.equal(elsewhere.code, 1);
    assert.match(elsewhere.stderr, /refused \(403\).*PERMISSION_DENIED/);
    assert.equal(await enabledIn(staging, 'new-checkout'), false);
    const otherOrg = await toggle(b.environmentId, 'new-checkout');
    assert.equal(otherOrg.code, 1);
    assert.match(otherOrg.stderr, /refused \(404\)/);
    const bad = await toggle('../admin', 'new-checkout');
    assert.equal(bad.code, 2);

    // A project-level write, a token, members, session routes: none of them.
    const projectWrite = await put(client, `${projectFlags(a.projectId)}/new-checkout`, { token, body: { flag: { description: 'rewritten' } } });
    expectError(projectWrite, 403, 'PERMISSION_DENIED');
    expectError(await client.post(`/v1/management/orgs/${a.orgId}/projects`, { token, body: { name: 'sneaky' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(`/v1/management/orgs/${a.orgId}/api-tokens`, { token, body: { name: 'more', role: 'admin' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(`/v1/management/orgs/${a.orgId}/users`, { token, body: { email: 'x@example.com', display_name: 'x', password: 'password-123' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.request('PATCH', `/v1/management/orgs/${a.orgId}/users/${a.member.userId}`, { token, body: { org_role: 'org_admin' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.delete(`/v1/management/orgs/${a.orgId}/users/${a.member.userId}`, { token }), 403, 'PERMISSION_DENIED');
    expectError(await client.get('/v1/auth/me', { token }), 403, 'PERMISSION_DENIED');
    expectError(await client.post('/v1/auth/logout', { token }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(`${envFlags(b.environmentId)}/new-checkout`, { token }), 404, 'NOT_FOUND');
    expectError(await client.get(`/v1/management/orgs/${b.orgId}/projects`, { token }), 404, 'NOT_FOUND');
  });
});
