import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  compareEnvironments,
  flagFieldDifferences,
  sameJson,
  segmentDifference,
  type ComparedSegment,
} from '../src/flags/environment-compare.ts';
import type { Flag, Rule } from '../src/model/definitions.ts';

/**
 * The comparison of two environments (docs/contract.md "Environment compare and copy"). Every
 * expectation below is written out by hand from the inputs next to it.
 */

const VARIANTS = [
  { key: 'on', value: true },
  { key: 'off', value: false },
];

/** A bool flag as an environment route shows it; `version` 0 is the never-written default view. */
function flag(key: string, state: Partial<Flag> = {}): Flag {
  return {
    key,
    description: '',
    value_type: 'bool',
    variants: VARIANTS,
    enabled: false,
    off_variant_key: 'off',
    rules: [{ id: 'default', conditions: [], variant_key: 'on' }],
    prerequisites: [],
    hashing: [],
    version: 1,
    archived: false,
    client_visible: false,
    created_at_ms: 0,
    updated_at_ms: 0,
    ...state,
  };
}

const ruleSegment = (key: string, conditions: unknown[], extra: Partial<ComparedSegment> = {}): ComparedSegment => ({
  key,
  kind: 'rule',
  context_type: 'user',
  description: '',
  conditions: conditions as ComparedSegment['conditions'],
  included_count: 0,
  excluded_count: 0,
  ...extra,
});

const listSegment = (key: string, included: string[], excluded: string[] = [], withMembers = true): ComparedSegment => ({
  key,
  kind: 'list',
  context_type: 'user',
  description: '',
  conditions: [],
  included_count: included.length,
  excluded_count: excluded.length,
  ...(withMembers ? { members: { included, excluded } } : {}),
});

const BETA: Rule = { id: 'beta', conditions: [], segment_keys: ['beta-users'], variant_key: 'on' };
const HALF: Rule = {
  id: 'half',
  conditions: [],
  allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] },
};

describe('sameJson', () => {
  test('objects by keys in any order, undefined as absent; arrays in order', () => {
    assert.equal(sameJson({ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }), true);
    assert.equal(sameJson({ a: 1, c: undefined }, { a: 1 }), true);
    assert.equal(sameJson([1, 2], [2, 1]), false);
    assert.equal(sameJson({ a: null }, { a: undefined }), false);
    assert.equal(sameJson([], {}), false);
    assert.equal(sameJson('1', 1), false);
  });
});

describe('flagFieldDifferences', () => {
  test('names each differing field with the target value as before and the source value as after', () => {
    const from = flag('f', { enabled: true, rules: [HALF], hashing: [{ parameter_key: 'org', parameter_type: 'string', order: 1 }] });
    const target = flag('f', { enabled: false, rules: [BETA] });
    assert.deepEqual(flagFieldDifferences(from, target), [
      { field: 'enabled', before: false, after: true },
      { field: 'rules', before: [BETA], after: [HALF] },
      { field: 'hashing', before: [], after: [{ parameter_key: 'org', parameter_type: 'string', order: 1 }] },
    ]);
  });

  test('prerequisites absent and [] are the same; a different list, a different off variant differ', () => {
    const from = flag('f', { prerequisites: [{ flag_key: 'p', variant_keys: ['on'] }], off_variant_key: null });
    const target = flag('f');
    delete target.prerequisites;
    assert.deepEqual(flagFieldDifferences(from, target), [
      { field: 'off_variant_key', before: 'off', after: null },
      { field: 'prerequisites', before: [], after: [{ flag_key: 'p', variant_keys: ['on'] }] },
    ]);
    assert.deepEqual(flagFieldDifferences(flag('g', { prerequisites: [] }), target), []);
  });

  test('rule order matters: the same rules in another order differ', () => {
    assert.deepEqual(
      flagFieldDifferences(flag('f', { rules: [BETA, HALF] }), flag('f', { rules: [HALF, BETA] })).map((d) => d.field),
      ['rules'],
    );
  });
});

describe('segmentDifference', () => {
  test('missing in the target; rule conditions; kind; context type and description', () => {
    const cond = [{ attribute: 'country', operator: 'in', values: ['NZ'] }];
    assert.deepEqual(segmentDifference(ruleSegment('s', cond), undefined), { segment_key: 's', status: 'missing', kind: 'rule', fields: [], members_compared: true });
    assert.equal(segmentDifference(ruleSegment('s', cond), ruleSegment('s', cond)), null);
    assert.deepEqual(segmentDifference(ruleSegment('s', cond), ruleSegment('s', [])), {
      segment_key: 's',
      status: 'differs',
      kind: 'rule',
      fields: ['conditions'],
      members_compared: true,
    });
    assert.deepEqual(segmentDifference(ruleSegment('s', cond), listSegment('s', []))?.fields, ['kind']);
    assert.deepEqual(segmentDifference(ruleSegment('s', cond, { context_type: 'org', description: 'x' }), ruleSegment('s', cond))?.fields, ['context_type', 'description']);
  });

  test('list members as sets; counts only when one side was not read whole', () => {
    assert.equal(segmentDifference(listSegment('l', ['a', 'b']), listSegment('l', ['b', 'a'])), null);
    assert.deepEqual(segmentDifference(listSegment('l', ['a', 'b']), listSegment('l', ['a', 'c']))?.fields, ['included']);
    assert.deepEqual(segmentDifference(listSegment('l', ['a'], ['x']), listSegment('l', ['a'], []))?.fields, ['excluded']);
    // Same counts, members unread: nothing can be said, nothing reported.
    assert.equal(segmentDifference(listSegment('l', ['a', 'b'], [], false), listSegment('l', ['c', 'd'])), null);
    assert.deepEqual(segmentDifference(listSegment('l', ['a', 'b'], [], false), listSegment('l', ['c'])), {
      segment_key: 'l',
      status: 'differs',
      kind: 'list',
      fields: ['included'],
      members_compared: false,
    });
  });
});

describe('compareEnvironments', () => {
  test('lists differing flags in key order with their fields, written side and the segments their source rules name', () => {
    const from = {
      flags: [
        flag('same'),
        flag('toggled', { enabled: true, version: 4 }),
        flag('segmented', { rules: [BETA, HALF], version: 2 }),
        flag('only-from', { version: 3 }),
        flag('only-target', { version: 0 }),
        flag('Upper', { enabled: true }),
      ],
      segments: [listSegment('beta-users', ['u1', 'u2'])],
    };
    const target = {
      flags: [
        flag('same'),
        flag('toggled', { version: 9 }),
        flag('segmented', { version: 5 }),
        flag('only-from', { version: 0 }),
        flag('only-target', { version: 7 }),
        flag('Upper'),
      ],
      segments: [listSegment('beta-users', ['u1'])],
    };
    const { differing, compared } = compareEnvironments(from, target);
    assert.equal(compared, 6);
    // Code point order: 'U' (0x55) sorts before every lower-case letter.
    assert.deepEqual(
      differing.map((d) => [d.flag_key, d.written, d.from_version, d.target_version, d.fields.map((f) => f.field)]),
      [
        ['Upper', 'both', 1, 1, ['enabled']],
        ['only-from', 'from_only', 3, 0, []],
        ['only-target', 'target_only', 0, 7, []],
        ['segmented', 'both', 2, 5, ['rules']],
        ['toggled', 'both', 4, 9, ['enabled']],
      ],
    );
    const segmented = differing.find((d) => d.flag_key === 'segmented')!;
    assert.deepEqual(segmented.segments, [{ segment_key: 'beta-users', status: 'differs', kind: 'list', fields: ['included'], members_compared: true }]);
    assert.deepEqual(segmented.fields[0], { field: 'rules', before: [{ id: 'default', conditions: [], variant_key: 'on' }], after: [BETA, HALF] });
    // Flags whose rules do not differ report no segments.
    assert.deepEqual(differing.find((d) => d.flag_key === 'toggled')!.segments, []);
  });

  test('a segment missing in the target is reported; one equal on both sides is not', () => {
    const from = { flags: [flag('f', { rules: [BETA] })], segments: [listSegment('beta-users', ['u1'])] };
    const missing = compareEnvironments(from, { flags: [flag('f')], segments: [] });
    assert.deepEqual(missing.differing[0]!.segments, [{ segment_key: 'beta-users', status: 'missing', kind: 'list', fields: [], members_compared: true }]);
    const equal = compareEnvironments(from, { flags: [flag('f')], segments: [listSegment('beta-users', ['u1'])] });
    assert.deepEqual(equal.differing[0]!.segments, []);
  });

  test('a flag on one side only (created between the two reads) is left out', () => {
    const result = compareEnvironments({ flags: [flag('a'), flag('new', { enabled: true })], segments: [] }, { flags: [flag('a')], segments: [] });
    assert.deepEqual(result.differing, []);
    assert.equal(result.compared, 2);
  });
});
