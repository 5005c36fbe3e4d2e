import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { OpenFeature } from '@openfeature/server-sdk';
import { KNOWN_EVALUATION_FEATURES, SwitchyardClient, TestData, type ChangeEvent } from '../src/index.ts';
import { SwitchyardProvider } from '../src/openfeature/index.ts';
import { boolFlag } from './fixtures.ts';
import { boolFlagMessage, snapshotMessage, startFakeSyncServer, type FakeSyncServer } from './fake-sync-server.ts';

/**
 * Prerequisites in the SDK (issue 37) against a hand-driven FlagSyncService: local evaluation with
 * the store's flags, change events for dependents, and the refusal of definitions that use an
 * evaluation feature the SDK does not know. Expected values are derived by hand:
 *
 * - gate: enabled, no rules, serves its off variant `on` (true) while `boolFlagMessage('gate', true)`,
 *   `off` (false) once resent as `boolFlagMessage('gate', false)`;
 * - dep: everyone `on` (true) by rule `all`, off variant `off` (false), prerequisite gate ∈ {on};
 * - chain: the same, prerequisite dep ∈ {on}; other: no prerequisite, serves false.
 */

const servers: FakeSyncServer[] = [];
const clients: SwitchyardClient[] = [];
after(async () => {
  for (const client of clients) await client.close();
  for (const server of servers) await server.stop();
});

const dependent = (key: string, on: string) => ({
  ...boolFlagMessage(key, false, [{ variant_key: 'on', id: 'all' }]),
  prerequisites: [{ flag_key: on, variant_keys: ['on'] }],
});
const FLAGS = [boolFlagMessage('gate', true), dependent('dep', 'gate'), dependent('chain', 'dep'), { ...boolFlagMessage('other', false), client_visible: true }];

async function setup(): Promise<{ server: FakeSyncServer; client: SwitchyardClient; errors: Array<{ message: string; fields: unknown }> }> {
  const server = await startFakeSyncServer();
  servers.push(server);
  const errors: Array<{ message: string; fields: unknown }> = [];
  const client = new SwitchyardClient({
    sdkKey: 'sdk_test',
    baseUrl: 'http://127.0.0.1:1',
    syncUrl: `127.0.0.1:${server.port}`,
    logger: { debug() {}, info() {}, warn() {}, error: (message: string, fields?: unknown) => errors.push({ message, fields }) },
    events: { enabled: false },
    // Nothing answers at baseUrl: close() would wait for the counts' retries (~15 s per client).
    evaluationCounts: { enabled: false },
    reconnect: { baseDelayMs: 20, maxDelayMs: 50 },
  });
  clients.push(client);
  return { server, client, errors };
}

function nextChange(client: SwitchyardClient): Promise<ChangeEvent> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no change event')), 15_000);
    client.once('change', (event) => {
      clearTimeout(timer);
      resolve(event);
    });
  });
}

const user = { key: 'u' };

describe('prerequisites from the sync stream', () => {
  test('evaluated locally; a change of only the prerequisite fires change for its dependents and theirs', async () => {
    const { server, client } = await setup();
    const stream = await server.nextStream();
    stream.send(snapshotMessage(1, FLAGS, { features: ['prerequisites'] }));
    await client.waitForReady({ timeoutMs: 15_000 });
    assert.deepEqual(client.variationDetail('dep', user, false), { value: true, variant_key: 'on', reason: 'TARGETING_MATCH' });
    assert.equal(client.boolVariation('chain', user, false), true);

    const changed = nextChange(client);
    stream.send({ sequence_number: 2, flags: [boolFlagMessage('gate', false)], environment_id: 'env-1', project_id: 'proj-1', features: ['prerequisites'] });
    assert.deepEqual((await changed).flag_keys, ['chain', 'dep', 'gate'], 'other does not depend on gate');
    assert.deepEqual(client.variationDetail('dep', user, true), { value: false, variant_key: 'off', reason: 'PREREQUISITE_FAILED', prerequisite_key: 'gate' });
    assert.deepEqual(client.variationDetail('chain', user, true), { value: false, variant_key: 'off', reason: 'PREREQUISITE_FAILED', prerequisite_key: 'dep' });
  });

  test('a feature the SDK does not know: every evaluation serves the default with an error, logged once, until it goes away', async () => {
    assert.deepEqual([...KNOWN_EVALUATION_FEATURES], ['bucket_by_project', 'prerequisites']);
    const { server, client, errors } = await setup();
    const stream = await server.nextStream();
    stream.send(snapshotMessage(1, FLAGS, { features: ['prerequisites', 'quantum-rollouts'] }));
    await client.waitForReady({ timeoutMs: 15_000 });

    for (const key of ['other', 'dep', 'gate']) {
      const detail = client.variationDetail(key, user, 'fallback');
      assert.equal(detail.value, 'fallback');
      assert.equal(detail.reason, 'ERROR');
      assert.equal(detail.error_code, 'GENERAL');
      assert.match(detail.error_message ?? '', /quantum-rollouts/);
    }
    assert.deepEqual(client.allFlags(user), { chain: null, dep: null, gate: null, other: null });
    assert.deepEqual(client.ofrepBootstrap(user), { flags: [{ key: 'other', errorCode: 'GENERAL' }] });
    assert.equal(errors.length, 1, 'logged once');
    assert.match(JSON.stringify(errors[0]), /quantum-rollouts/);

    // The same definitions without it: evaluation resumes, and every flag changed.
    const changed = nextChange(client);
    stream.send({ sequence_number: 2, environment_id: 'env-1', project_id: 'proj-1', features: ['prerequisites'] });
    assert.deepEqual((await changed).flag_keys, ['chain', 'dep', 'gate', 'other']);
    assert.equal(client.boolVariation('dep', user, false), true);
    assert.equal(errors.length, 1);
  });
});

describe('OpenFeature', () => {
  test('PREREQUISITE_FAILED is passed on as it is, with the prerequisite in flagMetadata', async () => {
    const td = new TestData()
      .setFlag(boolFlag('gate', false))
      .setFlag({ ...boolFlag('dep', false), rules: [{ id: 'all', conditions: [], variant_key: 'on' }], prerequisites: [{ flag_key: 'gate', variant_keys: ['on'] }] });
    const provider = new SwitchyardProvider({ testData: td });
    await OpenFeature.setProviderAndWait('prerequisites', provider);
    try {
      const details = await OpenFeature.getClient('prerequisites').getBooleanDetails('dep', true, { targetingKey: 'u' });
      assert.equal(details.value, false);
      assert.equal(details.reason, 'PREREQUISITE_FAILED');
      assert.equal(details.variant, 'off');
      assert.deepEqual(details.flagMetadata, { prerequisite_key: 'gate' });
    } finally {
      await OpenFeature.clearProviders();
    }
  });
});
