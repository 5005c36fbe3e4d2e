import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { documentOfCompiled } from '@switchyard/core';
import { DefinitionStore } from '../src/store/definition-store.ts';
import type { DefinitionUpdate } from '../src/sync/decode-sync-message.ts';
import { boolFlag, segment, segmentFlag } from './fixtures.ts';

const update = (fields: Partial<DefinitionUpdate>): DefinitionUpdate => ({
  fullSnapshot: false,
  sequenceNumber: 2,
  serverTimestampMs: 1,
  environmentId: 'env-1',
  projectId: 'proj-1',
  flags: [],
  segments: [],
  removedFlagKeys: [],
  removedSegmentKeys: [],
  experimentFlagKeys: [],
  features: [],
  problems: [],
  ...fields,
});

describe('DefinitionStore', () => {
  test('compiledFlag: a kept form per flag, made once, dropped with every change; null when the document does not compile', () => {
    const store = new DefinitionStore();
    const a = boolFlag('a');
    store.apply(update({ fullSnapshot: true, flags: [a, boolFlag('broken', true, { rules: 'no' as never })] }));
    assert.equal(store.compiledFlag('missing'), undefined);
    assert.equal(store.compiledFlag('broken'), null);
    const kept = store.compiledFlag('a')!;
    assert.equal(documentOfCompiled(kept), a);
    assert.equal(store.compiledFlag('a'), kept, 'the same form while nothing changed');
    const changed = boolFlag('a', false);
    store.apply(update({ flags: [changed] }));
    assert.equal(documentOfCompiled(store.compiledFlag('a')!), changed, 'a change brings the new document\'s form');
    store.apply(update({ removedFlagKeys: ['a'] }));
    assert.equal(store.compiledFlag('a'), undefined);
  });

  test('a full snapshot, then increments in order: added, changed, removed', () => {
    const store = new DefinitionStore();
    assert.equal(store.hasDefinitions, false);
    const first = store.apply(update({ fullSnapshot: true, sequenceNumber: 1, flags: [boolFlag('a'), boolFlag('b')], segments: [segment('beta', 'list')], experimentFlagKeys: ['a'] }));
    assert.deepEqual(first.changedFlagKeys, ['a', 'b']);
    assert.equal(first.allListSegments, true);
    assert.equal(store.environmentId, 'env-1');
    assert.equal(store.projectId, 'proj-1');
    assert.deepEqual([...store.experimentFlagKeys], ['a']);

    const second = store.apply(update({ flags: [boolFlag('b', false), boolFlag('c')], removedFlagKeys: ['a'] }));
    assert.deepEqual(second.changedFlagKeys, ['a', 'b', 'c']);
    assert.deepEqual([...store.flags.keys()].sort(), ['b', 'c']);
    assert.equal(store.flag('b')?.off_variant_key, 'off');
    assert.deepEqual([...store.experimentFlagKeys], [], 'the set is complete in every message');

    // The same flag resent unchanged changes nothing.
    assert.deepEqual(store.apply(update({ flags: [boolFlag('c')] })).changedFlagKeys, []);
  });

  test('a full snapshot replaces everything: what it lacks is removed', () => {
    const store = new DefinitionStore();
    store.apply(update({ fullSnapshot: true, flags: [boolFlag('a'), boolFlag('b')] }));
    const change = store.apply(update({ fullSnapshot: true, flags: [boolFlag('b')] }));
    assert.deepEqual(change.changedFlagKeys, ['a']);
    assert.deepEqual([...store.flags.keys()], ['b']);
  });

  test('a resent list segment marks the flags naming it and drops its cached answers', () => {
    const store = new DefinitionStore();
    store.apply(update({ fullSnapshot: true, flags: [segmentFlag('gated', 'beta'), boolFlag('plain')], segments: [segment('beta', 'list'), segment('rules', 'rule')] }));
    const resent = store.apply(update({ segments: [segment('beta', 'list')] }));
    assert.deepEqual(resent.changedFlagKeys, ['gated']);
    assert.deepEqual(resent.changedListSegmentKeys, ['beta']);
    assert.equal(resent.allListSegments, false);

    const removed = store.apply(update({ removedSegmentKeys: ['beta'] }));
    assert.deepEqual(removed.changedFlagKeys, ['gated']);
    assert.deepEqual(removed.changedListSegmentKeys, ['beta']);
    assert.equal(store.segments.has('beta'), false);
  });

  test('a rule segment whose conditions change marks its flags', () => {
    const store = new DefinitionStore();
    store.apply(update({ fullSnapshot: true, flags: [segmentFlag('gated', 'rules')], segments: [segment('rules', 'rule')] }));
    const change = store.apply(update({ segments: [segment('rules', 'rule', { conditions: [{ attribute: 'country', op: 'eq', values: ['DE'] }] })] }));
    assert.deepEqual(change.changedFlagKeys, ['gated']);
    assert.deepEqual(change.changedListSegmentKeys, []);
  });

  test('snapshot() and load() round-trip', () => {
    const store = new DefinitionStore();
    store.apply(update({ fullSnapshot: true, flags: [boolFlag('a')], segments: [segment('beta', 'list')], experimentFlagKeys: ['a'] }));
    const copy = new DefinitionStore();
    copy.load(JSON.parse(JSON.stringify(store.snapshot())));
    assert.deepEqual(copy.snapshot(), store.snapshot());
  });
});
