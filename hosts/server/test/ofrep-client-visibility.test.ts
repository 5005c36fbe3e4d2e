import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { auditLogPath, only, readAll } from './support/audit-log.ts';
import { ACTIVE, createExperiment, defineMetric, moveThrough, splitFlag } from './support/experiment-fixtures.ts';
import { envFlags, patch, put } from './support/flag-client.ts';
import { eventually } from './support/flag-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type ApiResponse, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * docs/client-side.md "What a client sees": a client key's OFREP answers hold client-visible,
 * non-archived flags only, as key/value/variant/reason, disabled ones left out of bulk answers
 * unless the key includes them, `Cache-Control: private, no-cache`, no exposures. Expected values
 * are derived by hand from the flags below.
 */
let ts: TestServer;
let client: ApiClient;
let a: Tenant;
/** Client keys of tenant a: without and with include_disabled. */
let clientKey: string;
let clientKeyWithDisabled: string;

const SECRET_TAG = 'team:tag-secret-91a';
const SECRET_MAINTAINER = 'maint-secret-42@example.com';
const SINGLE = (key: string) => `/ofrep/v1/evaluate/flags/${key}`;
const BULK = '/ofrep/v1/evaluate/flags';
const BETA_RULE = { id: 'beta-rule-7f3', conditions: [{ attribute: 'plan', op: 'eq', values: ['beta'] }], variant_key: 'on' };

async function createClientKey(tenant: Tenant, includeDisabled: boolean): Promise<string> {
  const body = { kind: 'client', name: `web-${includeDisabled}`, allowed_origins: ['https://app.example.com'], allow_missing_origin: true, include_disabled: includeDisabled };
  const key = expectStatus(await client.post(`/v1/management/environments/${tenant.environmentId}/sdk-keys`, { token: tenant.admin.token, body }), 201, 'create client key');
  assert.match(String(key.raw_key), /^ck_/);
  return key.raw_key as string;
}

async function createFlag(tenant: Tenant, flag: Record<string, unknown>, top: Record<string, unknown> = {}): Promise<Json> {
  return expectStatus(await client.post(envFlags(tenant.environmentId), { token: tenant.admin.token, body: { flag, ...top } }), 201, `create ${String(flag.key)}`);
}

const boolFlag = (key: string, fields: Record<string, unknown> = {}) => ({
  key,
  value_type: 'bool',
  variants: [{ key: 'on', value: true }, { key: 'off', value: false }],
  enabled: true,
  off_variant_key: 'off',
  rules: [BETA_RULE],
  ...fields,
});

/** A POST with exactly these headers; the parsed body and raw text. */
async function post(path: string, key: string, context: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
  const response = await fetch(ts.base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sdk-key': key, ...headers },
    body: JSON.stringify({ context }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text), text };
}

const exposureCount = () => ts.server.repos.exposures.count({ orgId: a.orgId, projectId: a.projectId, environmentId: a.environmentId }, { flagKey: 'checkout' });
const keysOf = (response: ApiResponse): string[] => (response.body.flags as Json[]).map((entry) => entry.key as string);

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'client-visible');
  clientKey = await createClientKey(a, false);
  clientKeyWithDisabled = await createClientKey(a, true);
  // Its metadata (tags, maintainer) is for the team, never for a client key (test below).
  await createFlag(a, boolFlag('shown', { tags: [SECRET_TAG], maintainer: SECRET_MAINTAINER, lifetime: 'temporary' }), { client_visible: true });
  await createFlag(a, boolFlag('hidden')); // the project default: hidden
  await createFlag(a, boolFlag('archived-shown', { client_visible: true }));
  expectStatus(await client.post(`${envFlags(a.environmentId)}/archived-shown/archive`, { token: a.admin.token }), 200, 'archive');
  await createFlag(a, {
    key: 'off-shown',
    value_type: 'string',
    variants: [{ key: 'a', value: 'A' }, { key: 'b', value: 'B' }],
    enabled: false,
    off_variant_key: 'b',
    client_visible: true,
  });
  // A flag under an ACTIVE experiment, visible to clients.
  await createFlag(a, splitFlag('checkout').flag, { enabled: true, client_visible: true });
  await defineMetric(client, a, 'purchase', 'bool');
  await defineMetric(client, a, 'revenue', 'double');
  const experiment = await createExperiment(client, a);
  await moveThrough(client, a, String(experiment.id), [ACTIVE]);
  // The environment's snapshot holds the experiment once a server-key evaluation records its exposure.
  await eventually('the experiment reaches evaluation', async () => {
    const before = await exposureCount();
    await post(SINGLE('checkout'), a.rawKey, { targetingKey: 'warm-up' });
    return (await exposureCount()) > before;
  });
});
after(() => ts.stop());

describe('what a client key sees', () => {
  test('bulk: client-visible, enabled, non-archived flags only, each as key/value/variant/reason', async () => {
    const response = await post(BULK, clientKey, { targetingKey: 'u1', plan: 'beta' });
    assert.equal(response.status, 200, response.text);
    // hidden: not client-visible; archived-shown: archived; off-shown: disabled.
    assert.deepEqual(keysOf(response), ['checkout', 'shown']);
    const [checkout, shown] = response.body.flags as Json[];
    // plan=beta matches the beta rule: variant on, value true.
    assert.deepEqual(shown, { key: 'shown', value: true, variant: 'on', reason: 'TARGETING_MATCH' });
    assert.deepEqual(Object.keys(shown), ['key', 'value', 'variant', 'reason']);
    assert.deepEqual(Object.keys(checkout), ['key', 'value', 'variant', 'reason']);
    assert.equal(checkout.reason, 'SPLIT');
    assert.equal(checkout.value, checkout.variant === 'control' ? 'old' : 'new');
    // Nothing of the definitions: no rule id, no metadata, no description.
    assert.doesNotMatch(response.text, /beta-rule-7f3|metadata|rule_id|description/);
    assert.equal(response.headers.get('cache-control'), 'private, no-cache');
    // The content hash, and the event stream token's window (docs/client-side.md "7. Streaming").
    assert.match(response.headers.get('etag') ?? '', /^"[A-Za-z0-9_-]+(\.w[0-9a-z]+)?"$/);
  });

  test('a server key on the same environment still sees every active flag with metadata, and no Cache-Control', async () => {
    const response = await post(BULK, a.rawKey, { targetingKey: 'u1', plan: 'beta' });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(keysOf(response), ['checkout', 'hidden', 'off-shown', 'shown']);
    const shown = (response.body.flags as Json[]).find((entry) => entry.key === 'shown');
    assert.deepEqual(shown.metadata, { rule_id: 'beta-rule-7f3' });
    assert.equal(response.headers.get('cache-control'), null);
  });

  test("a client key's answers carry none of a flag's metadata: no tags, maintainer or lifetime", async () => {
    const bulk = await post(BULK, clientKey, { targetingKey: 'u1', plan: 'beta' });
    const single = await post(SINGLE('shown'), clientKey, { targetingKey: 'u1', plan: 'beta' });
    for (const response of [bulk, single]) {
      assert.equal(response.status, 200, response.text);
      assert.doesNotMatch(response.text, /tag-secret-91a|maint-secret-42|tags|maintainer|lifetime|temporary|bucket_by/);
    }
    assert.deepEqual(Object.keys(single.body).sort(), ['key', 'reason', 'value', 'variant']);
    // The flag has them: a bearer's read shows them.
    const flag = expectStatus(await client.get(`${envFlags(a.environmentId)}/shown`, { token: a.admin.token }), 200);
    assert.deepEqual([flag.tags, flag.maintainer], [[SECRET_TAG], SECRET_MAINTAINER]);
  });

  test('include_disabled: the disabled flag is answered with its off variant', async () => {
    const response = await post(BULK, clientKeyWithDisabled, { targetingKey: 'u1', plan: 'beta' });
    assert.deepEqual(keysOf(response), ['checkout', 'off-shown', 'shown']);
    const off = (response.body.flags as Json[]).find((entry) => entry.key === 'off-shown');
    assert.deepEqual(off, { key: 'off-shown', value: 'B', variant: 'b', reason: 'DISABLED' });
  });

  test('single: a hidden or archived flag is FLAG_NOT_FOUND exactly as a missing one', async () => {
    const missing = await post(SINGLE('no-such-flag'), clientKey, { targetingKey: 'u1' });
    assert.equal(missing.status, 404);
    assert.deepEqual(missing.body, { key: 'no-such-flag', errorCode: 'FLAG_NOT_FOUND' });
    for (const key of ['hidden', 'archived-shown']) {
      const response = await post(SINGLE(key), clientKey, { targetingKey: 'u1' });
      assert.equal(response.status, 404, key);
      assert.equal(response.text, missing.text.replace('no-such-flag', key), `${key}: the same body as a missing flag`);
      assert.equal(response.headers.get('content-type'), missing.headers.get('content-type'));
      assert.equal(response.headers.get('cache-control'), 'private, no-cache');
    }
    // A hidden flag without a targeting key: still 404, not the 400 that would reveal its rules.
    assert.equal((await post(SINGLE('hidden'), clientKey, {})).status, 404);
    // The server key still evaluates the hidden flag.
    assert.equal((await post(SINGLE('hidden'), a.rawKey, { targetingKey: 'u1' })).status, 200);
  });

  test('single: a visible flag answers key/value/variant/reason; a disabled one its off variant', async () => {
    const response = await post(SINGLE('shown'), clientKey, { targetingKey: 'u1', plan: 'free' });
    assert.equal(response.status, 200, response.text);
    // plan=free does not match: the default (off_variant_key off → false).
    assert.deepEqual(response.body, { key: 'shown', value: false, variant: 'off', reason: 'DEFAULT' });
    assert.equal(response.headers.get('cache-control'), 'private, no-cache');
    const disabled = await post(SINGLE('off-shown'), clientKey, { targetingKey: 'u1' });
    assert.deepEqual(disabled.body, { key: 'off-shown', value: 'B', variant: 'b', reason: 'DISABLED' });
    const noKey = await post(SINGLE('shown'), clientKey, {});
    assert.equal(noKey.status, 400);
    assert.deepEqual(noKey.body, { key: 'shown', errorCode: 'TARGETING_KEY_MISSING' }, 'no error details');
  });

  test('request errors carry the OFREP error code only, where a server key gets details', async () => {
    const long = { targetingKey: 'u1', note: 'x'.repeat(4097) };
    const single = await post(SINGLE('shown'), clientKey, long);
    assert.equal(single.status, 400);
    assert.deepEqual(single.body, { key: 'shown', errorCode: 'INVALID_CONTEXT' });
    const bulk = await post(BULK, clientKey, long);
    assert.equal(bulk.status, 400);
    assert.deepEqual(bulk.body, { errorCode: 'INVALID_CONTEXT' });
    const server = await post(BULK, a.rawKey, long);
    assert.equal(server.status, 400);
    assert.equal(typeof server.body.errorDetails, 'string', 'server keys keep their details');
    const malformed = await fetch(ts.base + BULK, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': clientKey }, body: '{not json' });
    assert.equal(malformed.status, 400);
    assert.deepEqual(await malformed.json(), { errorCode: 'PARSE_ERROR' });
    assert.equal(malformed.headers.get('cache-control'), 'private, no-cache');
  });

  test('bulk without a targeting key: flags with rules answer TARGETING_KEY_MISSING without details', async () => {
    const response = await post(BULK, clientKey, {});
    assert.deepEqual(response.body.flags, [
      { key: 'checkout', errorCode: 'TARGETING_KEY_MISSING' },
      { key: 'shown', errorCode: 'TARGETING_KEY_MISSING' },
    ]);
  });

  test('ETag and 304; the answer changes when a flag becomes visible', async () => {
    const context = { targetingKey: 'etag-user', plan: 'beta' };
    const first = await post(BULK, clientKey, context);
    const etag = first.headers.get('etag')!;
    const again = await post(BULK, clientKey, context, { 'if-none-match': etag });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
    assert.equal(again.headers.get('etag'), etag);
    assert.equal(again.headers.get('cache-control'), 'private, no-cache');
    // The two client keys' answers differ (include_disabled), and so do their ETags.
    const withDisabled = await post(BULK, clientKeyWithDisabled, context, { 'if-none-match': etag });
    assert.equal(withDisabled.status, 200, 'another key setting is another answer');
    assert.notEqual(withDisabled.headers.get('etag'), etag);
  });
});

describe('no exposures for client keys', () => {
  test('client-key evaluation of a flag under an ACTIVE experiment records none; a server key still does', async () => {
    const start = await exposureCount();
    for (let i = 0; i < 5; i++) {
      assert.equal((await post(BULK, clientKey, { targetingKey: `client-${i}` })).status, 200);
      assert.equal((await post(SINGLE('checkout'), clientKey, { targetingKey: `client-${i}` })).status, 200);
    }
    assert.equal(await exposureCount(), start, 'client keys record no exposure');
    assert.equal((await post(SINGLE('checkout'), a.rawKey, { targetingKey: 'server-1' })).status, 200);
    assert.equal((await post(BULK, a.rawKey, { targetingKey: 'server-2' })).status, 200);
    assert.equal(await exposureCount(), start + 2, 'each server-key evaluation records one (it is answered after the commit)');
  });

  test('the remembered ETag answers a client poll under an ACTIVE experiment without evaluating again', async () => {
    const context = { targetingKey: 'poller', plan: 'beta' };
    const first = await post(BULK, clientKey, context);
    const etag = first.headers.get('etag')!;
    // Where client answers are evaluated (the services in both topologies): count the calls.
    const scope = { orgId: a.orgId, projectId: a.projectId, environmentId: a.environmentId };
    const evaluation = ts.server.services.evaluation;
    let calls = 0;
    const original = evaluation.evaluateForClientNow.bind(evaluation);
    const originalAsync = evaluation.evaluateForClient.bind(evaluation);
    evaluation.evaluateForClientNow = (...args) => {
      calls++;
      return original(...args);
    };
    evaluation.evaluateForClient = (...args) => {
      calls++;
      return originalAsync(...args);
    };
    try {
      for (let i = 0; i < 3; i++) {
        const polled = await post(BULK, clientKey, context, { 'if-none-match': etag });
        assert.equal(polled.status, 304);
      }
      assert.equal(calls, 0, 'answered from the remembered ETag');
      assert.ok(ts.server.services.evaluation.currentSnapshot(scope)!.experimentFlagKeys.has('checkout'), 'the experiment is ACTIVE in the snapshot');
      // A server key's poll in the same environment still evaluates (its exposures must be recorded).
      const server = await post(BULK, a.rawKey, context);
      const before = await exposureCount();
      assert.equal((await post(BULK, a.rawKey, context, { 'if-none-match': server.headers.get('etag')! })).status, 304);
      assert.equal(await exposureCount(), before + 1, 'the server key evaluated and recorded');
    } finally {
      evaluation.evaluateForClientNow = original;
      evaluation.evaluateForClient = originalAsync;
    }
  });
});

describe('client_visible on flags and the project default', () => {
  test('the flag record carries client_visible; an update toggles it, audited before/after', async () => {
    const flag = expectStatus(await client.get(`${envFlags(a.environmentId)}/hidden`, { token: a.admin.token }), 200, 'get');
    assert.equal(flag.client_visible, false);
    const updated = expectStatus(await put(client, `${envFlags(a.environmentId)}/hidden`, { token: a.admin.token, body: { client_visible: true } }), 200, 'update');
    assert.equal(updated.client_visible, true);
    await eventually('the flag shows to clients', async () => (await post(SINGLE('hidden'), clientKey, { targetingKey: 'u1' })).status === 200);
    const entries = await readAll(client, a.admin.token, (q) => auditLogPath(a.orgId, q), { action: 'flag.update' });
    const definition = entries.find((entry) => entry.resource_id === 'hidden' && entry.environment_id == null);
    assert.ok(definition, JSON.stringify(entries));
    assert.equal(definition.before.client_visible, false);
    assert.equal(definition.after.client_visible, true);
    // Hidden again.
    expectStatus(await put(client, `${envFlags(a.environmentId)}/hidden`, { token: a.admin.token, body: { flag: { client_visible: false } } }), 200, 'hide');
    await eventually('the flag is hidden again', async () => (await post(SINGLE('hidden'), clientKey, { targetingKey: 'u1' })).status === 404);
    const bad = await put(client, `${envFlags(a.environmentId)}/hidden`, { token: a.admin.token, body: { client_visible: 'yes' } });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(typeof bad.body.code, 'string');
  });

  test('PATCH project: org_admin only, audited; new flags then default to visible, an explicit false wins', async () => {
    const path = `/v1/management/projects/${a.projectId}`;
    const refused = await patch(client, path, { token: a.member.token, body: { client_visible_default: true } });
    assert.equal(refused.status, 403, refused.text);
    for (const body of [{}, { client_visible_default: 'yes' }, { client_visible_default: true, other: 1 }]) {
      const bad = await patch(client, path, { token: a.admin.token, body });
      assert.equal(bad.status, 400, `${JSON.stringify(body)}: ${bad.text}`);
      assert.equal(bad.body.code, 'INVALID_ARGUMENT');
    }
    const missing = await patch(client, `/v1/management/projects/00000000-0000-4000-8000-000000000000`, { token: a.admin.token, body: { client_visible_default: true } });
    assert.equal(missing.status, 404);

    const project = expectStatus(await patch(client, path, { token: a.admin.token, body: { client_visible_default: true } }), 200, 'patch project');
    // The lifecycle thresholds (docs/insights.md "Thresholds") untouched: their defaults.
    assert.deepEqual(project, {
      project_id: a.projectId, project_name: project.project_name, org_id: a.orgId, client_visible_default: true,
      lifecycle: { status_window_days: 7, code_removal_min_age_days: 30, archive_after_days: 30, unchanged_fallback_days: 14 },
    });
    const listed = expectStatus(await client.get(`/v1/management/orgs/${a.orgId}/projects`, { token: a.admin.token }), 200, 'list projects') as Json[];
    assert.equal(listed.find((p) => p.project_id === a.projectId).client_visible_default, true);
    const entry = only(await readAll(client, a.admin.token, (q) => auditLogPath(a.orgId, q), { action: 'project.update' }), 'project.update', a.projectId);
    assert.equal(entry.before.client_visible_default, false);
    assert.equal(entry.after.client_visible_default, true);

    const created = await createFlag(a, boolFlag('new-default'));
    assert.equal(created.client_visible, true, 'the project default');
    const explicit = await createFlag(a, boolFlag('new-explicit'), { client_visible: false });
    assert.equal(explicit.client_visible, false, 'an explicit false wins');
    await eventually('the new flag shows', async () => keysOf(await post(BULK, clientKey, { targetingKey: 'u1' })).includes('new-default'));
    assert.ok(!keysOf(await post(BULK, clientKey, { targetingKey: 'u1' })).includes('new-explicit'));
    expectStatus(await patch(client, path, { token: a.admin.token, body: { client_visible_default: false } }), 200, 'reset');
  });
});
