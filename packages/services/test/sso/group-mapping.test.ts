import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { GroupBinding } from '@switchyard/core';
import { sameBindings } from '../../src/role-bindings/binding-lookups.ts';
import { checkGroupBindings } from '../../src/sso/group-bindings-input.ts';
import { bindingsForGroups, groupsOf } from '../../src/sso/group-mapping.ts';

// Group mapping (docs/sso.md "Group mapping") as pure rules: what a sign-in's groups give.

const P1 = '11111111-1111-4111-8111-111111111111';
const E1 = '22222222-2222-4222-8222-222222222222';

const mapping: GroupBinding[] = [
  { group: 'devs', bindings: [{ role: 'editor', projectId: P1 }] },
  { group: 'qa', bindings: [{ role: 'viewer', projectId: P1 }, { role: 'editor', projectId: P1 }] },
  { group: 'ops', bindings: [{ role: 'admin', projectId: P1, environmentId: E1 }] },
  { group: '*', bindings: [{ role: 'viewer' }] },
];

describe('groups read from a sign-in', () => {
  test('a string array, or a single string; anything else, empty or over 256 characters matches nothing', () => {
    assert.deepEqual(groupsOf(['devs', 'qa', 'devs']), ['devs', 'qa']);
    assert.deepEqual(groupsOf('devs'), ['devs']);
    assert.deepEqual(groupsOf(undefined), []);
    assert.deepEqual(groupsOf(null), []);
    assert.deepEqual(groupsOf({ devs: true }), []);
    assert.deepEqual(groupsOf(['', 7, null, 'x'.repeat(257), 'x'.repeat(256)]), ['x'.repeat(256)]);
  });

  test('only the first 1000 values are read', () => {
    const many = Array.from({ length: 1500 }, (_, i) => `g${i}`);
    const read = groupsOf(many);
    assert.equal(read.length, 1000);
    assert.equal(read.at(-1), 'g999');
    assert.equal(bindingsForGroups([{ group: 'g1200', bindings: [{ role: 'admin' }] }], read), null, 'a group past the first 1000 does not match');
  });
});

describe('bindings from groups', () => {
  test('the union of the matched groups, without duplicates', () => {
    assert.deepEqual(bindingsForGroups(mapping, ['devs', 'qa', 'ops', 'unmapped']), [
      { role: 'editor', projectId: P1 },
      { role: 'viewer', projectId: P1 },
      { role: 'admin', projectId: P1, environmentId: E1 },
    ]);
  });

  test('no group matched: the "*" entry; no "*" entry: null (the org role default)', () => {
    assert.deepEqual(bindingsForGroups(mapping, ['unmapped']), [{ role: 'viewer' }]);
    assert.deepEqual(bindingsForGroups(mapping, []), [{ role: 'viewer' }]);
    assert.equal(bindingsForGroups(mapping.filter((entry) => entry.group !== '*'), ['unmapped']), null);
  });

  test('"*" is an entry, not a pattern: a person whose IdP group is literally "*" gets the fallback only when nothing else matched', () => {
    assert.deepEqual(bindingsForGroups(mapping, ['*', 'devs']), [{ role: 'editor', projectId: P1 }]);
  });

  test('a matched group with no bindings gives nothing (an empty list, not the default)', () => {
    assert.deepEqual(bindingsForGroups([{ group: 'contractors', bindings: [] }, ...mapping], ['contractors']), []);
  });

  test('sameBindings ignores order and duplicates; null is only the same as null', () => {
    assert.equal(sameBindings([{ role: 'viewer' }, { role: 'editor', projectId: P1 }], [{ role: 'editor', projectId: P1 }, { role: 'viewer' }, { role: 'viewer' }]), true);
    assert.equal(sameBindings([], null), false);
    assert.equal(sameBindings(null, null), true);
    assert.equal(sameBindings([{ role: 'viewer' }], [{ role: 'editor' }]), false);
  });
});

describe('the mapping as written', () => {
  test('limits and shapes are refused naming the field', () => {
    const refused = (value: unknown, field: RegExp) =>
      assert.throws(() => checkGroupBindings(value as never), (error: { code?: string; message?: string; field?: string }) => {
        assert.equal(error.code, 'INVALID_ARGUMENT');
        assert.match(error.message ?? '', field);
        return true;
      });
    refused(Array.from({ length: 101 }, (_, i) => ({ group: `g${i}`, bindings: [] })), /at most 100 groups/);
    refused([{ group: 'g', bindings: Array.from({ length: 101 }, () => ({ role: 'viewer' })) }], /group_bindings\[0\]\.bindings holds at most 100/);
    refused([{ group: '', bindings: [] }], /group_bindings\[0\]\.group must be 1\.\.256/);
    refused([{ group: 'x'.repeat(257), bindings: [] }], /group_bindings\[0\]\.group must be 1\.\.256/);
    refused([{ group: 'a', bindings: [] }, { group: 'a', bindings: [] }], /group_bindings\[1\]\.group names a group already mapped/);
    refused([{ group: 'a', bindings: [{ role: 'owner' }] }], /group_bindings\[0\]\.bindings\[0\]\.role/);
    refused([{ group: 'a', bindings: [{ role: 'viewer', project_id: 'p1' }] }], /project_id must be a UUID/);
    assert.equal(checkGroupBindings(undefined), null);
    assert.deepEqual(checkGroupBindings([{ group: 'a', bindings: [{ role: 'viewer', project_id: '', environment_id: null }] }]), [{ group: 'a', bindings: [{ role: 'viewer' }] }]);
  });
});
