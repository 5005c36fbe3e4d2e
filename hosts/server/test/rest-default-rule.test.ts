import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SwitchyardClient } from '@switchyard/sdk';
import { flagHistoryPath, readAll } from './support/audit-log.ts';
import { envFlags, evaluate, projectFlags, put } from './support/flag-client.ts';
import { eventually } from './support/flag-fixtures.ts';
import { api, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { openSync, sdkKeyMetadata, type OpenStream } from './support/sync-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * The default rule (docs/contract.md "Default rule"): a flag created without `rules` gets one
 * unconditional last rule serving its first non-off variant, so turning it on serves that variant
 * through REST evaluate, OFREP, the sync stream and the SDK; an explicit `[]` stays empty and
 * serves the off variant (reason DEFAULT) as before; an environment that never wrote the flag
 * shows the default rule. Expected rules are written out by hand from the variants.
 */

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
/** A second environment of a's project, made before any flag, with its own server key. */
let staging: { id: string; rawKey: string };
const streams: OpenStream[] = [];
const sdks: SwitchyardClient[] = [];

const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** String flag: `control` is the off variant, so the default rule serves `treatment`. */
const stringFlag = (key: string, extra: Record<string, unknown> = {}) => ({
  flag: {
    key,
    value_type: 'string',
    variants: [{ key: 'control', value: 'Control' }, { key: 'treatment', value: 'Treatment' }],
    off_variant_key: 'control',
    ...extra,
  },
});
const SERVES_TREATMENT = [{ id: 'default', conditions: [], variant_key: 'treatment' }];
/** The console's bool variants, written false-first here: the default rule still serves `on` (true). */
const BOOL_VARIANTS = [{ key: 'off', value: false }, { key: 'on', value: true }];
const SERVES_ON = [{ id: 'default', conditions: [], variant_key: 'on' }];

const turnOn = async (environmentId: string, key: string, version: number): Promise<Json> =>
  expectStatus(await put(client, `${envFlags(environmentId)}/${key}`, { token: a.admin.token, body: { enabled: true, version } }), 200, `turn ${key} on`);

/** OFREP's answer once it has the flag (a change reaches each evaluation path's snapshot on its own: wait for it). */
async function ofrep(rawKey: string, key: string): Promise<Json> {
  let answer: Json = {};
  await eventually(`OFREP ${key} answered`, async () => {
    const response = await client.post(`/ofrep/v1/evaluate/flags/${key}`, { sdkKey: rawKey, body: { context: { targetingKey: 'someone' } } });
    answer = response.body;
    return response.status === 200;
  });
  return answer;
}

/**
 * REST evaluate of `key` for one context once the answer has `reason` (evaluation snapshots
 * refresh on an asynchronous notification after a write), as {variant_key, value, reason}.
 */
async function evaluated(rawKey: string, environmentId: string, key: string, reason: string): Promise<Json> {
  let answer: Json = {};
  await eventually(`${key} evaluated with reason ${reason}`, async () => {
    const response = await evaluate(client, rawKey, environmentId, 'someone', { flag_key: key });
    answer = response.status === 200 ? response.body : {};
    return answer.reason === reason;
  });
  return { variant_key: answer.variant_key, value: answer.value, reason: answer.reason };
}

/** The rules of `key` in the first message of a new sync stream (rule payloads decoded). */
async function syncedRules(rawKey: string, environmentId: string, key: string): Promise<Json[]> {
  const stream = openSync(ts.server.syncGrpcPort, { environment_id: environmentId }, sdkKeyMetadata(rawKey));
  streams.push(stream);
  const first = await stream.next();
  stream.cancel();
  const flag = first.flags.find((f) => f.key === key);
  assert.ok(flag, `${key} in the snapshot`);
  return flag.rules.map((rule) => ({ id: rule.id, ...JSON.parse(Buffer.from(rule.rule_payload).toString('utf8')), variant_key: rule.variant_key }));
}

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  a = await seedTenant(client, (await loginAdmin(client)).token, 'default-rule');
  const env = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'staging' } }), 201);
  const key = expectStatus(await client.post(`/v1/management/environments/${env.environment_id}/sdk-keys`, { token: a.admin.token }), 201);
  staging = { id: env.environment_id, rawKey: key.raw_key };
});
after(async () => {
  for (const sdk of sdks) await sdk.close();
  for (const stream of streams) stream.cancel();
  await ts.stop();
});

describe('create without rules on an environment route', () => {
  test('gets the default rule; off until turned on; then REST evaluate, OFREP, the sync stream and the SDK serve the first non-off variant', async () => {
    const key = `new-${unique()}`;
    const created = expectStatus(await client.post(envFlags(a.environmentId), { token: a.admin.token, body: stringFlag(key) }), 201);
    assert.deepEqual([created.rules, created.enabled, created.version], [SERVES_TREATMENT, false, 1]);
    assert.deepEqual(await evaluated(a.rawKey, a.environmentId, key, 'DISABLED'), { variant_key: 'control', value: 'Control', reason: 'DISABLED' });

    const on = await turnOn(a.environmentId, key, 1);
    assert.deepEqual([on.rules, on.enabled, on.version], [SERVES_TREATMENT, true, 2]);
    assert.deepEqual(await evaluated(a.rawKey, a.environmentId, key, 'TARGETING_MATCH'), { variant_key: 'treatment', value: 'Treatment', reason: 'TARGETING_MATCH' });
    assert.deepEqual(await ofrep(a.rawKey, key), { key, value: 'Treatment', reason: 'TARGETING_MATCH', variant: 'treatment', metadata: { rule_id: 'default' } });
    assert.deepEqual(await syncedRules(a.rawKey, a.environmentId, key), [{ id: 'default', conditions: [], segment_keys: [], variant_key: 'treatment' }]);

    const sdk = new SwitchyardClient({
      sdkKey: a.rawKey,
      environmentId: a.environmentId,
      baseUrl: ts.base,
      syncUrl: `127.0.0.1:${ts.server.syncGrpcPort}`,
      logger: silent,
    });
    sdks.push(sdk);
    await sdk.waitForReady({ timeoutMs: 15_000 });
    const detail = sdk.variationDetail(key, { key: 'someone' }, 'fallback');
    assert.deepEqual({ variant_key: detail.variant_key, value: detail.value, reason: detail.reason }, { variant_key: 'treatment', value: 'Treatment', reason: 'TARGETING_MATCH' });
  });

  test('a bool flag written false-first with no off variant serves true', async () => {
    const key = `bool-${unique()}`;
    const body = { flag: { key, value_type: 'bool', variants: BOOL_VARIANTS }, enabled: true };
    const created = expectStatus(await client.post(envFlags(a.environmentId), { token: a.admin.token, body }), 201);
    assert.deepEqual([created.rules, created.off_variant_key], [SERVES_ON, null]);
    assert.deepEqual(await evaluated(a.rawKey, a.environmentId, key, 'TARGETING_MATCH'), { variant_key: 'on', value: true, reason: 'TARGETING_MATCH' });
  });

  test('an explicit empty list stays empty: the flag on serves its off variant with reason DEFAULT, as before', async () => {
    const key = `empty-${unique()}`;
    const created = expectStatus(await client.post(envFlags(a.environmentId), { token: a.admin.token, body: { ...stringFlag(key, { rules: [] }), enabled: true } }), 201);
    assert.deepEqual(created.rules, []);
    assert.deepEqual(await evaluated(a.rawKey, a.environmentId, key, 'DEFAULT'), { variant_key: 'control', value: 'Control', reason: 'DEFAULT' });
    assert.deepEqual(await ofrep(a.rawKey, key), { key, value: 'Control', reason: 'DEFAULT', variant: 'control', metadata: {} });
    assert.deepEqual(await syncedRules(a.rawKey, a.environmentId, key), []);
  });

  test('the history: the environment entry of the create holds the default rule; turning on keeps it', async () => {
    const key = `hist-${unique()}`;
    expectStatus(await client.post(envFlags(a.environmentId), { token: a.admin.token, body: stringFlag(key) }), 201);
    await turnOn(a.environmentId, key, 1);
    const history = await readAll(client, a.admin.token, (q) => flagHistoryPath(a.environmentId, key, q));
    assert.deepEqual(history.map((entry) => [entry.action, entry.environment_id ?? 'definition']), [
      ['flag.update', a.environmentId],
      ['flag.create', a.environmentId],
      ['flag.create', 'definition'],
    ]);
    const [update, create, definition] = history;
    assert.deepEqual([create.before, create.after.rules, create.after.enabled], [undefined, SERVES_TREATMENT, false], 'a create has no before');
    assert.deepEqual([update.before.rules, update.before.enabled, update.after.rules, update.after.enabled], [SERVES_TREATMENT, false, SERVES_TREATMENT, true]);
    assert.deepEqual(definition.after.rules, [], 'the definition entry holds no environment rules');
    // The other environment wrote nothing: its history is the definition's only.
    const other = await readAll(client, a.admin.token, (q) => flagHistoryPath(staging.id, key, q));
    assert.deepEqual(other.map((entry) => [entry.action, entry.environment_id ?? 'definition']), [['flag.create', 'definition']]);
  });
});

describe('environments that never wrote the flag', () => {
  test('a flag created on the project route shows the default rule in every environment, also one made later, and serves it once turned on', async () => {
    const key = `proj-${unique()}`;
    const created = expectStatus(await client.post(projectFlags(a.projectId), { token: a.admin.token, body: { flag: { key, value_type: 'bool', variants: BOOL_VARIANTS } } }), 201);
    assert.deepEqual([created.rules, created.enabled], [[], false], 'the project view holds no environment rules');
    const later = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: `later-${unique()}` } }), 201);
    for (const environmentId of [a.environmentId, staging.id, later.environment_id]) {
      const flag = expectStatus(await client.get(`${envFlags(environmentId)}/${key}`, { token: a.admin.token }), 200);
      assert.deepEqual([flag.rules, flag.enabled, flag.off_variant_key, flag.version], [SERVES_ON, false, null, 0], environmentId);
      const listed = expectStatus(await client.get(envFlags(environmentId), { token: a.admin.token }), 200).find((f: Json) => f.key === key);
      assert.deepEqual(listed.rules, SERVES_ON);
    }
    // Unwritten, the sync stream carries the same rules; the flag is off (no off variant: "" and null).
    assert.deepEqual(await syncedRules(staging.rawKey, staging.id, key), [{ id: 'default', conditions: [], segment_keys: [], variant_key: 'on' }]);
    assert.deepEqual(await evaluated(staging.rawKey, staging.id, key, 'DISABLED'), { variant_key: '', value: null, reason: 'DISABLED' });

    const on = await turnOn(staging.id, key, 0);
    assert.deepEqual([on.rules, on.enabled, on.version], [SERVES_ON, true, 1]);
    assert.deepEqual(await evaluated(staging.rawKey, staging.id, key, 'TARGETING_MATCH'), { variant_key: 'on', value: true, reason: 'TARGETING_MATCH' });
    assert.deepEqual(await ofrep(staging.rawKey, key), { key, value: true, reason: 'TARGETING_MATCH', variant: 'on', metadata: { rule_id: 'default' } });
    // The first write of staging is one environment entry whose before is what staging showed.
    const history = await readAll(client, a.admin.token, (q) => flagHistoryPath(staging.id, key, q));
    assert.deepEqual(history.map((entry) => [entry.action, entry.environment_id ?? 'definition']), [['flag.update', staging.id], ['flag.create', 'definition']]);
    assert.deepEqual([history[0].before.rules, history[0].before.version, history[0].after.rules, history[0].after.version], [SERVES_ON, 0, SERVES_ON, 1]);
    // The production environment is still unwritten and off.
    assert.deepEqual(await evaluated(a.rawKey, a.environmentId, key, 'DISABLED'), { variant_key: '', value: null, reason: 'DISABLED' });
  });

  test('a first write naming an off variant stores the default rule for it; one changing the variants, for them', async () => {
    const key = `first-${unique()}`;
    const variants = [{ key: 'control', value: 'Control' }, { key: 'treatment', value: 'Treatment' }];
    expectStatus(await client.post(projectFlags(a.projectId), { token: a.admin.token, body: { flag: { key, value_type: 'string', variants } } }), 201);
    // Unwritten, with no off variant, staging's default rule serves the first variant ...
    const shown = expectStatus(await client.get(`${envFlags(staging.id)}/${key}`, { token: a.admin.token }), 200);
    assert.deepEqual(shown.rules, [{ id: 'default', conditions: [], variant_key: 'control' }]);
    // ... and turned on with `control` as its off variant it serves the first other one.
    const on = expectStatus(await put(client, `${envFlags(staging.id)}/${key}`, { token: a.admin.token, body: { flag: { off_variant_key: 'control' }, enabled: true, version: 0 } }), 200);
    assert.deepEqual([on.off_variant_key, on.rules], ['control', SERVES_TREATMENT]);
    assert.deepEqual(await evaluated(staging.rawKey, staging.id, key, 'TARGETING_MATCH'), { variant_key: 'treatment', value: 'Treatment', reason: 'TARGETING_MATCH' });
    // The production environment is still unwritten: new variants through its route give it their
    // default rule. Staging serves both old ones, so they stay (removing them is refused: 409).
    expectStatus(
      await put(client, `${envFlags(a.environmentId)}/${key}`, { token: a.admin.token, body: { flag: { variants: [{ key: 'x', value: 'X' }, { key: 'y', value: 'Y' }] } } }),
      409,
    );
    const renamed = expectStatus(
      await put(client, `${envFlags(a.environmentId)}/${key}`, { token: a.admin.token, body: { flag: { variants: [{ key: 'x', value: 'X' }, { key: 'y', value: 'Y' }, ...variants] } } }),
      200,
    );
    assert.deepEqual([renamed.rules, renamed.version], [[{ id: 'default', conditions: [], variant_key: 'x' }], 1]);
  });

  test('a rules write to an unwritten environment replaces the default rule; a hashing write keeps it', async () => {
    const key = `write-${unique()}`;
    expectStatus(await client.post(envFlags(a.environmentId), { token: a.admin.token, body: stringFlag(key) }), 201);
    const hashed = expectStatus(
      await put(client, `${envFlags(staging.id)}/${key}/hashing`, { token: a.admin.token, body: { configs: [{ parameter_key: 'account', parameter_type: 'user', order: 0 }] } }),
      200,
    );
    // Staging has no off variant: the first variant, `control`, is what its default rule serves.
    assert.deepEqual([hashed.flag.rules, hashed.flag.version], [[{ id: 'default', conditions: [], variant_key: 'control' }], 1]);
    const emptied = expectStatus(await put(client, `${envFlags(staging.id)}/${key}/rules`, { token: a.admin.token, body: { rules: [] } }), 202);
    assert.deepEqual(emptied.rules, []);
  });
});
