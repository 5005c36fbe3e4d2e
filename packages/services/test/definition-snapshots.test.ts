import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EnvironmentScope, Flag, Repositories } from '@switchyard/core';
import { InMemoryChangeNotifier, testFlag, testSegment } from '@switchyard/core/testing';
import { DefinitionSnapshots, buildEnvironmentSnapshot } from '../src/index.ts';

const SCOPE: EnvironmentScope = { orgId: 'org-1', projectId: 'project-1', environmentId: 'env-1' };

const flag = (key: string): Flag => testFlag(key);

/** Repositories whose flag list the test controls: what it returns, whether it fails, and when it answers. */
function fakeRepos() {
  const control = {
    flags: [flag('a')] as Flag[],
    failing: false,
    loads: 0,
    /** While set, flag loads wait for it (to interleave a change with a load). */
    gate: null as Promise<void> | null,
  };
  const repos = {
    flags: {
      list: async () => {
        control.loads++;
        const flags = control.flags.map((f) => ({ ...f }));
        if (control.gate) await control.gate;
        if (control.failing) throw new Error('database down');
        return flags;
      },
    },
    segments: { list: async () => [] },
    experiments: { list: async () => [] },
  } as unknown as Pick<Repositories, 'flags' | 'segments' | 'experiments'>;
  return { repos, control };
}

describe('DefinitionSnapshots.current (the evaluate hot path without an await)', () => {
  test('is the loaded snapshot once get() has finished, and the same object for every caller', async () => {
    const { repos } = fakeRepos();
    const snapshots = new DefinitionSnapshots(repos, new InMemoryChangeNotifier());
    assert.equal(snapshots.current(SCOPE.environmentId), undefined, 'nothing before the first load');
    const loaded = await snapshots.get(SCOPE);
    assert.equal(snapshots.current(SCOPE.environmentId), loaded);
    assert.deepEqual([...loaded.flags.keys()], ['a']);
  });

  test('a change to the environment, its project or everything drops it until the next load', async () => {
    const { repos, control } = fakeRepos();
    const snapshots = new DefinitionSnapshots(repos, new InMemoryChangeNotifier());
    for (const drop of [
      () => snapshots.invalidate({ environmentId: SCOPE.environmentId }),
      () => snapshots.invalidate({ projectId: SCOPE.projectId }),
      () => snapshots.invalidateAll(),
    ]) {
      await snapshots.get(SCOPE);
      assert.ok(snapshots.current(SCOPE.environmentId));
      drop();
      assert.equal(snapshots.current(SCOPE.environmentId), undefined);
    }
    control.flags = [flag('b')];
    const reloaded = await snapshots.get(SCOPE);
    assert.deepEqual([...reloaded.flags.keys()], ['b']);
    assert.equal(snapshots.current(SCOPE.environmentId), reloaded);
  });

  test('another project\'s change leaves it in place', async () => {
    const { repos } = fakeRepos();
    const snapshots = new DefinitionSnapshots(repos, new InMemoryChangeNotifier());
    const loaded = await snapshots.get(SCOPE);
    snapshots.invalidate({ projectId: 'project-2' });
    snapshots.invalidate({ environmentId: 'env-2' });
    assert.equal(snapshots.current(SCOPE.environmentId), loaded);
  });

  test('a load that a change dropped while it ran never becomes current (its data may predate the change)', async () => {
    const { repos, control } = fakeRepos();
    const snapshots = new DefinitionSnapshots(repos, new InMemoryChangeNotifier());
    let open!: () => void;
    control.gate = new Promise((resolve) => (open = resolve));
    const stale = snapshots.get(SCOPE);
    await new Promise((resolve) => setImmediate(resolve));
    snapshots.invalidate({ environmentId: SCOPE.environmentId });
    control.gate = null;
    control.flags = [flag('after-change')];
    open();
    await stale;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(snapshots.current(SCOPE.environmentId), undefined, 'the stale load is not served');
    const fresh = await snapshots.get(SCOPE);
    assert.deepEqual([...fresh.flags.keys()], ['after-change']);
    assert.equal(snapshots.current(SCOPE.environmentId), fresh);
  });

  test('a failed load is not current, and the next get() tries again', async () => {
    const { repos, control } = fakeRepos();
    const snapshots = new DefinitionSnapshots(repos, new InMemoryChangeNotifier());
    control.failing = true;
    await assert.rejects(snapshots.get(SCOPE), /database down/);
    assert.equal(snapshots.current(SCOPE.environmentId), undefined);
    control.failing = false;
    const loaded = await snapshots.get(SCOPE);
    assert.equal(control.loads, 2);
    assert.equal(snapshots.current(SCOPE.environmentId), loaded);
  });
});

describe('buildEnvironmentSnapshot (shared by the database-backed and the remote snapshots)', () => {
  test('active flags in the order given, every segment, the list segments each flag names, the experiment flags', () => {
    const rule = (segment_keys: string[]) => ({ id: 'r', conditions: [], segment_keys, variant_key: 'on' });
    const flags = [
      testFlag('b', { rules: [rule(['list-1', 'rule-1']), rule(['list-1', 'list-2'])] }),
      testFlag('a', { archived: true, rules: [rule(['list-1'])] }),
      testFlag('c', { rules: [rule(['rule-1', 'missing'])] }),
    ];
    const segments = [testSegment('list-1', 'list'), testSegment('list-2', 'list'), testSegment('rule-1', 'rule')];
    const snapshot = buildEnvironmentSnapshot(SCOPE, flags, segments, ['b', 'b'], 1234);
    assert.deepEqual([...snapshot.flags.keys()], ['b', 'c'], 'the archived flag is left out');
    assert.deepEqual([...snapshot.segments.keys()], ['list-1', 'list-2', 'rule-1']);
    assert.deepEqual([...snapshot.listSegmentKeysByFlag], [['b', ['list-1', 'list-2']]], 'list segments only, once each; a flag naming none is absent');
    assert.deepEqual([...snapshot.experimentFlagKeys], ['b']);
    assert.deepEqual([snapshot.scope, snapshot.loadedAtMs], [SCOPE, 1234]);
  });
});
