import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createFlag, createSegment, envFlags, evaluate, inChunks, onOffFlag, put } from './support/flag-client.ts';
import { api, expectError, expectStatus, loginAdmin, seedTenant, unique, type ApiClient, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

let ts: TestServer;
let client: ApiClient;
let a: Tenant;
let b: Tenant;
let listSegment: string;
let ruleSegment: string;

before(async () => {
  ts = await startTestServer({}, { share: true });
  client = api(ts.base);
  const root = await loginAdmin(client);
  a = await seedTenant(client, root.token, 'rules-a');
  b = await seedTenant(client, root.token, 'rules-b');
  listSegment = `beta-${unique()}`;
  ruleSegment = `pros-${unique()}`;
  await createSegment(client, a.admin.token, a.environmentId, { key: listSegment, context_type: 'user', kind: 'list', included_keys: ['u1'] });
  await createSegment(client, a.admin.token, a.environmentId, {
    key: ruleSegment,
    context_type: 'user',
    kind: 'rule',
    conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }],
  });
});
after(() => ts.stop());

/** A fresh enabled on/off flag in tenant A; returns its path. */
async function newFlag(label: string): Promise<string> {
  const key = `${label}-${unique()}`;
  await createFlag(client, a.admin.token, a.environmentId, onOffFlag(key));
  return `${envFlags(a.environmentId)}/${key}`;
}

const split = (on: number) => ({ buckets: [{ variant_key: 'on', weight_milli: on }, { variant_key: 'off', weight_milli: 1000 - on }] });

describe('PUT .../rules', () => {
  test('202 with the flag: rules replaced in order, ids given to rules without one', async () => {
    const path = await newFlag('rules');
    const rules = [
      { id: 'pros', description: 'paying users', conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }], variant_key: 'on' },
      { conditions: [], segment_keys: [listSegment, ruleSegment], variant_key: 'on' },
      { conditions: [{ context_type: 'user', attribute: 'country', op: 'in', values: ['fr', 'de'], negate: true }], allocation: split(500) },
    ];
    const flag = expectStatus(await put(client, `${path}/rules`, { token: a.admin.token, body: { rules, version: 1 } }), 202);
    assert.equal(flag.version, 2);
    assert.deepEqual(flag.rules, [
      rules[0],
      { id: 'rule-2', conditions: [], segment_keys: [listSegment, ruleSegment], variant_key: 'on' },
      { id: 'rule-3', conditions: rules[2]!.conditions, allocation: { context_hash_specs: {}, buckets: split(500).buckets } },
    ]);
    assert.deepEqual(expectStatus(await client.get(path, { token: a.admin.token }), 200).rules, flag.rules);
    const cleared = expectStatus(await put(client, `${path}/rules`, { token: a.admin.token, body: { rules: [] } }), 202);
    assert.deepEqual([cleared.rules, cleared.version], [[], 3]);
  });

  test('400 INVALID_ARGUMENT naming the field for invalid rules', async () => {
    const path = `${await newFlag('invalid')}/rules`;
    const cases: Array<[string, unknown, RegExp]> = [
      ['a missing variant', { conditions: [], variant_key: 'nope' }, /rules\[0\]\.variant_key/],
      ['a missing variant in a bucket', { conditions: [], allocation: { buckets: [{ variant_key: 'nope', weight_milli: 1000 }] } }, /rules\[0\]\.allocation\.buckets\[0\]\.variant_key/],
      ['a missing segment', { conditions: [], segment_keys: ['no-such-segment'], variant_key: 'on' }, /rules.*no-such-segment/],
      ['weights short of 1000', { conditions: [], allocation: { buckets: [{ variant_key: 'on', weight_milli: 400 }, { variant_key: 'off', weight_milli: 500 }] } }, /rules\[0\]\.allocation\.buckets.*1000/],
      ['weights over 1000', { conditions: [], allocation: { buckets: [{ variant_key: 'on', weight_milli: 1000 }, { variant_key: 'off', weight_milli: 1 }] } }, /rules\[0\]\.allocation\.buckets/],
      ['a regex too long', { conditions: [{ attribute: 'email', op: 'matches', values: ['a'.repeat(1001)] }], variant_key: 'on' }, /rules\[0\]\.conditions\[0\]\.values\[0\].*at most 1000/],
      ['a regex that does not compile', { conditions: [{ attribute: 'email', op: 'matches', values: ['(unclosed'] }], variant_key: 'on' }, /rules\[0\]\.conditions\[0\]\.values\[0\].*regular expression/],
      ['an unknown op', { conditions: [{ attribute: 'email', op: 'like', values: ['x'] }], variant_key: 'on' }, /rules\.0\.conditions\.0\.op/],
      ['a number op on text', { conditions: [{ attribute: 'age', op: 'gt', values: ['old'] }], variant_key: 'on' }, /rules\[0\]\.conditions\[0\]\.values\[0\]/],
      ['an invalid version', { conditions: [{ attribute: 'v', op: 'semver_gt', values: ['one'] }], variant_key: 'on' }, /rules\[0\]\.conditions\[0\]\.values\[0\]/],
      ['no values', { conditions: [{ attribute: 'plan', op: 'eq', values: [] }], variant_key: 'on' }, /rules\[0\]\.conditions\[0\]\.values/],
      ['both variant and allocation', { conditions: [], variant_key: 'on', allocation: split(500) }, /rules\[0\]/],
      ['neither variant nor allocation', { conditions: [] }, /rules\[0\]/],
    ];
    for (const [what, rule, field] of cases) {
      const response = await put(client, path, { token: a.admin.token, body: { rules: [rule] } });
      assert.equal(response.status, 400, `${what}: ${response.text}`);
      expectError(response, 400, 'INVALID_ARGUMENT', field);
    }
    expectError(await put(client, path, { token: a.admin.token, body: { rules: [{ id: 'x', conditions: [], variant_key: 'on' }, { id: 'x', conditions: [], variant_key: 'on' }] } }), 400, 'INVALID_ARGUMENT', /rules\[1\]\.id/);
    expectError(await put(client, path, { token: a.admin.token, body: {} }), 400, 'INVALID_ARGUMENT', /body\.rules is required/);
    // Nothing was stored by the refused writes.
    assert.deepEqual(expectStatus(await client.get(path.replace(/\/rules$/, ''), { token: a.admin.token }), 200).rules, []);
  });

  test('409 ABORTED for a stale version; two concurrent writers: one 202, one 409', async () => {
    const path = await newFlag('rules-stale');
    const rules = [{ conditions: [], variant_key: 'on' }];
    expectStatus(await put(client, `${path}/rules`, { token: a.admin.token, body: { rules, version: 1 } }), 202);
    expectError(await put(client, `${path}/rules`, { token: a.admin.token, body: { rules: [], version: 1 } }), 409, 'ABORTED');
    const answers = await Promise.all([0, 1].map(() => put(client, `${path}/rules`, { token: a.admin.token, body: { rules: [], version: 2 } })));
    assert.deepEqual(answers.map((r) => r.status).sort(), [202, 409]);
  });

  test("rules of another org's flag are 404; an SDK key is 401", async () => {
    const path = await newFlag('rules-tenant');
    expectError(await put(client, `${path}/rules`, { token: b.admin.token, body: { rules: [] } }), 404, 'NOT_FOUND');
    expectError(await put(client, `${path}/rules`, { sdkKey: a.rawKey, body: { rules: [] } }), 401, 'UNAUTHENTICATED');
  });
});

describe('PUT .../hashing', () => {
  test('200 {flag, configs}; the configs decide what a split hashes', async () => {
    const path = await newFlag('hashing');
    const key = path.split('/').pop()!;
    expectStatus(await put(client, `${path}/rules`, { token: a.admin.token, body: { rules: [{ conditions: [], allocation: split(500) }] } }), 202);
    const configs = [{ parameter_key: 'company', parameter_type: 'user', order: 0 }];
    const answer = expectStatus(await put(client, `${path}/hashing`, { token: a.admin.token, body: { configs, version: 2 } }), 200);
    assert.deepEqual(Object.keys(answer).sort(), ['configs', 'flag']);
    assert.deepEqual(answer.configs, configs);
    assert.deepEqual(answer.flag.hashing, configs);
    assert.equal(answer.flag.version, 3);

    // Everyone of one company gets the same variant, whatever their key; both variants occur.
    const companies = Array.from({ length: 40 }, (_, i) => `company-${i}`);
    const byCompany = await inChunks(companies, 20, async (company) => {
      const variants = await Promise.all(
        [1, 2, 3].map(async (n) => expectStatus(await evaluate(client, a.rawKey, a.environmentId, `${company}-user-${n}`, { flag_key: key, attributes: { company } }), 200).variant_key as string),
      );
      assert.equal(new Set(variants).size, 1, `${company}: ${variants.join(',')}`);
      return variants[0]!;
    });
    assert.deepEqual([...new Set(byCompany)].sort(), ['off', 'on']);
    // Without the configured parameter the split cannot hash: no rule matches.
    const missing = expectStatus(await evaluate(client, a.rawKey, a.environmentId, 'nobody', { flag_key: key }), 200);
    assert.deepEqual([missing.variant_key, missing.reason], ['off', 'DEFAULT']);
  });

  test('400 naming the field, 409 ABORTED for a stale version, 404 for an absent flag', async () => {
    const path = await newFlag('hashing-bad');
    expectError(await put(client, `${path}/hashing`, { token: a.admin.token, body: { configs: [{ parameter_type: 'user', order: 0 }] } }), 400, 'INVALID_ARGUMENT', /configs\.0\.parameter_key|configs\[0\]\.parameter_key/);
    expectError(await put(client, `${path}/hashing`, { token: a.admin.token, body: { configs: [{ parameter_key: 'k', parameter_type: 'user', order: 1.5 }] } }), 400, 'INVALID_ARGUMENT', /order/);
    expectError(await put(client, `${path}/hashing`, { token: a.admin.token, body: {} }), 400, 'INVALID_ARGUMENT', /body\.configs is required/);
    expectStatus(await put(client, `${path}/hashing`, { token: a.admin.token, body: { configs: [], version: 1 } }), 200);
    expectError(await put(client, `${path}/hashing`, { token: a.admin.token, body: { configs: [], version: 1 } }), 409, 'ABORTED');
    expectError(await put(client, `${envFlags(a.environmentId)}/absent-${unique()}/hashing`, { token: a.admin.token, body: { configs: [] } }), 404, 'NOT_FOUND');
  });
});
