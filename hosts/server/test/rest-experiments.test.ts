import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { patch, put } from './support/flag-client.ts';
import {
  ACTIVE,
  CONCLUDED,
  DRAFT,
  EXPERIMENT_FIELDS,
  ITERATION_FIELDS,
  PAUSED,
  createExperiment,
  experimentPath,
  experimentsOf,
  moveThrough,
  prepareEnvironment,
  transition,
} from './support/experiment-fixtures.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, type ApiClient, type LoggedInUser, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let root: LoggedInUser;
let a: Tenant;
let b: Tenant;
const UNKNOWN = '00000000-0000-4000-8000-000000000000';

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'experiments-a');
  b = await seedTenant(client, root.token, 'experiments-b');
  await prepareEnvironment(client, a);
  await prepareEnvironment(client, b);
});
after(() => ts.stop());

const path = (id: string): string => experimentPath(a.environmentId, id);

describe('create, list, get', () => {
  test('create answers 201 with every field, in DRAFT at version 1, defaults filled in', async () => {
    const created = await createExperiment(client, a, { description: 'does the new checkout sell more?' });
    assert.deepEqual(Object.keys(created).sort(), EXPERIMENT_FIELDS);
    assert.deepEqual(
      { ...created, id: '', created_at_ms: 0, updated_at_ms: 0 },
      {
        id: '', name: 'checkout test', description: 'does the new checkout sell more?', flag_key: 'checkout', status: DRAFT,
        variant_keys: ['control', 'treatment'], metric_keys: [], traffic_allocation: 1, version: 1, created_at_ms: 0, updated_at_ms: 0,
        environment_id: a.environmentId, rule_id: null, control_variant_key: 'control', metrics: [],
        analysis: { alpha: 0.05, sides: 'two', relative_interval: 'delta', correction: 'none', correction_family: 'all', srm_threshold: 0.001, srm_min_expected: 5,
          engine: 'frequentist', sequential: null, hybrid: false, prior: null },
      },
    );
    assert.ok(created.created_at_ms > 0 && created.updated_at_ms === created.created_at_ms);
    const full = expectStatus(
      await client.post(experimentsOf(a.environmentId), {
        token: a.member.token,
        body: { name: 'by a member', flag_key: 'checkout', variant_keys: ['treatment', 'control'], metric_keys: ['purchase', 'revenue'], traffic_allocation: 0.25 },
      }),
      201,
    );
    assert.deepEqual([full.variant_keys, full.metric_keys, full.traffic_allocation], [['treatment', 'control'], ['purchase', 'revenue'], 0.25]);
  });

  test('bad bodies are 400 naming the field', async () => {
    const post = (body: unknown) => client.post(experimentsOf(a.environmentId), { token: a.admin.token, body });
    expectError(await post({ name: 'x' }), 400, 'INVALID_ARGUMENT', /flag_key/);
    expectError(await post({ flag_key: 'missing' }), 400, 'INVALID_ARGUMENT', /flag 'missing' does not exist/);
    expectError(await post({ flag_key: 'checkout', variant_keys: ['control', 'nope'] }), 400, 'INVALID_ARGUMENT', /variant_keys: nope/);
    expectError(await post({ flag_key: 'checkout', variant_keys: ['control'] }), 400, 'INVALID_ARGUMENT', /at least 2 variants/);
    expectError(await post({ flag_key: 'checkout', variant_keys: ['control', 'control'] }), 400, 'INVALID_ARGUMENT', /twice/);
    expectError(await post({ flag_key: 'checkout', metric_keys: ['unregistered'] }), 400, 'INVALID_ARGUMENT', /metric_keys: unregistered/);
    expectError(await post({ flag_key: 'checkout', traffic_allocation: 1.5 }), 400, 'INVALID_ARGUMENT', /traffic_allocation/);
    expectError(await post({ flag_key: 'checkout', name: 7 }), 400, 'INVALID_ARGUMENT', /body\.name/);
    expectError(await post([]), 400, 'INVALID_ARGUMENT');
  });

  test('list is oldest first; get answers 200, an unknown or malformed id 404', async () => {
    const first = await createExperiment(client, a, { name: 'first' });
    const second = await createExperiment(client, a, { name: 'second' });
    const list = expectStatus(await client.get(experimentsOf(a.environmentId), { token: a.member.token }), 200);
    const ids = list.map((e: { id: string }) => e.id);
    assert.ok(ids.indexOf(first.id) < ids.indexOf(second.id) && ids.indexOf(first.id) >= 0);
    assert.deepEqual(expectStatus(await client.get(path(first.id), { token: a.member.token }), 200), first);
    expectError(await client.get(path(UNKNOWN), { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.get(path('not-a-uuid'), { token: a.admin.token }), 404, 'NOT_FOUND');
  });

  test('credentials: none or an SDK key 401, a system-org user 403, an unknown environment 404', async () => {
    expectError(await client.get(experimentsOf(a.environmentId)), 401, 'UNAUTHENTICATED');
    expectError(await client.get(experimentsOf(a.environmentId), { sdkKey: a.rawKey }), 401, 'UNAUTHENTICATED');
    expectError(await client.post(experimentsOf(a.environmentId), { token: root.token, body: { flag_key: 'checkout' } }), 403, 'PERMISSION_DENIED');
    expectError(await client.get(experimentsOf(UNKNOWN), { token: a.admin.token }), 404, 'NOT_FOUND');
  });
});

describe('update and delete', () => {
  test('PATCH and PUT change the fields given, bump the version, and refuse a stale version (409 ABORTED)', async () => {
    const created = await createExperiment(client, a);
    const patched = expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { name: 'renamed', metric_keys: ['revenue'], version: 1 } }), 200);
    assert.deepEqual([patched.name, patched.metric_keys, patched.version, patched.description], ['renamed', ['revenue'], 2, '']);
    const replaced = expectStatus(await put(client, path(created.id), { token: a.admin.token, body: { description: 'via PUT', variant_keys: ['treatment', 'control'], traffic_allocation: 0.5 } }), 200);
    assert.deepEqual([replaced.description, replaced.variant_keys, replaced.traffic_allocation, replaced.version], ['via PUT', ['treatment', 'control'], 0.5, 3]);
    assert.ok(replaced.updated_at_ms > created.updated_at_ms);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { name: 'lost', version: 2 } }), 409, 'ABORTED');
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { traffic_allocation: 'half' } }), 400, 'INVALID_ARGUMENT', /traffic_allocation/);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { metric_keys: ['nope'] } }), 400, 'INVALID_ARGUMENT', /metric_keys/);
    expectError(await patch(client, path(UNKNOWN), { token: a.admin.token, body: { name: 'x' } }), 404, 'NOT_FOUND');
    expectError(await put(client, path(UNKNOWN), { token: a.admin.token, body: { name: 'x' } }), 404, 'NOT_FOUND');
  });

  test('the flag and variants change only in DRAFT; other fields in any status', async () => {
    const created = await createExperiment(client, a);
    await moveThrough(client, a, created.id, ['active']);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { variant_keys: ['treatment', 'control'] } }), 409, 'FAILED_PRECONDITION', /only in EXPERIMENT_STATUS_DRAFT/);
    expectError(await patch(client, path(created.id), { token: a.admin.token, body: { flag_key: 'other' } }), 409, 'FAILED_PRECONDITION');
    // Sending them back unchanged (a PUT of the whole record) is fine.
    const same = expectStatus(await put(client, path(created.id), { token: a.admin.token, body: { name: 'still running', flag_key: 'checkout', variant_keys: ['control', 'treatment'] } }), 200);
    assert.deepEqual([same.name, same.status], ['still running', ACTIVE]);
  });

  test('DELETE answers 200 with the deleted experiment; then 404; a stale ?version 409', async () => {
    const created = await createExperiment(client, a);
    expectError(await client.delete(`${path(created.id)}?version=7`, { token: a.admin.token }), 409, 'ABORTED');
    assert.deepEqual(expectStatus(await client.delete(`${path(created.id)}?version=1`, { token: a.admin.token }), 200), created);
    expectError(await client.get(path(created.id), { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(path(created.id), { token: a.admin.token }), 404, 'NOT_FOUND');
    expectError(await client.delete(`${path(created.id)}?version=x`, { token: a.admin.token }), 400, 'INVALID_ARGUMENT');
  });
});

describe('transitions', () => {
  /** How to reach each status from DRAFT along legal moves. */
  const ROUTE: Record<string, string[]> = { [DRAFT]: [], [ACTIVE]: [ACTIVE], [PAUSED]: [ACTIVE, PAUSED], [CONCLUDED]: [CONCLUDED] };
  const LEGAL = new Set([`${DRAFT}>${ACTIVE}`, `${ACTIVE}>${PAUSED}`, `${PAUSED}>${ACTIVE}`, `${DRAFT}>${CONCLUDED}`, `${ACTIVE}>${CONCLUDED}`, `${PAUSED}>${CONCLUDED}`]);

  test('every legal move answers 200 with the new status; every other move 409 FAILED_PRECONDITION', async () => {
    const statuses = [DRAFT, ACTIVE, PAUSED, CONCLUDED];
    let checked = 0;
    for (const from of statuses) {
      for (const to of statuses) {
        const created = await createExperiment(client, a);
        const before = await moveThrough(client, a, created.id, ROUTE[from] ?? []) ?? created;
        assert.equal(before.status, from);
        const response = await transition(client, a, created.id, to, {}, checked % 2 === 0 ? 'transitions' : 'transition');
        if (LEGAL.has(`${from}>${to}`)) {
          const moved = expectStatus(response, 200, `${from} → ${to}`);
          assert.deepEqual([moved.status, moved.version], [to, before.version + 1]);
        } else {
          expectError(response, 409, 'FAILED_PRECONDITION', /cannot move an experiment/);
          assert.equal(expectStatus(await client.get(path(created.id), { token: a.admin.token }), 200).status, from);
        }
        checked += 1;
      }
    }
    assert.equal(checked, 16);
  });

  test('new_status takes enum names and short forms in any case; anything else is 400', async () => {
    const created = await createExperiment(client, a);
    assert.equal(expectStatus(await transition(client, a, created.id, 'active'), 200).status, ACTIVE);
    assert.equal(expectStatus(await transition(client, a, created.id, 'Paused', { reason: 'holiday freeze' }), 200).status, PAUSED);
    assert.equal(expectStatus(await transition(client, a, created.id, 'EXPERIMENT_STATUS_ACTIVE'), 200).status, ACTIVE);
    expectError(await transition(client, a, created.id, 'running'), 400, 'INVALID_ARGUMENT', /new_status/);
    expectError(await transition(client, a, created.id, 'EXPERIMENT_STATUS_UNSPECIFIED'), 400, 'INVALID_ARGUMENT', /new_status/);
    expectError(await client.post(`${path(created.id)}/transitions`, { token: a.admin.token, body: {} }), 400, 'INVALID_ARGUMENT', /new_status is required/);
    expectError(await transition(client, a, created.id, 'paused', { version: 1 }), 409, 'ABORTED');
    expectError(await transition(client, a, UNKNOWN, 'active'), 404, 'NOT_FOUND');
  });

  test('entering ACTIVE needs the flag to still exist (409 FAILED_PRECONDITION)', async () => {
    expectStatus(await client.post(`/v1/environments/${a.environmentId}/flags`, { token: a.admin.token, body: { flag: { key: 'short-lived', value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }] } } }), 201);
    const created = await createExperiment(client, a, { flag_key: 'short-lived' });
    expectStatus(await client.delete(`/v1/environments/${a.environmentId}/flags/short-lived`, { token: a.admin.token }), 204);
    expectError(await transition(client, a, created.id, 'active'), 409, 'FAILED_PRECONDITION', /short-lived/);
  });
});

describe('iterations', () => {
  test('each entry into ACTIVE opens the next iteration, numbered from 1; leaving ACTIVE closes it', async () => {
    const created = await createExperiment(client, a, { metric_keys: ['purchase'], traffic_allocation: 0.5 });
    const iterations = () => client.get(`${path(created.id)}/iterations`, { token: a.member.token });
    assert.deepEqual(expectStatus(await iterations(), 200), []);
    const t0 = Date.now();
    await moveThrough(client, a, created.id, [ACTIVE]);
    const [first] = expectStatus(await iterations(), 200);
    assert.deepEqual(Object.keys(first).sort(), ITERATION_FIELDS);
    assert.deepEqual([first.experiment_id, first.iteration_number, first.ended_at_ms, first.metric_keys, first.traffic_allocation], [created.id, 1, 0, ['purchase'], 0.5]);
    assert.ok(first.started_at_ms >= t0 && first.started_at_ms <= Date.now());
    await moveThrough(client, a, created.id, [PAUSED]);
    expectStatus(await patch(client, path(created.id), { token: a.admin.token, body: { metric_keys: ['revenue'], traffic_allocation: 1 } }), 200);
    await moveThrough(client, a, created.id, [ACTIVE, CONCLUDED]);
    const all = expectStatus(await iterations(), 200);
    assert.deepEqual(all.map((i: { iteration_number: number; metric_keys: string[]; traffic_allocation: number }) => [i.iteration_number, i.metric_keys, i.traffic_allocation]), [
      [1, ['purchase'], 0.5],
      [2, ['revenue'], 1],
    ]);
    const [one, two] = all;
    assert.ok(one.ended_at_ms >= one.started_at_ms && one.ended_at_ms > 0);
    assert.ok(two.started_at_ms >= one.ended_at_ms && two.ended_at_ms >= two.started_at_ms && two.ended_at_ms > 0);
    expectError(await client.get(`${path(UNKNOWN)}/iterations`, { token: a.admin.token }), 404, 'NOT_FOUND');
  });
});

describe('results', () => {
  test('404 until computed, and for an unknown experiment', async () => {
    const created = await createExperiment(client, a);
    expectError(await client.get(`${path(created.id)}/results`, { token: a.admin.token }), 404, 'NOT_FOUND', /not computed yet/);
    expectError(await client.get(`${path(UNKNOWN)}/results`, { token: a.admin.token }), 404, 'NOT_FOUND');
  });
});

describe('tenant isolation', () => {
  test("another org's token sees none of it: every route answers 404", async () => {
    const created = await createExperiment(client, a);
    const other = { token: b.admin.token };
    expectError(await client.get(experimentsOf(a.environmentId), other), 404, 'NOT_FOUND');
    expectError(await client.post(experimentsOf(a.environmentId), { ...other, body: { flag_key: 'checkout' } }), 404, 'NOT_FOUND');
    expectError(await client.get(path(created.id), other), 404, 'NOT_FOUND');
    expectError(await patch(client, path(created.id), { ...other, body: { name: 'x' } }), 404, 'NOT_FOUND');
    expectError(await put(client, path(created.id), { ...other, body: { name: 'x' } }), 404, 'NOT_FOUND');
    expectError(await client.delete(path(created.id), other), 404, 'NOT_FOUND');
    expectError(await client.post(`${path(created.id)}/transitions`, { ...other, body: { new_status: 'active' } }), 404, 'NOT_FOUND');
    expectError(await client.get(`${path(created.id)}/iterations`, other), 404, 'NOT_FOUND');
    expectError(await client.get(`${path(created.id)}/results`, other), 404, 'NOT_FOUND');
    // Its own environment path with A's experiment id: not found either.
    expectError(await client.get(experimentPath(b.environmentId, created.id), other), 404, 'NOT_FOUND');
    const theirs = expectStatus(await client.get(experimentsOf(b.environmentId), other), 200);
    assert.ok(!theirs.some((e: { id: string }) => e.id === created.id));
    assert.equal(expectStatus(await client.get(path(created.id), { token: a.admin.token }), 200).status, DRAFT);
  });
});
