import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EvaluationResult, Flag } from '@switchyard/core';
import { testFlag } from '@switchyard/core/testing';
import { ResultJsonCache } from '../src/domains/flags/rest-result-json.ts';

const result = (flag: Flag, variant: string, extra: Partial<EvaluationResult> = {}): EvaluationResult => ({
  flag_key: flag.key,
  variant_key: variant,
  value: flag.variants.find((v) => v.key === variant)?.value ?? null,
  is_enabled: true,
  reason: 'SPLIT',
  ...extra,
});

/** The kept answer as text. */
const text = (cache: ResultJsonCache, flag: Flag, r: EvaluationResult): string => cache.bytes(flag, r).toString('utf8');

/** A cache whose renders are counted. */
function counting() {
  let renders = 0;
  const cache = new ResultJsonCache((r) => {
    renders += 1;
    return JSON.stringify(r);
  });
  return { cache, renders: () => renders };
}

describe('ResultJsonCache', () => {
  test('one text per flag definition and outcome; another outcome or another definition is rendered anew', () => {
    const { cache, renders } = counting();
    const flag = testFlag('checkout', { variants: [{ key: 'on', value: { color: 'blue' } }, { key: 'off', value: null }] });
    const on = text(cache, flag, result(flag, 'on'));
    assert.deepEqual(JSON.parse(on), result(flag, 'on'));
    assert.equal(text(cache, flag, result(flag, 'on')), on);
    assert.equal(renders(), 1, 'the second answer was not serialised again');
    assert.deepEqual(JSON.parse(text(cache, flag, result(flag, 'off'))), result(flag, 'off'));
    assert.equal(renders(), 2);
    // A changed flag is a new definition object: its text follows the new value.
    const changed = { ...flag, variants: [{ key: 'on', value: { color: 'green' } }, flag.variants[1]!] };
    assert.deepEqual(JSON.parse(text(cache, changed, result(changed, 'on'))).value, { color: 'green' });
    assert.equal(renders(), 3);
  });

  test('each field of the outcome counts: reason, enabled state, error code and rule give their own texts', () => {
    const { cache, renders } = counting();
    const flag = testFlag('f', { variants: [{ key: 'on', value: true }] });
    const variants: Array<Partial<EvaluationResult>> = [
      {},
      { reason: 'TARGETING_MATCH', rule_id: 'r1' },
      { reason: 'TARGETING_MATCH', rule_id: 'r2' },
      { reason: 'DEFAULT' },
      { reason: 'DISABLED', is_enabled: false },
      { reason: 'ERROR', error_code: 'SEGMENT_NOT_FOUND' },
    ];
    for (const extra of variants) assert.deepEqual(JSON.parse(text(cache, flag, result(flag, 'on', extra))), result(flag, 'on', extra));
    assert.equal(renders(), variants.length, 'one text per outcome');
    for (const extra of variants) text(cache, flag, result(flag, 'on', extra));
    assert.equal(renders(), variants.length, 'and each is kept');
  });

  test('results with a free-text error message are rendered every time', () => {
    const { cache, renders } = counting();
    const flag = testFlag('broken');
    const failed = (message: string) => result(flag, '', { reason: 'ERROR', error_code: 'GENERAL', error_message: message, value: null });
    assert.match(text(cache, flag, failed('first')), /first/);
    assert.match(text(cache, flag, failed('second')), /second/);
    assert.equal(renders(), 2);
  });

  test('array: head, the answers in result order separated by commas, tail; valid JSON with any number of items', () => {
    const { cache } = counting();
    const a = testFlag('a', { variants: [{ key: 'x', value: 1 }] });
    const b = testFlag('b', { variants: [{ key: 'y', value: 'two é' }] });
    const results = [result(a, 'x'), result(b, 'y')];
    assert.deepEqual(JSON.parse(cache.array('{"flags":[', [a, b], results, ']}').toString('utf8')), { flags: results });
    assert.deepEqual(JSON.parse(cache.array('{"flags":[', [a], [results[0]!], ']}').toString('utf8')), { flags: [results[0]] });
    assert.deepEqual(JSON.parse(cache.array('{"flags":[', [], [], ']}').toString('utf8')), { flags: [] });
  });

  test('items of a list: kept outcomes reused, another outcome rendered, a changed flag answers its new definition, free-text errors never kept', () => {
    const { cache, renders } = counting();
    const a = testFlag('a', { variants: [{ key: 'x', value: 1 }, { key: 'z', value: 3 }] });
    const b = testFlag('b', { variants: [{ key: 'y', value: 2 }] });
    const list = [a, b];
    const first = [result(a, 'x'), result(b, 'y')];
    assert.deepEqual(cache.items(list, first).map((item) => JSON.parse(item.bytes.toString('utf8'))), first);
    assert.equal(renders(), 2);
    cache.items(list, first);
    assert.equal(renders(), 2, 'the same outcomes of the same list are not rendered again');
    // Another outcome of flag a at the same position: its own text.
    const other = [result(a, 'z'), result(b, 'y')];
    assert.deepEqual(JSON.parse(cache.items(list, other)[0]!.bytes.toString('utf8')), result(a, 'z'));
    assert.equal(renders(), 3);
    // A snapshot with flag b changed: position 1 answers the new definition.
    const changedB = { ...b, variants: [{ key: 'y', value: 'changed' }] };
    const next = [a, changedB];
    const items = cache.items(next, [result(a, 'x'), result(changedB, 'y')]);
    assert.equal(JSON.parse(items[1]!.bytes.toString('utf8')).value, 'changed');
    // A free-text error is rendered every time and never kept.
    const failed = result(a, '', { reason: 'ERROR', error_code: 'GENERAL', error_message: 'boom', value: null });
    assert.match(cache.items(next, [failed, result(changedB, 'y')])[0]!.bytes.toString('utf8'), /boom/);
    assert.deepEqual(JSON.parse(cache.items(next, [result(a, 'x'), result(changedB, 'y')])[0]!.bytes.toString('utf8')), result(a, 'x'));
  });
});
