import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { copyBody, describeDifference, describeSegment, describeValue, plannedChanges, segmentsToCopy } from '../src/components/environment-compare.ts';
import type { FlagDifference, Rule } from '../src/records.ts';

/** The compare page's words and the copy it plans (docs/console.md "Compare and copy environments"); expectations written by hand. */

const fixed: Rule = { id: 'all', conditions: [], variant_key: 'on' };
const rollout: Rule = {
  id: 'half',
  conditions: [],
  allocation: { context_hash_specs: {}, buckets: [{ variant_key: 'on', weight_milli: 500 }, { variant_key: 'off', weight_milli: 500 }] },
};
const beta = { segment_key: 'beta', status: 'missing' as const, kind: 'list' as const, fields: [], members_compared: true };

const differences: FlagDifference[] = [
  {
    flag_key: 'checkout',
    archived: false,
    from_version: 3,
    target_version: 0,
    written: 'from_only',
    fields: [
      { field: 'enabled', before: false, after: true },
      { field: 'rules', before: [fixed], after: [fixed, rollout] },
    ],
    segments: [beta],
  },
  {
    flag_key: 'banner',
    archived: false,
    from_version: 2,
    target_version: 5,
    written: 'both',
    fields: [{ field: 'prerequisites', before: [], after: [{ flag_key: 'checkout', variant_keys: ['on'] }] }],
    segments: [],
  },
  {
    flag_key: 'search',
    archived: false,
    from_version: 1,
    target_version: 1,
    written: 'both',
    fields: [{ field: 'rules', before: [], after: [{ ...fixed, segment_keys: ['beta'] }] }],
    segments: [beta],
  },
];

describe('describe', () => {
  test('values in a few words', () => {
    assert.equal(describeValue('enabled', true), 'on');
    assert.equal(describeValue('enabled', false), 'off');
    assert.equal(describeValue('off_variant_key', null), 'none');
    assert.equal(describeValue('rules', []), 'no rules');
    assert.equal(describeValue('rules', [fixed, rollout]), '2 rules (1 rollout)');
    assert.equal(describeValue('prerequisites', [{ flag_key: 'a' }, { flag_key: 'b' }]), 'a, b');
    assert.equal(describeValue('hashing', []), 'by context key');
    assert.equal(describeValue('hashing', [{ parameter_key: 'org' }]), 'by org');
    assert.equal(describeDifference({ field: 'rules', before: [fixed], after: [fixed, rollout] }), 'Rules: 1 rule → 2 rules (1 rollout)');
    assert.equal(describeSegment(beta, 'production'), 'list segment beta: missing in production');
    assert.equal(
      describeSegment({ segment_key: 'big', status: 'differs', kind: 'list', fields: ['included'], members_compared: false }, 'production'),
      'list segment big: differs (included) (member counts only: too large to compare)',
    );
  });
});

describe('plannedChanges', () => {
  test('only the chosen flags, only the included fields that differ; segments with rules and segments; rollouts flagged', () => {
    const planned = plannedChanges(differences, new Set(['checkout', 'banner']), ['rules', 'segments']);
    // banner differs in prerequisites only, which are not included: left out.
    assert.deepEqual(planned, [
      { flag_key: 'checkout', changes: [differences[0]!.fields[1]!], segments: [beta], copiesRollout: true, target_version: 0 },
    ]);
    assert.deepEqual(
      plannedChanges(differences, new Set(['checkout', 'banner']), ['enabled', 'prerequisites']).map((p) => [p.flag_key, p.changes.map((c) => c.field), p.segments, p.copiesRollout]),
      [
        ['checkout', ['enabled'], [], false],
        ['banner', ['prerequisites'], [], false],
      ],
    );
  });

  test('segments named by several flags are written once; the body carries each flag\'s target version', () => {
    const planned = plannedChanges(differences, new Set(['checkout', 'search']), ['rules', 'segments']);
    assert.deepEqual(segmentsToCopy(planned), [beta]);
    assert.deepEqual(copyBody('env-staging', planned, ['rules', 'segments']), {
      from_environment_id: 'env-staging',
      flag_keys: ['checkout', 'search'],
      include: ['rules', 'segments'],
      versions: { checkout: 0, search: 1 },
    });
  });
});
