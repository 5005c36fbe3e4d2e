import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createFlag, envFlags, projectFlags, put } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Removing a variant (PUT /{flag_id} with `flag.variants` without it, on either route): refused
 * while a rule or the off variant serves it in any environment of the project (docs/contract.md
 * "Flags"), allowed once nothing does. The console's "Remove variant" relies on it.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
/** Tenant A's second environment of the same project. */
let staging: string;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'variants-a');
  b = await seedTenant(client, root.token, 'variants-b');
  const environment = expectStatus(
    await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }),
    201,
    'create environment',
  );
  staging = environment.environment_id;
});
after(() => ts.stop());

const ON = { key: 'on', value: 'ON' };
const OFF = { key: 'off', value: 'OFF' };
const EXTRA = { key: 'extra', value: 'EXTRA' };

/**
 * A string flag with variants on/off/extra, created in production with no rules and `off` served
 * when off; in staging its state is written explicitly (off variant `on`, the given rules), so
 * neither environment relies on what an unwritten environment shows.
 */
async function flagWithStagingRules(stagingRules: unknown[]): Promise<{ key: string; production: string; stagingPath: string; project: string }> {
  const key = `variants-${unique()}`;
  await createFlag(client, a.admin.token, a.environmentId, {
    flag: { key, value_type: 'string', variants: [ON, OFF, EXTRA], off_variant_key: 'off', rules: [] },
    enabled: false,
  });
  const stagingPath = `${envFlags(staging)}/${key}`;
  expectStatus(await put(client, stagingPath, { token: a.admin.token, body: { flag: { off_variant_key: 'on', rules: stagingRules } } }), 200, 'staging state');
  return { key, production: `${envFlags(a.environmentId)}/${key}`, stagingPath, project: `${projectFlags(a.projectId)}/${key}` };
}

const currentVersion = async (path: string): Promise<number> => expectStatus(await client.get(path, { token: a.admin.token }), 200).version;

describe('removing a variant', () => {
  test('409 FAILED_PRECONDITION while a rule of another environment serves it, on both routes; nothing changes', async () => {
    const flag = await flagWithStagingRules([{ id: 'fixed-extra', conditions: [], variant_key: 'extra' }]);
    const body = async () => ({ flag: { variants: [ON, OFF] }, version: await currentVersion(flag.production) });
    expectError(await put(client, flag.production, { token: a.admin.token, body: await body() }), 409, 'FAILED_PRECONDITION', /'extra' is served in staging by rule 'fixed-extra'/);
    expectError(await put(client, flag.project, { token: a.admin.token, body: { flag: { variants: [ON, OFF] } } }), 409, 'FAILED_PRECONDITION', /'extra' is served in staging/);
    for (const path of [flag.production, flag.stagingPath, flag.project]) {
      assert.deepEqual(expectStatus(await client.get(path, { token: a.admin.token }), 200).variants, [ON, OFF, EXTRA], path);
    }
  });

  test('a rollout bucket serves its variant even at weight 0; the off variant serves it too', async () => {
    const flag = await flagWithStagingRules([
      { id: 'split', conditions: [], allocation: { buckets: [{ variant_key: 'off', weight_milli: 1000 }, { variant_key: 'extra', weight_milli: 0 }] } },
    ]);
    expectError(await put(client, flag.project, { token: a.admin.token, body: { flag: { variants: [ON, OFF] } } }), 409, 'FAILED_PRECONDITION', /'extra' is served in staging by rule 'split'/);
    // `on` is staging's off variant and no rule serves it: refused for that alone.
    expectError(await put(client, flag.project, { token: a.admin.token, body: { flag: { variants: [OFF, EXTRA] } } }), 409, 'FAILED_PRECONDITION', /'on' is served in staging by the off variant/);
    // `off` is production's off variant and staging's rollout serves it: both named.
    expectError(await put(client, flag.project, { token: a.admin.token, body: { flag: { variants: [ON, EXTRA] } } }), 409, 'FAILED_PRECONDITION', /'off' is served in production by the off variant; 'off' is served in staging by rule 'split'/);
  });

  test('200 once nothing serves it: every environment shows the remaining variants, and the change is in the history', async () => {
    const flag = await flagWithStagingRules([{ id: 'fixed-on', conditions: [], variant_key: 'on' }]);
    const version = await currentVersion(flag.production);
    const updated = expectStatus(await put(client, flag.production, { token: a.admin.token, body: { flag: { variants: [ON, OFF] }, version } }), 200);
    assert.deepEqual(updated.variants, [ON, OFF]);
    assert.deepEqual(expectStatus(await client.get(flag.stagingPath, { token: a.admin.token }), 200).variants, [ON, OFF]);
    const history = expectStatus(await client.get(`${flag.production}/history`, { token: a.admin.token }), 200);
    const definition = history.entries.find((e: { action: string; environment_id?: string }) => e.action === 'flag.update' && e.environment_id === undefined);
    assert.ok(definition, 'a definition entry');
    assert.deepEqual([definition.before.variants, definition.after.variants], [[ON, OFF, EXTRA], [ON, OFF]]);
  });

  test('another tenant cannot remove one (404), and a member of the org is refused the same way as an admin', async () => {
    const flag = await flagWithStagingRules([{ id: 'fixed-extra', conditions: [], variant_key: 'extra' }]);
    expectError(await put(client, flag.production, { token: b.admin.token, body: { flag: { variants: [ON, OFF] } } }), 404, 'NOT_FOUND');
    expectError(await put(client, flag.project, { token: b.admin.token, body: { flag: { variants: [ON, OFF] } } }), 404, 'NOT_FOUND');
    expectError(await put(client, flag.project, { token: a.member.token, body: { flag: { variants: [ON, OFF] } } }), 409, 'FAILED_PRECONDITION', /'extra' is served in staging/);
    assert.deepEqual(expectStatus(await client.get(flag.project, { token: a.admin.token }), 200).variants, [ON, OFF, EXTRA]);
  });
});
