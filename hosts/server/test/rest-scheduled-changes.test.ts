import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { flagHistoryPath, readAll } from './support/audit-log.ts';
import { createFlag, envFlags, evaluate, put } from './support/flag-client.ts';
import { api, expectError, expectRefused, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Scheduled changes and revert over real HTTP and PostgreSQL, in both topologies
 * (docs/workflow.md "Scheduled changes", "Revert"): create (validated now, contention reported),
 * list per flag and per environment (a calendar), edit, cancel; the scheduler applies at the time,
 * exactly once with two server instances on one database, never partially, with entries and
 * announcements (evaluation follows); revert; and the defences: another org, a viewer, no
 * credential, an SDK key. Expected values are derived by hand from the operations.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let viewerToken: string;

const VARIANTS = [
  { key: 'on', value: 'ON' },
  { key: 'off', value: 'OFF' },
];
const BETA = { id: 'beta', conditions: [{ attribute: 'plan', op: 'eq', values: ['beta'] }], variant_key: 'on' };

const schedulesOf = (key: string, environmentId = a.environmentId) => `${envFlags(environmentId)}/${key}/scheduled-changes`;
const schedule = (key: string, body: unknown, token = a.admin.token, environmentId = a.environmentId) => client.post(schedulesOf(key, environmentId), { token, body });

async function newFlag(label: string): Promise<string> {
  const key = `${label}-${unique()}`;
  await createFlag(client, a.admin.token, a.environmentId, { flag: { key, value_type: 'string', variants: VARIANTS, off_variant_key: 'off', rules: [BETA] }, enabled: false });
  return key;
}

const flagNow = async (key: string): Promise<Json> => expectStatus(await client.get(`${envFlags(a.environmentId)}/${key}`, { token: a.admin.token }), 200, 'read flag');

/** Polls `read` until `accept` holds, at most 15 s. */
async function until<T>(read: () => Promise<T>, accept: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (accept(value)) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

before(async () => {
  ts = await startTestServer({ SCHEDULES_POLL_MS: '50' });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'sched-a');
  b = await seedTenant(client, root.token, 'sched-b');
  viewerToken = expectStatus(await client.post(`/v1/management/orgs/${a.orgId}/api-tokens`, { token: a.admin.token, body: { name: 'reader', role: 'viewer' } }), 201, 'viewer token').token;
});
after(() => ts.stop());

describe('scheduled changes over REST', () => {
  test('create, contention, list (flag and calendar), get, edit, cancel', async () => {
    const key = await newFlag('crud');
    const at = Date.now() + 24 * 60 * 60_000;
    const on = expectStatus(await schedule(key, { execute_at_ms: at, operations: [{ op: 'set_enabled', enabled: true }], comment: 'launch' }), 201, 'schedule on');
    assert.equal(on.status, 'pending');
    assert.equal(on.flag_key, key);
    assert.equal(on.comment, 'launch');
    assert.deepEqual(on.contending, []);
    assert.equal(on.created_by.type, 'user');
    const off = expectStatus(await schedule(key, { execute_at_ms: at + 60_000, operations: [{ op: 'set_enabled', enabled: false }] }), 201, 'schedule off');
    assert.deepEqual(off.contending.map((c: Json) => c.id), [on.id], 'both set enabled');

    const listed = expectStatus(await client.get(schedulesOf(key), { token: a.admin.token }), 200, 'list') as Json[];
    assert.deepEqual(listed.map((c) => c.id), [on.id, off.id], 'earliest first');
    const calendar = expectStatus(await client.get(`/v1/environments/${a.environmentId}/scheduled-changes?from_ms=${at + 1}&to_ms=${at + 120_000}`, { token: a.admin.token }), 200, 'calendar') as Json[];
    assert.deepEqual(calendar.map((c) => c.id), [off.id], 'only the one inside [from, to)');
    const got = expectStatus(await client.get(`${schedulesOf(key)}/${on.id}`, { token: a.admin.token }), 200, 'get');
    assert.equal(got.version, 1);

    const edited = expectStatus(await client.request('PATCH', `${schedulesOf(key)}/${on.id}`, { token: a.admin.token, body: { execute_at_ms: at + 30_000, version: 1 } }), 200, 'edit');
    assert.equal(edited.execute_at_ms, at + 30_000);
    assert.equal(edited.version, 2);
    expectError(await client.request('PATCH', `${schedulesOf(key)}/${on.id}`, { token: a.admin.token, body: { comment: 'x', version: 1 } }), 409, 'ABORTED');

    const cancelled = expectStatus(await client.delete(`${schedulesOf(key)}/${on.id}`, { token: a.admin.token }), 200, 'cancel');
    assert.equal(cancelled.status, 'cancelled');
    expectError(await client.delete(`${schedulesOf(key)}/${on.id}`, { token: a.admin.token }), 409, 'FAILED_PRECONDITION', /cancelled/);
    const history = await readAll(client, a.admin.token, (query) => `/v1/management/orgs/${a.orgId}/audit-log?resource_type=scheduled_change&${new URLSearchParams(query as Record<string, string>)}`);
    const mine = history.filter((entry) => entry.resource_id === on.id).map((entry) => entry.action).sort();
    assert.deepEqual(mine, ['scheduled_change.cancel', 'scheduled_change.create', 'scheduled_change.update']);
  });

  test('bad input answers 4xx with {error, code}, never 500', async () => {
    const key = await newFlag('bad');
    const future = Date.now() + 60 * 60_000;
    expectError(await schedule(key, { execute_at_ms: Date.now() - 1000, operations: [{ op: 'set_enabled', enabled: true }] }), 400, 'INVALID_ARGUMENT', /future/);
    expectError(await schedule(key, { execute_at_ms: future, operations: [] }), 400, 'INVALID_ARGUMENT');
    expectError(await schedule(key, { execute_at_ms: future, operations: [{ op: 'explode' }] }), 400, 'INVALID_ARGUMENT');
    expectError(await schedule(key, { execute_at_ms: future, operations: [{ op: 'remove_rule', rule_id: 'gone' }] }), 409, 'FAILED_PRECONDITION', /no rule 'gone'/);
    expectError(await schedule(key, { execute_at_ms: future, operations: [{ op: 'set_off_variant', variant_key: 'purple' }] }), 400, 'INVALID_ARGUMENT');
    expectError(await schedule(`missing-${unique()}`, { execute_at_ms: future, operations: [{ op: 'set_enabled', enabled: true }] }), 404, 'NOT_FOUND');
    expectError(await client.get(`${schedulesOf(key)}/00000000-0000-4000-8000-000000000000`, { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(`${schedulesOf(key)}/not-a-uuid`, { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(`${schedulesOf(key)}?limit=9999`, { token: a.admin.token }), 400, 'INVALID_ARGUMENT');
    expectError(await client.get(`${schedulesOf(key)}?status=sleeping`, { token: a.admin.token }), 400, 'INVALID_ARGUMENT');
    assert.equal((await flagNow(key)).version, 1, 'validation wrote nothing');
  });

  test('the scheduler applies it at the time, announced (evaluation follows), recorded with who scheduled it', async () => {
    const key = await newFlag('apply');
    const change = expectStatus(await schedule(key, { execute_at_ms: Date.now() + 1500, operations: [{ op: 'set_enabled', enabled: true }, { op: 'set_rule_serve', rule_id: 'beta', variant_key: 'off' }] }), 201, 'schedule');
    assert.equal((await flagNow(key)).enabled, false, 'not before its time');
    const applied = await until(() => client.get(`${schedulesOf(key)}/${change.id}`, { token: a.admin.token }).then((r) => r.body as Json), (c) => c.status !== 'pending', 'applied');
    assert.equal(applied.status, 'applied');
    assert.ok(applied.applied_at_ms >= change.execute_at_ms);
    const flag = await flagNow(key);
    assert.equal(flag.enabled, true);
    assert.equal(flag.rules[0].variant_key, 'off');
    assert.equal(flag.version, 2, 'one write');
    // Before: disabled (DISABLED, the off variant). After: enabled, rule beta serving off to a beta context.
    const answer = await until(
      () => evaluate(client, a.rawKey, a.environmentId, 'u1', { flag_key: key, attributes: { plan: 'beta' } }).then((r) => r.body as Json),
      (body) => body.is_enabled === true,
      'evaluation after the change',
    );
    assert.deepEqual([answer.variant_key, answer.reason], ['off', 'TARGETING_MATCH']);
    const entries = await readAll(client, a.admin.token, (query) => flagHistoryPath(a.environmentId, key, query));
    const entry = entries.find((e) => e.action === 'flag.scheduled_change')!;
    assert.deepEqual(entry.actor, { type: 'system', id: 'scheduler' });
    assert.equal(entry.details.scheduled_change_id, change.id);
    assert.equal(entry.details.scheduled_by.id, change.created_by.id);
    // The scheduler's metrics, on the services process's /metrics (one instance so far: this one applied it).
    const scrape = await ts.server.http.inject({ method: 'GET', url: '/metrics' });
    assert.equal(Number(/^switchyard_scheduler_applications_total\{kind="scheduled_change",outcome="applied"\} (\d+)/m.exec(scrape.body)?.[1] ?? 0), 1);
    assert.equal(Number(/^switchyard_scheduler_lateness_seconds_count\{kind="scheduled_change"\} (\d+)/m.exec(scrape.body)?.[1] ?? 0), 1);
  });

  test('never partially: the second operation no longer applying leaves the flag as it was; failed with the reason', async () => {
    const key = await newFlag('partial');
    const change = expectStatus(await schedule(key, { execute_at_ms: Date.now() + 1500, operations: [{ op: 'set_enabled', enabled: true }, { op: 'remove_rule', rule_id: 'beta' }] }), 201, 'schedule');
    expectStatus(await put(client, `${envFlags(a.environmentId)}/${key}/rules`, { token: a.admin.token, body: { rules: [] } }), 202, 'a person removes beta');
    const failed = await until(() => client.get(`${schedulesOf(key)}/${change.id}`, { token: a.admin.token }).then((r) => r.body as Json), (c) => c.status !== 'pending', 'failed');
    assert.equal(failed.status, 'failed');
    assert.match(failed.reason, /operations\[1\] \(remove_rule\) no longer applies: the flag has no rule 'beta'/);
    const flag = await flagNow(key);
    assert.equal(flag.enabled, false);
    assert.equal(flag.version, 2, 'only the person wrote');
  });

  test('two instances on one database apply each schedule exactly once', async () => {
    await ts.startAnotherInstance();
    const keys = await Promise.all(Array.from({ length: 6 }, () => newFlag('race')));
    const at = Date.now() + 1500;
    const changes = await Promise.all(keys.map(async (key) => expectStatus(await schedule(key, { execute_at_ms: at, operations: [{ op: 'set_enabled', enabled: true }] }), 201, 'schedule')));
    for (const [i, key] of keys.entries()) {
      await until(() => client.get(`${schedulesOf(key)}/${changes[i].id}`, { token: a.admin.token }).then((r) => r.body as Json), (c) => c.status === 'applied', 'applied');
      const flag = await flagNow(key);
      assert.equal(flag.version, 2, `${key}: written once`);
      const entries = await readAll(client, a.admin.token, (query) => flagHistoryPath(a.environmentId, key, query));
      assert.equal(entries.filter((e) => e.action === 'flag.scheduled_change').length, 1, `${key}: one entry`);
    }
  });

  test('deleting the flag cancels its pending schedules', async () => {
    const key = await newFlag('delete');
    const change = expectStatus(await schedule(key, { execute_at_ms: Date.now() + 60 * 60_000, operations: [{ op: 'set_enabled', enabled: true }] }), 201, 'schedule');
    expectStatus(await client.delete(`${envFlags(a.environmentId)}/${key}`, { token: a.admin.token }), 204, 'delete flag');
    const all = expectStatus(await client.get(`/v1/environments/${a.environmentId}/scheduled-changes?flag_key=${key}`, { token: a.admin.token }), 200, 'calendar') as Json[];
    assert.deepEqual(all.map((c) => [c.id, c.status, c.reason]), [[change.id, 'cancelled', 'the flag was deleted']]);
  });
});

describe('revert over REST', () => {
  test("restores an entry's before state as a new version; refuses another environment's, another flag's, or a creation's entry", async () => {
    const key = await newFlag('revert');
    expectStatus(await put(client, `${envFlags(a.environmentId)}/${key}`, { token: a.admin.token, body: { enabled: true, flag: { off_variant_key: 'on', rules: [] } } }), 200, 'change');
    const entries = await readAll(client, a.admin.token, (query) => flagHistoryPath(a.environmentId, key, query));
    const change = entries.find((e) => e.action === 'flag.update')!;
    const creation = entries.find((e) => e.action === 'flag.create' && e.before === undefined)!;
    const reverted = expectStatus(await client.post(`${envFlags(a.environmentId)}/${key}/revert`, { token: a.admin.token, body: { audit_entry_id: change.id } }), 200, 'revert');
    assert.equal(reverted.enabled, false);
    assert.equal(reverted.off_variant_key, 'off');
    assert.deepEqual(reverted.rules.map((r: Json) => r.id), ['beta']);
    assert.equal(reverted.version, 3);
    const after = await readAll(client, a.admin.token, (query) => flagHistoryPath(a.environmentId, key, query));
    assert.equal(after.find((e) => e.action === 'flag.revert')!.details.reverts_entry_id, change.id);

    const other = await newFlag('other');
    expectError(await client.post(`${envFlags(a.environmentId)}/${other}/revert`, { token: a.admin.token, body: { audit_entry_id: change.id } }), 404, 'NOT_FOUND');
    const staging = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: `staging-${unique()}` } }), 201, 'env').environment_id;
    expectError(await client.post(`${envFlags(staging)}/${key}/revert`, { token: a.admin.token, body: { audit_entry_id: change.id } }), 404, 'NOT_FOUND');
    if (creation) expectError(await client.post(`${envFlags(a.environmentId)}/${key}/revert`, { token: a.admin.token, body: { audit_entry_id: creation.id } }), 400, 'INVALID_ARGUMENT');
    expectError(await client.post(`${envFlags(a.environmentId)}/${key}/revert`, { token: a.admin.token, body: {} }), 400, 'INVALID_ARGUMENT');
  });
});

describe('defences', () => {
  test("another org's admin, a viewer, no credential and an SDK key cannot list, schedule, cancel or revert", async () => {
    const key = await newFlag('guard');
    const change = expectStatus(await schedule(key, { execute_at_ms: Date.now() + 60 * 60_000, operations: [{ op: 'set_enabled', enabled: true }] }), 201, 'schedule');
    const entries = await readAll(client, a.admin.token, (query) => flagHistoryPath(a.environmentId, key, query));
    const body = { execute_at_ms: Date.now() + 60 * 60_000, operations: [{ op: 'set_enabled', enabled: true }] };
    const attempts = (options: Record<string, unknown>) => [
      client.get(schedulesOf(key), options),
      client.get(`/v1/environments/${a.environmentId}/scheduled-changes`, options),
      client.post(schedulesOf(key), { ...options, body }),
      client.delete(`${schedulesOf(key)}/${change.id}`, options),
      client.post(`${envFlags(a.environmentId)}/${key}/revert`, { ...options, body: { audit_entry_id: entries[0]!.id } }),
    ];
    for (const response of await Promise.all(attempts({ token: b.admin.token }))) expectRefused(response, [404], "another org's admin");
    for (const response of await Promise.all(attempts({}))) expectRefused(response, [401], 'no credential');
    for (const response of await Promise.all(attempts({ sdkKey: a.rawKey }))) expectRefused(response, [401, 403], 'an SDK key');
    const [list, calendar, ...writes] = await Promise.all(attempts({ token: viewerToken }));
    expectStatus(list!, 200, 'a viewer reads');
    expectStatus(calendar!, 200, 'a viewer reads the calendar');
    for (const response of writes) expectRefused(response, [403], 'a viewer writes');
    const still = expectStatus(await client.get(`${schedulesOf(key)}/${change.id}`, { token: a.admin.token }), 200, 'unchanged');
    assert.equal(still.status, 'pending');
    assert.equal((await flagNow(key)).enabled, false);
  });
});
