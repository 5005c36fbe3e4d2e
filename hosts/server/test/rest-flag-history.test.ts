import assert from 'node:assert/strict';
import type * as grpc from '@grpc/grpc-js';
import { after, before, describe, test } from 'node:test';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { auditLogPath, flagHistoryPath, only, readAll, type AuditQuery } from './support/audit-log.ts';
import { bearer, promisified, type Unary } from './support/grpc-clients.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * A flag's history in an environment (docs/contract.md "Change history"): its entries there and
 * its definition's, not another environment's, newest first, with before/after of each change;
 * the same over the internal gRPC AuditLogService.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let staging: string;
const KEY = `checkout-${unique()}`;

const rollout = (on: number) => [
  { id: 'rollout', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: on }, { variant_key: 'off', weight_milli: 1000 - on }] } },
];
const weights = (flag: Json): number[] => flag.rules[0].allocation.buckets.map((bucket: Json) => bucket.weight_milli);

/** Flag writes answer 200, 201 or 202 (docs/contract.md "Flags"): only success matters here. */
function written(response: { status: number; text: string; body: Json }): Json {
  assert.ok([200, 201, 202].includes(response.status), `write: ${response.status} ${response.text}`);
  return response.body;
}

const flagPath = (environmentId: string, suffix = '') => `/v1/environments/${environmentId}/flags/${KEY}${suffix}`;
const historyOf = (environmentId: string, query: AuditQuery = {}, token = a.admin.token) =>
  readAll(client, token, (q) => flagHistoryPath(environmentId, KEY, q), query);

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'history');
  staging = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }), 201).environment_id;

  const token = a.admin.token;
  const flag = { key: KEY, value_type: 'bool', variants: [{ key: 'on', value: true }, { key: 'off', value: false }], enabled: true, off_variant_key: 'off', rules: rollout(100) };
  const created = written(await client.post(`/v1/environments/${a.environmentId}/flags`, { token, body: { flag } }));
  // The rollout goes from 10% to 50% in production, and to 30% in staging.
  written(await client.request('PUT', flagPath(a.environmentId, '/rules'), { token, body: { rules: rollout(500), version: created.version } }));
  written(await client.request('PUT', flagPath(staging, '/rules'), { token, body: { rules: rollout(300) } }));
  // A definition change made through staging's route: production sees it too.
  written(await client.post(flagPath(staging, '/variants'), { token, body: { variants: [{ key: 'on', value: true }] } }));
  written(await client.request('PUT', flagPath(a.environmentId, '/hashing'), { token, body: { configs: [{ parameter_key: 'account', parameter_type: 'user', order: 0 }] } }));
  // Through the project route: the definition only.
  written(await client.request('PUT', `/v1/projects/${a.projectId}/flags/${KEY}`, { token, body: { flag: { description: 'The checkout' } } }));
  // Another flag's change is not this flag's history.
  written(await client.post(`/v1/environments/${a.environmentId}/flags`, { token, body: { flag: { ...flag, key: `${KEY}-other` } } }));
});
after(() => ts.stop());

describe('flag history', () => {
  test("newest first: the environment's changes and the definition's, not another environment's", async () => {
    const history = await historyOf(a.environmentId);
    assert.deepEqual(
      history.map((entry) => [entry.action, entry.environment_id ?? 'definition']),
      [
        ['flag.update', 'definition'],
        ['flag.hashing', a.environmentId],
        ['flag.variants', 'definition'],
        ['flag.rules', a.environmentId],
        ['flag.create', a.environmentId],
        ['flag.create', 'definition'],
      ],
    );
    for (const entry of history) {
      assert.deepEqual([entry.resource_type, entry.resource_id, entry.project_id], ['flag', KEY, a.projectId]);
      assert.deepEqual(entry.actor, { type: 'user', id: a.admin.userId, email: a.admin.email });
    }
    const stagingHistory = await historyOf(staging);
    assert.deepEqual(stagingHistory.map((entry) => [entry.action, entry.environment_id ?? 'definition']), [
      ['flag.update', 'definition'],
      ['flag.variants', 'definition'],
      ['flag.rules', staging],
      ['flag.create', 'definition'],
    ]);
  });

  test('the rollout change shows the rules before and after', async () => {
    const rules = only(await historyOf(a.environmentId), 'flag.rules');
    assert.deepEqual(weights(rules.before), [100, 900]);
    assert.deepEqual(weights(rules.after), [500, 500]);
    assert.equal(rules.after.version, rules.before.version + 1);
    const stagingRules = only(await historyOf(staging), 'flag.rules');
    // Staging had never written the flag: before is what it showed, the default rule of the
    // variants with no off variant (docs/contract.md "Default rule": the bool flag's `true` one).
    assert.deepEqual([stagingRules.before.rules, weights(stagingRules.after)], [[{ id: 'default', conditions: [], variant_key: 'on' }], [300, 700]]);
    const definition = only(await historyOf(a.environmentId), 'flag.update');
    assert.deepEqual([definition.before.description, definition.after.description], ['', 'The checkout']);
    assert.equal(definition.after.rules.length, 0, "a definition entry holds the project-level flag, not an environment's rules");
  });

  test('pages: any size gives the same entries; the org log filters the same way', async () => {
    const whole = await historyOf(a.environmentId);
    assert.deepEqual(await historyOf(a.environmentId, { limit: 1 }), whole);
    assert.deepEqual(await historyOf(a.environmentId, { limit: 4 }), whole);
    const viaLog = await readAll(client, a.admin.token, (q) => auditLogPath(a.orgId, q), { resource_type: 'flag', resource_id: KEY, environment_id: staging });
    assert.deepEqual(viaLog.map((entry) => entry.action), ['flag.rules']);
  });

  test('a write that fails adds nothing; an update of both levels adds one entry each; a deletion stays in the history', async () => {
    const count = (await historyOf(a.environmentId)).length;
    expectError(await client.request('PUT', flagPath(a.environmentId, '/rules'), { token: a.admin.token, body: { rules: rollout(900), version: 1 } }), 409, 'ABORTED');
    const b = await seedTenant(client, (await loginAdmin(client)).token, 'history-b');
    expectError(await client.request('PUT', flagPath(a.environmentId, '/rules'), { token: b.admin.token, body: { rules: rollout(900) } }), 404, 'NOT_FOUND');
    expectError(await client.get(flagHistoryPath(a.environmentId, KEY), { token: b.admin.token }), 404, 'NOT_FOUND');
    assert.equal((await historyOf(a.environmentId)).length, count);

    written(await client.request('PUT', flagPath(a.environmentId), { token: a.admin.token, body: { flag: { enabled: false, description: 'Off for now' } } }));
    expectStatus(await client.delete(flagPath(a.environmentId), { token: a.admin.token }), 204);
    const history = await historyOf(a.environmentId, {}, a.member.token);
    assert.deepEqual(history.slice(0, 3).map((entry) => [entry.action, entry.environment_id ?? 'definition']), [
      ['flag.delete', 'definition'],
      ['flag.update', a.environmentId],
      ['flag.update', 'definition'],
    ]);
    assert.deepEqual([history[1].before.enabled, history[1].after.enabled], [true, false]);
    assert.equal(history[0].before.key, KEY);
    assert.equal(history[0].after, undefined);
  });

  test('over the internal gRPC AuditLogService: the same entries', async () => {
    const Service = lookup<grpc.ServiceClientConstructor>(loadProto('svc/management/v1/audit.proto'), 'svc.management.v1.AuditLogService');
    const audit = promisified<{ getFlagHistory: Unary<object, Json>; listAuditLog: Unary<object, Json> }>(Service, ts.server.grpcPort);
    try {
      const rest = await historyOf(staging);
      const page = await audit.getFlagHistory({ environment_id: staging, flag_key: KEY, limit: 2 }, bearer(a.admin.token));
      assert.deepEqual(page.entries.map((entry: Json) => entry.id), rest.slice(0, 2).map((entry) => entry.id));
      const rules = page.entries.find((entry: Json) => entry.action === 'flag.rules') ?? (await audit.getFlagHistory({ environment_id: staging, flag_key: KEY, cursor: page.next_cursor, limit: 200 }, bearer(a.admin.token))).entries.find((entry: Json) => entry.action === 'flag.rules');
      assert.deepEqual(weights(JSON.parse(rules.after_json)), [300, 700]);
      assert.equal(rules.environment_id, staging);
      const log = await audit.listAuditLog({ org_id: a.orgId, resource_type: 'environment' }, bearer(a.admin.token));
      assert.deepEqual(log.entries.map((entry: Json) => entry.resource_id).sort(), [a.environmentId, staging].sort());
      assert.equal(log.next_cursor, '');
      await assert.rejects(audit.listAuditLog({ org_id: a.orgId }), (error: Json) => error.code === 16, 'no credential: UNAUTHENTICATED');
    } finally {
      audit.client.close();
    }
  });
});
