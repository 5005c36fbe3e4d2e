import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { evaluateAll, newOutcomes, type EvaluationContext, type EvaluationResult, type Flag } from '@switchyard/core';
import { testFlag } from '@switchyard/core/testing';
import { ResultJsonCache, ResultTextCache } from '../src/domains/flags/rest-result-json.ts';

// The cache keeps each outcome's JSON in the outcome's store (docs/decisions.md "Evaluate route
// performance"); these tests evaluate real flags so the outcomes are the evaluation's own.

const ENV = { projectId: 'p', environmentId: 'e' };
const user = (key: string, parameters: Record<string, string> = {}): EvaluationContext[] => [{ key, context_type: 'user', parameters }];

/** One cache for the file (each reserves one of a process's few outcome stores); renders counted. */
let renders = 0;
const cache = new ResultJsonCache((r) => {
  renders += 1;
  return JSON.stringify({ flag_key: r.flag_key, variant_key: r.variant_key, value: r.value, reason: r.reason, is_enabled: r.is_enabled, error_code: r.error_code, error_message: r.error_message });
});

/** What the cache must answer for a result: the render of the very same fields. */
const expected = (r: EvaluationResult) => JSON.parse(JSON.stringify({ ...r, bucket: undefined, rule_id: undefined, rule_index: undefined }));

/** Evaluates the flags for one input; the cache's answer of every result, parsed. */
function answers(flags: Flag[], contexts: EvaluationContext[]): { results: EvaluationResult[]; parsed: unknown[]; bytes: Buffer[] } {
  const outcomes = newOutcomes(flags.length);
  const results = evaluateAll(flags, contexts, ENV, outcomes);
  const bytes = cache.items(results, outcomes).map((item) => item.bytes);
  return { results, parsed: bytes.map((b) => JSON.parse(b.toString('utf8'))), bytes };
}

/** A flag: Germany gets `de`, France a 50/50 split of a and b, everyone else the off variant. */
function flagOf(key: string, values: { de?: unknown } = {}): Flag {
  return testFlag(key, {
    value_type: 'json',
    variants: [
      { key: 'de', value: (values.de ?? { color: 'blue' }) as Flag['variants'][number]['value'] },
      { key: 'a', value: 'a' },
      { key: 'b', value: 'b é' },
      { key: 'off', value: null },
    ],
    off_variant_key: 'off',
    rules: [
      { id: 'germany', conditions: [{ attribute: 'country', op: 'eq', values: ['DE'] }], variant_key: 'de' },
      { id: 'france', conditions: [{ attribute: 'country', op: 'eq', values: ['FR'] }], allocation: { context_hash_specs: { user: { parameter_names: [] } }, buckets: [{ variant_key: 'a', weight_milli: 500 }, { variant_key: 'b', weight_milli: 500 }] } },
    ],
  });
}

describe('ResultJsonCache', () => {
  test('one text per flag definition and outcome, reused by other inputs; another outcome or definition is rendered anew', () => {
    renders = 0;
    const flag = flagOf('checkout');
    const first = answers([flag], user('u1', { country: 'DE' }));
    assert.deepEqual(first.parsed[0], expected(first.results[0]!));
    const second = answers([flag], user('u2', { country: 'DE' }));
    assert.equal(second.bytes[0], first.bytes[0], 'the same bytes, not rendered again');
    assert.equal(renders, 1);
    const fallback = answers([flag], user('u3', { country: 'US' }));
    assert.deepEqual(fallback.parsed[0], expected(fallback.results[0]!));
    assert.equal(renders, 2);
    // A changed flag is a new definition object: its text follows the new value.
    const changed = flagOf('checkout', { de: { color: 'green' } });
    assert.deepEqual((answers([changed], user('u1', { country: 'DE' })).parsed[0] as { value: unknown }).value, { color: 'green' });
    assert.equal(renders, 3);
  });

  test('a split keeps one text per bucket range, whatever the exact bucket', () => {
    renders = 0;
    const flag = flagOf('split');
    const seen = new Map<string, Buffer>();
    for (let u = 0; u < 60; u++) {
      const { results, parsed, bytes } = answers([flag], user(`fr-${u}`, { country: 'FR' }));
      assert.deepEqual(parsed[0], expected(results[0]!));
      const variant = results[0]!.variant_key;
      if (seen.has(variant)) assert.equal(bytes[0], seen.get(variant));
      else seen.set(variant, bytes[0]!);
    }
    assert.deepEqual([...seen.keys()].sort(), ['a', 'b']);
    assert.equal(renders, 2, 'one render per bucket range');
  });

  test('results with a free-text error message are rendered every time', () => {
    renders = 0;
    const missing = testFlag('missing', { rules: [{ id: 'r', conditions: [], segment_keys: ['gone'], variant_key: 'on' }] });
    const broken = { ...testFlag('broken'), rules: [{ id: 'r', conditions: 'nope' }] } as unknown as Flag;
    for (let i = 0; i < 2; i++) {
      const { results, parsed } = answers([missing, broken], user(`u${i}`));
      assert.equal(results[0]!.error_code, 'SEGMENT_NOT_FOUND');
      assert.equal(results[1]!.error_code, 'GENERAL');
      assert.deepEqual(parsed, results.map(expected));
    }
    assert.equal(renders, 4);
  });

  test('array: head, the answers in result order separated by commas, tail; valid JSON with any number of items', () => {
    const flags = [flagOf('x'), flagOf('y', { de: 'two é' })];
    for (const list of [flags, flags.slice(0, 1), []]) {
      const outcomes = newOutcomes(list.length);
      const results = evaluateAll(list, user('u1', { country: 'DE' }), ENV, outcomes);
      const body = JSON.parse(cache.array('{"flags":[', results, outcomes, ']}').toString('utf8'));
      assert.deepEqual(body, { flags: results.map(expected) });
    }
  });

  test('items of a list: each flag answers its own definition, also when two flags have the same rules and key', () => {
    // Two tenants' flags with the same key and rules but other values never share a text.
    const mine = flagOf('same', { de: 'mine' });
    const theirs = flagOf('same', { de: 'theirs' });
    for (let i = 0; i < 3; i++) {
      const { parsed } = answers([mine, theirs], user(`u${i}`, { country: 'DE' }));
      assert.deepEqual(
        parsed.map((p) => (p as { value: unknown }).value),
        ['mine', 'theirs'],
      );
    }
  });
});

describe('ResultTextCache (one flag\'s answer as a string)', () => {
  let textRenders = 0;
  const texts = new ResultTextCache((r) => {
    textRenders += 1;
    return JSON.stringify({ flag_key: r.flag_key, variant_key: r.variant_key, value: r.value, reason: r.reason, is_enabled: r.is_enabled, error_code: r.error_code, error_message: r.error_message });
  });
  /** The kept text of one flag's result for one input, and that result. */
  const textOf = (flag: Flag, contexts: EvaluationContext[]) => {
    const outcomes = newOutcomes(1);
    const [result] = evaluateAll([flag], contexts, ENV, outcomes);
    return { result: result!, text: texts.text([result!], outcomes, 0) };
  };

  test('one render per outcome (a fixed rule, each bucket range of a split, the off variant), each answering its own fields', () => {
    textRenders = 0;
    const flag = flagOf('text');
    const users = [...Array.from({ length: 40 }, (_, u) => user(`fr-${u}`, { country: 'FR' })), user('de-1', { country: 'DE' }), user('de-2', { country: 'DE' }), user('us', { country: 'US' })];
    const byVariant = new Map<string, string>();
    for (const contexts of users) {
      const { result, text } = textOf(flag, contexts);
      assert.deepEqual(JSON.parse(text), expected(result));
      const kept = byVariant.get(result.variant_key);
      if (kept !== undefined) assert.equal(text, kept);
      byVariant.set(result.variant_key, text);
    }
    assert.deepEqual([...byVariant.keys()].sort(), ['a', 'b', 'de', 'off']);
    assert.equal(textRenders, 4);
  });

  test('a result with a free-text message is rendered every time; same-key flags of other values keep their own text', () => {
    textRenders = 0;
    const missing = testFlag('missing', { rules: [{ id: 'r', conditions: [], segment_keys: ['gone'], variant_key: 'on' }] });
    for (let i = 0; i < 3; i++) assert.equal(textOf(missing, user(`u${i}`)).result.error_code, 'SEGMENT_NOT_FOUND');
    assert.equal(textRenders, 3);
    const mine = flagOf('same', { de: 'mine' });
    const theirs = flagOf('same', { de: 'theirs' });
    for (let i = 0; i < 2; i++) {
      assert.equal(JSON.parse(textOf(mine, user(`u${i}`, { country: 'DE' })).text).value, 'mine');
      assert.equal(JSON.parse(textOf(theirs, user(`u${i}`, { country: 'DE' })).text).value, 'theirs');
    }
  });
});
