import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MAX_ATTRIBUTE_STRING_LENGTH, isDomainError, type EvaluationContext } from '@switchyard/core';
import { checkContexts, toParameters } from '../src/index.ts';

const user = (parameters: Record<string, unknown> = {}, key = 'u1', type = 'user'): EvaluationContext =>
  ({ context_type: type, key, parameters }) as EvaluationContext;

/** The INVALID_ARGUMENT field a check throws, or null when it passes. */
function refusal(contexts: EvaluationContext[]): string | null {
  try {
    checkContexts(contexts);
    return null;
  } catch (error) {
    assert.ok(isDomainError(error) && error.code === 'INVALID_ARGUMENT', String(error));
    return error.message;
  }
}

describe('checkContexts', () => {
  test('accepts one to ten contexts of distinct types with scalar attributes', () => {
    assert.equal(refusal([user({ plan: 'pro', age: 30, beta: true })]), null);
    const ten = Array.from({ length: 10 }, (_, i) => user({}, `k${i}`, `type-${i}`));
    assert.equal(refusal(ten), null);
    assert.equal(refusal([user(Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`a${i}`, i])))]), null);
  });

  test('refuses no context, more than ten, an empty key or type, and a repeated type', () => {
    assert.match(refusal([]) ?? '', /between 1 and 10 contexts/);
    assert.match(refusal(Array.from({ length: 11 }, (_, i) => user({}, `k${i}`, `type-${i}`))) ?? '', /between 1 and 10/);
    assert.match(refusal([user({}, '')]) ?? '', /context_key must be a non-empty string/);
    assert.match(refusal([user({}, 'k'.repeat(1025))]) ?? '', /context_key/);
    assert.match(refusal([user({}, 'k', '')]) ?? '', /context_type must be a non-empty string/);
    assert.match(refusal([user({}, 'a', 'user'), user({}, 'b', 'org'), user({}, 'c', 'user')]) ?? '', /two contexts of type 'user'/);
  });

  test('refuses more than 100 attributes and any attribute that is not a scalar', () => {
    assert.match(refusal([user(Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`a${i}`, i])))]) ?? '', /at most 100 attributes/);
    assert.match(refusal([user({ ok: 'x', nested: { a: 1 } })]) ?? '', /attributes\.nested must be a string, number or boolean/);
    assert.match(refusal([user({ list: [1] })]) ?? '', /attributes\.list/);
    assert.match(refusal([user({ missing: null })]) ?? '', /attributes\.missing/);
  });

  test('refuses a string attribute over 4096 characters, naming it; 4096 is accepted', () => {
    assert.equal(MAX_ATTRIBUTE_STRING_LENGTH, 4096);
    assert.equal(refusal([user({ email: 'a'.repeat(4096) })]), null);
    assert.equal(refusal([user({ email: '😀'.repeat(2048) })]), null, '2048 emoji are 4096 UTF-16 code units');
    assert.match(refusal([user({ plan: 'pro', email: 'a'.repeat(4097) })]) ?? '', /^attributes\.email is 4097 characters long \(at most 4096\)$/);
    assert.match(refusal([user({ email: '😀'.repeat(2049) })]) ?? '', /^attributes\.email is 4098 characters long/);
    const second = user({ name: 'b'.repeat(5000) }, 'o1', 'organization');
    assert.match(refusal([user({ email: 'a' }), second]) ?? '', /^contexts\[0\]\.attributes\.name is 5000 characters long/);
    assert.equal(refusal([user({ count: 10 ** 300, beta: true })]), null, 'numbers and booleans are not capped');
  });
});

describe('toParameters', () => {
  test('drops null attributes; absent or null attributes give an empty object', () => {
    assert.deepEqual(toParameters({ plan: 'pro', gone: null, age: 3 }), { plan: 'pro', age: 3 });
    assert.deepEqual(toParameters(null), {});
    assert.deepEqual(toParameters(undefined), {});
  });

  test('hands back the SDK object itself when there is nothing to drop, without changing it', () => {
    const attributes = { plan: 'pro', age: 3, beta: false };
    assert.equal(toParameters(attributes), attributes);
    const withNull = { plan: 'pro', gone: null };
    assert.notEqual(toParameters(withNull), withNull);
    assert.deepEqual(withNull, { plan: 'pro', gone: null }, 'the input is not modified');
  });
});
