import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { evaluate } from '../src/evaluation/evaluate.ts';
import { defaultRuleFor, hasDefaultRule, initialRulesFor, isUnconditionalRule } from '../src/flags/default-rule.ts';
import { checkRules, type Flag, type Rule, type Variant } from '../src/index.ts';

const ON_OFF: Variant[] = [
  { key: 'on', value: true },
  { key: 'off', value: false },
];

describe('defaultRuleFor: one unconditional rule, id "default", serving the first non-off variant', () => {
  test('bool flags serve their true variant, in either order, with or without an off variant', () => {
    const servesOn = { id: 'default', conditions: [], variant_key: 'on' };
    assert.deepEqual(defaultRuleFor(ON_OFF, 'off'), servesOn);
    assert.deepEqual(defaultRuleFor(ON_OFF, null), servesOn);
    // Written false-first: "first non-off" alone would serve `off` (false) when no off variant is named.
    assert.deepEqual(defaultRuleFor([ON_OFF[1]!, ON_OFF[0]!], null), servesOn);
    assert.deepEqual(defaultRuleFor([ON_OFF[1]!, ON_OFF[0]!], 'off'), servesOn);
  });

  test('a bool flag whose off variant is the true one serves the first remaining variant', () => {
    assert.deepEqual(defaultRuleFor(ON_OFF, 'on'), { id: 'default', conditions: [], variant_key: 'off' });
  });

  test('other types serve the first variant that is not the off variant', () => {
    const strings: Variant[] = [
      { key: 'control', value: 'control' },
      { key: 'treatment', value: 'treatment' },
    ];
    assert.equal(defaultRuleFor(strings, 'control')?.variant_key, 'treatment');
    assert.equal(defaultRuleFor(strings, 'treatment')?.variant_key, 'control');
    assert.equal(defaultRuleFor(strings, null)?.variant_key, 'control');
    // A json flag with a `true` value among others is not a bool flag: no preference for it.
    assert.equal(defaultRuleFor([{ key: 'obj', value: {} }, { key: 't', value: true }], null)?.variant_key, 'obj');
  });

  test('nothing to serve but the off variant: no default rule', () => {
    assert.equal(defaultRuleFor([], null), null);
    assert.equal(defaultRuleFor([{ key: 'only', value: 1 }], 'only'), null);
    assert.deepEqual(initialRulesFor([{ key: 'only', value: 1 }], 'only'), []);
    assert.deepEqual(initialRulesFor(ON_OFF, 'off'), [{ id: 'default', conditions: [], variant_key: 'on' }]);
  });

  test('the rule passes the write-time checks and, once the flag is on, serves its variant to anyone', () => {
    const rules = initialRulesFor(ON_OFF, 'off');
    assert.deepEqual(checkRules(new Set(['on', 'off']), rules), rules);
    const flag: Flag = {
      key: 'new-flag', description: '', value_type: 'bool', variants: ON_OFF, enabled: true, off_variant_key: 'off',
      rules, hashing: [], version: 1, archived: false, client_visible: false, created_at_ms: 0, updated_at_ms: 0,
    };
    const result = evaluate(flag, [{ context_type: 'user', key: 'anyone' }], { segments: new Map(), projectId: 'p', environmentId: 'e' });
    assert.deepEqual({ variant: result.variant_key, value: result.value, reason: result.reason }, { variant: 'on', value: true, reason: 'TARGETING_MATCH' });
  });
});

describe('hasDefaultRule: the last rule has no conditions and no segments', () => {
  const targeted: Rule = { id: 't', conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }], variant_key: 'on' };
  const segmented: Rule = { id: 's', conditions: [], segment_keys: ['beta'], variant_key: 'on' };
  const everyone: Rule = { id: 'e', conditions: [], variant_key: 'on' };
  const rollout: Rule = { id: 'r', conditions: [], segment_keys: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 1000 }] } };

  test('cases', () => {
    assert.equal(hasDefaultRule([]), false);
    assert.equal(hasDefaultRule([targeted]), false);
    assert.equal(hasDefaultRule([segmented]), false);
    assert.equal(hasDefaultRule([everyone, targeted]), false, 'an unconditional rule that is not last does not count');
    assert.equal(hasDefaultRule([targeted, everyone]), true);
    assert.equal(hasDefaultRule([targeted, rollout]), true, 'a percentage rollout is a default rule too');
    assert.equal(isUnconditionalRule(segmented), false);
    assert.equal(isUnconditionalRule(rollout), true);
  });
});
