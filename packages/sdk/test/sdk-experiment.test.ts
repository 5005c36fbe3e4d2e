import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  ACTIVE,
  createExperiment,
  experimentPath,
  moveThrough,
  prepareEnvironment,
} from '../../../hosts/server/test/support/experiment-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from '../../../hosts/server/test/support/rest-client.ts';
import { startTestServer, type TestServer } from '../../../hosts/server/test/support/test-server.ts';
import { SwitchyardClient } from '../src/index.ts';
import { silent } from './fixtures.ts';

// Experiments for SDK users: local evaluation of a flag under an ACTIVE experiment records the
// exposure, track() sends the metric, and the server's results count exactly the participants the
// SDK assigned — as for the REST evaluate route.

let ts: TestServer;
let rest: ApiClient;
let tenant: Tenant;
let sdk: SwitchyardClient;
/** The id of the split rule of experiment-fixtures.ts's splitFlag. */
const SPLIT_RULE_ID = 'split';

before(async () => {
  ts = await startTestServer({ STATS_POLL_MS: '25', STATS_INTERVAL_MS: '60000' }, { share: true });
  rest = api(ts.base);
  const root = await loginAdmin(rest);
  tenant = await seedTenant(rest, root.token, 'sdk-experiment');
  await prepareEnvironment(rest, tenant);
});

after(async () => {
  await sdk?.close();
  await ts.stop();
});

test('exposures from local evaluation and tracked events make the experiment results', async () => {
  const experiment = await createExperiment(rest, tenant, { metric_keys: ['purchase', 'revenue'] });
  await moveThrough(rest, tenant, experiment.id, [ACTIVE]);

  sdk = new SwitchyardClient({
    sdkKey: tenant.rawKey,
    baseUrl: ts.base,
    syncUrl: `127.0.0.1:${ts.server.syncGrpcPort}`,
    logger: silent,
    events: { flushIntervalMs: 60_000 },
  });
  await sdk.waitForReady({ timeoutMs: 15_000 });

  // 30 users, each evaluated three times (one exposure each is enough); who got which variant is
  // the SDK's own answer, and the server must count exactly those.
  const assigned = { control: [] as string[], treatment: [] as string[] };
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 30; i++) {
      const user = { key: `buyer-${i}` };
      const detail = sdk.variationDetail('checkout', user, 'none');
      assert.equal(detail.reason, 'SPLIT');
      if (round === 0) assigned[detail.variant_key as 'control' | 'treatment'].push(user.key);
    }
  }
  assert.equal(assigned.control.length + assigned.treatment.length, 30);
  // allFlags records no exposure: a user evaluated only through it is no participant.
  sdk.allFlags({ key: 'bystander' });
  // Every treatment user buys for 10; control users do not buy.
  for (const key of assigned.treatment) {
    sdk.track('purchase', { key }, true);
    sdk.track('revenue', { key }, 10);
  }
  await sdk.flush();

  const queued = expectStatus(await rest.post(`/v1/experiments/${experiment.id}/recompute`, { token: tenant.member.token }), 202);
  let job: Json;
  const deadline = Date.now() + 15_000;
  do {
    job = expectStatus(await rest.get(`/v1/jobs/${queued.job_id}`, { token: tenant.member.token }), 200);
    if (job.status === 'completed' || job.status === 'failed') break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  } while (Date.now() < deadline);
  assert.equal(job.status, 'completed', job.error);

  const results = expectStatus(await rest.get(`${experimentPath(tenant.environmentId, experiment.id)}/results`, { token: tenant.member.token }), 200);
  const byVariant = new Map((results.variant_results as Json[]).map((variant) => [variant.variant_key, variant]));
  assert.equal(byVariant.get('control').participant_count, assigned.control.length);
  assert.equal(byVariant.get('treatment').participant_count, assigned.treatment.length);
  assert.equal(byVariant.get('control').metric_values.purchase, 0);
  assert.equal(byVariant.get('treatment').metric_values.purchase, 1);
  assert.equal(byVariant.get('treatment').metric_values.revenue, 10);
  const [row] = await ts.server.database.sql<{ n: string }[]>`
    SELECT count(*) AS n FROM exposures WHERE environment_id = ${tenant.environmentId}`;
  assert.equal(Number(row?.n), 30, 'one exposure per user, none for allFlags');
  // Each names the rule whose allocation served it (the flag's only rule).
  const rules = await ts.server.database.sql<{ rule_id: string | null }[]>`
    SELECT DISTINCT rule_id FROM exposures WHERE environment_id = ${tenant.environmentId}`;
  assert.deepEqual(rules.map((rule) => rule.rule_id), [SPLIT_RULE_ID]);
});
