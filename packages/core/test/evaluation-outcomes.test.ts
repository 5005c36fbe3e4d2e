// test-batch: alone (it reserves every outcome store a process has: files sharing its process would find none left)
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { evaluate, evaluateAll, keepForOutcome, keptForOutcome, newOutcomes, reserveOutcomeStore, type Outcomes } from '../src/evaluation/index.ts';
import type { EvaluationContext, EvaluationResult, Flag } from '../src/index.ts';
import { testFlag } from '../src/testing/fixtures.ts';
import { environmentOf, load, type EvaluationCase } from './support/test-vector-cases.ts';

// Outcomes (docs/decisions.md "Evaluate route performance"): evaluateAll tells which outcome of its
// flag each result is, and a host keeps derived data there. What a host may rely on: results of
// the same outcome have the same fields but `bucket`; results with a free-text message have none.

const cases = load<EvaluationCase>('evaluation.json');
const STORE = reserveOutcomeStore();
const OTHER_STORE = reserveOutcomeStore();

/** The fields an outcome fixes: everything but the split's exact bucket. */
function outcomeFields(result: EvaluationResult): Omit<EvaluationResult, 'bucket'> {
  const { bucket: _bucket, ...fields } = result;
  return fields;
}


/** The case's contexts with the first one's key replaced: other users with the same attributes. */
function withKey(contexts: EvaluationContext[], key: string): EvaluationContext[] {
  return contexts.map((context, i) => (i === 0 ? { ...context, key } : context));
}

const ENV = { projectId: 'p', environmentId: 'e' };
const user = (key: string, parameters: Record<string, string> = {}): EvaluationContext[] => [{ key, context_type: 'user', parameters }];

/** A flag: a fixed variant for Germany, a 50/50 split for France, the off variant 'off' for everyone else. */
function splitFlag(): Flag {
  return testFlag('checkout', {
    value_type: 'string',
    variants: ['de', 'a', 'b', 'off'].map((key) => ({ key, value: key })),
    off_variant_key: 'off',
    rules: [
      { id: 'germany', conditions: [{ attribute: 'country', op: 'eq', values: ['DE'] }], variant_key: 'de' },
      { id: 'split', conditions: [{ attribute: 'country', op: 'eq', values: ['FR'] }], allocation: { context_hash_specs: { user: { parameter_names: [] } }, buckets: [{ variant_key: 'a', weight_milli: 500 }, { variant_key: 'b', weight_milli: 500 }] } },
    ],
  });
}

/** Evaluates one flag for one input and returns its result with its outcome (index 0). */
function one(flag: Flag, contexts: EvaluationContext[], env = ENV): { result: EvaluationResult; outcomes: Outcomes } {
  const outcomes = newOutcomes(1);
  const [result] = evaluateAll([flag], contexts, env, outcomes);
  return { result: result!, outcomes };
}

describe('evaluation outcomes', () => {
  test('over every test vector and 40 users each: results of one outcome agree on every field but the bucket, and message-bearing results have none', () => {
    let kept = 0;
    let reused = 0;
    for (const c of cases) {
      const env = environmentOf(c);
      for (let u = 0; u < 40; u++) {
        const contexts = u === 0 ? c.contexts : withKey(c.contexts, `user-${u}`);
        const { result, outcomes } = one(c.flag, contexts, env);
        // Same answer as without outcomes.
        assert.deepEqual(result, evaluate(c.flag, contexts, env), c.name);
        const known = keptForOutcome(outcomes, 0, STORE) as Omit<EvaluationResult, 'bucket'> | undefined;
        if (known !== undefined) {
          assert.deepEqual(outcomeFields(result), known, `${c.name}: two results of one outcome differ`);
          reused += 1;
          continue;
        }
        keepForOutcome(outcomes, 0, STORE, outcomeFields(result));
        const stored = keptForOutcome(outcomes, 0, STORE);
        if (result.error_message !== undefined) assert.equal(stored, undefined, `${c.name}: a result with a message has no outcome`);
        else {
          assert.deepEqual(stored, outcomeFields(result), `${c.name}: a result without a message has an outcome`);
          kept += 1;
        }
      }
    }
    // The vectors reach many outcomes, and most answers found theirs kept.
    assert.ok(kept >= 20, `kept ${kept}`);
    assert.ok(reused > kept, `reused ${reused}`);
  });

  test('a fixed rule, each bucket range of a split, and the off variant are distinct outcomes; one range serves many buckets', () => {
    const flag = splitFlag();
    const germany = one(flag, user('u1', { country: 'DE' }));
    keepForOutcome(germany.outcomes, 0, STORE, 'germany');
    assert.equal(keptForOutcome(one(flag, user('u2', { country: 'DE' })).outcomes, 0, STORE), 'germany');

    const byVariant = new Map<string, Set<number>>();
    for (let u = 0; u < 60; u++) {
      const { result, outcomes } = one(flag, user(`fr-${u}`, { country: 'FR' }));
      assert.equal(result.reason, 'SPLIT');
      const known = keptForOutcome(outcomes, 0, STORE);
      if (known === undefined) keepForOutcome(outcomes, 0, STORE, result.variant_key);
      else assert.equal(known, result.variant_key, 'a bucket range keeps its own variant');
      byVariant.set(result.variant_key, (byVariant.get(result.variant_key) ?? new Set()).add(result.bucket!));
    }
    assert.deepEqual([...byVariant.keys()].sort(), ['a', 'b'], '60 users land in both halves');
    assert.ok(byVariant.get('a')!.size > 1 && byVariant.get('b')!.size > 1, 'each range served several buckets');

    const fallback = one(flag, user('u3', { country: 'US' }));
    assert.equal(fallback.result.reason, 'DEFAULT');
    assert.equal(keptForOutcome(fallback.outcomes, 0, STORE), undefined, 'the off variant is not another outcome');
    keepForOutcome(fallback.outcomes, 0, STORE, 'default');
    assert.equal(keptForOutcome(one(flag, user('u4')).outcomes, 0, STORE), 'default');
    assert.equal(keptForOutcome(one(flag, user('u5', { country: 'DE' })).outcomes, 0, STORE), 'germany');
  });

  test('stores are separate: each consumer finds only what it kept', () => {
    const flag = splitFlag();
    const { outcomes } = one(flag, user('u1', { country: 'DE' }));
    keepForOutcome(outcomes, 0, STORE, 'mine');
    assert.equal(keptForOutcome(outcomes, 0, OTHER_STORE), undefined);
    keepForOutcome(outcomes, 0, OTHER_STORE, 'theirs');
    assert.equal(keptForOutcome(outcomes, 0, STORE), 'mine');
  });

  test('a disabled flag has its DISABLED outcome, also when its rules are malformed (then with nothing kept)', () => {
    const disabled = { ...splitFlag(), enabled: false };
    const first = one(disabled, user('u1', { country: 'DE' }));
    assert.equal(first.result.reason, 'DISABLED');
    keepForOutcome(first.outcomes, 0, STORE, 'disabled');
    assert.equal(keptForOutcome(one(disabled, user('u2', { country: 'FR' })).outcomes, 0, STORE), 'disabled');

    const malformed = { ...splitFlag(), enabled: false, rules: [null] } as unknown as Flag;
    const broken = one(malformed, user('u1'));
    assert.equal(broken.result.reason, 'DISABLED', 'a disabled flag answers DISABLED whatever its rules');
    keepForOutcome(broken.outcomes, 0, STORE, 'x');
    assert.equal(keptForOutcome(broken.outcomes, 0, STORE), undefined);
  });

  test('no outcome for errors with a message: a missing segment, an invalid context, a flag that cannot be evaluated', () => {
    const missing = { ...splitFlag(), rules: [{ id: 'seg', conditions: [], segment_keys: ['nowhere'], variant_key: 'de' }, { id: 'all', conditions: [], variant_key: 'a' }] };
    const skipped = one(missing, user('u1'));
    assert.equal(skipped.result.error_code, 'SEGMENT_NOT_FOUND');
    assert.equal(skipped.result.variant_key, 'a', 'the later rule served, with the missing segment reported');
    const invalid = one(splitFlag(), []);
    assert.equal(invalid.result.error_code, 'INVALID_CONTEXT');
    const general = one({ ...splitFlag(), rules: [{ id: 'r', conditions: 'nope' }] } as unknown as Flag, user('u1'));
    assert.equal(general.result.error_code, 'GENERAL');
    for (const { outcomes } of [skipped, invalid, general]) {
      keepForOutcome(outcomes, 0, STORE, 'x');
      assert.equal(keptForOutcome(outcomes, 0, STORE), undefined);
    }
  });

  test('a flag whose rules are replaced in place is compiled again, with empty stores; other flags keep theirs', () => {
    const flag = splitFlag();
    const other = splitFlag();
    const outcomes = newOutcomes(2);
    evaluateAll([flag, other], user('u1', { country: 'DE' }), ENV, outcomes);
    keepForOutcome(outcomes, 0, STORE, 'old');
    keepForOutcome(outcomes, 1, STORE, 'other');
    flag.rules = [{ id: 'germany', conditions: [{ attribute: 'country', op: 'eq', values: ['DE'] }], variant_key: 'b' }];
    const again = newOutcomes(2);
    const results = evaluateAll([flag, other], user('u1', { country: 'DE' }), ENV, again);
    assert.equal(results[0]!.variant_key, 'b');
    assert.equal(keptForOutcome(again, 0, STORE), undefined);
    assert.equal(keptForOutcome(again, 1, STORE), 'other');
  });

  test('a store number that was not reserved is refused: it would reach into the compiled form itself', () => {
    const { outcomes } = one(splitFlag(), user('u1', { country: 'DE' }));
    for (const store of [-1, 2, 4, 100, 0.5, Number.NaN]) {
      assert.throws(() => keepForOutcome(outcomes, 0, store, 'x'), RangeError, String(store));
      assert.throws(() => keptForOutcome(outcomes, 0, store), RangeError, String(store));
    }
    assert.equal(one(splitFlag(), user('u2', { country: 'DE' })).result.variant_key, 'de');
  });

  test('at most four stores can be reserved per process', () => {
    reserveOutcomeStore();
    reserveOutcomeStore();
    assert.throws(() => reserveOutcomeStore(), /at most 4 outcome stores/);
  });
});
