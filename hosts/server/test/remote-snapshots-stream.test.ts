import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, beforeEach, describe, test } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { DomainError, type EnvironmentScope, type Flag, type Segment } from '@switchyard/core';
import { testFlag, testSegment } from '@switchyard/core/testing';
import { featureFlagMessage } from '@switchyard/transport/domains/flags/messages.ts';
import { loadProto, lookup } from '@switchyard/transport/grpc/proto.ts';
import { listSegmentMeta, ruleSegmentMessage } from '@switchyard/transport/domains/segments/messages.ts';
import { linkCredential } from '@switchyard/transport/remote/forwarded-credential.ts';
import { RemoteDefinitionSnapshots, type RemoteDefinitionSnapshotsOptions } from '@switchyard/transport/remote/remote-definition-snapshots.ts';

/**
 * RemoteDefinitionSnapshots against a scripted FlagService.Sync (a real grpc-js server whose
 * stream the test writes by hand): what a real server never sends on purpose — sequence gaps,
 * silence, refusals before the first snapshot — and the bookkeeping around streams (sharing,
 * idleness, the environment limit, forget).
 */

const FlagService = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags.proto'), 'svc.flags.v1.FlagService');

type SyncCall = grpc.ServerWritableStream<{ environment_id: string }, unknown>;

/** What the scripted server does when a stream opens. */
let onOpen: (call: SyncCall) => void;
/** Every stream opened, in order. */
let calls: SyncCall[];
let server: grpc.Server;
let address: string;
const opened: RemoteDefinitionSnapshots[] = [];

before(async () => {
  server = new grpc.Server();
  server.addService(FlagService.service, {
    sync: (call: SyncCall) => {
      calls.push(call);
      onOpen(call);
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  address = `127.0.0.1:${port}`;
});
after(() => server.forceShutdown());

beforeEach(() => {
  calls = [];
  onOpen = (call) => call.write(fullSnapshot(call.request.environment_id, 1, [testFlag('a')]));
  for (const snapshots of opened.splice(0)) snapshots.stop();
});

function remote(options: RemoteDefinitionSnapshotsOptions = {}): RemoteDefinitionSnapshots {
  const snapshots = new RemoteDefinitionSnapshots(address, grpc.credentials.createInsecure(), options);
  opened.push(snapshots);
  return snapshots;
}

const PROJECT = 'project-1';
/** A scope as a gateway builds it: linked to its caller's credential. */
const scopeOf = (environmentId: string, sdkKey = `sk_${environmentId}`): EnvironmentScope =>
  linkCredential({ orgId: 'org-1', projectId: PROJECT, environmentId }, { sdkKey });

function message(environmentId: string, sequence: number, fields: { full?: boolean; flags?: Flag[]; segments?: Segment[]; removedFlags?: string[]; experiments?: string[] }) {
  const segments = fields.segments ?? [];
  return {
    sequence_number: sequence,
    full_snapshot: fields.full === true,
    environment_id: environmentId,
    project_id: PROJECT,
    server_timestamp_ms: Date.now(),
    flags: (fields.flags ?? []).map(featureFlagMessage),
    rule_segments: segments.filter((s) => s.kind === 'rule').map(ruleSegmentMessage),
    list_segments: segments.filter((s) => s.kind === 'list').map(listSegmentMeta),
    removed_flag_keys: fields.removedFlags ?? [],
    removed_segment_keys: [],
    experiment_flag_keys: fields.experiments ?? [],
  };
}
const fullSnapshot = (environmentId: string, sequence: number, flags: Flag[], segments: Segment[] = []) => message(environmentId, sequence, { full: true, flags, segments });

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 2_000;
  while (!condition()) {
    assert.ok(Date.now() < deadline, `${what} did not happen within 2 s`);
    await sleep(10);
  }
}

async function rejection(promise: Promise<unknown>): Promise<DomainError> {
  const error = await promise.then(
    () => assert.fail('expected a rejection'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof DomainError, `a DomainError, got ${String(error)}`);
  return error;
}

describe('applying the stream', () => {
  test('the first full snapshot answers get(); each later message makes a new snapshot and tells onChange', async () => {
    const snapshots = remote();
    const changes: unknown[] = [];
    snapshots.onChange((change) => changes.push(change));
    const listSegment = testSegment('beta', 'list');
    const ruleSegment = testSegment('pros', 'rule', { conditions: [{ attribute: 'plan', op: 'eq', values: ['pro'] }] });
    onOpen = (call) => call.write(fullSnapshot('env-1', 1, [testFlag('b'), testFlag('a')], [listSegment, ruleSegment]));
    const first = await snapshots.get(scopeOf('env-1'));
    assert.equal(calls[0]!.metadata.get('x-sdk-key')[0], 'sk_env-1', 'the stream carries the caller credential');
    assert.deepEqual([...first.flags.keys()].sort(), ['a', 'b']);
    assert.deepEqual([...first.segments.keys()].sort(), ['beta', 'pros']);
    assert.deepEqual(first.segments.get('pros')!.conditions, ruleSegment.conditions);
    assert.equal(snapshots.current('env-1'), first);
    assert.deepEqual(changes, [], 'the first snapshot is no change');

    const added = testFlag('0-first', { rules: [{ id: 'r', conditions: [], segment_keys: ['beta', 'pros'], variant_key: 'on' }] });
    calls[0]!.write(message('env-1', 2, { flags: [added], removedFlags: ['a'], experiments: ['b'] }));
    await until(() => snapshots.current('env-1') !== first, 'the delta');
    const second = snapshots.current('env-1')!;
    assert.deepEqual([...second.flags.keys()], ['0-first', 'b'], 'key order, whatever the order of arrival');
    assert.deepEqual(second.listSegmentKeysByFlag.get('0-first'), ['beta']);
    assert.deepEqual([...second.experimentFlagKeys], ['b']);
    assert.deepEqual([...first.flags.keys()].sort(), ['a', 'b'], 'the earlier snapshot is untouched');
    assert.deepEqual(changes, [{ environmentId: 'env-1', resync: false }]);

    const archived = { ...testFlag('b'), archived: true };
    calls[0]!.write(message('env-1', 3, { flags: [archived], experiments: [] }));
    await until(() => snapshots.current('env-1') !== second, 'the archive');
    assert.deepEqual([...snapshots.current('env-1')!.flags.keys()], ['0-first']);
    assert.equal(calls.length, 1, 'all on one stream');
  });

  test('concurrent get()s of one environment share one stream and one snapshot', async () => {
    const snapshots = remote();
    let release = () => {};
    onOpen = (call) => (release = () => call.write(fullSnapshot(call.request.environment_id, 1, [testFlag('a')])));
    const waiting = [snapshots.get(scopeOf('env-1')), snapshots.get(scopeOf('env-1', 'sk_other'))];
    await until(() => calls.length === 1, 'the stream');
    release();
    const [one, two] = await Promise.all(waiting);
    assert.equal(one, two);
    assert.equal(calls.length, 1);
    assert.equal(snapshots.environmentCount(), 1);
  });

  test('a sequence gap drops the environment and tells onChange; the next get() opens a new stream', async () => {
    const snapshots = remote();
    const changes: unknown[] = [];
    snapshots.onChange((change) => changes.push(change));
    await snapshots.get(scopeOf('env-1'));
    calls[0]!.write(message('env-1', 3, { flags: [testFlag('lost-2-then-3')] }));
    await until(() => snapshots.current('env-1') === undefined, 'the drop');
    assert.deepEqual(changes, [{ environmentId: 'env-1', resync: false }]);
    assert.equal(snapshots.environmentCount(), 0);
    await until(() => calls[0]!.cancelled, 'the cancelled stream');

    onOpen = (call) => call.write(fullSnapshot('env-1', 1, [testFlag('fresh')]));
    const reopened = await snapshots.get(scopeOf('env-1'));
    assert.equal(calls.length, 2);
    assert.deepEqual([...reopened.flags.keys()], ['fresh']);
  });

  test('a first message that is not a full snapshot numbered 1 is refused as UNAVAILABLE', async () => {
    const snapshots = remote();
    onOpen = (call) => call.write(message('env-1', 1, { flags: [testFlag('a')] }));
    assert.equal((await rejection(snapshots.get(scopeOf('env-1')))).code, 'UNAVAILABLE');
    onOpen = (call) => call.write(fullSnapshot('env-1', 2, [testFlag('a')]));
    assert.equal((await rejection(snapshots.get(scopeOf('env-1')))).code, 'UNAVAILABLE');
    onOpen = (call) => call.write(fullSnapshot('another-env', 1, [testFlag('a')]));
    assert.equal((await rejection(snapshots.get(scopeOf('env-1')))).code, 'UNAVAILABLE', 'definitions of another environment');
    assert.equal(snapshots.environmentCount(), 0);
  });
});

describe('streams that end or never answer', () => {
  for (const [status, details] of [
    [grpc.status.UNAUTHENTICATED, 'the SDK key was revoked'],
    [grpc.status.PERMISSION_DENIED, 'the key may not sync this environment'],
    [grpc.status.NOT_FOUND, 'environment not found'],
  ] as const) {
    test(`${grpc.status[status]} before the first snapshot rejects get() with that code and message and keeps nothing`, async () => {
      const snapshots = remote();
      onOpen = (call) => call.emit('error', { code: status, details });
      const error = await rejection(snapshots.get(scopeOf('env-1')));
      assert.equal(error.code, grpc.status[status]);
      assert.equal(error.message, details);
      assert.equal(snapshots.environmentCount(), 0);
      onOpen = (call) => call.write(fullSnapshot('env-1', 1, [testFlag('a')]));
      assert.ok(await snapshots.get(scopeOf('env-1')), 'the next get() tries again');
    });
  }

  test('a stream that ends after its snapshot drops it and tells onChange', async () => {
    const snapshots = remote();
    const changes: unknown[] = [];
    snapshots.onChange((change) => changes.push(change));
    await snapshots.get(scopeOf('env-1'));
    calls[0]!.emit('error', { code: grpc.status.UNAVAILABLE, details: 'the server is shutting down' });
    await until(() => snapshots.current('env-1') === undefined, 'the drop');
    assert.deepEqual(changes, [{ environmentId: 'env-1', resync: true }]);
    assert.equal(snapshots.environmentCount(), 0);
  });

  test('no snapshot within firstSnapshotTimeoutMs: UNAVAILABLE, and the stream is closed', async () => {
    const snapshots = remote({ firstSnapshotTimeoutMs: 200 });
    onOpen = () => {};
    const error = await rejection(snapshots.get(scopeOf('env-1')));
    assert.equal(error.code, 'UNAVAILABLE');
    assert.equal(snapshots.environmentCount(), 0);
    await until(() => calls[0]!.cancelled, 'the cancelled stream');
  });

  test('nothing listening at the address: UNAVAILABLE at once, not after the snapshot timeout', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as { port: number };
        probe.close(() => resolve(free));
      });
    });
    const snapshots = new RemoteDefinitionSnapshots(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { firstSnapshotTimeoutMs: 60_000 });
    opened.push(snapshots);
    const outcome = await Promise.race([snapshots.get(scopeOf('env-1')).catch((e: unknown) => e), sleep(30_000, 'still waiting', { ref: false })]);
    assert.ok(outcome instanceof DomainError, `expected a rejection, got ${String(outcome)}`);
    assert.equal(outcome.code, 'UNAVAILABLE');
    assert.equal(outcome.message, 'the services are unavailable; retry later');
  });

  test('a scope without a linked credential is a programming error: INTERNAL, and no stream', async () => {
    const snapshots = remote();
    const error = await rejection(snapshots.get({ orgId: 'org-1', projectId: PROJECT, environmentId: 'env-1' }));
    assert.equal(error.code, 'INTERNAL');
    assert.equal(calls.length, 0);
  });

  test('stop() closes every stream, forgotten ones still loading included; get() answers UNAVAILABLE after', async () => {
    const snapshots = remote();
    await snapshots.get(scopeOf('env-1'));
    onOpen = () => {};
    const loading = snapshots.get(scopeOf('env-2'));
    await until(() => calls.length === 2, 'the second stream');
    snapshots.forget('env-2');
    snapshots.stop();
    assert.equal(snapshots.environmentCount(), 0);
    assert.equal((await rejection(loading)).code, 'UNAVAILABLE');
    await until(() => calls.every((call) => call.cancelled), 'every stream closed');
    assert.equal((await rejection(snapshots.get(scopeOf('env-1')))).code, 'UNAVAILABLE');
  });
});

describe('which environments are held', () => {
  test('forget(environment id) or forget(project id) closes the stream; the next get() reads a new full snapshot', async () => {
    const snapshots = remote();
    const changes: unknown[] = [];
    snapshots.onChange((change) => changes.push(change));
    let version = 0;
    onOpen = (call) => call.write(fullSnapshot(call.request.environment_id, 1, [testFlag(`v${++version}`)]));
    assert.deepEqual([...(await snapshots.get(scopeOf('env-1'))).flags.keys()], ['v1']);
    snapshots.forget('env-1');
    assert.equal(snapshots.current('env-1'), undefined);
    assert.deepEqual(changes, [{ environmentId: 'env-1', resync: false }]);
    assert.deepEqual([...(await snapshots.get(scopeOf('env-1'))).flags.keys()], ['v2']);

    await snapshots.get(scopeOf('env-2'));
    snapshots.forget('another-project');
    assert.equal(snapshots.environmentCount(), 2);
    snapshots.forget(PROJECT);
    assert.equal(snapshots.environmentCount(), 0);
    await until(() => calls.every((call) => call.cancelled), 'every stream closed');
  });

  test('forget() while the first snapshot is on its way: it answers those already waiting, not the next get()', async () => {
    const snapshots = remote();
    const pending: SyncCall[] = [];
    onOpen = (call) => pending.push(call);
    const waiting = snapshots.get(scopeOf('env-1'));
    await until(() => pending.length === 1, 'the stream');
    snapshots.forget('env-1');
    pending[0]!.write(fullSnapshot('env-1', 1, [testFlag('before-the-write')]));
    assert.deepEqual([...(await waiting).flags.keys()], ['before-the-write']);
    assert.equal(snapshots.current('env-1'), undefined);
    onOpen = (call) => call.write(fullSnapshot('env-1', 1, [testFlag('after-the-write')]));
    assert.deepEqual([...(await snapshots.get(scopeOf('env-1'))).flags.keys()], ['after-the-write']);
  });

  test('an environment unused for idleTimeoutMs is closed; one in use is kept', async () => {
    const snapshots = remote({ idleTimeoutMs: 200 });
    snapshots.start();
    const changes: unknown[] = [];
    snapshots.onChange((change) => changes.push(change));
    await snapshots.get(scopeOf('idle'));
    await snapshots.get(scopeOf('busy'));
    const keepBusy = setInterval(() => snapshots.current('busy'), 20);
    try {
      // Counted, not asked with current(): that would be a use.
      await until(() => snapshots.environmentCount() === 1, 'closing the idle environment');
      assert.equal(snapshots.current('idle'), undefined);
      assert.ok(snapshots.current('busy'), 'the environment in use stays');
      assert.deepEqual(changes, [{ environmentId: 'idle', resync: false }]);
    } finally {
      clearInterval(keepBusy);
    }
  });

  test('at maxEnvironments, opening one more closes the least recently used', async () => {
    let clock = 1_000;
    const snapshots = remote({ maxEnvironments: 2, now: () => clock });
    await snapshots.get(scopeOf('old'));
    clock += 1_000;
    await snapshots.get(scopeOf('recent'));
    clock += 1_000;
    await snapshots.get(scopeOf('new'));
    assert.equal(snapshots.environmentCount(), 2);
    assert.equal(snapshots.current('old'), undefined);
    assert.ok(snapshots.current('recent'));
    assert.ok(snapshots.current('new'));
  });
});
