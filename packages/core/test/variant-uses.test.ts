import assert from 'node:assert/strict';
import { test } from 'node:test';
import { variantUses } from '../src/flags/variant-uses.ts';

test('variantUses names the rules serving a variant (fixed or in a bucket, weight 0 too) and the off variant', () => {
  const flag = {
    off_variant_key: 'b',
    rules: [
      { id: 'fixed-a', conditions: [], variant_key: 'a' },
      { id: 'split', conditions: [], allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'b', weight_milli: 1000 }, { variant_key: 'c', weight_milli: 0 }] } },
    ],
  };
  assert.deepEqual(variantUses(flag, 'a'), ["rule 'fixed-a'"]);
  assert.deepEqual(variantUses(flag, 'b'), ["rule 'split'", 'the off variant']);
  assert.deepEqual(variantUses(flag, 'c'), ["rule 'split'"]);
  assert.deepEqual(variantUses(flag, 'd'), []);
  assert.deepEqual(variantUses({ off_variant_key: null, rules: [] }, 'a'), []);
});
