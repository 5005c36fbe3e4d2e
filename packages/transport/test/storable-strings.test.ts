import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { findUnstorableString, stringContentProblem } from '../src/input/storable-strings.ts';

/** The edge rule of docs/security.md "Input rules": what PostgreSQL cannot store exactly is refused. */
describe('stringContentProblem', () => {
  test('refuses U+0000 anywhere in a string', () => {
    for (const value of ['\u0000', 'a\u0000', '\u0000b', 'a\u0000b']) assert.equal(stringContentProblem(value), 'must not contain U+0000 (NUL)', JSON.stringify(value));
  });

  test('refuses a high surrogate without its low half and a low surrogate without its high half', () => {
    for (const value of ['\ud800', 'a\ud83d', '\ud83db', '\udc00', 'x\ude00y', '\ude00\ud83d', '\ud83d\ud83d\ude00']) {
      assert.equal(stringContentProblem(value), 'must not contain an unpaired UTF-16 surrogate', JSON.stringify(value));
    }
  });

  test('accepts every other character: emoji (paired surrogates), CJK, other control characters, U+FFFD, the empty string', () => {
    for (const value of ['', 'plain', '😀', 'a😀b👍🏽', '中文字符', '한국어', 'עברית', '\u0001\u001f\u007f', '\ufffd', '\u2028', 'e\u0301']) {
      assert.equal(stringContentProblem(value), undefined, JSON.stringify(value));
    }
  });
});

describe('findUnstorableString', () => {
  test('names the first refused string by its path, in document order', () => {
    const body = { name: 'ok', flag: { variants: [{ key: 'on' }, { key: 'o\u0000ff' }], description: '\ud800' } };
    assert.deepEqual(findUnstorableString(body, 'body'), { field: 'body.flag.variants[1].key', problem: 'must not contain U+0000 (NUL)' });
    assert.deepEqual(findUnstorableString({ a: ['x', ['y', '\udfff']] }, 'body'), { field: 'body.a[1][1]', problem: 'must not contain an unpaired UTF-16 surrogate' });
    assert.deepEqual(findUnstorableString('\u0000', 'params.flag_id'), { field: 'params.flag_id', problem: 'must not contain U+0000 (NUL)' });
  });

  test('checks object keys too, naming them by position; odd key names are quoted in paths', () => {
    assert.deepEqual(findUnstorableString({ attributes: { ok: 1, 'b\u0000d': 2 } }, 'body'), { field: 'body.attributes (key #2)', problem: 'must not contain U+0000 (NUL)' });
    assert.deepEqual(findUnstorableString({ 'a b': { c: '\u0000' } }, 'body'), { field: 'body["a b"].c', problem: 'must not contain U+0000 (NUL)' });
  });

  test('passes clean values, non-strings and bytes (a Buffer is binary, not text)', () => {
    assert.equal(findUnstorableString({ n: 1, b: true, z: null, list: [1.5, 'é😀'], nested: { k: '中' } }, 'body'), undefined);
    assert.equal(findUnstorableString({ arguments: Buffer.from([0, 0xed, 0xa0, 0x80]) }, 'request'), undefined);
    assert.equal(findUnstorableString(undefined, 'body'), undefined);
  });

  test('walks 100,000 levels of nesting without recursion', () => {
    let deep: unknown = '\u0000';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const finding = findUnstorableString(deep, 'body');
    assert.equal(finding?.problem, 'must not contain U+0000 (NUL)');
    assert.ok(finding.field.length <= 200, 'the path named in the answer is cut short');
  });
});
