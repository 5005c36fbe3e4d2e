import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createFlag, createSegment, onOffFlag, patch, put, segmentsOf } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type RequestOptions, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
/** A second environment of tenant A, with its own SDK key. */
let other: { environmentId: string; rawKey: string };

const LIST_FIELDS = ['context_type', 'created_at_ms', 'description', 'excluded_count', 'id', 'included_count', 'key', 'kind', 'updated_at_ms', 'version'];
const RULE_FIELDS = ['conditions', 'context_type', 'created_at_ms', 'description', 'id', 'key', 'kind', 'updated_at_ms', 'version'];

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'segments-a');
  b = await seedTenant(client, root.token, 'segments-b');
  const environment = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }), 201);
  const key = expectStatus(await client.post(`/v1/management/environments/${environment.environment_id}/sdk-keys`, { token: a.admin.token }), 201);
  other = { environmentId: environment.environment_id, rawKey: key.raw_key };
});
after(() => ts.stop());

const base = (): string => segmentsOf(a.environmentId);
const check = (path: string, body: unknown, auth: RequestOptions = { sdkKey: a.rawKey }) => client.post(`${base()}/${path}`, { ...auth, body });

describe('segment CRUD', () => {
  test('list segment: create 201, get, list, update 200, stale version 409, delete 204, then 404', async () => {
    const key = `list-${unique()}`;
    const created = await createSegment(client, a.admin.token, a.environmentId, { key, context_type: 'user', kind: 'list', description: 'beta', included_keys: ['u1', 'u2', 'u3'], excluded_keys: ['u3'] });
    assert.deepEqual(Object.keys(created).sort(), LIST_FIELDS);
    assert.deepEqual([created.key, created.kind, created.context_type, created.included_count, created.excluded_count], [key, 'list', 'user', 3, 1]);
    const path = `${base()}/${key}`;
    assert.deepEqual(expectStatus(await client.get(path, { token: a.member.token }), 200), created);
    const list = expectStatus(await client.get(base(), { token: a.member.token }), 200);
    assert.deepEqual(list.find((s: { key: string }) => s.key === key), created);

    const updated = expectStatus(await put(client, path, { token: a.admin.token, body: { description: 'beta testers', included_keys: ['u9'], version: created.version } }), 200);
    assert.deepEqual([updated.description, updated.included_count, updated.excluded_count], ['beta testers', 1, 1]);
    assert.ok(updated.version > created.version);
    expectError(await put(client, path, { token: a.admin.token, body: { description: 'lost', version: created.version } }), 409, 'ABORTED');
    expectError(await put(client, path, { token: a.admin.token, body: { kind: 'rule' } }), 400, 'INVALID_ARGUMENT', /kind/);
    expectError(await client.delete(`${path}?version=${created.version}`, { token: a.admin.token }), 409, 'ABORTED');
    expectStatus(await client.delete(`${path}?version=${updated.version}`, { token: a.admin.token }), 204);
    expectError(await client.get(path, { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await put(client, path, { token: a.admin.token, body: { description: 'x' } }), 404, 'NOT_FOUND');
    expectError(await client.delete(path, { token: a.admin.token }), 404, 'NOT_FOUND');
  });

  test('rule segment: the record carries its conditions; bad bodies are 400 naming the field', async () => {
    const key = `rule-${unique()}`;
    const conditions = [{ attribute: 'plan', op: 'eq', values: ['pro'] }];
    const created = await createSegment(client, a.member.token, a.environmentId, { key, context_type: 'user', kind: 'rule', conditions });
    assert.deepEqual(Object.keys(created).sort(), RULE_FIELDS);
    assert.deepEqual(created.conditions, conditions);
    const post = (body: unknown) => client.post(base(), { token: a.admin.token, body });
    expectError(await post({ key, context_type: 'user', kind: 'rule', conditions }), 409, 'ALREADY_EXISTS');
    expectError(await post({ key: `r-${unique()}`, context_type: 'user', kind: 'rule', conditions: [{ attribute: 'plan', op: 'like', values: ['x'] }] }), 400, 'INVALID_ARGUMENT', /conditions\.0\.op/);
    expectError(await post({ key: `r-${unique()}`, context_type: 'user', kind: 'rule', conditions: [{ attribute: 'a', op: 'matches', values: ['['] }] }), 400, 'INVALID_ARGUMENT', /conditions\[0\]\.values\[0\]/);
    expectError(await post({ key: `r-${unique()}`, context_type: 'user', kind: 'rule', included_keys: ['u1'] }), 400, 'INVALID_ARGUMENT', /included_keys/);
    expectError(await post({ key: `r-${unique()}`, context_type: 'user', kind: 'list', conditions }), 400, 'INVALID_ARGUMENT', /conditions/);
    expectError(await post({ key: `r-${unique()}`, context_type: 'user' }), 400, 'INVALID_ARGUMENT', /body\.kind is required/);
    expectError(await post({ key: `r-${unique()}`, context_type: 'user', kind: 'tree' }), 400, 'INVALID_ARGUMENT', /body\.kind/);
    expectError(await post({ key: 'has space', context_type: 'user', kind: 'list' }), 400, 'INVALID_ARGUMENT', /key/);
    const path = `${base()}/${key}`;
    const updated = expectStatus(await put(client, path, { token: a.admin.token, body: { conditions: [{ attribute: 'plan', op: 'in', values: ['pro', 'team'] }] } }), 200);
    assert.deepEqual(updated.conditions[0].values, ['pro', 'team']);
    expectError(await patch(client, `${path}/members`, { token: a.admin.token, body: { add_included: ['u1'] } }), 409, 'FAILED_PRECONDITION');
  });

  test('a segment used by a flag rule cannot be deleted: 409 FAILED_PRECONDITION', async () => {
    const key = `used-${unique()}`;
    await createSegment(client, a.admin.token, a.environmentId, { key, context_type: 'user', kind: 'list' });
    await createFlag(client, a.admin.token, a.environmentId, onOffFlag(`uses-${unique()}`, [{ conditions: [], segment_keys: [key], variant_key: 'on' }]));
    expectError(await client.delete(`${base()}/${key}`, { token: a.admin.token }), 409, 'FAILED_PRECONDITION', /used by flags/);
  });
});

describe('PUT replaces a large list without loading it', () => {
  test('200,000 stored members replaced by 10,000 keys: exactly the new list, the excluded list kept, no member read by the server', async () => {
    const key = `huge-${unique()}`;
    const created = await createSegment(client, a.admin.token, a.environmentId, { key, context_type: 'user', kind: 'list', excluded_keys: ['banned'] });
    // 200,000 members written in SQL directly (the REST limit is 10,000 keys per request).
    const inserted = await ts.db.sql`
      INSERT INTO segment_members (segment_id, context_key, list)
      SELECT ${created.id}::uuid, 'old-' || lpad(g::text, 6, '0'), 'included' FROM generate_series(0, 199999) AS g`;
    assert.equal(inserted.count, 200_000);
    await ts.db.sql`UPDATE segments SET included_count = 200000 WHERE id = ${created.id}`;

    // The new list: 5,000 of the stored keys and 5,000 new ones, sent in no particular order.
    const kept = Array.from({ length: 5_000 }, (_, i) => `old-${String(i * 40).padStart(6, '0')}`);
    const fresh = Array.from({ length: 5_000 }, (_, i) => `new-${String(i).padStart(6, '0')}`);
    const body = { included_keys: [...fresh, ...kept].reverse(), version: created.version };
    const expected = [...fresh, ...kept].sort();

    // The old service read every member page by page (listMembers) to diff in memory; the
    // replacement must not read members at all.
    const segments = ts.server.repos.segments;
    const listMembers = segments.listMembers;
    let memberReads = 0;
    segments.listMembers = (...args) => {
      memberReads += 1;
      return listMembers.apply(segments, args);
    };
    let updated;
    try {
      updated = expectStatus(await put(client, `${base()}/${key}`, { token: a.admin.token, body }), 200);
    } finally {
      segments.listMembers = listMembers;
    }
    assert.equal(memberReads, 0, 'PUT must not page through the stored members');
    assert.deepEqual([updated.included_count, updated.excluded_count], [10_000, 1]);

    const rows = await ts.db.sql<{ context_key: string; list: string }[]>`
      SELECT context_key, list FROM segment_members WHERE segment_id = ${created.id} ORDER BY list, context_key COLLATE "C"`;
    assert.deepEqual(rows.filter((row) => row.list === 'excluded').map((row) => row.context_key), ['banned']);
    assert.deepEqual(rows.filter((row) => row.list === 'included').map((row) => row.context_key), expected);
  });
});

describe('members', () => {
  test('PATCH adds and removes keys (200 record); GET pages through them in key order', async () => {
    const key = `members-${unique()}`;
    await createSegment(client, a.admin.token, a.environmentId, { key, context_type: 'user', kind: 'list' });
    const path = `${base()}/${key}/members`;
    const keys = Array.from({ length: 25 }, (_, i) => `user-${String(i).padStart(2, '0')}`);
    const record = expectStatus(await patch(client, path, { token: a.admin.token, body: { add_included: keys, add_excluded: ['user-00', 'x'] } }), 200);
    assert.deepEqual([record.key, record.included_count, record.excluded_count], [key, 25, 2]);
    const removed = expectStatus(await patch(client, path, { token: a.admin.token, body: { remove_included: ['user-24'], remove_excluded: ['x'] } }), 200);
    assert.deepEqual([removed.included_count, removed.excluded_count], [24, 1]);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { keys: string[]; next_cursor: string | null } = expectStatus(await client.get(`${path}?limit=10${cursor ? `&cursor=${cursor}` : ''}`, { token: a.member.token }), 200);
      assert.ok(page.keys.length <= 10);
      seen.push(...page.keys);
      cursor = page.next_cursor;
    } while (cursor !== null);
    assert.deepEqual(seen, keys.slice(0, 24));
    assert.deepEqual(expectStatus(await client.get(`${path}?list=excluded`, { token: a.admin.token }), 200), { keys: ['user-00'], next_cursor: null });
    assert.equal(expectStatus(await client.get(path, { token: a.admin.token }), 200).keys.length, 24);

    expectError(await client.get(`${path}?limit=0`, { token: a.admin.token }), 400, 'INVALID_ARGUMENT', /limit/);
    expectError(await client.get(`${path}?limit=10001`, { token: a.admin.token }), 400, 'INVALID_ARGUMENT', /limit/);
    expectError(await client.get(`${path}?limit=ten`, { token: a.admin.token }), 400, 'INVALID_ARGUMENT', /querystring\.limit/);
    expectError(await client.get(`${path}?list=both`, { token: a.admin.token }), 400, 'INVALID_ARGUMENT', /querystring\.list/);
    expectError(await patch(client, path, { token: a.admin.token, body: { add_included: [1] } }), 400, 'INVALID_ARGUMENT', /add_included/);
    expectError(await client.get(`${base()}/absent-${unique()}/members`, { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await patch(client, `${base()}/absent-${unique()}/members`, { token: a.admin.token, body: { add_included: ['k'] } }), 404, 'NOT_FOUND');
  });

  test('a list segment of 100,000 keys (10 PATCHes of 10,000) answers list-check correctly', async () => {
    const key = `big-${unique()}`;
    await createSegment(client, a.admin.token, a.environmentId, { key, context_type: 'user', kind: 'list' });
    const path = `${base()}/${key}/members`;
    let record;
    for (let chunk = 0; chunk < 10; chunk++) {
      const add_included = Array.from({ length: 10_000 }, (_, i) => `member-${chunk * 10_000 + i}`);
      record = expectStatus(await patch(client, path, { token: a.admin.token, body: { add_included } }), 200);
    }
    assert.equal(record.included_count, 100_000);
    expectStatus(await patch(client, path, { token: a.admin.token, body: { add_excluded: ['member-77777'] } }), 200);
    for (const [contextKey, expected] of [['member-0', true], ['member-99999', true], ['member-54321', true], ['member-77777', false], ['member-100000', false]] as const) {
      const answer = expectStatus(await check('list-check', { segment_key: key, context_key: contextKey, context_type: 'user' }), 200);
      assert.deepEqual(answer, { is_member: expected }, contextKey);
    }
    const batch = Array.from({ length: 1000 }, (_, i) => ({ segment_key: key, context_key: `member-${i * 100 + 7}`, context_type: 'user' }));
    const answers = expectStatus(await check('batch-list-check', batch), 200);
    assert.ok(answers.every((answer: { is_member: boolean }) => answer.is_member));
  });
});

describe('list-check', () => {
  let segmentKey: string;
  before(async () => {
    segmentKey = `check-${unique()}`;
    await createSegment(client, a.admin.token, a.environmentId, { key: segmentKey, context_type: 'user', kind: 'list', included_keys: ['in', 'both'], excluded_keys: ['both', 'out'] });
  });

  test('single: member, non-member, excluded wins, another context type is not a member', async () => {
    const cases: Array<[string, string, boolean]> = [
      ['in', 'user', true],
      ['both', 'user', false],
      ['out', 'user', false],
      ['nobody', 'user', false],
      ['in', 'device', false],
    ];
    for (const [contextKey, contextType, expected] of cases) {
      const answer = expectStatus(await check('list-check', { segment_key: segmentKey, context_key: contextKey, context_type: contextType }), 200);
      assert.deepEqual(answer, { is_member: expected }, `${contextKey}/${contextType}`);
    }
  });

  test('both batch paths answer in order; an empty batch is []', async () => {
    const queries = ['nobody', 'in', 'both', 'in'].map((contextKey) => ({ segment_key: segmentKey, context_key: contextKey, context_type: 'user' }));
    const expected = queries.map((q, i) => ({ segment_key: segmentKey, context_key: q.context_key, is_member: i === 1 || i === 3 }));
    assert.deepEqual(expectStatus(await check('list-check/batch', queries), 200), expected);
    assert.deepEqual(expectStatus(await check('batch-list-check', queries, { token: a.member.token }), 200), expected);
    assert.deepEqual(expectStatus(await check('batch-list-check', []), 200), []);
    const tooMany = Array.from({ length: 1001 }, () => queries[0]);
    expectError(await check('list-check/batch', tooMany), 400, 'INVALID_ARGUMENT', /body/);
    expectError(await check('batch-list-check', [{ segment_key: segmentKey }]), 400, 'INVALID_ARGUMENT', /body\.0\.context_key is required/);
  });

  test('unknown segment 404; missing fields 400', async () => {
    expectError(await check('list-check', { segment_key: 'no-such', context_key: 'in', context_type: 'user' }), 404, 'NOT_FOUND');
    expectError(await check('list-check/batch', [{ segment_key: segmentKey, context_key: 'in', context_type: 'user' }, { segment_key: 'no-such', context_key: 'in', context_type: 'user' }]), 404, 'NOT_FOUND');
    expectError(await check('list-check', { segment_key: segmentKey, context_type: 'user' }), 400, 'INVALID_ARGUMENT', /body\.context_key is required/);
  });

  test('x-sdk-key and bearer both accepted; a key of another environment is 403; another org is 404 by bearer', async () => {
    const body = { segment_key: segmentKey, context_key: 'in', context_type: 'user' };
    assert.deepEqual(expectStatus(await check('list-check', body, { token: a.admin.token }), 200), { is_member: true });
    assert.deepEqual(expectStatus(await check('list-check', body, { token: a.member.token }), 200), { is_member: true });
    expectError(await check('list-check', body, { sdkKey: other.rawKey }), 403, 'PERMISSION_DENIED');
    expectError(await check('list-check', body, { sdkKey: b.rawKey }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(`${segmentsOf(b.environmentId)}/list-check`, { sdkKey: a.rawKey, body }), 403, 'PERMISSION_DENIED');
    expectError(await check('list-check', body, { token: b.admin.token }), 404, 'NOT_FOUND');
    expectError(await check('list-check', body, {}), 401, 'UNAUTHENTICATED');
    expectError(await check('list-check', body, { sdkKey: 'sk_not_a_real_key' }), 401, 'UNAUTHENTICATED');
  });

  test('list-check paths are not captured by /:segment_id, even for segments named like them', async () => {
    for (const key of ['list-check', 'batch-list-check']) {
      await createSegment(client, a.admin.token, a.environmentId, { key, context_type: 'user', kind: 'list', included_keys: ['k'] });
      assert.equal(expectStatus(await client.get(`${base()}/${key}`, { token: a.admin.token }), 200).key, key);
    }
    assert.deepEqual(expectStatus(await check('list-check', { segment_key: 'list-check', context_key: 'k', context_type: 'user' }), 200), { is_member: true });
    assert.deepEqual(expectStatus(await check('batch-list-check', [{ segment_key: 'batch-list-check', context_key: 'k', context_type: 'user' }]), 200), [
      { segment_key: 'batch-list-check', context_key: 'k', is_member: true },
    ]);
    assert.deepEqual(expectStatus(await client.get(`${base()}/list-check/members`, { token: a.admin.token }), 200), { keys: ['k'], next_cursor: null });
  });
});

describe('credentials and tenants', () => {
  test("another org's bearer gets 404 on this environment's segments; nothing changes", async () => {
    const key = `isolated-${unique()}`;
    const created = await createSegment(client, a.admin.token, a.environmentId, { key, context_type: 'user', kind: 'list', included_keys: ['k'] });
    const token = b.admin.token;
    const path = `${base()}/${key}`;
    expectError(await client.get(base(), { token }), 404, 'NOT_FOUND');
    expectError(await client.post(base(), { token, body: { key: `x-${unique()}`, context_type: 'user', kind: 'list' } }), 404, 'NOT_FOUND');
    expectError(await client.get(path, { token }), 404, 'NOT_FOUND');
    expectError(await put(client, path, { token, body: { description: 'x' } }), 404, 'NOT_FOUND');
    expectError(await patch(client, `${path}/members`, { token, body: { add_included: ['intruder'] } }), 404, 'NOT_FOUND');
    expectError(await client.get(`${path}/members`, { token }), 404, 'NOT_FOUND');
    expectError(await client.delete(path, { token }), 404, 'NOT_FOUND');
    assert.deepEqual(expectStatus(await client.get(path, { token: a.admin.token }), 200), created);
  });

  test('an SDK key may only list-check (403 elsewhere); no credentials is 401', async () => {
    const sdkKey = a.rawKey;
    expectError(await client.get(base(), { sdkKey }), 403, 'PERMISSION_DENIED');
    expectError(await client.post(base(), { sdkKey, body: { key: `x-${unique()}`, context_type: 'user', kind: 'list' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(`${base()}/list-check`, { sdkKey }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(base()), 401, 'UNAUTHENTICATED');
    expectError(await client.delete(`${base()}/anything`), 401, 'UNAUTHENTICATED');
  });
});
