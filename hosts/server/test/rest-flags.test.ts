import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FLAG_FIELDS, createFlag, envFlags, evaluate, onOffFlag, projectFlags, put } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'flags-a');
  b = await seedTenant(client, root.token, 'flags-b');
});
after(() => ts.stop());

const newKey = (label: string): string => `${label}-${unique()}`;

describe('flags on the environment route', () => {
  test('create 201, get 200, list 200, update 200, delete 204: the Flag record of docs/contract.md "Flags and evaluation"', async () => {
    const key = newKey('crud');
    const created = await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
    assert.deepEqual(Object.keys(created).sort(), FLAG_FIELDS);
    assert.equal(created.key, key);
    assert.equal(created.value_type, 'string');
    assert.deepEqual(created.variants, [
      { key: 'on', value: 'ON' },
      { key: 'off', value: 'OFF' },
    ]);
    assert.equal(created.enabled, true);
    assert.equal(created.off_variant_key, 'off');
    assert.deepEqual([created.rules, created.hashing, created.archived], [[], [], false]);
    assert.equal(created.version, 1);
    assert.equal(typeof created.created_at_ms, 'number');

    const path = `${envFlags(a.environmentId)}/${key}`;
    assert.deepEqual(expectStatus(await client.get(path, { token: a.admin.token }), 200), created);
    const list = expectStatus(await client.get(envFlags(a.environmentId), { token: a.admin.token }), 200);
    assert.deepEqual(list.find((f: { key: string }) => f.key === key), created);

    const updated = expectStatus(await put(client, path, { token: a.admin.token, body: { flag: { description: 'changed' }, version: 1 } }), 200);
    assert.equal(updated.description, 'changed');
    assert.equal(updated.version, 2);
    // Top-level fields win over the same fields inside `flag`.
    const off = expectStatus(await put(client, path, { token: a.admin.token, body: { flag: { enabled: true, version: 99 }, enabled: false, version: 2 } }), 200);
    assert.equal(off.enabled, false);

    expectStatus(await client.delete(`${path}?version=3`, { token: a.admin.token }), 204);
    expectError(await client.get(path, { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(path, { token: a.admin.token }), 404, 'NOT_FOUND');
  });

  test('a duplicate key is 409 ALREADY_EXISTS; a body without flag is 400', async () => {
    const key = newKey('dup');
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
    expectError(await client.post(envFlags(a.environmentId), { token: a.admin.token, body: onOffFlag(key) }), 409, 'ALREADY_EXISTS');
    expectError(await client.post(envFlags(a.environmentId), { token: a.admin.token, body: { key: 'x' } }), 400, 'INVALID_ARGUMENT', /body\.flag is required/);
  });

  test('400 INVALID_ARGUMENT naming the field for bad bodies', async () => {
    const post = (body: unknown) => client.post(envFlags(a.environmentId), { token: a.admin.token, body });
    const intFlag = (variants: unknown[]) => ({ flag: { key: newKey('bad'), value_type: 'int', variants } });
    expectError(await post(intFlag([{ key: 'one', value: 'one' }])), 400, 'INVALID_ARGUMENT', /variants\[0\]\.value/);
    expectError(await post(intFlag([{ key: 'one', value: 1.5 }])), 400, 'INVALID_ARGUMENT', /variants\[0\]\.value/);
    expectError(await post(intFlag([{ key: 'one', value: 1 }, { key: 'one', value: 2 }])), 400, 'INVALID_ARGUMENT', /variants\[1\]\.key/);
    expectError(await post({ flag: { key: newKey('bad'), value_type: 'bool', variants: [{ key: 't', value: 'true' }] } }), 400, 'INVALID_ARGUMENT', /variants\[0\]\.value/);
    expectError(await post({ flag: { key: newKey('bad'), value_type: 'decimal', variants: [] } }), 400, 'INVALID_ARGUMENT', /value_type/);
    expectError(await post({ flag: { key: 'no spaces allowed', value_type: 'bool', variants: [] } }), 400, 'INVALID_ARGUMENT', /key/);
    expectError(await post(onOffFlag(newKey('bad'), [], { off_variant_key: 'missing' })), 400, 'INVALID_ARGUMENT', /off_variant_key/);
    expectError(await post({ ...onOffFlag(newKey('bad')), version: 'one' }), 400, 'INVALID_ARGUMENT', /body\.version/);
    expectError(await post({ ...onOffFlag(newKey('bad')), enabled: 'yes' }), 400, 'INVALID_ARGUMENT', /body\.enabled/);

    const key = newKey('fixed');
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
    const path = `${envFlags(a.environmentId)}/${key}`;
    expectError(await put(client, path, { token: a.admin.token, body: { key: 'other' } }), 400, 'INVALID_ARGUMENT', /key cannot change/);
    expectError(await put(client, path, { token: a.admin.token, body: { flag: { variants: [{ key: 'on', value: 1 }] } } }), 400, 'INVALID_ARGUMENT', /variants\[0\]\.value/);
    expectError(await client.delete(`${path}?version=abc`, { token: a.admin.token }), 400, 'INVALID_ARGUMENT', /querystring\.version/);
    expectError(await client.post(`${path}/variants`, { token: a.admin.token, body: { variants: [{ key: 'x', value: false }] } }), 400, 'INVALID_ARGUMENT', /variants\[0\]\.value/);
  });

  test('404 NOT_FOUND for an absent flag on every route', async () => {
    const path = `${envFlags(a.environmentId)}/absent-${unique()}`;
    const token = a.admin.token;
    expectError(await client.get(path, { token }), 404, 'NOT_FOUND');
    expectError(await put(client, path, { token, body: { flag: { description: 'x' } } }), 404, 'NOT_FOUND');
    expectError(await client.delete(path, { token }), 404, 'NOT_FOUND');
    expectError(await put(client, `${path}/hashing`, { token, body: { configs: [] } }), 404, 'NOT_FOUND');
    expectError(await put(client, `${path}/rules`, { token, body: { rules: [] } }), 404, 'NOT_FOUND');
    expectError(await client.post(`${path}/variants`, { token, body: { variants: [] } }), 404, 'NOT_FOUND');
    expectError(await client.post(`${path}/archive`, { token }), 404, 'NOT_FOUND');
    expectError(await client.post(`${path}/unarchive`, { token }), 404, 'NOT_FOUND');
    expectError(await client.get(`${envFlags(crypto.randomUUID())}`, { token }), 404, 'NOT_FOUND');
  });

  test('POST variants: 202 with the flag, adding new variants and re-valuing existing ones', async () => {
    const key = newKey('variants');
    await createFlag(client, a.member.token, a.environmentId, onOffFlag(key));
    const body = { variants: [{ key: 'off', value: 'OFF-2' }, { key: 'extra', value: 'EXTRA' }] };
    const flag = expectStatus(await client.post(`${envFlags(a.environmentId)}/${key}/variants`, { token: a.member.token, body }), 202);
    assert.deepEqual(flag.variants, [
      { key: 'on', value: 'ON' },
      { key: 'off', value: 'OFF-2' },
      { key: 'extra', value: 'EXTRA' },
    ]);
  });

  test('archive and unarchive: 200 with the flag; an archived flag is not evaluated', async () => {
    const key = newKey('archive');
    const created = await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
    const path = `${envFlags(a.environmentId)}/${key}`;
    expectStatus(await evaluate(client, a.rawKey, a.environmentId, 'u1', { flag_key: key }), 200);
    const archived = expectStatus(await client.post(`${path}/archive?version=${created.version}`, { token: a.admin.token }), 200);
    assert.equal(archived.archived, true);
    expectError(await evaluate(client, a.rawKey, a.environmentId, 'u1', { flag_key: key }), 404, 'NOT_FOUND');
    const restored = expectStatus(await client.post(`${path}/unarchive`, { token: a.admin.token }), 200);
    assert.equal(restored.archived, false);
    expectStatus(await evaluate(client, a.rawKey, a.environmentId, 'u1', { flag_key: key }), 200);
  });

  test('409 ABORTED for a stale version on PUT, DELETE, archive and unarchive', async () => {
    const key = newKey('stale');
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
    const path = `${envFlags(a.environmentId)}/${key}`;
    expectStatus(await put(client, path, { token: a.admin.token, body: { flag: { description: 'v2' }, version: 1 } }), 200);
    expectError(await put(client, path, { token: a.admin.token, body: { flag: { description: 'lost' }, version: 1 } }), 409, 'ABORTED');
    expectError(await client.delete(`${path}?version=1`, { token: a.admin.token }), 409, 'ABORTED');
    expectError(await client.post(`${path}/archive?version=1`, { token: a.admin.token }), 409, 'ABORTED');
    expectError(await client.post(`${path}/unarchive?version=5`, { token: a.admin.token }), 409, 'ABORTED');
    const flag = expectStatus(await client.get(path, { token: a.admin.token }), 200);
    assert.equal(flag.description, 'v2');
    assert.equal(flag.archived, false);
  });

  test('two concurrent writers with the same version: exactly one 200, one 409 ABORTED', async () => {
    const key = newKey('race');
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
    const path = `${envFlags(a.environmentId)}/${key}`;
    for (let version = 1; version <= 5; version++) {
      const answers = await Promise.all(
        ['first', 'second'].map((who) => put(client, path, { token: a.admin.token, body: { flag: { description: `${who}-${version}` }, version } })),
      );
      assert.deepEqual(answers.map((r) => r.status).sort(), [200, 409], answers.map((r) => r.text).join(' | '));
      const loser = answers.find((r) => r.status === 409)!;
      expectError(loser, 409, 'ABORTED');
      const winner = answers.find((r) => r.status === 200)!;
      const stored = expectStatus(await client.get(path, { token: a.admin.token }), 200);
      assert.equal(stored.description, winner.body.description);
      assert.equal(stored.version, version + 1);
    }
  });
});

describe('flags on the project route', () => {
  test('manages the project-level definition, seen by every environment', async () => {
    const key = newKey('project');
    const body = { flag: { key, value_type: 'bool', variants: [{ key: 'yes', value: true }, { key: 'no', value: false }] } };
    const created = expectStatus(await client.post(projectFlags(a.projectId), { token: a.admin.token, body }), 201);
    assert.deepEqual(Object.keys(created).sort(), FLAG_FIELDS);
    assert.deepEqual([created.enabled, created.rules, created.version], [false, [], 1]);

    const listed = expectStatus(await client.get(projectFlags(a.projectId), { token: a.admin.token }), 200);
    assert.ok(listed.some((f: { key: string }) => f.key === key));
    const inEnvironment = expectStatus(await client.get(`${envFlags(a.environmentId)}/${key}`, { token: a.admin.token }), 200);
    assert.deepEqual([inEnvironment.enabled, inEnvironment.version, inEnvironment.variants], [false, 0, created.variants]);

    const path = `${projectFlags(a.projectId)}/${key}`;
    const updated = expectStatus(await put(client, path, { token: a.admin.token, body: { flag: { description: 'project-wide' }, version: 1 } }), 200);
    assert.equal(updated.version, 2);
    expectError(await put(client, path, { token: a.admin.token, body: { flag: { description: 'stale' }, version: 1 } }), 409, 'ABORTED');
    assert.equal(expectStatus(await client.get(`${envFlags(a.environmentId)}/${key}`, { token: a.admin.token }), 200).description, 'project-wide');

    // Rules, enabled and hashing belong to an environment.
    expectError(await client.post(projectFlags(a.projectId), { token: a.admin.token, body: { ...body, flag: { ...body.flag, key: newKey('p') }, enabled: true } }), 400, 'INVALID_ARGUMENT');
    expectError(await put(client, `${path}/rules`, { token: a.admin.token, body: { rules: [] } }), 400, 'INVALID_ARGUMENT');
    expectError(await put(client, `${path}/hashing`, { token: a.admin.token, body: { configs: [] } }), 400, 'INVALID_ARGUMENT');

    const archived = expectStatus(await client.post(`${path}/archive?version=2`, { token: a.admin.token }), 200);
    assert.deepEqual([archived.archived, archived.version], [true, 3]);
    expectStatus(await client.delete(`${path}?version=3`, { token: a.admin.token }), 204);
    expectError(await client.get(`${envFlags(a.environmentId)}/${key}`, { token: a.admin.token }), 404, 'NOT_FOUND');
  });

  test('an environment id on the project route behaves as the environment route', async () => {
    const key = newKey('via-env');
    const created = expectStatus(await client.post(projectFlags(a.environmentId), { token: a.admin.token, body: onOffFlag(key) }), 201);
    assert.deepEqual([created.enabled, created.version], [true, 1]);
    const rules = [{ id: 'all', conditions: [], variant_key: 'on' }];
    const withRules = expectStatus(await put(client, `${projectFlags(a.environmentId)}/${key}/rules`, { token: a.admin.token, body: { rules, version: 1 } }), 202);
    assert.deepEqual(withRules.rules, [{ id: 'all', conditions: [], variant_key: 'on' }]);
    const same = expectStatus(await client.get(`${envFlags(a.environmentId)}/${key}`, { token: a.admin.token }), 200);
    assert.deepEqual(expectStatus(await client.get(`${projectFlags(a.environmentId)}/${key}`, { token: a.admin.token }), 200), same);
  });

  test("another org's project or environment id is 404 on the project route", async () => {
    const token = a.admin.token;
    for (const id of [b.projectId, b.environmentId]) {
      expectError(await client.get(projectFlags(id), { token }), 404, 'NOT_FOUND');
      expectError(await client.post(projectFlags(id), { token, body: onOffFlag(newKey('x')) }), 404, 'NOT_FOUND');
    }
  });
});

describe('credentials and tenants', () => {
  test("another org's bearer gets 404 on this environment's flags; nothing changes", async () => {
    const key = newKey('isolated');
    const created = await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
    const path = `${envFlags(a.environmentId)}/${key}`;
    const token = b.admin.token;
    expectError(await client.get(envFlags(a.environmentId), { token }), 404, 'NOT_FOUND');
    expectError(await client.post(envFlags(a.environmentId), { token, body: onOffFlag(newKey('x')) }), 404, 'NOT_FOUND');
    expectError(await client.get(path, { token }), 404, 'NOT_FOUND');
    expectError(await put(client, path, { token, body: { enabled: false } }), 404, 'NOT_FOUND');
    expectError(await put(client, `${path}/rules`, { token, body: { rules: [] } }), 404, 'NOT_FOUND');
    expectError(await client.post(`${path}/archive`, { token }), 404, 'NOT_FOUND');
    expectError(await client.delete(path, { token }), 404, 'NOT_FOUND');
    expectError(await client.get(`${projectFlags(a.projectId)}/${key}`, { token }), 404, 'NOT_FOUND');
    assert.deepEqual(expectStatus(await client.get(path, { token: a.admin.token }), 200), created);
  });

  test('an org_member may write flags', async () => {
    const key = newKey('member');
    const token = a.member.token;
    const created = expectStatus(await client.post(envFlags(a.environmentId), { token, body: onOffFlag(key) }), 201);
    const path = `${envFlags(a.environmentId)}/${key}`;
    expectStatus(await put(client, path, { token, body: { enabled: false, version: created.version } }), 200);
    expectStatus(await put(client, `${path}/rules`, { token, body: { rules: [] } }), 202);
    expectStatus(await client.post(`${path}/archive`, { token }), 200);
    expectStatus(await client.delete(path, { token }), 204);
  });

  test('401 without a bearer token (an SDK key is not accepted); 403 for a system-org user', async () => {
    const path = envFlags(a.environmentId);
    expectError(await client.get(path), 401, 'UNAUTHENTICATED');
    expectError(await client.get(path, { sdkKey: a.rawKey }), 401, 'UNAUTHENTICATED');
    expectError(await client.post(path, { sdkKey: a.rawKey, body: onOffFlag(newKey('sdk')) }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(projectFlags(a.projectId), { token: 'not-a-jwt' }), 401, 'UNAUTHENTICATED');
    expectError(await client.get(path, { token: root.token }), 403, 'PERMISSION_DENIED');
  });
});
