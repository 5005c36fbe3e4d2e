import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { evaluate, evaluateAll } from '../src/evaluation/index.ts';
import { compileCondition, conditionMemoEntries, sharedConditionEntries } from '../src/evaluation/conditions.ts';
import type { Condition, EvaluationContext, Flag, Segment } from '../src/index.ts';
import { environmentOf, load, type EvaluationCase } from './support/test-vector-cases.ts';

// evaluateAll tests equal conditions once per call and reads the answer back for every other flag
// that carries them (docs/decisions.md "Evaluate route performance"). These tests hold it to the
// hand-derived test vectors and to evaluate(), which shares no answers.

const cases = load<EvaluationCase>('evaluation.json');

/** A copy made of new objects: the same conditions by content, none by identity. */
const copy = <T>(value: T): T => structuredClone(value);

function flagOf(key: string, conditions: Condition[], variantKey = 'on'): Flag {
  return {
    key,
    description: '',
    value_type: 'string',
    variants: [{ key: 'on', value: 'on' }, { key: 'off', value: 'off' }, { key: 'other', value: 'other' }],
    enabled: true,
    off_variant_key: 'off',
    rules: [{ id: 'r', conditions, variant_key: variantKey }],
    hashing: [],
    version: 1,
    archived: false,
    client_visible: false,
    created_at_ms: 0,
    updated_at_ms: 0,
  };
}

const ENV = { projectId: 'p', environmentId: 'e' };
const user = (key: string, parameters: Record<string, string | number | boolean>): EvaluationContext[] => [{ key, context_type: 'user', parameters }];

describe('evaluateAll', () => {
  test('gives every test vector its hand-derived answer, for the flag and for copies evaluated in the same call', () => {
    for (const c of cases) {
      const env = environmentOf(c);
      const results = evaluateAll([c.flag, copy(c.flag), copy(c.flag)], c.contexts, env);
      assert.equal(results.length, 3);
      for (const result of results) {
        assert.equal(result.variant_key, c.expected.variant_key, c.name);
        assert.deepEqual(result.value, c.expected.value, c.name);
        assert.equal(result.is_enabled, c.expected.is_enabled, c.name);
        assert.equal(result.reason, c.expected.reason, c.name);
        assert.equal(result.bucket, c.expected.bucket, c.name);
        assert.equal(result.error_code, c.expected.error_code, c.name);
        assert.equal(result.prerequisite_key, c.expected.prerequisite_key, c.name);
      }
    }
  });

  test('agrees with evaluate() flag by flag when many flags share conditions, across inputs evaluated one after another', () => {
    // A small pool of conditions, so most flags share some with others; among them pairs that
    // differ only by negate, context type or the type of a value, which must not share answers.
    const pool: Condition[] = [
      { attribute: 'plan', op: 'eq', values: ['pro'] },
      { attribute: 'plan', op: 'eq', values: ['pro'], negate: true },
      { attribute: 'plan', op: 'eq', values: ['pro'], context_type: 'device' },
      { attribute: 'age', op: 'gte', values: [30] },
      { attribute: 'age', op: 'eq', values: [30] },
      { attribute: 'age', op: 'eq', values: ['30'] },
      { attribute: 'country', op: 'in', values: ['DE', 'FR'] },
      { attribute: 'email', op: 'matches', values: ['@corp\\.example$'] },
      { attribute: 'version', op: 'semver_gt', values: ['2.0.0'] },
      { attribute: 'beta', op: 'exists', values: [] },
      { attribute: 'beta', op: 'exists', values: [], negate: true },
    ];
    let seed = 7;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const flags = Array.from({ length: 300 }, (_, i) => {
      const conditions = Array.from({ length: 1 + next(3) }, () => copy(pool[next(pool.length)]!));
      return flagOf(`f${i}`, conditions, ['on', 'other'][next(2)]);
    });
    const plans = ['free', 'pro'];
    const countries = ['DE', 'US', 'FR'];
    for (let u = 0; u < 200; u++) {
      const parameters: Record<string, string | number | boolean> = { plan: plans[u % 2]!, age: 25 + (u % 10), country: countries[u % 3]!, email: u % 4 === 0 ? `u${u}@corp.example` : `u${u}@mail.example`, version: `${1 + (u % 3)}.0.${u % 2}` };
      if (u % 5 === 0) parameters.beta = true;
      const contexts: EvaluationContext[] = [...user(`u${u}`, parameters), ...(u % 3 === 0 ? [{ key: `d${u}`, context_type: 'device', parameters: { plan: 'pro' } }] : [])];
      const all = evaluateAll(flags, contexts, ENV);
      flags.forEach((flag, i) => assert.deepEqual(all[i], evaluate(flag, contexts, ENV), `${flag.key} for u${u}`));
    }
  });

  test('a nested evaluation for another input (from a list-membership callback) does not leak answers into the outer call', () => {
    const condition: Condition = { attribute: 'plan', op: 'eq', values: ['pro'] };
    const segment: Segment = { id: 's', key: 'vip', context_type: 'user', kind: 'list', description: '', conditions: [], included_count: 1, excluded_count: 0, version: 1, created_at_ms: 0, updated_at_ms: 0 };
    const first = flagOf('first', [copy(condition)]);
    first.rules[0]!.segment_keys = ['vip'];
    const second = flagOf('second', [copy(condition)]);
    const env = {
      ...ENV,
      segments: new Map([['vip', segment]]),
      isListMember: () => {
        // Evaluates the same condition for a free-plan user in the middle of the outer call.
        const inner = evaluateAll([flagOf('inner', [copy(condition)])], user('other', { plan: 'free' }), ENV);
        assert.equal(inner[0]!.reason, 'DEFAULT');
        return true;
      },
    };
    const [a, b] = evaluateAll([first, second], user('u', { plan: 'pro' }), env);
    assert.equal(a!.reason, 'TARGETING_MATCH');
    assert.equal(b!.reason, 'TARGETING_MATCH', 'the pro-plan answer of the outer call survives the inner one');
  });

  test('conditions whose values JSON cannot tell apart (Infinity, NaN, null) do not share answers', () => {
    // Only an SDK's own code can build these (the API refuses them); the memo must still keep them apart.
    const weird = [Infinity, -Infinity, NaN, null] as unknown as number[];
    const flags = weird.map((v, i) => flagOf(`f${i}`, [{ attribute: 'n', op: 'eq', values: [v] }]));
    const contexts = user('u', { n: Infinity });
    const all = evaluateAll(flags, contexts, ENV);
    assert.deepEqual(all.map((r) => r.reason), flags.map((flag) => evaluate(flag, contexts, ENV).reason));
    assert.deepEqual(all.map((r) => r.reason), ['TARGETING_MATCH', 'DEFAULT', 'DEFAULT', 'DEFAULT']);
  });

  test('stays right beyond the number of conditions it can remember', () => {
    // 70,000 distinct conditions: more than the memo has slots for (16,384).
    const flags = Array.from({ length: 70_000 }, (_, i) => flagOf(`f${i}`, [{ attribute: 'n', op: 'eq', values: [i] }]));
    const results = evaluateAll(flags, user('u', { n: 69_999 }), ENV);
    assert.equal(results.filter((r) => r.reason === 'TARGETING_MATCH').length, 1);
    assert.equal(results[69_999]!.reason, 'TARGETING_MATCH');
    const again = evaluateAll(flags, user('u', { n: 3 }), ENV);
    assert.deepEqual(again.flatMap((r, i) => (r.reason === 'TARGETING_MATCH' ? [i] : [])), [3]);
  });

  test('one environment\'s many distinct conditions neither grow the shared memo past its bound nor end sharing for the next evaluations', () => {
    // An attacker's environment: 40,000 flags, each with a condition of its own.
    const flood = Array.from({ length: 40_000 }, (_, i) => flagOf(`flood${i}`, [{ attribute: 'n', op: 'eq', values: [`v${i}`] }]));
    evaluateAll(flood, user('u', { n: 'v1' }), ENV);
    assert.ok(conditionMemoEntries() <= 16_384, `the memo holds ${conditionMemoEntries()} contents`);
    assert.ok(sharedConditionEntries() <= 16_384, `${sharedConditionEntries()} compiled conditions are shared`);
    // Another environment afterwards: its shared condition still gets a slot, and right answers.
    const shared: Condition = { attribute: 'plan', op: 'eq', values: [`pro-${Math.random()}`] };
    const victims = Array.from({ length: 3 }, (_, i) => flagOf(`victim${i}`, [copy(shared)]));
    const answers = evaluateAll(victims, user('u', { plan: shared.values[0] as string }), ENV);
    assert.deepEqual(answers.map((r) => r.reason), ['TARGETING_MATCH', 'TARGETING_MATCH', 'TARGETING_MATCH']);
    assert.ok(compileCondition(victims[0]!.rules[0]!.conditions[0]!).memoSlot >= 0, 'memoised');
    // Equal contents share one compiled form again after the flood emptied the table.
    assert.equal(compileCondition(victims[1]!.rules[0]!.conditions[0]!), compileCondition(victims[0]!.rules[0]!.conditions[0]!));
  });

  test('answers malformed flags like evaluate() does, without stopping the others', () => {
    const broken = { ...flagOf('broken', []), rules: 'nope' } as unknown as Flag;
    const good = flagOf('good', [{ attribute: 'plan', op: 'eq', values: ['pro'] }]);
    const [a, b] = evaluateAll([broken, good], user('u', { plan: 'pro' }), ENV);
    assert.equal(a!.error_code, 'GENERAL');
    assert.equal(b!.reason, 'TARGETING_MATCH');
  });
});
