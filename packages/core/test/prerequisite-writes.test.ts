import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkPrerequisiteGraph, checkPrerequisites, refuseRemovingPrerequisiteVariants, refuseWhilePrerequisite, type PrerequisiteNode } from '../src/index.ts';

/**
 * The write-time checks of prerequisites (docs/contract.md "Prerequisites"), on graphs drawn by
 * hand: the expected answers come from the drawings, not from the code.
 */

const node = (...prerequisites: string[]): PrerequisiteNode => ({
  variants: [{ key: 'on' }, { key: 'off' }],
  archived: false,
  prerequisites: prerequisites.map((flag_key) => ({ flag_key, variant_keys: ['on'] })),
});
const on = (...keys: string[]) => keys.map((flag_key) => ({ flag_key, variant_keys: ['on'] }));
const graph = (entries: Record<string, PrerequisiteNode>) => new Map(Object.entries(entries));
const refused = (fn: () => void, code: string, message: RegExp) =>
  assert.throws(fn, (error: { code?: string; message?: string }) => error.code === code && message.test(error.message ?? ''));

describe('checkPrerequisites (shape)', () => {
  test('accepts a list and copies it; refuses self, repeats, empty variant lists, more than 50', () => {
    assert.deepEqual(checkPrerequisites('a', [{ flag_key: 'b', variant_keys: ['on', 'off'] }]), [{ flag_key: 'b', variant_keys: ['on', 'off'] }]);
    refused(() => checkPrerequisites('a', on('a')), 'INVALID_ARGUMENT', /own prerequisite/);
    refused(() => checkPrerequisites('a', on('b', 'b')), 'INVALID_ARGUMENT', /prerequisites\[1\]\.flag_key 'b' is named twice/);
    refused(() => checkPrerequisites('a', [{ flag_key: 'b', variant_keys: [] }]), 'INVALID_ARGUMENT', /non-empty/);
    refused(() => checkPrerequisites('a', [{ flag_key: 'b', variant_keys: ['on', 'on'] }]), 'INVALID_ARGUMENT', /variant_keys\[1\] 'on' is named twice/);
    refused(() => checkPrerequisites('a', on(...Array.from({ length: 51 }, (_, i) => `f${i}`))), 'INVALID_ARGUMENT', /at most 50/);
    assert.equal(checkPrerequisites('a', on(...Array.from({ length: 50 }, (_, i) => `f${i}`))).length, 50);
    refused(() => checkPrerequisites('a', {}), 'INVALID_ARGUMENT', /must be an array/);
  });
});

describe('checkPrerequisiteGraph', () => {
  test('references: missing, archived, unknown variant', () => {
    const flags = graph({ a: node(), b: node(), gone: { ...node(), archived: true } });
    refused(() => checkPrerequisiteGraph('a', on('c'), flags), 'INVALID_ARGUMENT', /no flag 'c' in this project/);
    refused(() => checkPrerequisiteGraph('a', on('gone'), flags), 'INVALID_ARGUMENT', /archived/);
    refused(() => checkPrerequisiteGraph('a', [{ flag_key: 'b', variant_keys: ['maybe'] }], flags), 'INVALID_ARGUMENT', /no variant 'maybe'/);
  });

  test('cycles along the ancestor chain: a→b→a and a→c→b→a refused; a diamond accepted', () => {
    // b → a; writing a → b closes a → b → a.
    refused(() => checkPrerequisiteGraph('a', on('b'), graph({ a: node(), b: node('a') })), 'INVALID_ARGUMENT', /cycle \(a → b → a\)/);
    // c → b → a; writing a → c closes a → c → b → a.
    refused(() => checkPrerequisiteGraph('a', on('c'), graph({ a: node(), b: node('a'), c: node('b') })), 'INVALID_ARGUMENT', /cycle \(a → c → b → a\)/);
    // top → left, right, bottom; left → bottom; right → bottom: bottom is reached three ways, no cycle.
    checkPrerequisiteGraph('top', on('left', 'right', 'bottom'), graph({ top: node(), left: node('bottom'), right: node('bottom'), bottom: node() }));
    // The flag's own stored list is replaced by the new one: a → b stored, rewritten to a → c.
    checkPrerequisiteGraph('a', on('c'), graph({ a: node('b'), b: node(), c: node() }));
  });

  test('chain length: 16 flags accepted, 17 refused, counting the flags that depend on the written one', () => {
    // f1 → f2 → ... → f15 stored; writing f0 → f1 makes 16 flags (f0..f15).
    const chain = (n: number) => graph(Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, i > 0 && i < n - 1 ? node(`f${i + 1}`) : node()])));
    const sixteen = chain(16);
    checkPrerequisiteGraph('f0', on('f1'), sixteen);
    // f1 → ... → f16 stored (16 flags); writing f0 → f1 makes 17.
    refused(() => checkPrerequisiteGraph('f0', on('f1'), chain(17)), 'INVALID_ARGUMENT', /17 flags/);
    // From the middle: up → m (up depends on m), and m → d1 → ... → d14 below (14 + m + up = 16) is fine;
    // one more below is 17.
    const below = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`d${i + 1}`, i + 1 < n ? node(`d${i + 2}`) : node()]));
    checkPrerequisiteGraph('m', on('d1'), graph({ up: node('m'), m: node(), ...below(14) }));
    refused(() => checkPrerequisiteGraph('m', on('d1'), graph({ up: node('m'), m: node(), ...below(15) })), 'INVALID_ARGUMENT', /17 flags/);
  });
});

describe('dependents', () => {
  const holders = [
    { flag_key: 'checkout', environment: 'production', prerequisites: on('payments') },
    { flag_key: 'banner', environment: 'staging', prerequisites: [{ flag_key: 'payments', variant_keys: ['off'] }] },
  ];
  test('delete and archive name every dependent with its environment', () => {
    refused(() => refuseWhilePrerequisite('payments', holders, 'deleted'), 'FAILED_PRECONDITION', /'checkout' \(in production\), 'banner' \(in staging\)/);
    refuseWhilePrerequisite('checkout', holders, 'archived');
  });
  test('a variant may go unless a dependent lists it', () => {
    refused(() => refuseRemovingPrerequisiteVariants('payments', ['off'], holders), 'FAILED_PRECONDITION', /'off' is a prerequisite variant of 'banner' \(in staging\)/);
    refuseRemovingPrerequisiteVariants('payments', ['other'], holders);
  });
});
