import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isDomainError, type EnvironmentScope, type EvaluationResult, type Flag, type Segment } from '@switchyard/core';
import { testFlag, testSegment } from '../../core/src/testing/fixtures.ts';
import { EvaluationService, buildEnvironmentSnapshot, type EnvironmentSnapshot } from '../src/index.ts';

const scope: EnvironmentScope = { orgId: 'org-1', projectId: 'project-1', environmentId: 'env-1' };
const user = (key = 'u1') => [{ context_type: 'user', key, parameters: { plan: 'pro' } }];

/** A flag serving `on` to plan=pro users and `off` otherwise; `fields` override. */
const proFlag = (key: string, fields: Partial<Flag> = {}): Flag =>
  testFlag(key, {
    value_type: 'string',
    variants: [
      { key: 'on', value: 'on' },
      { key: 'off', value: 'off' },
    ],
    off_variant_key: 'off',
    rules: [{ id: 'pro', conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }], variant_key: 'on' }],
    ...fields,
  });

/** The service over in-memory parts: what it awaited and counted is recorded. */
function serviceOver(snapshot: EnvironmentSnapshot | undefined, loaded: EnvironmentSnapshot = snapshot!) {
  const calls = { loads: 0, membershipQueries: 0, exposures: 0, counted: [] as Array<readonly EvaluationResult[]> };
  const service = new EvaluationService(
    {
      segments: {
        checkMembers: async (_scope, pairs) => {
          calls.membershipQueries++;
          return pairs.map((pair) => pair.contextKey === 'member');
        },
      },
    },
    {
      current: () => snapshot,
      get: async () => {
        calls.loads++;
        return loaded;
      },
    },
    async () => {
      calls.exposures++;
    },
    () => 0,
    { evaluated: (results) => calls.counted.push(results) },
  );
  return { service, calls };
}

const snapshotOf = (flags: Flag[], segments: Segment[] = [], experimentFlagKeys: string[] = []) => buildEnvironmentSnapshot(scope, flags, segments, experimentFlagKeys, 0);

describe('EvaluationService.evaluateNow (the evaluate route without an await)', () => {
  test('answers at once what evaluateFlags answers, and counts the evaluation once', async () => {
    const snapshot = snapshotOf([proFlag('a'), proFlag('b', { enabled: false })]);
    const { service, calls } = serviceOver(snapshot);
    const now = service.evaluateNow(scope, { contexts: user(), flagKey: 'a' });
    assert.ok(now !== undefined);
    assert.deepEqual(
      now.results.map((r) => [r.flag_key, r.variant_key, r.reason]),
      [['a', 'on', 'TARGETING_MATCH']],
    );
    assert.equal(calls.counted.length, 1);
    const all = service.evaluateNow(scope, { contexts: user() });
    assert.deepEqual(
      all?.results.map((r) => [r.flag_key, r.variant_key, r.reason]),
      [
        ['a', 'on', 'TARGETING_MATCH'],
        ['b', 'off', 'DISABLED'],
      ],
    );
    assert.deepEqual(all?.results, (await service.evaluateFlags(scope, { contexts: user() })).results);
    assert.equal(calls.counted.length, 3);
    assert.equal(all?.snapshot, snapshot);
  });

  test('declines, evaluating and counting nothing, when the snapshot is not loaded yet', async () => {
    const { service, calls } = serviceOver(undefined, snapshotOf([proFlag('a')]));
    assert.equal(service.evaluateNow(scope, { contexts: user(), flagKey: 'a' }), undefined);
    assert.equal(calls.counted.length, 0);
    assert.equal(calls.loads, 0);
    // evaluateFlags loads it and answers.
    assert.equal((await service.evaluateFlags(scope, { contexts: user(), flagKey: 'a' })).results[0]?.variant_key, 'on');
    assert.equal(calls.loads, 1);
  });

  test('declines a flag under an active experiment (its exposure is committed first), and every flag when one is', async () => {
    const snapshot = snapshotOf([proFlag('a'), proFlag('exp')], [], ['exp']);
    const { service, calls } = serviceOver(snapshot);
    assert.equal(service.evaluateNow(scope, { contexts: user(), flagKey: 'exp' }), undefined);
    assert.equal(service.evaluateNow(scope, { contexts: user() }), undefined);
    assert.equal(calls.counted.length, 0);
    // A flag outside the experiment needs no exposure: answered at once, none recorded.
    assert.equal(service.evaluateNow(scope, { contexts: user(), flagKey: 'a' })?.results[0]?.variant_key, 'on');
    assert.equal(calls.exposures, 0);
    await service.evaluateFlags(scope, { contexts: user(), flagKey: 'exp' });
    assert.equal(calls.exposures, 1);
  });

  test('declines a flag that tests a list segment (membership is one query), not one that tests none', async () => {
    const listed = proFlag('listed', { rules: [{ id: 'members', conditions: [], segment_keys: ['beta'], variant_key: 'on' }] });
    const snapshot = snapshotOf([listed, proFlag('plain')], [testSegment('beta', 'list')]);
    const { service, calls } = serviceOver(snapshot);
    assert.equal(service.evaluateNow(scope, { contexts: user('member'), flagKey: 'listed' }), undefined);
    assert.equal(service.evaluateNow(scope, { contexts: user('member') }), undefined);
    assert.equal(service.evaluateNow(scope, { contexts: user('member'), flagKey: 'plain' })?.results[0]?.variant_key, 'on');
    assert.equal(calls.membershipQueries, 0);
    const awaited = await service.evaluateFlags(scope, { contexts: user('member'), flagKey: 'listed' });
    assert.deepEqual([awaited.results[0]?.variant_key, awaited.results[0]?.reason], ['on', 'TARGETING_MATCH']);
    assert.equal(calls.membershipQueries, 1);
  });

  test('one flag is evaluated from its compiled form kept with the snapshot; unknown keys keep nothing', async () => {
    const broken = proFlag('broken', { rules: [{ id: 'r', conditions: 'not a list', variant_key: 'on' }] } as unknown as Partial<Flag>);
    const snapshot = snapshotOf([proFlag('a'), broken]);
    const { service } = serviceOver(snapshot);
    for (let i = 0; i < 3; i++) {
      assert.throws(() => service.evaluateNow(scope, { contexts: user(), flagKey: `unknown-${i}` }), (error: unknown) => isDomainError(error) && error.code === 'NOT_FOUND');
    }
    assert.equal(snapshot.compiledFlags.size, 0);
    assert.equal(service.evaluateNow(scope, { contexts: user('u1'), flagKey: 'a' })?.results[0]?.variant_key, 'on');
    const kept = snapshot.compiledFlags.get('a');
    assert.ok(kept);
    assert.equal(service.evaluateNow(scope, { contexts: user('u2'), flagKey: 'a' })?.results[0]?.variant_key, 'on');
    assert.equal(snapshot.compiledFlags.get('a'), kept, 'compiled once, then reused');
    // A flag that cannot be compiled is remembered as such and answers its error from the document.
    const error = (await service.evaluateFlags(scope, { contexts: user(), flagKey: 'broken' })).results[0];
    assert.deepEqual([error?.reason, error?.error_code], ['ERROR', 'GENERAL']);
    assert.equal(snapshot.compiledFlags.get('broken'), null);
    assert.equal(snapshot.compiledFlags.size, 2);
  });

  test('refuses as evaluateFlags does: an unknown flag (404) and an invalid context (400), synchronously', () => {
    const { service } = serviceOver(snapshotOf([proFlag('a')]));
    assert.throws(
      () => service.evaluateNow(scope, { contexts: user(), flagKey: 'missing' }),
      (error: unknown) => isDomainError(error) && error.code === 'NOT_FOUND',
    );
    assert.throws(
      () => service.evaluateNow(scope, { contexts: [{ context_type: 'user', key: '', parameters: {} }], flagKey: 'a' }),
      (error: unknown) => isDomainError(error) && error.code === 'INVALID_ARGUMENT',
    );
  });
});

describe('prerequisites (issue 37)', () => {
  const list: Segment = testSegment('beta', 'list');
  // root reads the list segment; mid needs root = on; top needs mid = on (hand-derived below).
  const root = proFlag('root', { rules: [{ id: 'beta', conditions: [], segment_keys: ['beta'], variant_key: 'on' }] });
  const mid = proFlag('mid', { rules: [{ id: 'all', conditions: [], variant_key: 'on' }], prerequisites: [{ flag_key: 'root', variant_keys: ['on'] }] });
  const top = proFlag('top', { rules: [{ id: 'all', conditions: [], variant_key: 'on' }], prerequisites: [{ flag_key: 'mid', variant_keys: ['on'] }] });

  test('a dependent reads its prerequisites’ list segments, transitively: evaluateNow declines and the membership is queried', async () => {
    const snapshot = snapshotOf([root, mid, top], [list]);
    assert.deepEqual(snapshot.listSegmentKeysByFlag.get('top'), ['beta']);
    assert.deepEqual(snapshot.features, ['prerequisites']);
    const { service, calls } = serviceOver(snapshot);
    assert.equal(service.evaluateNow(scope, { contexts: user('member'), flagKey: 'top' }), undefined, 'a list-segment lookup is needed');
    const member = await service.evaluateFlags(scope, { contexts: user('member'), flagKey: 'top' });
    assert.deepEqual([member.results[0]!.variant_key, member.results[0]!.reason], ['on', 'TARGETING_MATCH']);
    const other = await service.evaluateFlags(scope, { contexts: user('other'), flagKey: 'top' });
    assert.deepEqual([other.results[0]!.variant_key, other.results[0]!.reason, other.results[0]!.prerequisite_key], ['off', 'PREREQUISITE_FAILED', 'mid']);
    assert.equal(calls.membershipQueries, 2);
    assert.deepEqual(snapshotOf([root, proFlag('plain')], [list]).features, [], 'no prerequisites: no features');
  });

  test('a snapshot naming an evaluation feature this evaluator does not know (a gateway behind its services) is refused, flag by flag', async () => {
    const snapshot = buildEnvironmentSnapshot(scope, [proFlag('a')], [], [], 0, ['prerequisites', 'quantum-rollouts']);
    const { service } = serviceOver(snapshot);
    const [result] = (await service.evaluateFlags(scope, { contexts: user(), flagKey: 'a' })).results;
    assert.deepEqual([result!.reason, result!.error_code, result!.value, result!.variant_key], ['ERROR', 'GENERAL', null, '']);
    assert.match(result!.error_message ?? '', /quantum-rollouts/);
  });
});
