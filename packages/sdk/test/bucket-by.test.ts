import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { SwitchyardClient } from '../src/index.ts';
import { boolFlagMessage, snapshotMessage, startFakeSyncServer, type FakeSyncServer } from './fake-sync-server.ts';

/**
 * `bucket_by` in the SDK (issue 37): a FeatureFlag with FLAG_BUCKET_BY_PROJECT, received over a
 * hand-driven FlagSyncService, buckets without the environment id. Expected variants come from the
 * pure-Python MurmurHash3_x86_32 of packages/core/test-vectors/README.md, run outside the repo on
 * `user/split/proj-1` (project) and `user/split/proj-1/env-N` (environment), 50/50 `on` below 50000:
 *
 *   u1: project 81252 off; env-1 44084 on;  env-2 99712 off
 *   u3: project 72549 off; env-1 88425 off; env-2 12908 on
 *   u5: project  1897 on;  env-1 26023 on;  env-2 18260 on
 *   u6: project 47173 on;  env-1 70000 off; env-2  4199 on
 */

const servers: FakeSyncServer[] = [];
const clients: SwitchyardClient[] = [];
after(async () => {
  for (const client of clients) await client.close();
  for (const server of servers) await server.stop();
});

const enc = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');
const half = {
  id: 'half',
  rule_payload: enc({ conditions: [] }),
  variant_key: '',
  allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] },
};

/** A client synced to one environment whose only flag is `split` with the given bucket_by. */
async function clientIn(environmentId: string, bucketBy: string | undefined): Promise<SwitchyardClient> {
  const server = await startFakeSyncServer();
  servers.push(server);
  const flag = { ...boolFlagMessage('split', false, [half]), ...(bucketBy === undefined ? {} : { bucket_by: bucketBy }) };
  server.onStream = (stream) => stream.send(snapshotMessage(1, [flag], { environment_id: environmentId, features: bucketBy === 'FLAG_BUCKET_BY_PROJECT' ? ['bucket_by_project'] : [] }));
  const client = new SwitchyardClient({
    sdkKey: 'sdk_test',
    baseUrl: 'http://127.0.0.1:1',
    syncUrl: `127.0.0.1:${server.port}`,
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    events: { enabled: false },
    // Nothing answers at baseUrl: close() would wait for the counts' retries (~15 s per client).
    evaluationCounts: { enabled: false },
    reconnect: { baseDelayMs: 20, maxDelayMs: 50 },
  });
  clients.push(client);
  await client.waitForReady({ timeoutMs: 15_000 });
  return client;
}

const USERS = ['u1', 'u3', 'u5', 'u6'];
const variants = (client: SwitchyardClient): string[] => USERS.map((key) => client.variationDetail('split', { key }, true).variant_key);

describe('bucket_by in the SDK', () => {
  test('FLAG_BUCKET_BY_PROJECT: the same bucket in both environments, without the environment id', async () => {
    const one = await clientIn('env-1', 'FLAG_BUCKET_BY_PROJECT');
    const two = await clientIn('env-2', 'FLAG_BUCKET_BY_PROJECT');
    assert.deepEqual(variants(one), ['off', 'off', 'on', 'on']);
    assert.deepEqual(variants(two), ['off', 'off', 'on', 'on']);
    assert.equal(one.variationDetail('split', { key: 'u1' }, true).reason, 'SPLIT');
  });

  test('FLAG_BUCKET_BY_ENVIRONMENT or absent: each environment buckets with its id', async () => {
    assert.deepEqual(variants(await clientIn('env-1', 'FLAG_BUCKET_BY_ENVIRONMENT')), ['on', 'off', 'on', 'off']);
    assert.deepEqual(variants(await clientIn('env-2', undefined)), ['off', 'on', 'on', 'on']);
  });
});
