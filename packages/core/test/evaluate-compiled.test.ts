import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compileFlagToKeep, documentOfCompiled, evaluate, evaluateAll, evaluateCompiled, keptFlagForm, keptForOutcome, newOutcomes, reserveOutcomeStore, keepForOutcome } from '../src/evaluation/index.ts';
import type { CompiledFlag, EvaluationContext, Flag } from '../src/index.ts';
import { testFlag } from '../src/testing/fixtures.ts';
import { environmentOf, load, type EvaluationCase } from './support/test-vector-cases.ts';

// A host keeping flags' compiled forms (an environment snapshot) evaluates one flag from its kept
// form (docs/decisions.md "Evaluate route performance"): the same answers as from the document.

const cases = load<EvaluationCase>('evaluation.json');
const STORE = reserveOutcomeStore();


const user = (key: string): EvaluationContext[] => [{ key, context_type: 'user', parameters: {} }];

describe('evaluateCompiled (one flag from its kept compiled form)', () => {
  test('every test vector: the hand-derived answer, and the result and outcome evaluateAll gives, for 20 users', () => {
    let compiledCases = 0;
    for (const c of cases) {
      const kept = compileFlagToKeep(c.flag);
      if (kept === undefined) continue;
      compiledCases++;
      assert.equal(documentOfCompiled(kept), c.flag, c.name);
      const result = evaluateCompiled(kept, c.contexts, environmentOf(c));
      assert.deepEqual(
        [result.variant_key, result.value, result.is_enabled, result.reason, result.bucket, result.error_code],
        [c.expected.variant_key, c.expected.value, c.expected.is_enabled, c.expected.reason, c.expected.bucket, c.expected.error_code],
        c.name,
      );
      for (let u = 0; u < 20; u++) {
        const contexts = c.contexts.map((context, i) => (i === 0 ? { ...context, key: `user-${u}` } : context));
        const fromKept = newOutcomes(1);
        const fromDocument = newOutcomes(1);
        assert.deepEqual(evaluateCompiled(kept, contexts, environmentOf(c), fromKept), evaluateAll([c.flag], contexts, environmentOf(c), fromDocument)[0], c.name);
        assert.deepEqual(fromKept, fromDocument, `${c.name}: the same outcome`);
      }
    }
    // Nearly every vector compiles; the few that do not are the malformed-document cases.
    assert.ok(compiledCases > cases.length - 10, `${compiledCases} of ${cases.length} compiled`);
  });

  test('what cannot be compiled is not kept: a malformed rule list, something that is not a flag', () => {
    assert.equal(compileFlagToKeep({ ...testFlag('broken'), rules: 'nope' } as unknown as Flag), undefined);
    assert.equal(compileFlagToKeep({ ...testFlag('no-key'), key: 42 } as unknown as Flag), undefined);
    assert.equal(compileFlagToKeep(null as unknown as Flag), undefined);
  });

  test('the kept form is the one evaluateAll uses: answers kept for an outcome by either are found by the other', () => {
    const flag = testFlag('shared', { off_variant_key: 'on' });
    const kept = compileFlagToKeep(flag)!;
    const viaKept = newOutcomes(1);
    evaluateCompiled(kept, user('u1'), { projectId: 'p', environmentId: 'e' }, viaKept);
    keepForOutcome(viaKept, 0, STORE, 'kept text');
    const viaDocument = newOutcomes(1);
    evaluateAll([flag], user('u2'), { projectId: 'p', environmentId: 'e' }, viaDocument);
    assert.equal(keptForOutcome(viaDocument, 0, STORE), 'kept text');
  });

  test('a disabled flag answers DISABLED from its kept form, with its DISABLED outcome; an invalid input is an error without one', () => {
    const disabled = testFlag('off', { enabled: false, off_variant_key: 'on' });
    const kept = compileFlagToKeep(disabled)!;
    const outcomes = newOutcomes(1);
    const result = evaluateCompiled(kept, user('u1'), { projectId: 'p', environmentId: 'e' }, outcomes);
    assert.deepEqual([result.reason, result.is_enabled, result.variant_key], ['DISABLED', false, 'on']);
    assert.notEqual(outcomes[0], undefined);
    const enabled = compileFlagToKeep(testFlag('on'))!;
    const invalid = newOutcomes(1);
    const error = evaluateCompiled(enabled, [] as EvaluationContext[], { projectId: 'p', environmentId: 'e' }, invalid);
    assert.deepEqual([error.reason, error.error_code], ['ERROR', 'INVALID_CONTEXT']);
    assert.equal(invalid[0], undefined);
  });

  test('a document whose key or enabled state was changed in place is compiled again when kept again', () => {
    const flag = testFlag('toggled', { enabled: true });
    const first = compileFlagToKeep(flag)!;
    assert.equal(compileFlagToKeep(flag), first, 'unchanged: the same form');
    flag.enabled = false;
    const disabled = compileFlagToKeep(flag)!;
    assert.notEqual(disabled, first);
    assert.equal(evaluateCompiled(disabled, user('u'), { projectId: 'p', environmentId: 'e' }).reason, 'DISABLED');
    flag.enabled = true;
    flag.key = 'renamed';
    assert.equal(evaluateCompiled(compileFlagToKeep(flag)!, user('u'), { projectId: 'p', environmentId: 'e' }).flag_key, 'renamed');
  });

  test('evaluate() of the flag it evaluated last still follows lists and states changed in place since', () => {
    const env = { projectId: 'p', environmentId: 'e' };
    const flag = testFlag('last', { off_variant_key: 'off' });
    assert.equal(evaluate(flag, user('u')[0]!, env).reason, 'DEFAULT');
    flag.rules = [{ id: 'all', conditions: [], variant_key: 'on' }];
    assert.equal(evaluate(flag, user('u')[0]!, env).reason, 'TARGETING_MATCH', 'new rules, right after the flag was evaluated');
    flag.enabled = false;
    assert.equal(evaluate(flag, user('u')[0]!, env).reason, 'DISABLED');
    // Another flag in between, then the first again: the same answers.
    evaluate(testFlag('other'), user('u')[0]!, env);
    flag.enabled = true;
    assert.equal(evaluate(flag, user('u')[0]!, env).reason, 'TARGETING_MATCH');
  });

  test('keptFlagForm: a form per flag made once; null kept for a flag that does not compile; nothing kept for an unknown key', () => {
    const good = testFlag('good');
    const flags = new Map<string, Flag>([['good', good], ['broken', { ...testFlag('broken'), rules: 'nope' } as unknown as Flag]]);
    const kept = new Map<string, CompiledFlag | null>();
    const form = keptFlagForm(kept, flags, 'good')!;
    assert.equal(documentOfCompiled(form), good);
    assert.equal(keptFlagForm(kept, flags, 'good'), form, 'the same form again');
    assert.equal(keptFlagForm(kept, flags, 'broken'), null);
    assert.equal(keptFlagForm(kept, flags, 'unknown'), undefined);
    assert.deepEqual([...kept.keys()].sort(), ['broken', 'good'], 'nothing kept for the unknown key');
  });

  test('two tenants\' flags with the same key, evaluated in turn: each answers from its own document (the last flag is found by identity, not by key)', () => {
    const env = { projectId: 'p', environmentId: 'e' };
    const mine = testFlag('checkout', { off_variant_key: 'off', rules: [{ id: 'mine', conditions: [], variant_key: 'on' }] });
    const theirs = testFlag('checkout', { off_variant_key: 'off', rules: [] });
    for (let round = 0; round < 3; round++) {
      assert.equal(evaluate(mine, user('u')[0]!, env).rule_id, 'mine');
      assert.equal(evaluate(theirs, user('u')[0]!, env).reason, 'DEFAULT');
      assert.equal(evaluate(theirs, user('u')[0]!, env).reason, 'DEFAULT', 'the same document twice in a row');
    }
  });
});
