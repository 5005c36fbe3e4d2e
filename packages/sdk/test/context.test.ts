import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conditionHolds } from '@switchyard/core';
import { toCoreContexts } from '../src/evaluation/context.ts';

test('a context becomes core\'s shape; type defaults to user; arrays are multi-context', () => {
  assert.deepEqual(toCoreContexts({ key: 'u1' }), [{ context_type: 'user', key: 'u1', parameters: undefined }]);
  assert.deepEqual(toCoreContexts([{ key: 'u1', attributes: { a: 1 } }, { key: 'acme', type: 'org', attributes: { seats: 5 } }]), [
    { context_type: 'user', key: 'u1', parameters: { a: 1 } },
    { context_type: 'org', key: 'acme', parameters: { seats: 5 } },
  ]);
});

test('attributes of strings, finite numbers and booleans are used as they are (no copy); null and undefined are dropped (a copy)', () => {
  const clean = { country: 'DE', seats: 3, beta: true };
  assert.equal(toCoreContexts({ key: 'u', attributes: clean })![0]!.parameters, clean, 'the same object');
  const withAbsent = { country: 'DE', plan: null, region: undefined };
  const converted = toCoreContexts({ key: 'u', attributes: withAbsent as never })![0]!.parameters;
  assert.deepEqual(converted, { country: 'DE' });
  assert.notEqual(converted, withAbsent);
  assert.deepEqual(withAbsent, { country: 'DE', plan: null, region: undefined }, 'the caller\'s object is not changed');
});

test('malformed contexts are undefined (INVALID_CONTEXT), never a throw', () => {
  for (const bad of [null, 'u1', [], { key: '' }, { key: 7 }, { key: 'u', type: '' }, { key: 'u', attributes: [] }, { key: 'u', attributes: { nested: { a: 1 } } }, { key: 'u', attributes: { n: Number.NaN } }, [{ key: 'u' }, null]]) {
    assert.equal(toCoreContexts(bad as never), undefined, JSON.stringify(bad));
  }
});

test('inherited properties are not attributes: neither checked by the SDK nor read by evaluation', () => {
  const inherited = Object.create({ injected: 'a scalar', nested: { not: 'a scalar' } }) as Record<string, unknown>;
  inherited.own = 'x';
  const contexts = toCoreContexts({ key: 'u', attributes: inherited as never });
  assert.ok(contexts, 'an inherited non-scalar does not make the context invalid');
  const holds = (attribute: string): boolean => conditionHolds({ attribute, op: 'exists', values: [] }, contexts);
  assert.equal(holds('own'), true);
  assert.equal(holds('injected'), false, 'an inherited scalar is not read');
  assert.equal(holds('nested'), false);
});
