import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ACTIVE, PAUSED, createExperiment, moveThrough, prepareEnvironment } from './support/experiment-fixtures.ts';
import { createFlag } from './support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * docs/decisions.md "Exposures recorded by evaluate": evaluating a flag that belongs to an ACTIVE experiment records an exposure, and
 * the evaluate answer comes only after it is committed.
 */
let ts: TestServer;
let client: ApiClient;
let a: Tenant;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'exposures');
  await prepareEnvironment(client, a);
});
after(() => ts.stop());

const scope = () => ({ orgId: a.orgId, projectId: a.projectId, environmentId: a.environmentId });
const exposureCount = () => ts.server.repos.exposures.count(scope(), { flagKey: 'checkout' });

async function evaluateUsers(prefix: string, n: number): Promise<Map<string, string>> {
  const served = new Map<string, string>();
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const key = `${prefix}-${i}`;
      const body = expectStatus(
        await client.post(`/v1/environments/${a.environmentId}/evaluate`, { sdkKey: a.rawKey, body: { context_key: key, context_type: 'user', flag_key: 'checkout' } }),
        200,
        'evaluate',
      ) as Json;
      served.set(key, String(body.variant_key));
    }),
  );
  return served;
}

describe('exposures recorded by evaluate', () => {
  test('no experiment, or one still in DRAFT: evaluate records nothing', async () => {
    await evaluateUsers('before', 10);
    const experiment = await createExperiment(client, a);
    await evaluateUsers('draft', 10);
    assert.equal(await exposureCount(), 0);

    await moveThrough(client, a, String(experiment.id), [ACTIVE]);
    const served = await evaluateUsers('active', 40);
    // Counted straight after the answers: each answer waited for its exposure to commit.
    assert.equal(await exposureCount(), 40);
    const rows = await ts.db.sql<{ context_key: string; variant_key: string; context_type: string }[]>`
      SELECT context_key, variant_key, context_type FROM exposures
      WHERE environment_id = ${a.environmentId} AND flag_key = 'checkout'`;
    for (const row of rows) {
      assert.equal(row.context_type, 'user');
      assert.equal(row.variant_key, served.get(row.context_key), `the variant served to ${row.context_key}`);
    }
    assert.deepEqual(new Set(rows.map((r) => r.variant_key)), new Set(['control', 'treatment']));

    // OFREP evaluations are evaluations too.
    const ofrep = await fetch(`${ts.base}/ofrep/v1/evaluate/flags/checkout`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sdk-key': a.rawKey },
      body: JSON.stringify({ context: { targetingKey: 'ofrep-user' } }),
    });
    assert.equal(ofrep.status, 200);
    assert.equal(await exposureCount(), 41);

    await moveThrough(client, a, String(experiment.id), [PAUSED]);
    await evaluateUsers('paused', 10);
    assert.equal(await exposureCount(), 41, 'a paused experiment records nothing');
  });
});

describe('the rule of an exposure', () => {
  // beta users are targeted to treatment by rule `beta`; everyone else is split 50/50 by rule
  // `split`: only the split's exposures name a rule (docs/statistics.md "Who is in an experiment").
  const targetedFlag = {
    flag: {
      key: 'targeted',
      value_type: 'string',
      variants: [{ key: 'control', value: 'old' }, { key: 'treatment', value: 'new' }],
      off_variant_key: 'control',
      rules: [
        { id: 'beta', conditions: [{ attribute: 'beta', op: 'eq', values: [true] }], variant_key: 'treatment' },
        { id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }] } },
      ],
    },
    enabled: true,
  };

  test('evaluate records the allocation\'s rule for split users and \'\' for targeted ones; an SDK\'s own rule_id is stored as sent, absent as NULL', async () => {
    await createFlag(client, a.admin.token, a.environmentId, targetedFlag);
    await moveThrough(client, a, String((await createExperiment(client, a, { flag_key: 'targeted' })).id), [ACTIVE]);
    for (const [key, beta] of [['beta-1', true], ['beta-2', true], ['split-1', false], ['split-2', false]] as const) {
      expectStatus(
        await client.post(`/v1/environments/${a.environmentId}/evaluate`, {
          sdkKey: a.rawKey,
          body: { context_key: key, context_type: 'user', flag_key: 'targeted', attributes: { beta } },
        }),
        200,
        `evaluate ${key}`,
      );
    }
    expectStatus(
      await client.post(`/v1/environments/${a.environmentId}/exposures`, {
        sdkKey: a.rawKey,
        body: [
          { flag_key: 'targeted', variant_key: 'control', context_type: 'user', context_key: 'sdk-split', rule_id: 'split' },
          { flag_key: 'targeted', variant_key: 'treatment', context_type: 'user', context_key: 'sdk-targeted', rule_id: '' },
          { flag_key: 'targeted', variant_key: 'treatment', context_type: 'user', context_key: 'old-sdk' },
        ],
      }),
      202,
      'ingest exposures',
    );
    const rows = await ts.db.sql<{ context_key: string; rule_id: string | null }[]>`
      SELECT context_key, rule_id FROM exposures WHERE environment_id = ${a.environmentId} AND flag_key = 'targeted' ORDER BY context_key`;
    assert.deepEqual(
      rows.map((row) => [row.context_key, row.rule_id]),
      [['beta-1', ''], ['beta-2', ''], ['old-sdk', null], ['sdk-split', 'split'], ['sdk-targeted', ''], ['split-1', 'split'], ['split-2', 'split']],
    );
  });
});
