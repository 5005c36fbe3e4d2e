import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { studiedRule, type Rule } from '../src/index.ts';

const split = (id: string, weights: Record<string, number>): Rule => ({
  id,
  conditions: [],
  allocation: { context_hash_specs: {}, buckets: Object.entries(weights).map(([variant_key, weight_milli]) => ({ variant_key, weight_milli })) },
});
const serve = (id: string, variant: string): Rule => ({ id, conditions: [], variant_key: variant });
const arms = { variantKeys: ['control', 'treatment'], controlVariantKey: 'control' };
const pick = (rules: Rule[], ruleId: string | null = null, query = arms) => studiedRule({ key: 'checkout', rules }, { ruleId, ...query });
const idOf = (found: ReturnType<typeof studiedRule>): string => ('rule' in found ? found.rule.id : `refused: ${found.reason}`);

describe('studiedRule', () => {
  test('by default the first rule whose allocation gives traffic to the control and another arm', () => {
    const rules = [
      serve('vip', 'treatment'),
      split('all-control', { control: 1000, treatment: 0 }),
      split('no-control', { treatment: 500, other: 500 }),
      split('half', { control: 500, treatment: 500 }),
      split('later', { control: 100, treatment: 900 }),
    ];
    assert.equal(idOf(pick(rules)), 'half');
    // An allocation may also give traffic to variants outside the experiment.
    assert.equal(idOf(pick([split('three-way', { control: 300, treatment: 300, third: 400 })])), 'three-way');
    // The explicit control is what counts, not the order of the variants.
    assert.equal(idOf(pick([split('t-heavy', { control: 0, treatment: 500, third: 500 })], null, { variantKeys: ['control', 'treatment', 'third'], controlVariantKey: 'treatment' })), 't-heavy');
  });

  test('without such a rule, or with a named rule gone or without such an allocation: the reason', () => {
    const none = pick([serve('vip', 'treatment'), split('all-control', { control: 1000 })]);
    assert.ok('reason' in none);
    assert.match(none.reason, /flag 'checkout' has no rule with a percentage allocation giving traffic to the control 'control'/);
    const gone = pick([split('half', { control: 500, treatment: 500 })], 'removed');
    assert.ok('reason' in gone);
    assert.match(gone.reason, /rule 'removed' is no longer a rule of flag 'checkout'/);
    const served = pick([serve('vip', 'treatment'), split('half', { control: 500, treatment: 500 })], 'vip');
    assert.ok('reason' in served);
    assert.match(served.reason, /rule 'vip' of flag 'checkout' has no percentage allocation/);
  });

  test('a named rule is studied even when an earlier rule also qualifies', () => {
    const rules = [split('first', { control: 500, treatment: 500 }), split('second', { control: 200, treatment: 800 })];
    assert.equal(idOf(pick(rules, 'second')), 'second');
    assert.equal(idOf(pick(rules)), 'first');
  });
});
