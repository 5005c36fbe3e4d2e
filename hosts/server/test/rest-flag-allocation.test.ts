import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { bulkEvaluator, createFlag, envFlags, inChunks, put } from './support/flag-client.ts';
import { api, expectStatus, loginAdmin, seedTenant, type ApiClient, type Tenant } from './support/rest-client.ts';
import { portFrom, spawnServer } from './support/server-process.ts';
import { TEST_JWT_SECRET, startTestServer, type TestServer } from './support/test-server.ts';

/**
 * Percentage allocation through REST: a 50/50 split over 10,000 keys and a 10% → 20% rollout,
 * evaluated in an environment of their own so that one evaluate-all call per key answers both.
 */

const KEYS = Array.from({ length: 10_000 }, (_, i) => `user-${i}`);
/**
 * The keys the second process is asked about: whatever made bucketing depend on the process (a
 * seed, a clock, an order) would show in nearly every key, and 10,000 more requests cost ~3 s of CPU.
 */
const ELSEWHERE_KEYS = KEYS.slice(0, 2_000);
const IN_FLIGHT = 100;

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let environmentId: string;
let rawKey: string;

const buckets = (pairs: Array<[string, number]>) => pairs.map(([variant_key, weight_milli]) => ({ variant_key, weight_milli }));
const variants = (...keys: string[]) => keys.map((key) => ({ key, value: key }));
const splitRule = (pairs: Array<[string, number]>) => [{ id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: buckets(pairs) } }];

before(async () => {
  ts = await startTestServer();
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'split');
  const environment = expectStatus(await client.post(`/v1/management/projects/${a.projectId}/environments`, { token: a.admin.token, body: { name: 'split-only' } }), 201);
  environmentId = environment.environment_id;
  rawKey = expectStatus(await client.post(`/v1/management/environments/${environmentId}/sdk-keys`, { token: a.admin.token }), 201).raw_key;
  await createFlag(client, a.admin.token, environmentId, {
    flag: { key: 'rollout', value_type: 'string', variants: variants('on', 'off'), off_variant_key: 'off', rules: splitRule([['on', 100], ['off', 900]]) },
    enabled: true,
  });
  await createFlag(client, a.admin.token, environmentId, {
    flag: { key: 'split', value_type: 'string', variants: variants('a', 'b'), off_variant_key: 'a', rules: splitRule([['a', 500], ['b', 500]]) },
    enabled: true,
  });
});
after(() => ts.stop());

interface Pass {
  split: string[];
  rollout: string[];
}

/** Every key evaluated once (all flags per call) through the REST API at `base`. */
async function evaluateAll(base: string, keys: string[] = KEYS): Promise<Pass> {
  const evaluator = bulkEvaluator(base, rawKey, environmentId);
  try {
    const answers = await inChunks(keys, IN_FLIGHT, async (key) => {
      const { status, body } = await evaluator.evaluate(key);
      assert.equal(status, 200, JSON.stringify(body));
      const byKey = new Map<string, { variant_key: string; reason: string }>(body.flags.map((f: { flag_key: string }) => [f.flag_key, f]));
      const split = byKey.get('split');
      const rollout = byKey.get('rollout');
      assert.equal(split?.reason, 'SPLIT');
      assert.equal(rollout?.reason, 'SPLIT');
      return { split: split.variant_key, rollout: rollout.variant_key };
    });
    return { split: answers.map((x) => x.split), rollout: answers.map((x) => x.rollout) };
  } finally {
    evaluator.close();
  }
}

const share = (values: string[], variant: string): number => values.filter((v) => v === variant).length / values.length;

test('a 50/50 split and a 10% rollout over 10,000 keys: within ±2%, identical across calls and (for 2,000 of them) across two server processes; 10% → 20% keeps every earlier member', async () => {
  const first = await evaluateAll(ts.base);
  assert.ok(Math.abs(share(first.split, 'a') - 0.5) <= 0.02, `split share of a: ${share(first.split, 'a')}`);
  assert.ok(Math.abs(share(first.rollout, 'on') - 0.1) <= 0.02, `rollout share: ${share(first.rollout, 'on')}`);

  // A second OS process (the real entry point) on the same database: bucketing depends on
  // nothing of the process it runs in.
  const other = spawnServer({ APP_ENV: 'production', DATABASE_URL: ts.db.url, JWT_SECRET: TEST_JWT_SECRET });
  try {
    const httpPort = portFrom(await other.waitForLine(/REST listening/));
    await other.waitForLine(/"msg":"ready"/);
    const elsewhere = await evaluateAll(`http://127.0.0.1:${httpPort}`, ELSEWHERE_KEYS);
    const firstOfThose = { split: first.split.slice(0, ELSEWHERE_KEYS.length), rollout: first.rollout.slice(0, ELSEWHERE_KEYS.length) };
    assert.deepEqual(elsewhere, firstOfThose, 'the other process answers the same');
    other.child.kill('SIGTERM');
    assert.equal(await other.exited, 0);
  } finally {
    if (other.child.exitCode === null) other.child.kill('SIGKILL');
  }

  // Raise the rollout, then call the first instance again: the split flag (untouched) must answer
  // exactly as in the first call, and the rollout only gain members.
  const rules = splitRule([['on', 200], ['off', 800]]);
  expectStatus(await put(client, `${envFlags(environmentId)}/rollout/rules`, { token: a.admin.token, body: { rules } }), 202);
  const again = await evaluateAll(ts.base);
  assert.deepEqual(again.split, first.split, 'a second call on the same instance answers the same');
  assert.ok(Math.abs(share(again.rollout, 'on') - 0.2) <= 0.02, `raised rollout share: ${share(again.rollout, 'on')}`);
  const dropped = KEYS.filter((_, i) => first.rollout[i] === 'on' && again.rollout[i] !== 'on');
  assert.deepEqual(dropped, [], 'every key in the 10% rollout stays in the 20% rollout');
});
