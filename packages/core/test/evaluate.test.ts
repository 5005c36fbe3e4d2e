import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bucketFor, evaluate } from '../src/evaluation/index.ts';
import type { EvaluationEnvironment } from '../src/evaluation/index.ts';
import type { EvaluationContext, Flag, Rule, Segment } from '../src/index.ts';
import { testFlag, testSegment } from '../src/testing/fixtures.ts';

const env: EvaluationEnvironment = { projectId: 'proj-1', environmentId: 'env-1' };
const alice: EvaluationContext = { context_type: 'user', key: 'alice', parameters: { plan: 'pro', country: 'DE' } };
const acme: EvaluationContext = { context_type: 'organization', key: 'acme', parameters: { seats: 500 } };

function flag(over: Partial<Flag> = {}): Flag {
  return testFlag('new-checkout', {
    value_type: 'string',
    variants: [
      { key: 'on', value: 'ON' },
      { key: 'off', value: 'OFF' },
      { key: 'a', value: 'A' },
      { key: 'b', value: 'B' },
    ],
    off_variant_key: 'off',
    ...over,
  });
}

function segment(over: Partial<Segment> & Pick<Segment, 'key'>): Segment {
  return testSegment(over.key, over.kind ?? 'rule', over);
}

const proRule: Rule = { id: 'pro-users', conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }], variant_key: 'on' };
const split: Rule = {
  id: 'half',
  conditions: [],
  allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'a', weight_milli: 500 }, { variant_key: 'b', weight_milli: 500 }] },
};

describe('evaluate: flag state and reasons', () => {
  test('a disabled flag serves the off variant with is_enabled false, whatever the rules say', () => {
    assert.deepEqual(evaluate(flag({ enabled: false, rules: [proRule] }), alice, env), {
      flag_key: 'new-checkout',
      variant_key: 'off',
      value: 'OFF',
      is_enabled: false,
      reason: 'DISABLED',
    });
  });

  test('a disabled flag without off variant serves "" and null, even for an empty context list', () => {
    const result = evaluate(flag({ enabled: false, off_variant_key: null }), [], env);
    assert.deepEqual([result.variant_key, result.value, result.is_enabled, result.reason], ['', null, false, 'DISABLED']);
  });

  test('a matching rule with a variant is TARGETING_MATCH and names the rule', () => {
    assert.deepEqual(evaluate(flag({ rules: [proRule] }), alice, env), {
      flag_key: 'new-checkout',
      variant_key: 'on',
      value: 'ON',
      is_enabled: true,
      reason: 'TARGETING_MATCH',
      rule_index: 0,
      rule_id: 'pro-users',
    });
  });

  test('no matching rule serves the off variant as DEFAULT, still enabled', () => {
    const bob: EvaluationContext = { context_type: 'user', key: 'bob', parameters: { plan: 'free' } };
    assert.deepEqual(evaluate(flag({ rules: [proRule] }), bob, env), {
      flag_key: 'new-checkout',
      variant_key: 'off',
      value: 'OFF',
      is_enabled: true,
      reason: 'DEFAULT',
    });
  });

  test('a split is SPLIT with the bucket that decided it', () => {
    const result = evaluate(flag({ rules: [proRule, split] }), { context_type: 'user', key: 'carol' }, env);
    const bucket = bucketFor('carol', 'new-checkout', 'proj-1', 'env-1');
    assert.equal(result.reason, 'SPLIT');
    assert.equal(result.bucket, bucket);
    assert.equal(result.variant_key, bucket < 50_000 ? 'a' : 'b');
    assert.equal(result.value, bucket < 50_000 ? 'A' : 'B');
    assert.equal(result.rule_index, 1);
    assert.equal(result.rule_id, 'half');
  });

  test('a single context and a one-element list give the same result', () => {
    const f = flag({ rules: [split] });
    assert.deepEqual(evaluate(f, alice, env), evaluate(f, [alice], env));
  });

  test('the same input always lands in the same variant, and the environment changes the bucket', () => {
    const f = flag({ rules: [split] });
    const first = evaluate(f, alice, env);
    for (let i = 0; i < 100; i++) assert.deepEqual(evaluate(f, alice, env), first);
    const other = evaluate(f, alice, { projectId: 'proj-1', environmentId: 'env-2' });
    assert.equal(other.bucket, bucketFor('alice', 'new-checkout', 'proj-1', 'env-2'));
    // The same flag object back in its first environment, and in another project: each bucket its own.
    assert.deepEqual(evaluate(f, alice, env), first);
    const otherProject = evaluate(f, alice, { projectId: 'proj-2', environmentId: 'env-1' });
    assert.equal(otherProject.bucket, bucketFor('alice', 'new-checkout', 'proj-2', 'env-1'));
    assert.notEqual(otherProject.bucket, first.bucket);
  });

  test('an empty or malformed context list is ERROR INVALID_CONTEXT on an enabled flag', () => {
    for (const contexts of [[], [null], [{ context_type: 'user' }], [{ context_type: 'user', key: 7 }], [alice, 'x']]) {
      const result = evaluate(flag({ rules: [proRule] }), contexts as unknown as EvaluationContext[], env);
      assert.equal(result.reason, 'ERROR');
      assert.equal(result.error_code, 'INVALID_CONTEXT');
      assert.equal(result.variant_key, 'off');
      assert.equal(result.value, 'OFF');
      assert.equal(result.is_enabled, true);
    }
  });

  test('a variant key naming no variant is served with a null value', () => {
    const result = evaluate(flag({ rules: [{ id: 'r', conditions: [], variant_key: 'removed' }] }), alice, env);
    assert.deepEqual([result.variant_key, result.value, result.reason], ['removed', null, 'TARGETING_MATCH']);
    const off = evaluate(flag({ off_variant_key: 'gone' }), alice, env);
    assert.deepEqual([off.variant_key, off.value, off.reason], ['gone', null, 'DEFAULT']);
  });

  test('an allocation whose hash input is unavailable skips the rule', () => {
    const byOrg: Rule = { ...split, id: 'by-org', allocation: { ...split.allocation!, context_hash_specs: { organization: { parameter_names: [] } } } };
    assert.equal(evaluate(flag({ rules: [byOrg] }), alice, env).reason, 'DEFAULT');
    const result = evaluate(flag({ rules: [byOrg] }), [alice, acme], env);
    assert.equal(result.bucket, bucketFor('acme', 'new-checkout', 'proj-1', 'env-1'));
  });

  test('weights summing below 1000 leave uncovered buckets unmatched rather than failing', () => {
    const partial: Rule = { id: 'p', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'a', weight_milli: 0 }] } };
    assert.equal(evaluate(flag({ rules: [partial] }), alice, env).reason, 'DEFAULT');
  });
});

describe('evaluate: segments', () => {
  const betas = segment({ key: 'betas', conditions: [{ attribute: 'country', op: 'in', values: ['DE', 'AT'] }] });
  const bigOrgs = segment({ key: 'big-orgs', context_type: 'organization', conditions: [{ attribute: 'seats', op: 'gte', values: [100] }] });
  const vips = segment({ key: 'vips', kind: 'list' });
  const segments = new Map([betas, bigOrgs, vips].map((s) => [s.key, s]));
  const members = new Map([['vips', { included: new Set(['alice', 'bob']), excluded: new Set(['bob']) }]]);
  const isListMember = (segmentKey: string, contextKey: string): boolean => {
    const list = members.get(segmentKey);
    return list !== undefined && !list.excluded.has(contextKey) && list.included.has(contextKey);
  };
  const segEnv: EvaluationEnvironment = { ...env, segments, isListMember };
  const inSegments = (...keys: string[]): Flag => flag({ rules: [{ id: 'seg', conditions: [], segment_keys: keys, variant_key: 'on' }] });

  test('a rule segment matches when its conditions hold on the context of its type', () => {
    assert.equal(evaluate(inSegments('betas'), alice, segEnv).reason, 'TARGETING_MATCH');
    assert.equal(evaluate(inSegments('big-orgs'), [alice, acme], segEnv).reason, 'TARGETING_MATCH');
    assert.equal(evaluate(inSegments('big-orgs'), alice, segEnv).reason, 'DEFAULT');
    const lonelyOrg: EvaluationContext = { context_type: 'organization', key: 'o', parameters: { country: 'DE' } };
    assert.equal(evaluate(inSegments('betas'), lonelyOrg, segEnv).reason, 'DEFAULT', 'a user segment needs a user');
  });

  test('a list segment asks the membership function with the key of the context of its type', () => {
    const asked: [string, string][] = [];
    const spy = (s: string, k: string): boolean => (asked.push([s, k]), isListMember(s, k));
    assert.equal(evaluate(inSegments('vips'), [acme, alice], { ...segEnv, isListMember: spy }).reason, 'TARGETING_MATCH');
    assert.deepEqual(asked, [['vips', 'alice']]);
    assert.equal(evaluate(inSegments('vips'), { context_type: 'user', key: 'bob' }, segEnv).reason, 'DEFAULT');
    assert.equal(evaluate(inSegments('vips'), acme, segEnv).reason, 'DEFAULT');
  });

  test('without a membership function no one is in a list segment', () => {
    assert.equal(evaluate(inSegments('vips'), alice, { ...env, segments }).reason, 'DEFAULT');
  });

  test('every segment of a rule must match', () => {
    assert.equal(evaluate(inSegments('betas', 'vips'), alice, segEnv).reason, 'TARGETING_MATCH');
    assert.equal(evaluate(inSegments('betas', 'big-orgs'), alice, segEnv).reason, 'DEFAULT');
  });

  test('a missing segment skips the rule and, when nothing else matches, is an ERROR naming it', () => {
    const result = evaluate(inSegments('betas', 'ghosts'), alice, segEnv);
    assert.equal(result.reason, 'ERROR');
    assert.equal(result.error_code, 'SEGMENT_NOT_FOUND');
    assert.match(result.error_message ?? '', /"ghosts"/);
    assert.deepEqual([result.variant_key, result.value, result.is_enabled], ['off', 'OFF', true]);
    assert.equal(evaluate(inSegments('ghosts'), alice, env).error_code, 'SEGMENT_NOT_FOUND', 'no segments map at all');
  });

  test('a later matching rule keeps the missing-segment details with its own reason', () => {
    const f = flag({
      rules: [
        { id: 'broken', conditions: [], segment_keys: ['ghosts'], variant_key: 'a' },
        { id: 'also-broken', conditions: [], segment_keys: ['phantoms'], variant_key: 'a' },
        proRule,
      ],
    });
    const result = evaluate(f, alice, segEnv);
    assert.deepEqual([result.variant_key, result.reason, result.rule_id], ['on', 'TARGETING_MATCH', 'pro-users']);
    assert.equal(result.error_code, 'SEGMENT_NOT_FOUND');
    assert.match(result.error_message ?? '', /"ghosts".*rule 0/, 'the first problem is reported');
  });

  test('a rule after the match is never looked at, so its missing segment is not reported', () => {
    const f = flag({ rules: [proRule, { id: 'later', conditions: [], segment_keys: ['ghosts'], variant_key: 'a' }] });
    const result = evaluate(f, alice, segEnv);
    assert.equal(result.reason, 'TARGETING_MATCH');
    assert.equal('error_code' in result, false);
  });
});

describe('evaluate never throws', () => {
  const garbage: [string, unknown][] = [
    ['null flag', null],
    ['undefined flag', undefined],
    ['a string', 'flag'],
    ['null rules', { ...flag(), rules: null }],
    ['a null rule', { ...flag(), rules: [null] }],
    ['rules as an object', { ...flag(), rules: { 0: proRule } }],
    ['null variants', { ...flag({ rules: [proRule] }), variants: null }],
    ['conditions as a number', { ...flag(), rules: [{ id: 'x', conditions: 5, variant_key: 'on' }] }],
    ['segment_keys as a string', { ...flag(), rules: [{ id: 'x', conditions: [], segment_keys: 'vips', variant_key: 'on' }] }],
    ['allocation without buckets', { ...flag(), rules: [{ id: 'x', conditions: [], allocation: { context_hash_specs: {} } }] }],
    ['a throwing getter', Object.defineProperty({ ...flag() }, 'rules', { get: () => { throw new Error('boom'); }, enumerable: true })],
  ];

  for (const [name, input] of garbage) {
    test(`returns ERROR GENERAL with a null value for ${name}`, () => {
      let result;
      assert.doesNotThrow(() => {
        result = evaluate(input as Flag, alice, env);
      });
      const r = result as unknown as { flag_key: unknown; reason: string; error_code?: string; value: unknown; variant_key: unknown };
      assert.equal(r.reason, 'ERROR');
      assert.equal(r.error_code, 'GENERAL');
      assert.equal(r.value, null);
      assert.equal(typeof r.variant_key, 'string');
      assert.equal(typeof r.flag_key, 'string');
    });
  }

  test('a flag with null rules is an ERROR GENERAL result that still names the flag', () => {
    const result = evaluate({ ...flag(), rules: null } as unknown as Flag, alice, env);
    assert.equal(result.reason, 'ERROR');
    assert.equal(result.error_code, 'GENERAL');
    assert.equal(result.flag_key, 'new-checkout');
    assert.equal(result.variant_key, 'off');
    assert.equal(result.is_enabled, true);
    assert.match(result.error_message ?? '', /could not be evaluated/);
  });

  test('garbage contexts and environments do not throw either', () => {
    for (const contexts of [null, undefined, 42, 'alice', {}, [[]]]) {
      const result = evaluate(flag({ rules: [proRule] }), contexts as unknown as EvaluationContext, env);
      assert.equal(result.reason, 'ERROR');
      assert.equal(result.error_code, 'INVALID_CONTEXT');
    }
    const result = evaluate(flag({ rules: [split] }), alice, null as unknown as EvaluationEnvironment);
    assert.equal(result.reason, 'ERROR');
    assert.equal(result.error_code, 'GENERAL');
  });
});

describe('evaluate: the compiled form of a flag', () => {
  test('a malformed rule anywhere fails the flag for every input, even one an earlier rule matches', () => {
    const bob: EvaluationContext = { context_type: 'user', key: 'bob', parameters: { plan: 'free' } };
    for (const broken of [null, { id: 'x', conditions: 5, variant_key: 'on' }, { id: 'x', conditions: [null], variant_key: 'on' }, { id: 'x', conditions: [], segment_keys: 'vips', variant_key: 'on' }]) {
      const f = flag({ rules: [proRule, broken as unknown as Rule] });
      for (const input of [alice, bob]) {
        const result = evaluate(f, input, env);
        assert.deepEqual([result.reason, result.error_code, result.value, result.variant_key], ['ERROR', 'GENERAL', null, 'off'], JSON.stringify(broken));
      }
    }
  });

  test('a split whose allocation has no buckets fails the flag even when an earlier rule matches', () => {
    const f = flag({ rules: [proRule, { id: 'x', conditions: [], allocation: { context_hash_specs: {} } } as unknown as Rule] });
    assert.equal(evaluate(f, alice, env).error_code, 'GENERAL');
  });

  test('a flag object given new rules, variants, hashing configs or off variant is evaluated by its new content', () => {
    const f = flag({ rules: [proRule] });
    assert.equal(evaluate(f, alice, env).value, 'ON');
    f.variants = f.variants.map((v) => (v.key === 'on' ? { key: 'on', value: 'ON-2' } : v));
    assert.equal(evaluate(f, alice, env).value, 'ON-2');
    f.rules = [{ ...proRule, variant_key: 'a' }];
    assert.equal(evaluate(f, alice, env).value, 'A');
    f.rules = [{ id: 'nobody', conditions: [{ attribute: 'plan', op: 'eq', values: ['none'] }], variant_key: 'a' }];
    assert.deepEqual([evaluate(f, alice, env).reason, evaluate(f, alice, env).value], ['DEFAULT', 'OFF']);
    f.off_variant_key = 'b';
    assert.deepEqual([evaluate(f, alice, env).variant_key, evaluate(f, alice, env).value], ['b', 'B']);
    // The hashing configs decide a split's hash input when the allocation names no context type.
    const s = flag({ rules: [split], hashing: [{ parameter_type: 'user', parameter_key: 'country', order: 0 }] });
    assert.equal(evaluate(s, alice, env).bucket, bucketFor('DE', 'new-checkout', 'proj-1', 'env-1'));
    s.hashing = [{ parameter_type: 'user', parameter_key: 'plan', order: 0 }];
    assert.equal(evaluate(s, alice, env).bucket, bucketFor('pro', 'new-checkout', 'proj-1', 'env-1'));
  });

  test('flags carrying equal conditions answer each by its own rules', () => {
    const same = { attribute: 'plan', op: 'eq' as const, values: ['pro'] };
    const first = flag({ key: 'first', rules: [{ id: 'r1', conditions: [{ ...same }], variant_key: 'a' }] });
    const second = flag({ key: 'second', rules: [{ id: 'r2', conditions: [{ ...same }], variant_key: 'b' }] });
    const negated = flag({ key: 'third', rules: [{ id: 'r3', conditions: [{ ...same, negate: true }], variant_key: 'on' }] });
    const numeric = flag({ key: 'fourth', rules: [{ id: 'r4', conditions: [{ attribute: 'plan', op: 'eq', values: [1] }], variant_key: 'on' }] });
    assert.deepEqual([evaluate(first, alice, env).value, evaluate(first, alice, env).rule_id], ['A', 'r1']);
    assert.deepEqual([evaluate(second, alice, env).value, evaluate(second, alice, env).rule_id], ['B', 'r2']);
    assert.equal(evaluate(negated, alice, env).reason, 'DEFAULT');
    assert.equal(evaluate(numeric, alice, env).reason, 'DEFAULT');
  });
});
