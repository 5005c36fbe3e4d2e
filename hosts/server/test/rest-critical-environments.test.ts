import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { auditLogPath, readAll } from './support/audit-log.ts';
import { createFlag, envFlags, onOffFlag, patch, put, segmentsOf } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Critical environments over real HTTP and PostgreSQL, in both topologies (docs/access.md
 * "Critical environments"): the PATCH route and its defences, and the confirmation and comment a
 * write into a protected environment needs — refused writes leave nothing behind.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
/** A second environment of a's project, never protected. */
let plainId: string;
/** A third one, with require_comment only. */
let commentedId: string;

const environmentPath = (id: string): string => `/v1/management/environments/${id}`;
const confirm = (id: string): Record<string, string> => ({ 'x-confirm-environment': id });

async function newEnvironment(tenant: Tenant, name: string): Promise<string> {
  const created = expectStatus(
    await client.post(`/v1/management/projects/${tenant.projectId}/environments`, { token: tenant.admin.token, body: { name } }),
    201,
    'create environment',
  );
  return created.environment_id as string;
}

const logOf = (tenant: Tenant): Promise<Json[]> => readAll(client, tenant.admin.token, (query) => auditLogPath(tenant.orgId, query));

const flagOf = async (environmentId: string, key: string): Promise<Json> => expectStatus(await client.get(`${envFlags(environmentId)}/${key}`, { token: a.member.token }), 200, 'read flag');

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'critical-a');
  b = await seedTenant(client, root.token, 'critical-b');
  plainId = await newEnvironment(a, 'staging');
  commentedId = await newEnvironment(a, 'audited');
});
after(() => ts.stop());

describe('PATCH /v1/management/environments/{environment_id}', () => {
  test('records show the protection; an admin changes it, audited with before and after', async () => {
    const listed = expectStatus(await client.get(`/v1/management/projects/${a.projectId}/environments`, { token: a.member.token }), 200, 'list');
    const production = listed.find((environment: Json) => environment.environment_id === a.environmentId);
    assert.deepEqual(production, { environment_id: a.environmentId, environment_name: 'production', project_id: a.projectId, critical: false, require_comment: false });

    const record = expectStatus(await patch(client, environmentPath(a.environmentId), { token: a.admin.token, body: { critical: true } }), 200, 'patch');
    assert.deepEqual(record, { environment_id: a.environmentId, environment_name: 'production', project_id: a.projectId, critical: true, require_comment: false });
    // An empty body changes nothing and answers the record (the environment is critical now: confirmed).
    const same = expectStatus(await patch(client, environmentPath(a.environmentId), { token: a.admin.token, body: {}, headers: confirm(a.environmentId) }), 200, 'empty patch');
    assert.deepEqual(same, record);

    const entries = (await logOf(a)).filter((entry) => entry.action === 'environment.update' && entry.resource_id === a.environmentId);
    assert.equal(entries.length, 2);
    const first = entries[entries.length - 1];
    assert.deepEqual([first.before.critical, first.after.critical, first.environment_id], [false, true, a.environmentId]);

    const withComment = expectStatus(await patch(client, environmentPath(commentedId), { token: a.admin.token, body: { require_comment: true } }), 200, 'require_comment');
    assert.deepEqual([withComment.critical, withComment.require_comment], [false, true]);
  });

  test('bad bodies are 400 naming the field', async () => {
    const send = (body: unknown) => patch(client, environmentPath(plainId), { token: a.admin.token, body });
    expectError(await send({ critical: 'yes' }), 400, 'INVALID_ARGUMENT', /critical/);
    expectError(await send({ require_comment: 1 }), 400, 'INVALID_ARGUMENT', /require_comment/);
    expectError(await send({ critical: true, name: 'x' }), 400, 'INVALID_ARGUMENT', /unknown environment settings: name/);
    expectError(await send([true]), 400, 'INVALID_ARGUMENT');
    const unchanged = expectStatus(await client.get(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token }), 200, 'list');
    assert.equal(unchanged.find((environment: Json) => environment.environment_id === plainId).critical, false);
  });

  test('an editor is refused, another org and an unknown id are 404, no caller is 401', async () => {
    expectError(await patch(client, environmentPath(plainId), { token: a.member.token, body: { critical: true } }), 403, 'PERMISSION_DENIED');
    expectError(await patch(client, environmentPath(plainId), { token: b.admin.token, body: { critical: true } }), 404, 'NOT_FOUND');
    expectError(await patch(client, environmentPath(crypto.randomUUID()), { token: a.admin.token, body: { critical: true } }), 404, 'NOT_FOUND');
    expectError(await patch(client, environmentPath(plainId), { body: { critical: true } }), 401, 'UNAUTHENTICATED');
    // b's admin cannot lift a's protection either, header or not.
    expectError(await patch(client, environmentPath(a.environmentId), { token: b.admin.token, body: { critical: false }, headers: confirm(a.environmentId) }), 404, 'NOT_FOUND');
    const listed = expectStatus(await client.get(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token }), 200, 'list');
    assert.deepEqual(listed.map((environment: Json) => [environment.environment_name, environment.critical]).sort(), [['audited', false], ['production', true], ['staging', false]]);
  });
});

describe('a write into a critical environment', () => {
  const key = `checkout-${unique()}`;

  test('a person without the confirmation: 409 saying what to send, nothing changed', async () => {
    // The flag exists in every environment of the project; it is created in the plain one.
    await createFlag(client, a.member.token, plainId, onOffFlag(key));
    const before = await flagOf(a.environmentId, key);
    const historyBefore = (await logOf(a)).length;

    const refused = await put(client, `${envFlags(a.environmentId)}/${key}`, { token: a.member.token, body: { enabled: true } });
    expectError(refused, 409, 'FAILED_PRECONDITION', new RegExp(`critical: send X-Confirm-Environment: ${a.environmentId}`));
    expectError(await put(client, `${envFlags(a.environmentId)}/${key}/rules`, { token: a.member.token, body: { rules: [] } }), 409, 'FAILED_PRECONDITION');
    expectError(
      await client.post(segmentsOf(a.environmentId), { token: a.member.token, body: { key: `s-${unique()}`, context_type: 'user', kind: 'list', included_keys: ['u1'] } }),
      409,
      'FAILED_PRECONDITION',
    );
    expectError(await client.post(`/v1/management/environments/${a.environmentId}/sdk-keys`, { token: a.admin.token }), 409, 'FAILED_PRECONDITION');
    // Confirming another environment (even one of the same project, or another org's) does not count.
    expectError(await put(client, `${envFlags(a.environmentId)}/${key}`, { token: a.member.token, body: { enabled: true }, headers: confirm(plainId) }), 409, 'FAILED_PRECONDITION');
    expectError(await put(client, `${envFlags(a.environmentId)}/${key}`, { token: a.member.token, body: { enabled: true }, headers: confirm(b.environmentId) }), 409, 'FAILED_PRECONDITION');

    assert.deepEqual(await flagOf(a.environmentId, key), before);
    assert.equal(expectStatus(await client.get(segmentsOf(a.environmentId), { token: a.member.token }), 200, 'segments').length, 0);
    assert.equal(expectStatus(await client.get(`/v1/management/environments/${a.environmentId}/sdk-keys`, { token: a.admin.token }), 200, 'keys').length, 1);
    assert.equal((await logOf(a)).length, historyBefore, 'no history entry');
  });

  test('with the confirmation: written; the entry has no comment unless one was sent', async () => {
    const updated = expectStatus(
      await put(client, `${envFlags(a.environmentId)}/${key}`, { token: a.member.token, body: { enabled: true }, headers: confirm(a.environmentId) }),
      200,
      'confirmed write',
    );
    assert.equal(updated.enabled, true);
    expectStatus(
      await put(client, `${envFlags(a.environmentId)}/${key}/rules`, {
        token: a.member.token,
        body: { rules: [] },
        headers: { ...confirm(a.environmentId), 'x-change-comment': 'clear the rules for the launch' },
      }),
      202,
      'confirmed rules',
    );
    const entries = (await logOf(a)).filter((entry) => entry.resource_id === key && entry.environment_id === a.environmentId);
    assert.deepEqual(entries.map((entry) => [entry.action, entry.comment]), [['flag.rules', 'clear the rules for the launch'], ['flag.update', undefined]]);
  });

  test('a non-critical environment is unaffected', async () => {
    expectStatus(await put(client, `${envFlags(plainId)}/${key}`, { token: a.member.token, body: { enabled: false } }), 200, 'plain write');
  });

  test('bad header values are 400 at the edge, before anything is written', async () => {
    const write = (headers: Record<string, string>) => put(client, `${envFlags(plainId)}/${key}`, { token: a.member.token, body: { enabled: true }, headers });
    expectError(await write({ 'x-change-comment': 'x'.repeat(1001) }), 400, 'INVALID_ARGUMENT', /x-change-comment must be 1\.\.1000 characters/);
    expectError(await write({ 'x-change-comment': "utf-8''two%0Alines" }), 400, 'INVALID_ARGUMENT', /control characters/);
    expectError(await write({ 'x-change-comment': 'caf\u00e9' }), 400, 'INVALID_ARGUMENT', /utf-8''/);
    expectError(await write({ 'x-confirm-environment': 'e'.repeat(201) }), 400, 'INVALID_ARGUMENT', /x-confirm-environment/);
    assert.equal((await flagOf(plainId, key)).enabled, false);
  });
});

describe('an environment that requires a comment', () => {
  const key = `pricing-${unique()}`;

  test('without a comment: 409, nothing written; with one: the history shows it', async () => {
    await createFlag(client, a.member.token, plainId, onOffFlag(key));
    expectError(
      await put(client, `${envFlags(commentedId)}/${key}`, { token: a.member.token, body: { enabled: true } }),
      409,
      'FAILED_PRECONDITION',
      /requires a comment for every change: send X-Change-Comment/,
    );
    assert.equal((await flagOf(commentedId, key)).version, 0, 'never written there');

    const comment = 'Grüße: raise the price 🚀';
    expectStatus(
      await put(client, `${envFlags(commentedId)}/${key}`, { token: a.member.token, body: { enabled: true }, headers: { 'x-change-comment': `utf-8''${encodeURIComponent(comment)}` } }),
      200,
      'commented write',
    );
    const entries = (await logOf(a)).filter((entry) => entry.resource_id === key && entry.environment_id === commentedId);
    assert.deepEqual(entries.map((entry) => [entry.action, entry.comment]), [['flag.update', comment]]);
    assert.deepEqual(entries[0].actor, { type: 'user', id: a.member.userId, email: a.member.email });
  });
});
