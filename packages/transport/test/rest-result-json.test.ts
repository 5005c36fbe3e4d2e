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

/** A cache whose renders are counted, keyed like the evaluate route's. */
function counting() {
  let renders = 0;
  const cache = new ResultJsonCache(
    (r) => {
      renders += 1;
      return JSON.stringify(r);
    },
    (r) => (r.error_message === undefined ? `${r.reason}\u0000${r.variant_key}` : null),
  );
  return { cache, renders: () => renders };
}

describe('ResultJsonCache', () => {
  test('one text per flag definition and outcome; another outcome or another definition is rendered anew', () => {
    const { cache, renders } = counting();
    const flag = testFlag({ key: 'checkout', variants: [{ key: 'on', value: { color: 'blue' } }, { key: 'off', value: null }] });
    const on = cache.json(flag, result(flag, 'on'));
    assert.deepEqual(JSON.parse(on), result(flag, 'on'));
    assert.equal(cache.json(flag, result(flag, 'on')), on);
    assert.equal(renders(), 1, 'the second answer was not serialised again');
    assert.deepEqual(JSON.parse(cache.json(flag, result(flag, 'off'))), result(flag, 'off'));
    assert.equal(renders(), 2);
    // A changed flag is a new definition object: its text follows the new value.
    const changed = { ...flag, variants: [{ key: 'on', value: { color: 'green' } }, flag.variants[1]!] };
    assert.deepEqual(JSON.parse(cache.json(changed, result(changed, 'on'))).value, { color: 'green' });
    assert.equal(renders(), 3);
  });

  test('results the outcome function declines (free-text errors) are rendered every time', () => {
    const { cache, renders } = counting();
    const flag = testFlag({ key: 'broken' });
    const failed = (message: string) => result(flag, '', { reason: 'ERROR', error_code: 'GENERAL', error_message: message, value: null });
    assert.match(cache.json(flag, failed('first')), /first/);
    assert.match(cache.json(flag, failed('second')), /second/);
    assert.equal(renders(), 2);
  });

  test('joined: the texts in result order, comma-separated, a valid JSON array inside brackets', () => {
    const { cache } = counting();
    const a = testFlag({ key: 'a', variants: [{ key: 'x', value: 1 }] });
    const b = testFlag({ key: 'b', variants: [{ key: 'y', value: 'two' }] });
    const results = [result(a, 'x'), result(b, 'y')];
    assert.deepEqual(JSON.parse(`[${cache.joined([a, b], results)}]`), results);
    assert.equal(cache.joined([], []), '');
  });
});
