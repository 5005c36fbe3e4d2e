import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ACTIVE, PAUSED, createExperiment, moveThrough, prepareEnvironment } from './support/experiment-fixtures.ts';
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
  ts = await startTestServer();
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
