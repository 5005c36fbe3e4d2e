import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ACTIVE, createExperiment, moveThrough, prepareEnvironment, PAUSED } from './support/experiment-fixtures.ts';
import { api, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { openSync, sdkKeyMetadata, type OpenStream } from './support/sync-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * The sync stream tells SDKs the project (for bucketing) and which flags are under an ACTIVE
 * experiment (for exposures), the complete set in every message (docs/decisions.md "Sync stream").
 */

let it: TestServer;
let rest: ApiClient;
let tenant: Tenant;
const open: OpenStream[] = [];

before(async () => {
  it = await startTestServer({}, { share: true });
  rest = api(it.base);
  const root = await loginAdmin(rest);
  tenant = await seedTenant(rest, root.token, 'sync-exp');
  await prepareEnvironment(rest, tenant, 'checkout');
});

after(async () => {
  for (const stream of open) stream.cancel();
  await it.stop();
});

test('project_id in every message; an experiment entering and leaving ACTIVE sends experiment_flag_keys', async () => {
  const stream = openSync(it.server.syncGrpcPort, { environment_id: tenant.environmentId }, sdkKeyMetadata(tenant.rawKey));
  open.push(stream);
  const first = await stream.next();
  assert.equal(first.full_snapshot, true);
  assert.equal(first.project_id, tenant.projectId);
  assert.deepEqual(first.experiment_flag_keys, []);

  const experiment = await createExperiment(rest, tenant, { variant_keys: ['control', 'treatment'], metric_keys: ['purchase'] });
  await moveThrough(rest, tenant, experiment.id as string, [ACTIVE]);
  const activated = await stream.until((message) => message.experiment_flag_keys.includes('checkout'));
  assert.equal(activated.full_snapshot, false);
  assert.equal(activated.project_id, tenant.projectId);
  // Only the experiment set changed: no flag or segment travels.
  assert.deepEqual(activated.flags, []);
  assert.deepEqual(activated.removed_flag_keys, []);

  await moveThrough(rest, tenant, experiment.id as string, [PAUSED]);
  const paused = await stream.until((message) => message.experiment_flag_keys.length === 0);
  assert.equal(paused.sequence_number, activated.sequence_number + 1);
});
