import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { allTags, atIndex, metadataBody, parseTags, tagsText, withChange, withEveryTag, withVariant, withWeight, type MetadataDraft } from '../src/components/draft-updates.ts';
import type { Rule } from '../src/records.ts';

/** A state hook's setter, as Preact's: updates queued before a re-render each see the previous one's result. */
function state<T>(initial: T) {
  let value = initial;
  return { get: () => value, update: (update: (current: T) => T) => (value = update(value)) };
}

const split: Rule = {
  id: 'r1', conditions: [{ attribute: 'country', op: 'eq', values: ['fr'] }],
  allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'control', weight_milli: 500 }, { variant_key: 'treatment', weight_milli: 500 }] },
};

describe('rule and client-key updaters', () => {
  test('two field changes before a re-render both apply', () => {
    type Draft = { name: string; origins: string; includeDisabled: boolean };
    const draft = state<Draft>({ name: '', origins: '', includeDisabled: false });
    draft.update(withChange<Draft>({ name: 'iOS app' }));
    draft.update(withChange<Draft>({ includeDisabled: true }));
    assert.deepEqual(draft.get(), { name: 'iOS app', origins: '', includeDisabled: true });
  });

  test('two weight changes of a rule in a list both apply, the other rules untouched', () => {
    const other: Rule = { id: 'r0', conditions: [], variant_key: 'control' };
    const rules = state<Rule[]>([other, split]);
    const keys = ['control', 'treatment', 'holdout'];
    rules.update(atIndex(1, withWeight(keys, 'control', 20)));
    rules.update(atIndex(1, withWeight(keys, 'treatment', 70.4)));
    assert.equal(rules.get()[0], other);
    assert.deepEqual(rules.get()[1]?.allocation?.buckets, [
      { variant_key: 'control', weight_milli: 200 },
      { variant_key: 'treatment', weight_milli: 704 },
      { variant_key: 'holdout', weight_milli: 0 },
    ]);
    assert.deepEqual(rules.get()[1]?.conditions, split.conditions);
  });

  test('a weight change to a rule that serves a fixed variant leaves it alone', () => {
    const fixed: Rule = { id: 'r2', conditions: [], variant_key: 'on' };
    assert.equal(withWeight(['on', 'off'], 'on', 50)(fixed), fixed);
  });
});

describe('prerequisite updaters', () => {
  test('two variant ticks before a re-render both apply, kept in the prerequisite flag\'s variant order; an untick removes one', () => {
    const draft = state([{ flag_key: 'gate', variant_keys: [] as string[] }]);
    const order = ['control', 'treatment', 'holdout'];
    draft.update(atIndex(0, withVariant(order, 'holdout', true)));
    draft.update(atIndex(0, withVariant(order, 'control', true)));
    assert.deepEqual(draft.get(), [{ flag_key: 'gate', variant_keys: ['control', 'holdout'] }]);
    draft.update(atIndex(0, withVariant(order, 'holdout', false)));
    assert.deepEqual(draft.get(), [{ flag_key: 'gate', variant_keys: ['control'] }]);
  });
});

describe('flag metadata helpers', () => {
  test('tags typed with commas or spaces: each once, in code-point order, empty parts dropped', () => {
    assert.deepEqual(parseTags(' web, team:a  ui,,web\tBeta '), ['Beta', 'team:a', 'ui', 'web']);
    assert.deepEqual(parseTags(''), []);
    assert.equal(tagsText(['a', 'b/c']), 'a, b/c');
    assert.equal(tagsText(undefined), '');
  });

  test('the save body: tags parsed, an empty maintainer is null, the rest as chosen', () => {
    const draft = state<MetadataDraft>({ tags: 'b a', lifetime: 'permanent', maintainer: '', bucketBy: 'environment' });
    draft.update(withChange<MetadataDraft>({ lifetime: 'temporary' }));
    draft.update(withChange<MetadataDraft>({ bucketBy: 'project' }));
    assert.deepEqual(metadataBody(draft.get()), { tags: ['a', 'b'], lifetime: 'temporary', maintainer: null, bucket_by: 'project' });
    assert.equal(metadataBody({ ...draft.get(), maintainer: '  ana@example.com ' }).maintainer, 'ana@example.com');
  });

  test('the list filter keeps flags carrying every chosen tag; the choices are every tag once', () => {
    const flags = [{ key: 'a', tags: ['web', 'ui'] }, { key: 'b', tags: ['web'] }, { key: 'c' }];
    assert.deepEqual(withEveryTag(flags, []).map((f) => f.key), ['a', 'b', 'c']);
    assert.deepEqual(withEveryTag(flags, ['web']).map((f) => f.key), ['a', 'b']);
    assert.deepEqual(withEveryTag(flags, ['web', 'ui']).map((f) => f.key), ['a']);
    assert.deepEqual(allTags(flags), ['ui', 'web']);
  });
});
