import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SwitchyardClient, silentLogger, type ChangeEvent } from '@switchyard/sdk';
import { createClientKey, markClientVisible } from './support/client-fixtures.ts';
import { ACTIVE, createExperiment, moveThrough, prepareEnvironment, splitFlag } from './support/experiment-fixtures.ts';
import { createFlag, createSegment, envFlags, evaluate, onOffFlag, put } from './support/flag-client.ts';
import { eventually, seedPrerequisites } from './support/prerequisite-seeding.ts';
import { openInternalSync, openSync, sdkKeyMetadata } from './support/sync-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Json, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Issue 37, prerequisites on every evaluation host: REST evaluate, OFREP (server and client keys)
 * and the SDK's local evaluation from the sync stream, in both topologies. The prerequisites are
 * put into the definitions the services load (support/prerequisite-seeding.ts), apart from the
 * write routes. Every expected answer is derived by hand from the flags below:
 *
 * - gate (server-only): `on` for plan = pro, else no rule matches: `off` (DEFAULT);
 * - feature (client-visible): everyone `on`, prerequisite gate ∈ {on};
 * - chain: everyone `on`, prerequisite feature ∈ {on} (a dependent of a dependent);
 * - listgate: `on` for members of the list segment beta (u-beta), else `off`;
 * - listdep: everyone `on`, prerequisite listgate ∈ {on};
 * - checkout, upsell: 50/50 control/treatment splits, each under an ACTIVE experiment; upsell's
 *   prerequisite is checkout ∈ {control, treatment} (always holds).
 */
let ts: TestServer;
let client: ApiClient;
let a: Tenant;

const PREREQUISITES = {
  feature: [{ flag_key: 'gate', variant_keys: ['on'] }],
  chain: [{ flag_key: 'feature', variant_keys: ['on'] }],
  listdep: [{ flag_key: 'listgate', variant_keys: ['on'] }],
  upsell: [{ flag_key: 'checkout', variant_keys: ['control', 'treatment'] }],
};

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'prerequisites');
  const token = a.admin.token;
  await prepareEnvironment(client, a);
  await createFlag(client, token, a.environmentId, onOffFlag('gate', [{ conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }], variant_key: 'on' }]));
  await createFlag(client, token, a.environmentId, onOffFlag('feature', [{ conditions: [], variant_key: 'on' }]));
  await createFlag(client, token, a.environmentId, onOffFlag('chain', [{ conditions: [], variant_key: 'on' }]));
  await createSegment(client, token, a.environmentId, { key: 'beta', context_type: 'user', kind: 'list', included_keys: ['u-beta'] });
  await createFlag(client, token, a.environmentId, onOffFlag('listgate', [{ conditions: [], segment_keys: ['beta'], variant_key: 'on' }]));
  await createFlag(client, token, a.environmentId, onOffFlag('listdep', [{ conditions: [], variant_key: 'on' }]));
  await createFlag(client, token, a.environmentId, splitFlag('upsell'));
  await moveThrough(client, a, String((await createExperiment(client, a)).id), [ACTIVE]);
  await moveThrough(client, a, String((await createExperiment(client, a, { name: 'upsell test', flag_key: 'upsell' })).id), [ACTIVE]);
  await markClientVisible(ts, a, ['feature']);
  seedPrerequisites(ts, a, PREREQUISITES);
});
after(() => ts.stop());

const evaluateOne = async (flagKey: string, contextKey: string, plan = 'free'): Promise<Json> =>
  expectStatus(await evaluate(client, a.rawKey, a.environmentId, contextKey, { flag_key: flagKey, attributes: { plan } }), 200, `evaluate ${flagKey}`);

/** Waits until the evaluation hosts (a gateway follows a moment later) evaluate with the seeded prerequisites. */
const seeded = () =>
  eventually(async () => {
    assert.equal((await evaluateOne('feature', 'u-free')).reason, 'PREREQUISITE_FAILED');
  });

async function ofrep(path: string, key: string, context: Record<string, unknown>): Promise<{ status: number; body: Json; text: string }> {
  const response = await fetch(`${ts.base}/ofrep/v1/evaluate/flags${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sdk-key': key },
    body: JSON.stringify({ context }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text), text };
}

describe('REST evaluate', () => {
  test('a dependent serves its rules while its prerequisite holds, else its off variant with PREREQUISITE_FAILED naming it', async () => {
    await seeded();
    // Alternating, so answers kept per outcome (the single-flag fast path) are not mixed up.
    for (let round = 0; round < 2; round++) {
      const held = await evaluateOne('feature', `u-pro-${round}`, 'pro');
      assert.deepEqual(
        { variant_key: held.variant_key, value: held.value, reason: held.reason, is_enabled: held.is_enabled, prerequisite_key: held.prerequisite_key },
        { variant_key: 'on', value: 'ON', reason: 'TARGETING_MATCH', is_enabled: true, prerequisite_key: undefined },
      );
      const failed = await evaluateOne('feature', `u-free-${round}`, 'free');
      assert.deepEqual(
        { variant_key: failed.variant_key, value: failed.value, reason: failed.reason, is_enabled: failed.is_enabled, prerequisite_key: failed.prerequisite_key },
        { variant_key: 'off', value: 'OFF', reason: 'PREREQUISITE_FAILED', is_enabled: true, prerequisite_key: 'gate' },
      );
    }
    // A chain: chain ← feature ← gate. For plan free feature serves off, so chain's prerequisite fails on feature.
    assert.equal((await evaluateOne('chain', 'u-pro', 'pro')).variant_key, 'on');
    const chained = await evaluateOne('chain', 'u-free', 'free');
    assert.equal(chained.reason, 'PREREQUISITE_FAILED');
    assert.equal(chained.prerequisite_key, 'feature');
  });

  test('every flag at once: the dependents carry the reason and prerequisite_key', async () => {
    await seeded();
    const body = expectStatus(await evaluate(client, a.rawKey, a.environmentId, 'u-all', { attributes: { plan: 'free' } }), 200, 'evaluate all');
    const byKey = new Map((body.flags as Json[]).map((f) => [f.flag_key, f]));
    assert.equal(byKey.get('gate').reason, 'DEFAULT');
    assert.equal(byKey.get('feature').reason, 'PREREQUISITE_FAILED');
    assert.equal(byKey.get('feature').prerequisite_key, 'gate');
    assert.equal(byKey.get('chain').prerequisite_key, 'feature');
    assert.equal(byKey.get('listdep').prerequisite_key, 'listgate');
    assert.equal(byKey.get('upsell').prerequisite_key, undefined, 'checkout serves control or treatment: listed');
  });

  test('a prerequisite reading a list segment: its membership is looked up for the dependent', async () => {
    await seeded();
    const member = await evaluateOne('listdep', 'u-beta');
    assert.deepEqual([member.variant_key, member.reason], ['on', 'TARGETING_MATCH']);
    const other = await evaluateOne('listdep', 'u-other');
    assert.deepEqual([other.variant_key, other.reason, other.prerequisite_key], ['off', 'PREREQUISITE_FAILED', 'listgate']);
  });

  test('evaluating a dependent records its exposure, never its prerequisite’s', async () => {
    await seeded();
    const scope = { orgId: a.orgId, projectId: a.projectId, environmentId: a.environmentId };
    const count = (flagKey: string) => ts.server.repos.exposures.count(scope, { flagKey });
    const checkoutBefore = await count('checkout');
    const upsellBefore = await count('upsell');
    for (let i = 0; i < 5; i++) {
      const result = await evaluateOne('upsell', `u-exposed-${i}`);
      assert.equal(result.reason, 'SPLIT', 'checkout serves control or treatment, both listed: upsell splits');
    }
    assert.equal(await count('upsell'), upsellBefore + 5, 'one exposure per evaluation of the dependent');
    assert.equal(await count('checkout'), checkoutBefore, 'none for its prerequisite, under an ACTIVE experiment too');
    await evaluateOne('checkout', 'u-exposed-direct');
    assert.equal(await count('checkout'), checkoutBefore + 1, 'checkout evaluated itself records one');
  });
});

describe('OFREP', () => {
  test('server key: PREREQUISITE_FAILED as it is, metadata.prerequisite_key; the targeting key is needed through the prerequisite', async () => {
    await seeded();
    const failed = await ofrep('/feature', a.rawKey, { targetingKey: 'u-1', plan: 'free' });
    assert.equal(failed.status, 200);
    assert.deepEqual(failed.body, { key: 'feature', reason: 'PREREQUISITE_FAILED', variant: 'off', value: 'OFF', metadata: { prerequisite_key: 'gate' } });
    const held = await ofrep('/feature', a.rawKey, { targetingKey: 'u-1', plan: 'pro' });
    assert.deepEqual([held.body.value, held.body.reason, held.body.metadata.prerequisite_key], ['ON', 'TARGETING_MATCH', undefined]);
    // feature's own rule serves everyone alike, but gate's compares an attribute of the context.
    const missing = await ofrep('/feature', a.rawKey, { plan: 'pro' });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.errorCode, 'TARGETING_KEY_MISSING');
    const list = await ofrep('/listdep', a.rawKey, { targetingKey: 'u-other' });
    assert.deepEqual([list.body.value, list.body.reason, list.body.metadata.prerequisite_key], ['OFF', 'PREREQUISITE_FAILED', 'listgate']);
    const bulk = await ofrep('', a.rawKey, { targetingKey: 'u-beta' });
    const listdep = (bulk.body.flags as Json[]).find((f) => f.key === 'listdep');
    assert.deepEqual([listdep.value, listdep.reason], ['ON', 'TARGETING_MATCH']);
  });

  test('client key: a client-visible dependent of a server-only prerequisite; the prerequisite is never shown', async () => {
    await seeded();
    const key = await createClientKey(client, a);
    const failed = await eventually(async () => {
      const answer = await ofrep('', key.raw, { targetingKey: 'u-c', plan: 'free' });
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body.flags, [{ key: 'feature', value: 'OFF', variant: 'off', reason: 'PREREQUISITE_FAILED' }]);
      return answer;
    });
    assert.ok(!failed.text.includes('gate'), 'neither the prerequisite’s key nor its answer');
    const held = await ofrep('', key.raw, { targetingKey: 'u-c', plan: 'pro' });
    assert.deepEqual(held.body.flags, [{ key: 'feature', value: 'ON', variant: 'on', reason: 'TARGETING_MATCH' }]);
    const single = await ofrep('/feature', key.raw, { targetingKey: 'u-c', plan: 'free' });
    assert.deepEqual(single.body, { key: 'feature', value: 'OFF', variant: 'off', reason: 'PREREQUISITE_FAILED' });
    const hidden = await ofrep('/gate', key.raw, { targetingKey: 'u-c', plan: 'pro' });
    assert.equal(hidden.status, 404, 'the server-only prerequisite does not exist for a client key');
  });
});

describe('the sync streams', () => {
  test('flags carry their prerequisites and every message names the features the definitions use', async () => {
    await seeded();
    for (const [name, stream] of [
      ['public', openSync(ts.server.syncGrpcPort, {}, sdkKeyMetadata(a.rawKey))],
      ['internal', openInternalSync(ts.server.grpcPort, {}, sdkKeyMetadata(a.rawKey))],
    ] as const) {
      try {
        const first = await stream.next();
        assert.equal(first.full_snapshot, true);
        assert.deepEqual(first.features, ['prerequisites'], `${name}: features`);
        const feature = first.flags.find((flag) => flag.key === 'feature')!;
        assert.deepEqual(feature.prerequisites, [{ flag_key: 'gate', variant_keys: ['on'] }], `${name}: FeatureFlag.prerequisites`);
        assert.deepEqual(first.flags.find((flag) => flag.key === 'gate')!.prerequisites, [], `${name}: none`);
      } finally {
        stream.cancel();
      }
    }
  });
});

describe('the SDK evaluating locally', () => {
  test('prerequisites from the sync stream; a change of only the prerequisite is a change of its dependents, transitively', async () => {
    await seeded();
    const sdk = new SwitchyardClient({
      sdkKey: a.rawKey,
      baseUrl: ts.base,
      syncUrl: `127.0.0.1:${ts.server.syncGrpcPort}`,
      logger: silentLogger,
      events: { enabled: false },
    });
    try {
      await sdk.waitForReady({ timeoutMs: 15_000 });
      const free = { key: 'u-sdk', attributes: { plan: 'free' } };
      const pro = { key: 'u-sdk', attributes: { plan: 'pro' } };
      assert.deepEqual(sdk.variationDetail('feature', free, 'default'), { value: 'OFF', variant_key: 'off', reason: 'PREREQUISITE_FAILED', prerequisite_key: 'gate' });
      assert.deepEqual(sdk.variationDetail('feature', pro, 'default'), { value: 'ON', variant_key: 'on', reason: 'TARGETING_MATCH' });
      assert.equal(sdk.variation('chain', pro, 'default'), 'ON');
      // The prerequisite's list segment is asked for (variationDetailAsync resolves memberships first).
      assert.equal((await sdk.variationDetailAsync('listdep', { key: 'u-beta' }, 'default')).value, 'ON');
      assert.equal((await sdk.variationDetailAsync('listdep', { key: 'u-other' }, 'default')).reason, 'PREREQUISITE_FAILED');

      const changes: ChangeEvent[] = [];
      const changed = new Promise<void>((resolve) =>
        sdk.on('change', (event) => {
          changes.push(event);
          if (event.flag_keys.includes('gate')) resolve();
        }),
      );
      // Only gate changes (turned off); feature and chain depend on it.
      expectStatus(await put(client, `${envFlags(a.environmentId)}/gate`, { token: a.admin.token, body: { enabled: false } }), 200, 'turn gate off');
      await changed;
      const keys = changes.flatMap((event) => event.flag_keys);
      assert.ok(keys.includes('feature'), `feature is among the changed flags (${keys.join(', ')})`);
      assert.ok(keys.includes('chain'), 'chain, a dependent of a dependent, too');
      assert.ok(!keys.includes('listdep') && !keys.includes('upsell'), 'flags not depending on gate did not change');
      assert.deepEqual(sdk.variationDetail('feature', pro, 'default'), { value: 'OFF', variant_key: 'off', reason: 'PREREQUISITE_FAILED', prerequisite_key: 'gate' });
    } finally {
      await sdk.close();
      expectStatus(await put(client, `${envFlags(a.environmentId)}/gate`, { token: a.admin.token, body: { enabled: true } }), 200, 'turn gate on again');
    }
  });
});
