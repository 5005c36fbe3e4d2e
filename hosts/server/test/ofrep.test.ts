import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Flag } from '@switchyard/core';
import { createFlag, eventually, updateFlag } from './support/flag-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type ApiResponse, type Json, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { TOPOLOGY, startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;

const SINGLE = (key: string) => `/ofrep/v1/evaluate/flags/${key}`;
const BULK = '/ofrep/v1/evaluate/flags';

before(async () => {
  ts = await startTestServer();
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'ofrep-a');
  b = await seedTenant(client, root.token, 'ofrep-b');
  const beta = { id: 'beta', conditions: [{ attribute: 'plan', op: 'eq', values: ['beta'] }], variant_key: 'on' };
  await createFlag(ts, client, a, {
    key: 'bool-flag',
    value_type: 'bool',
    variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
    enabled: true,
    off_variant_key: 'off',
    rules: [beta],
  });
  await createFlag(ts, client, a, {
    key: 'disabled-flag',
    value_type: 'string',
    variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }],
    enabled: false,
    off_variant_key: 'b',
    rules: [{ ...beta, variant_key: 'a' }],
  });
  await createFlag(ts, client, a, {
    key: 'plain-flag',
    value_type: 'int',
    variants: [{ key: 'one', value: 1 }],
    enabled: true,
    off_variant_key: 'one',
  });
  await createFlag(ts, client, a, {
    key: 'valueless-flag',
    value_type: 'string',
    variants: [{ key: 'x', value: 'X' }],
    enabled: true,
    off_variant_key: null,
    // No rule at all (left out, the default rule would serve `x`): nothing matches, nothing to serve.
    rules: [],
  });
  // Rules left out: the default rule serves `a` to everyone, so no key is needed.
  await createFlag(ts, client, a, {
    key: 'launched-flag',
    value_type: 'string',
    variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }],
    enabled: true,
    off_variant_key: 'b',
  });
  // An unconditional percentage split hashes the key: it needs one (all of it to `a`, so every
  // keyed context gets the same answer and the ETag tests below stay context-independent).
  await createFlag(ts, client, a, {
    key: 'split-flag',
    value_type: 'string',
    variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }],
    enabled: true,
    off_variant_key: 'b',
    rules: [{ id: 'all-a', conditions: [], allocation: { context_hash_specs: { user: { parameter_names: [] } }, buckets: [{ variant_key: 'a', weight_milli: 1000 }, { variant_key: 'b', weight_milli: 0 }] } }],
  });
  await createFlag(ts, client, a, {
    key: 'org-flag',
    value_type: 'string',
    variants: [{ key: 'gold', value: 'gold-tier' }, { key: 'std', value: 'standard' }],
    enabled: true,
    off_variant_key: 'std',
    rules: [{ id: 'gold-orgs', conditions: [{ context_type: 'organization', attribute: 'tier', op: 'eq', values: ['gold'] }], variant_key: 'gold' }],
  });
});
after(() => ts.stop());

/** A POST with a raw body and exactly the given headers (for malformed input and odd credentials). */
async function raw(path: string, headers: Record<string, string>, body?: string): Promise<ApiResponse> {
  const response = await fetch(ts.base + path, { method: 'POST', headers, ...(body === undefined ? {} : { body }) });
  const text = await response.text();
  let parsed: Json;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = text;
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

const evaluateOne = (key: string, context: unknown, tenant = a) => client.post(SINGLE(key), { sdkKey: tenant.rawKey, body: { context } });
const evaluateAll = (context: unknown, headers: Record<string, string> = {}, tenant = a) =>
  client.post(BULK, { sdkKey: tenant.rawKey, body: { context }, headers });

/** An OFREP failure: status and `{key?, errorCode, errorDetails}`, never our `{error, code}`. */
function expectFailure(response: ApiResponse, status: number, errorCode: string, key?: string): void {
  assert.equal(response.status, status, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  assert.equal(response.body?.errorCode, errorCode, response.text);
  assert.equal(typeof response.body.errorDetails, 'string');
  assert.notEqual(response.body.errorDetails, '');
  assert.deepEqual(Object.keys(response.body as object).sort(), key === undefined ? ['errorCode', 'errorDetails'] : ['errorCode', 'errorDetails', 'key']);
  if (key !== undefined) assert.equal(response.body.key, key);
}

function expectEmpty(response: ApiResponse, status: number): void {
  assert.equal(response.status, status, response.text);
  assert.equal(response.text, '', 'no body');
}

describe('authentication', () => {
  const body = JSON.stringify({ context: { targetingKey: 'u1' } });
  const json = { 'content-type': 'application/json' };

  test('the SDK key works as x-sdk-key and as Authorization: Bearer', async () => {
    const ways: Array<Record<string, string>> = [{ 'x-sdk-key': a.rawKey }, { authorization: `Bearer ${a.rawKey}` }];
    for (const headers of ways) {
      for (const path of [SINGLE('plain-flag'), BULK]) {
        const response = await raw(path, { ...json, ...headers }, body);
        assert.equal(response.status, 200, `${path} ${JSON.stringify(Object.keys(headers))}: ${response.text}`);
      }
    }
  });

  test('x-sdk-key wins over an Authorization header (e.g. one meant for a proxy)', async () => {
    const response = await raw(SINGLE('plain-flag'), { ...json, 'x-sdk-key': a.rawKey, authorization: `Bearer ${a.admin.token}` }, body);
    assert.equal(response.status, 200, response.text);
  });

  test('no credential, an unknown key or a malformed header: 401 with an empty body', async () => {
    for (const path of [SINGLE('plain-flag'), BULK]) {
      expectEmpty(await raw(path, json, body), 401);
      expectEmpty(await raw(path, { ...json, 'x-sdk-key': 'sdk_not-a-real-key' }, body), 401);
      expectEmpty(await raw(path, { ...json, 'x-sdk-key': ' ' }, body), 401);
      expectEmpty(await raw(path, { ...json, authorization: 'Bearer sdk_not-a-real-key' }, body), 401);
      expectEmpty(await raw(path, { ...json, authorization: `Basic ${a.rawKey}` }, body), 401);
      expectEmpty(await raw(path, { ...json, authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.forged' }, body), 401);
    }
  });

  test('a user token (org admin or system admin) is the wrong kind of credential: 403 with an empty body', async () => {
    for (const token of [a.admin.token, a.member.token, root.token]) {
      expectEmpty(await raw(SINGLE('plain-flag'), { ...json, authorization: `Bearer ${token}` }, body), 403);
      expectEmpty(await raw(BULK, { ...json, authorization: `Bearer ${token}` }, body), 403);
    }
  });

  test('credentials are checked before the body: no key and malformed JSON is still 401', async () => {
    expectEmpty(await raw(SINGLE('plain-flag'), json, '{"context":'), 401);
    expectEmpty(await raw(BULK, json, 'not json'), 401);
  });

  test('a deleted key stops working at once', async () => {
    const made = expectStatus(await client.post(`/v1/management/environments/${a.environmentId}/sdk-keys`, { token: a.admin.token }), 201);
    assert.equal((await raw(BULK, { ...json, 'x-sdk-key': made.raw_key }, body)).status, 200);
    expectStatus(await client.delete(`/v1/management/environments/${a.environmentId}/sdk-keys/${made.sdk_key_id}`, { token: a.admin.token }), 204);
    expectEmpty(await raw(BULK, { ...json, 'x-sdk-key': made.raw_key }, body), 401);
  });
});

describe('single flag evaluation', () => {
  test('a targeting match: key, value, reason, variant and the rule in metadata', async () => {
    const response = await evaluateOne('bool-flag', { targetingKey: 'u1', plan: 'beta' });
    assert.equal(response.status, 200, response.text);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(response.body, { key: 'bool-flag', value: true, reason: 'TARGETING_MATCH', variant: 'on', metadata: { rule_id: 'beta' } });
  });

  test('no rule matches: the off variant with reason DEFAULT', async () => {
    const response = await evaluateOne('bool-flag', { targetingKey: 'u1', plan: 'free' });
    assert.deepEqual(expectStatus(response, 200), { key: 'bool-flag', value: false, reason: 'DEFAULT', variant: 'off', metadata: {} });
  });

  test('a disabled flag: the off variant with reason DISABLED', async () => {
    const response = await evaluateOne('disabled-flag', { targetingKey: 'u1', plan: 'beta' });
    assert.deepEqual(expectStatus(response, 200), { key: 'disabled-flag', value: 'B', reason: 'DISABLED', variant: 'b', metadata: {} });
  });

  test('a variant without a value: no value and no variant (the SDK default applies)', async () => {
    const response = await evaluateOne('valueless-flag', { targetingKey: 'u1' });
    assert.deepEqual(expectStatus(response, 200), { key: 'valueless-flag', reason: 'DEFAULT', metadata: {} });
  });

  test('kind or context_type picks the context type (default user) and is not an attribute', async () => {
    const gold = { key: 'org-flag', value: 'gold-tier', reason: 'TARGETING_MATCH', variant: 'gold', metadata: { rule_id: 'gold-orgs' } };
    const standard = { key: 'org-flag', value: 'standard', reason: 'DEFAULT', variant: 'std', metadata: {} };
    assert.deepEqual(expectStatus(await evaluateOne('org-flag', { targetingKey: 'o1', kind: 'organization', tier: 'gold' }), 200), gold);
    assert.deepEqual(expectStatus(await evaluateOne('org-flag', { targetingKey: 'o1', context_type: 'organization', tier: 'gold' }), 200), gold);
    assert.deepEqual(expectStatus(await evaluateOne('org-flag', { targetingKey: 'o1', tier: 'gold' }), 200), standard);
    // context_type wins over kind
    assert.deepEqual(expectStatus(await evaluateOne('org-flag', { targetingKey: 'o1', kind: 'user', context_type: 'organization', tier: 'gold' }), 200), gold);
  });

  test('structured attributes are ignored, scalar ones still count', async () => {
    const response = await evaluateOne('bool-flag', { targetingKey: 'u1', plan: 'beta', address: { city: 'Berlin' }, tags: ['a', 'b'], nothing: null });
    assert.equal(expectStatus(response, 200).reason, 'TARGETING_MATCH');
  });

  test('an unknown flag, and another environment’s flag: 404 FLAG_NOT_FOUND', async () => {
    expectFailure(await evaluateOne('no-such-flag', { targetingKey: 'u1' }), 404, 'FLAG_NOT_FOUND', 'no-such-flag');
    expectFailure(await evaluateOne('bool-flag', { targetingKey: 'u1' }, b), 404, 'FLAG_NOT_FOUND', 'bool-flag');
  });

  test('no targetingKey for a flag with rules: 400 TARGETING_KEY_MISSING', async () => {
    expectFailure(await evaluateOne('bool-flag', { plan: 'beta' }), 400, 'TARGETING_KEY_MISSING', 'bool-flag');
    expectFailure(await evaluateOne('bool-flag', { targetingKey: '', plan: 'beta' }), 400, 'TARGETING_KEY_MISSING', 'bool-flag');
    expectFailure(await client.post(SINGLE('bool-flag'), { sdkKey: a.rawKey, body: {} }), 400, 'TARGETING_KEY_MISSING', 'bool-flag');
  });

  test('no targetingKey for a flag that never reads the context: evaluated', async () => {
    assert.equal(expectStatus(await evaluateOne('disabled-flag', {}), 200).reason, 'DISABLED');
    assert.deepEqual(expectStatus(await client.post(SINGLE('plain-flag'), { sdkKey: a.rawKey, body: {} }), 200), {
      key: 'plain-flag',
      value: 1,
      reason: 'DEFAULT',
      variant: 'one',
      metadata: {},
    });
    assert.deepEqual(expectStatus(await client.post(SINGLE('launched-flag'), { sdkKey: a.rawKey, body: {} }), 200), {
      key: 'launched-flag',
      value: 'A',
      reason: 'TARGETING_MATCH',
      variant: 'a',
      metadata: { rule_id: 'default' },
    });
    expectFailure(await client.post(SINGLE('split-flag'), { sdkKey: a.rawKey, body: {} }), 400, 'TARGETING_KEY_MISSING', 'split-flag');
  });

  test('a context we cannot use: 400 INVALID_CONTEXT', async () => {
    for (const context of ['user-1', [], null, 7, { targetingKey: 42 }, { targetingKey: 'u1', kind: '' }, { targetingKey: 'u1', context_type: 5 }, { targetingKey: 'k'.repeat(1025) }]) {
      expectFailure(await evaluateOne('bool-flag', context), 400, 'INVALID_CONTEXT', 'bool-flag');
    }
    const tooMany: Record<string, unknown> = { targetingKey: 'u1' };
    for (let i = 0; i < 101; i++) tooMany[`attribute_${i}`] = i;
    expectFailure(await evaluateOne('bool-flag', tooMany), 400, 'INVALID_CONTEXT', 'bool-flag');
  });

  test('a body that is not a JSON object: 400 PARSE_ERROR in the OFREP shape', async () => {
    const headers = { 'x-sdk-key': a.rawKey, 'content-type': 'application/json' };
    for (const body of ['{"context":', '[1,2]', '"text"', '42', '', `${'['.repeat(100)}${']'.repeat(100)}`]) {
      expectFailure(await raw(SINGLE('bool-flag'), headers, body), 400, 'PARSE_ERROR', 'bool-flag');
    }
    expectFailure(await raw(SINGLE('bool-flag'), { 'x-sdk-key': a.rawKey, 'content-type': 'text/plain' }, 'hello'), 400, 'PARSE_ERROR', 'bool-flag');
    expectFailure(await raw(SINGLE('bool-flag'), { 'x-sdk-key': a.rawKey }), 400, 'PARSE_ERROR', 'bool-flag');
    const huge = JSON.stringify({ context: { targetingKey: 'u1', blob: 'x'.repeat(1024 * 1024) } });
    expectFailure(await raw(SINGLE('bool-flag'), headers, huge), 413, 'PARSE_ERROR', 'bool-flag');
  });
});

describe('bulk evaluation', () => {
  test('every flag of the key’s environment in key order, with per-flag results and an ETag', async () => {
    const response = await evaluateAll({ targetingKey: 'u1', plan: 'beta' });
    const body = expectStatus(response, 200);
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.match(response.headers.get('etag') ?? '', /^"[A-Za-z0-9_-]+"$/);
    assert.deepEqual(body, {
      flags: [
        { key: 'bool-flag', value: true, reason: 'TARGETING_MATCH', variant: 'on', metadata: { rule_id: 'beta' } },
        { key: 'disabled-flag', value: 'B', reason: 'DISABLED', variant: 'b', metadata: {} },
        { key: 'launched-flag', value: 'A', reason: 'TARGETING_MATCH', variant: 'a', metadata: { rule_id: 'default' } },
        { key: 'org-flag', value: 'standard', reason: 'DEFAULT', variant: 'std', metadata: {} },
        { key: 'plain-flag', value: 1, reason: 'DEFAULT', variant: 'one', metadata: {} },
        { key: 'split-flag', value: 'A', reason: 'SPLIT', variant: 'a', metadata: { rule_id: 'all-a' } },
        { key: 'valueless-flag', reason: 'DEFAULT', metadata: {} },
      ],
    });
  });

  test('an environment without flags: an empty list', async () => {
    assert.deepEqual(expectStatus(await evaluateAll({ targetingKey: 'u1' }, {}, b), 200), { flags: [] });
  });

  test('no targetingKey: per-flag TARGETING_KEY_MISSING only where the flag needs one', async () => {
    const body = expectStatus(await evaluateAll({ plan: 'beta' }), 200);
    const byKey = new Map<string, Json>(body.flags.map((flag: Json) => [flag.key, flag]));
    assert.deepEqual(byKey.get('bool-flag'), { key: 'bool-flag', errorCode: 'TARGETING_KEY_MISSING', errorDetails: byKey.get('bool-flag').errorDetails });
    assert.equal(typeof byKey.get('bool-flag').errorDetails, 'string');
    assert.equal(byKey.get('org-flag').errorCode, 'TARGETING_KEY_MISSING');
    assert.equal(byKey.get('disabled-flag').reason, 'DISABLED');
    assert.equal(byKey.get('plain-flag').reason, 'DEFAULT');
    assert.equal(byKey.get('launched-flag').value, 'A');
    assert.equal(byKey.get('split-flag').errorCode, 'TARGETING_KEY_MISSING');
  });

  test('If-None-Match with the current ETag: 304 without a body', async () => {
    const context = { targetingKey: 'u2' };
    const first = await evaluateAll(context);
    const etag = first.headers.get('etag') ?? '';
    assert.equal(first.status, 200);
    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const again = await evaluateAll(context, { 'if-none-match': ifNoneMatch });
      expectEmpty(again, 304);
      assert.equal(again.headers.get('etag'), etag);
    }
    assert.equal((await evaluateAll(context, { 'if-none-match': '"stale"' })).status, 200);
  });

  test('the ETag follows the context and the flags', async () => {
    const free = await evaluateAll({ targetingKey: 'u3', plan: 'free' });
    const beta = await evaluateAll({ targetingKey: 'u3', plan: 'beta' });
    assert.notEqual(free.headers.get('etag'), beta.headers.get('etag'));
    const etag = free.headers.get('etag') ?? '';
    // A context change that changes no answer keeps the ETag.
    assert.equal((await evaluateAll({ targetingKey: 'u4', plan: 'free' })).headers.get('etag'), etag);

    await updateFlag(ts, a, 'plain-flag', { enabled: false });
    await eventually('the bulk answer to change after the flag update', async () => (await evaluateAll({ targetingKey: 'u3', plan: 'free' }, { 'if-none-match': etag })).status === 200);
    const changed = await evaluateAll({ targetingKey: 'u3', plan: 'free' }, { 'if-none-match': etag });
    assert.notEqual(changed.headers.get('etag'), etag);
    assert.equal(changed.body.flags.find((flag: Json) => flag.key === 'plain-flag').reason, 'DISABLED');
    await updateFlag(ts, a, 'plain-flag', { enabled: true });
    await eventually('the flag to be enabled again', async () => (await evaluateOne('plain-flag', {})).body?.reason === 'DEFAULT');
  });

  test('a poll never keeps a stale answer: a list segment\'s members change answers without a flag change', async () => {
    // The 304 of a remembered ETag is only given while the answer cannot have changed (same
    // definitions, same context). A list segment's members move without any flag changing.
    const segmentKey = `ofrep-list-${Date.now()}`;
    const flagKey = `listed-${Date.now()}`;
    expectStatus(
      await client.post(`/v1/environments/${b.environmentId}/segments`, { token: b.admin.token, body: { key: segmentKey, context_type: 'user', kind: 'list' } }),
      201,
    );
    await createFlag(ts, client, b, {
      key: flagKey,
      value_type: 'bool',
      variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
      enabled: true,
      off_variant_key: 'off',
      rules: [{ id: 'listed', conditions: [], segment_keys: [segmentKey], variant_key: 'on' }],
    });
    const context = { targetingKey: 'listed-user' };
    const first = await evaluateAll(context, {}, b);
    const etag = first.headers.get('etag') ?? '';
    assert.equal(first.body.flags.find((flag: Json) => flag.key === flagKey).value, false);
    expectStatus(await evaluateAll(context, { 'if-none-match': etag }, b), 304);
    const members = await client.request('PATCH', `/v1/environments/${b.environmentId}/segments/${segmentKey}/members`, { token: b.admin.token, body: { add_included: ['listed-user'] } });
    assert.ok(members.status === 200 || members.status === 204, members.text);
    await eventually('the poll to see the new member', async () => (await evaluateAll(context, { 'if-none-match': etag }, b)).status === 200);
    const changed = await evaluateAll(context, { 'if-none-match': etag }, b);
    assert.equal(changed.body.flags.find((flag: Json) => flag.key === flagKey).value, true);
  });

  test('bad requests: 400 without a key in the body', async () => {
    expectFailure(await evaluateAll('user-1'), 400, 'INVALID_CONTEXT');
    expectFailure(await evaluateAll({ targetingKey: 3 }), 400, 'INVALID_CONTEXT');
    const headers = { 'x-sdk-key': a.rawKey, 'content-type': 'application/json' };
    expectFailure(await raw(BULK, headers, '{"context":'), 400, 'PARSE_ERROR');
    expectFailure(await raw(BULK, headers, '[]'), 400, 'PARSE_ERROR');
  });
});

describe('flags the engine cannot fully evaluate', () => {
  // The write path refuses such flags, so they are planted in the in-memory snapshot (what a
  // corrupted row or a segment deleted under a rule would look like) and dropped afterwards.
  // It corrupts the in-process snapshot, which only the single process evaluates from (a gateway
  // evaluates from its streamed copy): it runs in the single-process pass of the suite.
  if (TOPOLOGY === 'single') test('a GENERAL failure is 500 (single) or a per-flag entry (bulk); a missing segment is reason ERROR', async () => {
    const scope = { orgId: a.orgId, projectId: a.projectId, environmentId: a.environmentId };
    const snapshot = await ts.server.services.snapshots.get(scope);
    const flags = snapshot.flags as Map<string, Flag>;
    const base = flags.get('bool-flag');
    assert.ok(base);
    const planted: Flag[] = [
      { ...base, key: 'broken-flag', rules: 'not a list' as unknown as Flag['rules'] },
      { ...base, key: 'ghost-flag', rules: [{ id: 'r', conditions: [], segment_keys: ['ghost'], variant_key: 'on' }] },
    ];
    // Both views of the snapshot: the map (one flag) and the list (all flags).
    for (const flag of planted) {
      flags.set(flag.key, flag);
      (snapshot.flagList as Flag[]).push(flag);
    }
    try {
      expectFailure(await evaluateOne('broken-flag', { targetingKey: 'u1' }), 500, 'GENERAL', 'broken-flag');
      const ghost = expectStatus(await evaluateOne('ghost-flag', { targetingKey: 'u1' }), 200);
      assert.deepEqual(ghost, { key: 'ghost-flag', value: false, reason: 'ERROR', variant: 'off', metadata: { error_code: 'SEGMENT_NOT_FOUND' } });
      const bulk = expectStatus(await evaluateAll({ targetingKey: 'u1' }), 200);
      const broken = bulk.flags.find((flag: Json) => flag.key === 'broken-flag');
      assert.deepEqual(Object.keys(broken).sort(), ['errorCode', 'errorDetails', 'key']);
      assert.equal(broken.errorCode, 'GENERAL');
      assert.deepEqual(bulk.flags.find((flag: Json) => flag.key === 'ghost-flag'), ghost);
    } finally {
      ts.server.services.snapshots.invalidate({ environmentId: a.environmentId });
    }
    expectFailure(await evaluateOne('broken-flag', { targetingKey: 'u1' }), 404, 'FLAG_NOT_FOUND', 'broken-flag');
  });
});

describe('logs', () => {
  test('no SDK key, token or unhandled error in any log line', () => {
    const logs = ts.logs.join('\n');
    for (const secret of [a.rawKey, b.rawKey, a.admin.token, root.token]) assert.ok(!logs.includes(secret), 'a credential appears in the logs');
    assert.ok(!logs.includes('unhandled error'), 'an OFREP request ended in an unhandled error');
  });
});

describe('the rest of the API keeps its own error format', () => {
  test('an unknown OFREP path is a plain 404 {error, code}', async () => {
    const response = await client.post('/ofrep/v1/nothing', { sdkKey: a.rawKey, body: {} });
    assert.equal(response.status, 404);
    assert.equal(response.body.code, 'NOT_FOUND');
  });
});
