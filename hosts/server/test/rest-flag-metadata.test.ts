import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { flagHistoryPath, readAll } from './support/audit-log.ts';
import { FLAG_FIELDS, createFlag, envFlags, evaluate, inChunks, onOffFlag, projectFlags, put } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { openInternalSync, openSync, sdkKeyMetadata } from './support/sync-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Flag metadata (tags, lifetime, maintainer) and bucket_by over REST (docs/contract.md "Flags and
 * evaluation", "Flags"): the fields on create, update and read, the list filter, bad input, who may
 * change them, their change history, and bucket_by's effect on evaluation in two environments.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let staging: string;
let stagingKey: string;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'meta-a');
  b = await seedTenant(client, root.token, 'meta-b');
  staging = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }), 201).environment_id;
  stagingKey = expectStatus(await client.post(`/v1/management/environments/${staging}/sdk-keys`, { token: a.admin.token }), 201).raw_key;
});
after(() => ts.stop());

const newKey = (label: string): string => `${label}-${unique()}`;
const metadataOf = (flag: Json) => ({ tags: flag.tags, lifetime: flag.lifetime, maintainer: flag.maintainer, bucket_by: flag.bucket_by });
const keysOf = (flags: Json[]): string[] => flags.map((flag) => flag.key);

describe('flag metadata fields', () => {
  test('absent on create: [], permanent, null, environment; every Flag record carries them', async () => {
    const key = newKey('plain');
    const created = await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
    assert.deepEqual(Object.keys(created).sort(), FLAG_FIELDS);
    assert.deepEqual(metadataOf(created), { tags: [], lifetime: 'permanent', maintainer: null, bucket_by: 'environment' });
    const definition = expectStatus(await client.get(`${projectFlags(a.projectId)}/${key}`, { token: a.admin.token }), 200);
    assert.deepEqual(metadataOf(definition), metadataOf(created));
  });

  test('set on create: tags sorted and de-duplicated, maintainer trimmed; project-level, so every environment shows them', async () => {
    const key = newKey('set');
    const body = onOffFlag(key, [], { tags: ['ui', 'team:web', 'ui', 'Beta'], lifetime: 'temporary', maintainer: ' ana@example.com ', bucket_by: 'project' });
    const created = await createFlag(client, a.admin.token, a.environmentId, body);
    const expected = { tags: ['Beta', 'team:web', 'ui'], lifetime: 'temporary', maintainer: 'ana@example.com', bucket_by: 'project' };
    assert.deepEqual(metadataOf(created), expected);
    assert.deepEqual(metadataOf(expectStatus(await client.get(`${envFlags(staging)}/${key}`, { token: a.admin.token }), 200)), expected);
  });

  test('update changes only the fields given; maintainer null or "" removes it; the definition history has before and after', async () => {
    const key = newKey('upd');
    const created = await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key, [], { tags: ['a'], maintainer: 'team a' }));
    const path = `${envFlags(a.environmentId)}/${key}`;
    const described = expectStatus(await put(client, path, { token: a.admin.token, body: { flag: { description: 'words' }, version: created.version } }), 200);
    assert.deepEqual(metadataOf(described), { tags: ['a'], lifetime: 'permanent', maintainer: 'team a', bucket_by: 'environment' });
    const projectPath = `${projectFlags(a.projectId)}/${key}`;
    const changed = expectStatus(await put(client, projectPath, { token: a.admin.token, body: { flag: { tags: ['b', 'a/b'], lifetime: 'temporary', maintainer: null } } }), 200);
    assert.deepEqual(metadataOf(changed), { tags: ['a/b', 'b'], lifetime: 'temporary', maintainer: null, bucket_by: 'environment' });
    expectStatus(await put(client, projectPath, { token: a.admin.token, body: { flag: { maintainer: 'x' } } }), 200);
    assert.equal(expectStatus(await put(client, projectPath, { token: a.admin.token, body: { flag: { maintainer: '' } } }), 200).maintainer, null);

    const history = await readAll(client, a.admin.token, (q) => flagHistoryPath(a.environmentId, key, q), {});
    const tagChange = history.find((entry) => entry.action === 'flag.update' && (entry.environment_id ?? null) === null && entry.after?.lifetime === 'temporary' && entry.before?.lifetime === 'permanent');
    assert.ok(tagChange, 'the definition change is in the history');
    assert.deepEqual([tagChange.before.tags, tagChange.after.tags], [['a'], ['a/b', 'b']]);
    assert.deepEqual([tagChange.before.maintainer, tagChange.after.maintainer], ['team a', null]);
  });

  test('bad values: 400 INVALID_ARGUMENT naming the field, nothing written', async () => {
    const post = (extra: Record<string, unknown>) => client.post(envFlags(a.environmentId), { token: a.admin.token, body: onOffFlag(newKey('bad'), [], extra) });
    expectError(await post({ tags: ['ok', 'has space'] }), 400, 'INVALID_ARGUMENT', /tags\[1\]/);
    expectError(await post({ tags: ['-lead'] }), 400, 'INVALID_ARGUMENT', /tags\[0\]/);
    expectError(await post({ tags: ['x'.repeat(65)] }), 400, 'INVALID_ARGUMENT', /tags\[0\]/);
    expectError(await post({ tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }), 400, 'INVALID_ARGUMENT', /tags/);
    expectError(await post({ tags: [1] }), 400, 'INVALID_ARGUMENT', /tags/);
    expectError(await post({ tags: 'web' }), 400, 'INVALID_ARGUMENT', /tags/);
    expectError(await post({ lifetime: 'forever' }), 400, 'INVALID_ARGUMENT', /lifetime/);
    expectError(await post({ maintainer: 'x'.repeat(201) }), 400, 'INVALID_ARGUMENT', /maintainer/);
    expectError(await post({ maintainer: 7 }), 400, 'INVALID_ARGUMENT', /maintainer/);
    expectError(await post({ bucket_by: 'org' }), 400, 'INVALID_ARGUMENT', /bucket_by/);

    const key = newKey('kept');
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key, [], { tags: ['kept'] }));
    const path = `${projectFlags(a.projectId)}/${key}`;
    expectError(await put(client, path, { token: a.admin.token, body: { flag: { tags: ['ok', 'bad tag'] } } }), 400, 'INVALID_ARGUMENT', /tags\[1\]/);
    expectError(await put(client, path, { token: a.admin.token, body: { flag: { bucket_by: 'PROJECT' } } }), 400, 'INVALID_ARGUMENT', /bucket_by/);
    assert.deepEqual(expectStatus(await client.get(path, { token: a.admin.token }), 200).tags, ['kept']);
  });

  test("another org's admin neither reads nor changes them (404); an anonymous caller is 401", async () => {
    const key = newKey('tenant');
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key, [], { tags: ['secret'] }));
    expectError(await put(client, `${projectFlags(a.projectId)}/${key}`, { token: b.admin.token, body: { flag: { tags: ['mine'] } } }), 404, 'NOT_FOUND');
    expectError(await client.get(`${envFlags(a.environmentId)}?tag=secret`, { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(`${envFlags(a.environmentId)}?tag=secret`), 401, 'UNAUTHENTICATED');
    assert.deepEqual(expectStatus(await client.get(`${projectFlags(a.projectId)}/${key}`, { token: a.admin.token }), 200).tags, ['secret']);
  });
});

describe('flag list filter', () => {
  let web: string;
  let webTemp: string;
  let api2: string;
  const label = unique();

  before(async () => {
    web = newKey('f-web');
    webTemp = newKey('f-webtemp');
    api2 = newKey('f-api');
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(web, [], { tags: [`web-${label}`, `ui-${label}`] }));
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(webTemp, [], { tags: [`web-${label}`], lifetime: 'temporary' }));
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(api2, [], { tags: [`api-${label}`], lifetime: 'temporary' }));
  });

  for (const [name, base] of [['environment', () => envFlags(a.environmentId)], ['project', () => projectFlags(a.projectId)]] as const) {
    test(`on the ${name} route: every tag given must be carried; lifetime filters`, async () => {
      const list = async (query: string) => keysOf(expectStatus(await client.get(`${base()}?${query}`, { token: a.member.token }), 200)).filter((key) => [web, webTemp, api2].includes(key));
      assert.deepEqual(await list(`tag=web-${label}`), [web, webTemp].sort());
      assert.deepEqual(await list(`tag=web-${label}&tag=ui-${label}`), [web]);
      assert.deepEqual(await list(`tag=web-${label}&tag=api-${label}`), []);
      assert.deepEqual(await list('lifetime=temporary'), [api2, webTemp].sort());
      assert.deepEqual(await list(`lifetime=permanent&tag=web-${label}`), [web]);
      assert.deepEqual(await list(`tag=api-${label}&lifetime=temporary`), [api2]);
      // No filter: all three.
      assert.deepEqual((await list('')).sort(), [api2, web, webTemp].sort());
    });

    test(`on the ${name} route: bad filter values are 400 INVALID_ARGUMENT naming the parameter`, async () => {
      const get = (query: string) => client.get(`${base()}?${query}`, { token: a.admin.token });
      expectError(await get('tag=has%20space'), 400, 'INVALID_ARGUMENT', /tag/);
      expectError(await get('tag='), 400, 'INVALID_ARGUMENT', /tag/);
      expectError(await get('lifetime=forever'), 400, 'INVALID_ARGUMENT', /lifetime/);
      expectError(await get(Array.from({ length: 51 }, (_, i) => `tag=t${i}`).join('&')), 400, 'INVALID_ARGUMENT', /tag/);
    });
  }
});

describe('bucket_by and evaluation', () => {
  /** A 50/50 split, enabled in both environments; the variant each user gets in each. */
  async function variantsInBothEnvironments(bucketBy: 'environment' | 'project'): Promise<Array<[string, string]>> {
    const key = newKey(`split-${bucketBy}`);
    const split = [{ id: 'half', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] } }];
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key, split, { bucket_by: bucketBy }));
    expectStatus(await put(client, `${envFlags(staging)}/${key}`, { token: a.admin.token, body: { flag: { enabled: true, rules: split } } }), 200);
    const users = Array.from({ length: 40 }, (_, i) => `user-${i}`);
    const answer = async (sdkKey: string, environmentId: string, user: string): Promise<string> => {
      // The environment's definitions reach the evaluator (the gateway's, in the split topology) a little after the write.
      for (let attempt = 0; ; attempt++) {
        const response = await evaluate(client, sdkKey, environmentId, user, { flag_key: key });
        if (response.status === 200 && response.body.reason === 'SPLIT') return response.body.variant_key;
        if (attempt > 100) assert.fail(`evaluate: ${response.status} ${response.text}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    return inChunks(users, 10, async (user) => [await answer(a.rawKey, a.environmentId, user), await answer(stagingKey, staging, user)] as [string, string]);
  }

  test('project: every user gets the same variant in both environments of the project', async () => {
    const pairs = await variantsInBothEnvironments('project');
    for (const [production, stagingVariant] of pairs) assert.equal(production, stagingVariant);
    // Both variants occur: the split is live, not one variant for everyone.
    assert.deepEqual(new Set(pairs.map(([production]) => production)), new Set(['on', 'off']));
  });

  test('environment (the default): the environments pick independently, so some of 40 users differ (all agreeing: chance 2^-40)', async () => {
    const pairs = await variantsInBothEnvironments('environment');
    assert.ok(pairs.some(([production, stagingVariant]) => production !== stagingVariant));
  });
});

describe('the sync streams', () => {
  test('carry the metadata and bucket_by in FeatureFlag, and name bucket_by_project among the features while a flag uses it', async () => {
    const key = newKey('synced');
    await createFlag(client, a.admin.token, staging, onOffFlag(key, [], { tags: ['sync-tag'], lifetime: 'temporary', maintainer: 'team sync', bucket_by: 'project' }));
    for (const [name, open] of [
      ['public', () => openSync(ts.server.syncGrpcPort, {}, sdkKeyMetadata(stagingKey))],
      ['internal', () => openInternalSync(ts.server.grpcPort, {}, sdkKeyMetadata(stagingKey))],
    ] as const) {
      const stream = open();
      try {
        const first = await stream.next();
        assert.ok(first.features.includes('bucket_by_project'), `${name}: features ${JSON.stringify(first.features)}`);
        const flag = first.flags.find((f: Json) => f.key === key) as Json;
        assert.deepEqual([flag.tags, flag.lifetime, flag.maintainer, flag.bucket_by], [['sync-tag'], 'FLAG_LIFETIME_TEMPORARY', 'team sync', 'FLAG_BUCKET_BY_PROJECT'], name);
      } finally {
        stream.cancel();
      }
    }
  });
});
