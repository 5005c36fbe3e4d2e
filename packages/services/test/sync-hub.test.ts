import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, test } from 'node:test';
import { isDomainError, type EnvironmentScope, type Flag, type Principal, type Segment } from '@switchyard/core';
import { createInMemoryRepositories, testFlag, testSegment } from '@switchyard/core/testing';
import { ScopeResolver, SyncHub, type EnvironmentSnapshot, type SendOutcome, type SyncCloseCode, type SyncMessage, type SyncSink, type SyncStreamHandle } from '../src/index.ts';

const SCOPE: EnvironmentScope = { orgId: 'org-1', projectId: 'project-1', environmentId: 'env-1' };
const OTHER: EnvironmentScope = { orgId: 'org-1', projectId: 'project-2', environmentId: 'env-2' };

const flag = testFlag;
const segment = testSegment;

/** The definitions the fake DefinitionSnapshots serves, per environment, and its change listeners. */
class FakeSnapshots {
  readonly data = new Map<string, { flags: Flag[]; segments: Segment[] }>();
  readonly listeners = new Set<(change: { environmentId?: string; projectId?: string }) => void>();
  loads = 0;
  /** While set, loads wait for it (to interleave joins and changes with a load). */
  gate: Promise<void> | null = null;
  failing = false;

  async get(scope: EnvironmentScope): Promise<EnvironmentSnapshot> {
    this.loads++;
    const data = this.data.get(scope.environmentId) ?? { flags: [], segments: [] };
    // Copied at the start of the load, like a database read.
    const flags = new Map(data.flags.map((f) => [f.key, structuredClone(f)]));
    const segments = new Map(data.segments.map((s) => [s.key, structuredClone(s)]));
    if (this.gate) await this.gate;
    if (this.failing) throw new Error('database down');
    return { scope, flags, flagList: [...flags.values()], segments, listSegmentKeysByFlag: new Map(), features: [], experimentFlagKeys: new Set(), loadedAtMs: Date.now(), compiledFlags: new Map() };
  }

  onChange(listener: (change: { environmentId?: string; projectId?: string }) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  change(change: { environmentId?: string; projectId?: string }): void {
    for (const listener of this.listeners) listener(change);
  }
}

class FakeSink implements SyncSink {
  readonly messages: SyncMessage[] = [];
  closed: { code: SyncCloseCode; reason: string } | null = null;
  /** What send() answers. */
  outcome: SendOutcome = 'sent';
  /** The hub's handle on this stream, for the transport's events. */
  handle: SyncStreamHandle | null = null;

  send(message: SyncMessage): SendOutcome {
    assert.equal(this.closed, null, 'no send after close');
    this.messages.push(message);
    return this.outcome;
  }
  close(code: SyncCloseCode, reason: string): void {
    assert.equal(this.closed, null, 'closed once');
    this.closed = { code, reason };
  }
  get last(): SyncMessage | undefined {
    return this.messages.at(-1);
  }
}

const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 5));

let snapshots: FakeSnapshots;
let revocationListeners: Set<(id: string) => void>;
let sessionListeners: Set<(userId: string | null) => void>;
/** Session ids the fake session registry answers as live. */
let liveSessions: Set<string>;
let activeKeys: Set<string>;
let errors: unknown[];
let hub: SyncHub;

function newHub(maxStallMs = 10_000, maxStreamsPerKey?: number): SyncHub {
  const created = new SyncHub(
    {
      snapshots,
      scopes: new ScopeResolver(createInMemoryRepositories()),
      verifier: {
        onRevoked: (listener) => {
          revocationListeners.add(listener);
          return () => revocationListeners.delete(listener);
        },
      },
      sdkKeys: { list: async () => [...activeKeys].map((id) => ({ id }) as never) },
      sessions: {
        onChanged: (listener) => {
          sessionListeners.add(listener);
          return () => sessionListeners.delete(listener);
        },
        currentAccess: async (claims) => {
          if (!liveSessions.has(claims.sessionId)) throw new Error('the session has ended');
          return { role: 'org_member', bindings: null };
        },
      },
    },
    { maxStallMs, onError: (error) => errors.push(error), ...(maxStreamsPerKey === undefined ? {} : { maxStreamsPerKey }) },
  );
  created.start();
  return created;
}

async function openStream(scope = SCOPE, sdkKeyId: string | undefined = 'key-1'): Promise<FakeSink> {
  const sink = new FakeSink();
  sink.handle = hub.open(scope, sdkKeyId === undefined ? {} : { sdkKeyId }, sink);
  await settle();
  return sink;
}

beforeEach(() => {
  snapshots = new FakeSnapshots();
  snapshots.data.set(SCOPE.environmentId, { flags: [flag('b'), flag('a')], segments: [segment('rules'), segment('list', 'list')] });
  snapshots.data.set(OTHER.environmentId, { flags: [flag('other')], segments: [] });
  revocationListeners = new Set();
  sessionListeners = new Set();
  liveSessions = new Set(['session-a', 'session-b']);
  activeKeys = new Set(['key-1', 'key-2']);
  errors = [];
  hub = newHub();
});

afterEach(() => hub.stop());

describe('snapshot and increments', () => {
  test('the first message is the full state with sequence 1, in key order', async () => {
    const sink = await openStream();
    assert.equal(sink.messages.length, 1);
    const first = sink.messages[0]!;
    assert.equal(first.sequenceNumber, 1);
    assert.equal(first.payload.fullSnapshot, true);
    assert.equal(first.payload.environmentId, SCOPE.environmentId);
    assert.deepEqual(first.payload.flags.map((f) => f.key), ['a', 'b']);
    assert.deepEqual(first.payload.segments.map((s) => s.key), ['list', 'rules']);
  });

  test('a change sends only what changed, added or removed; a change that changes nothing sends nothing', async () => {
    const sink = await openStream();
    snapshots.data.set(SCOPE.environmentId, { flags: [flag('a', { enabled: false }), flag('c')], segments: [segment('rules', 'rule', { version: 2 })] });
    snapshots.change({ environmentId: SCOPE.environmentId });
    await settle();
    const second = sink.last!;
    assert.equal(second.sequenceNumber, 2);
    assert.equal(second.payload.fullSnapshot, false);
    assert.deepEqual(second.payload.flags.map((f) => [f.key, f.enabled]), [['a', false], ['c', true]]);
    assert.deepEqual(second.payload.segments.map((s) => s.key), ['rules']);
    assert.deepEqual(second.payload.removedFlagKeys, ['b']);
    assert.deepEqual(second.payload.removedSegmentKeys, ['list']);

    snapshots.change({ environmentId: SCOPE.environmentId });
    await settle();
    assert.equal(sink.messages.length, 2);
  });

  test('one payload object is shared by every stream of the environment; sequence numbers are per stream', async () => {
    const early = await openStream();
    snapshots.data.get(SCOPE.environmentId)!.flags.push(flag('d'));
    snapshots.change({ environmentId: SCOPE.environmentId });
    await settle();
    const late = await openStream();
    snapshots.data.get(SCOPE.environmentId)!.flags.push(flag('e'));
    snapshots.change({ environmentId: SCOPE.environmentId });
    await settle();
    assert.deepEqual(early.messages.map((m) => m.sequenceNumber), [1, 2, 3]);
    assert.deepEqual(late.messages.map((m) => m.sequenceNumber), [1, 2]);
    assert.equal(early.last!.payload, late.last!.payload);
  });

  test('changes announced during a load are coalesced into one more load', async () => {
    const sink = await openStream();
    const loadsBefore = snapshots.loads;
    let release!: () => void;
    snapshots.gate = new Promise((resolve) => (release = resolve));
    for (let i = 0; i < 5; i++) snapshots.change({ environmentId: SCOPE.environmentId });
    await new Promise((resolve) => setImmediate(resolve)); // the load has started and waits at the gate
    snapshots.data.get(SCOPE.environmentId)!.flags.push(flag('z'));
    snapshots.change({ environmentId: SCOPE.environmentId });
    snapshots.gate = null;
    release();
    await settle();
    assert.equal(snapshots.loads - loadsBefore, 2);
    assert.deepEqual(sink.messages.map((m) => m.sequenceNumber), [1, 2]);
    assert.deepEqual(sink.last!.payload.flags.map((f) => f.key), ['z']);
  });

  test('a stream that joins during a load starts with a full snapshot and then follows every change', async () => {
    const early = await openStream();
    let release!: () => void;
    snapshots.gate = new Promise((resolve) => (release = resolve));
    snapshots.change({ environmentId: SCOPE.environmentId });
    await new Promise((resolve) => setImmediate(resolve)); // the load has started and waits at the gate
    // The load above read the state before this: the joiner must not miss 'late'.
    snapshots.data.get(SCOPE.environmentId)!.flags.push(flag('late'));
    snapshots.change({ environmentId: SCOPE.environmentId });
    const joiner = new FakeSink();
    hub.open(SCOPE, {}, joiner);
    snapshots.gate = null;
    release();
    await settle();
    assert.equal(joiner.messages[0]?.payload.fullSnapshot, true);
    assert.ok(joiner.messages.some((m) => m.payload.flags.some((f) => f.key === 'late')));
    assert.ok(early.messages.some((m) => !m.payload.fullSnapshot && m.payload.flags.some((f) => f.key === 'late')));
  });

  test('a project change reaches the environments of that project only', async () => {
    const mine = await openStream();
    const theirs = await openStream(OTHER);
    snapshots.data.get(SCOPE.environmentId)!.flags.push(flag('project-wide'));
    snapshots.data.get(OTHER.environmentId)!.flags.push(flag('not-announced'));
    snapshots.change({ projectId: SCOPE.projectId });
    await settle();
    assert.equal(mine.messages.length, 2);
    assert.equal(theirs.messages.length, 1);
  });
});

describe('fan-out to thousands of streams', () => {
  // More than two slices of the hub's (1,000 streams per event-loop turn).
  const COUNT = 2_500;

  /** How many sinks satisfy `got` at each turn of the event loop, until all do. */
  async function turnsUntilAll(sinks: FakeSink[], got: (sink: FakeSink) => boolean): Promise<number[]> {
    const seen: number[] = [];
    for (let turn = 0; turn < 1_000; turn++) {
      const count = sinks.filter(got).length;
      seen.push(count);
      if (count === sinks.length) return seen;
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error(`not delivered to every stream: ${seen.at(-1)} of ${sinks.length}`);
  }

  /** Opened in one go (no key: the per-key cap is not what this is about), as after a restart. */
  const openMany = (): FakeSink[] =>
    Array.from({ length: COUNT }, () => {
      const sink = new FakeSink();
      sink.handle = hub.open(SCOPE, {}, sink);
      return sink;
    });

  const partial = (seen: number[]): number[] => seen.filter((n) => n > 0 && n < COUNT);

  test('a change reaches the streams over several event-loop turns, so other work runs in between', async () => {
    const sinks = openMany();
    await turnsUntilAll(sinks, (sink) => sink.messages.length >= 1);
    snapshots.data.get(SCOPE.environmentId)!.flags.push(flag('d'));
    snapshots.change({ environmentId: SCOPE.environmentId });
    const seen = await turnsUntilAll(sinks, (sink) => sink.messages.length >= 2);
    assert.ok(partial(seen).length >= 2, `turns that saw part of the streams served: ${partial(seen).join(', ')}`);
    assert.ok(sinks.every((sink) => sink.messages[1]?.sequenceNumber === 2 && sink.messages[1].payload.flags.map((f) => f.key).join() === 'd'));
  });

  test('the first snapshots of thousands of streams opened together go out over several turns too', async () => {
    const sinks = openMany();
    const seen = await turnsUntilAll(sinks, (sink) => sink.messages.length >= 1);
    assert.ok(partial(seen).length >= 2, `turns that saw part of the streams served: ${partial(seen).join(', ')}`);
    assert.ok(sinks.every((sink) => sink.messages.length === 1 && sink.messages[0]!.payload.fullSnapshot));
  });

  test('a change announced while first snapshots are going out follows them, in order, on every stream', async () => {
    const sinks = openMany();
    // Wait until part of the streams have their snapshot, then change.
    for (let turn = 0; turn < 1_000 && !sinks.some((sink) => sink.messages.length > 0); turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.ok(sinks.some((sink) => sink.messages.length === 0), 'the change is announced mid-way');
    snapshots.data.get(SCOPE.environmentId)!.flags.push(flag('d'));
    snapshots.change({ environmentId: SCOPE.environmentId });
    await turnsUntilAll(sinks, (sink) => sink.messages.length >= 2);
    for (const sink of sinks) {
      assert.deepEqual(sink.messages.map((m) => [m.sequenceNumber, m.payload.fullSnapshot]), [[1, true], [2, false]]);
      assert.deepEqual(sink.messages[0]!.payload.flags.map((f) => f.key), ['a', 'b']);
      assert.deepEqual(sink.messages[1]!.payload.flags.map((f) => f.key), ['d']);
    }
  });
});

describe('resync after a lost notification connection', () => {
  test('every stream gets a full snapshot; streams of keys revoked meanwhile end with UNAUTHENTICATED', async () => {
    const kept = await openStream(SCOPE, 'key-1');
    const revoked = await openStream(SCOPE, 'key-2');
    const user = await openStream(SCOPE, undefined);
    activeKeys.delete('key-2');
    snapshots.change({});
    await settle();
    assert.equal(kept.last!.sequenceNumber, 2);
    assert.equal(kept.last!.payload.fullSnapshot, true);
    assert.deepEqual(kept.last!.payload.flags.map((f) => f.key), ['a', 'b']);
    assert.equal(user.last!.payload.fullSnapshot, true);
    assert.equal(revoked.closed?.code, 'UNAUTHENTICATED');
    assert.equal(revoked.messages.length, 1);
  });
});

describe('backpressure', () => {
  test('a full buffer stops changes; the drain sends one full snapshot of the latest state', async () => {
    const slow = await openStream();
    const fast = await openStream();
    slow.outcome = 'client_behind';
    snapshots.data.get(SCOPE.environmentId)!.flags.push(flag('c'));
    snapshots.change({ environmentId: SCOPE.environmentId });
    await settle();
    assert.equal(slow.messages.length, 2, 'the message that filled the buffer was still handed over');
    assert.equal(hub.stats().congested, 1);
    for (const key of ['d', 'e', 'f']) {
      snapshots.data.get(SCOPE.environmentId)!.flags.push(flag(key));
      snapshots.change({ environmentId: SCOPE.environmentId });
      await settle();
    }
    assert.equal(slow.messages.length, 2, 'nothing more while congested');
    assert.equal(fast.messages.length, 5);

    slow.outcome = 'sent';
    slow.handle!.drained();
    assert.equal(slow.messages.length, 3);
    assert.equal(slow.last!.sequenceNumber, 3);
    assert.equal(slow.last!.payload.fullSnapshot, true);
    assert.deepEqual(slow.last!.payload.flags.map((f) => f.key), ['a', 'b', 'c', 'd', 'e', 'f']);
    assert.equal(hub.stats().congested, 0);
  });

  test('a drain without missed changes sends nothing extra', async () => {
    const sink = new FakeSink();
    sink.outcome = 'client_behind';
    const handle = hub.open(SCOPE, {}, sink);
    await settle();
    assert.equal(hub.stats().congested, 1);
    sink.outcome = 'sent';
    handle.drained();
    assert.equal(sink.messages.length, 1);
    assert.equal(hub.stats().congested, 0);
  });

  test('a stream that stays unread beyond maxStallMs ends with RESOURCE_EXHAUSTED', async () => {
    await hub.stop();
    hub = newHub(30);
    const sink = new FakeSink();
    sink.outcome = 'client_behind';
    hub.open(SCOPE, {}, sink);
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.equal(sink.closed?.code, 'RESOURCE_EXHAUSTED');
    assert.equal(hub.stats().streams, 0);
    snapshots.change({ environmentId: SCOPE.environmentId });
    await settle();
    assert.equal(sink.messages.length, 1);
  });
});

describe('waiting for the server is not stalling', () => {
  test('a message held back by the transport (server_busy) starts no stall clock until the transport says the client is behind', async () => {
    await hub.stop();
    hub = newHub(30);
    const sink = new FakeSink();
    sink.outcome = 'server_busy';
    sink.handle = hub.open(SCOPE, {}, sink);
    await new Promise((resolve) => setTimeout(resolve, 80));
    assert.equal(sink.closed, null, 'still open after the stall limit');
    assert.equal(hub.stats().congested, 1);
    sink.handle.clientBehind();
    await new Promise((resolve) => setTimeout(resolve, 80));
    // (Read through a widened type: the assertion above narrowed `closed` to null.)
    assert.equal((sink.closed as FakeSink['closed'])?.code, 'RESOURCE_EXHAUSTED');
  });
});

describe('ending streams', () => {
  test('a revoked key ends its streams with UNAUTHENTICATED, other keys keep streaming', async () => {
    const one = await openStream(SCOPE, 'key-1');
    const two = await openStream(SCOPE, 'key-2');
    for (const listener of revocationListeners) listener('key-1');
    assert.equal(one.closed?.code, 'UNAUTHENTICATED');
    assert.equal(two.closed, null);
    assert.equal(hub.stats().streams, 1);
  });

  test('a bearer stream ends with UNAUTHENTICATED once its session has ended; other sessions and SDK keys go on', async () => {
    const bearer = (userId: string, sessionId: string): Promise<FakeSink> => {
      const sink = new FakeSink();
      sink.handle = hub.open(SCOPE, { session: { userId, orgId: SCOPE.orgId, sessionId } }, sink);
      return settle().then(() => sink);
    };
    const ending = await bearer('user-a', 'session-a');
    const sameUserOtherSession = await bearer('user-a', 'session-b');
    const otherUser = await bearer('user-b', 'session-a');
    const keyed = await openStream(SCOPE, 'key-1');
    // A change for user-a while its sessions are live ends nothing.
    for (const listener of sessionListeners) listener('user-a');
    await settle();
    assert.equal(ending.closed, null);
    liveSessions.delete('session-a');
    for (const listener of sessionListeners) listener('user-a');
    await settle();
    assert.equal((ending.closed as FakeSink["closed"])?.code, 'UNAUTHENTICATED');
    assert.equal(sameUserOtherSession.closed, null);
    assert.equal(otherUser.closed, null, 'only the named user is re-checked');
    assert.equal(keyed.closed, null);
    // A lost notification connection (null) re-checks every bearer stream.
    for (const listener of sessionListeners) listener(null);
    await settle();
    assert.equal((otherUser.closed as FakeSink["closed"])?.code, 'UNAUTHENTICATED');
    assert.equal(sameUserOtherSession.closed, null);
    assert.equal(hub.stats().streams, 2);
  });

  test('a stream of a key revoked after its check but before its registration is refused', async () => {
    for (const listener of revocationListeners) listener('key-2');
    const late = new FakeSink();
    hub.open(SCOPE, { sdkKeyId: 'key-2' }, late);
    assert.equal(late.closed?.code, 'UNAUTHENTICATED');
    assert.equal(hub.stats().streams, 0);
  });

  test('stop() ends every stream with UNAVAILABLE and refuses new ones', async () => {
    const sink = await openStream();
    await hub.stop();
    assert.equal(sink.closed?.code, 'UNAVAILABLE');
    const late = new FakeSink();
    hub.open(SCOPE, {}, late);
    assert.equal(late.closed?.code, 'UNAVAILABLE');
    assert.equal(snapshots.listeners.size, 0);
  });

  test('a failed load ends the environment\'s streams with UNAVAILABLE and is reported', async () => {
    const sink = await openStream();
    snapshots.failing = true;
    snapshots.change({ environmentId: SCOPE.environmentId });
    await settle();
    assert.equal(sink.closed?.code, 'UNAVAILABLE');
    assert.equal(errors.length, 1);
    snapshots.failing = false;
    const again = await openStream();
    assert.equal(again.messages[0]?.sequenceNumber, 1);
  });

  test('a cancelled stream is forgotten, and so is an environment nobody streams', async () => {
    const sink = new FakeSink();
    const handle = hub.open(SCOPE, {}, sink);
    await settle();
    assert.deepEqual(hub.stats(), { streams: 1, environments: 1, congested: 0 });
    handle.cancel();
    assert.deepEqual(hub.stats(), { streams: 0, environments: 0, congested: 0 });
    assert.equal(sink.closed, null, 'a cancelled stream is not closed by the hub');
  });
});

describe('authorize', () => {
  const key: Principal = { kind: 'sdk_key', sdkKeyId: 'key-1', orgId: SCOPE.orgId, projectId: SCOPE.projectId, environmentId: SCOPE.environmentId };
  const code = (expected: string) => (error: unknown) => isDomainError(error) && error.code === expected;

  test('an SDK key: its own environment (also when none is named); another one is PERMISSION_DENIED', async () => {
    assert.deepEqual(await hub.authorize(key, SCOPE.environmentId), SCOPE);
    assert.deepEqual(await hub.authorize(key, ''), SCOPE);
    await assert.rejects(hub.authorize(key, OTHER.environmentId), code('PERMISSION_DENIED'));
  });

  test('a user must name an environment of its org', async () => {
    const user: Principal = { kind: 'user', userId: 'u', orgId: SCOPE.orgId, role: 'org_member', isSystem: false };
    await assert.rejects(hub.authorize(user, ''), code('INVALID_ARGUMENT'));
    await assert.rejects(hub.authorize(user, SCOPE.environmentId), code('NOT_FOUND'));
  });
});

describe('streams per SDK key', () => {
  test('beyond maxStreamsPerKey a stream ends at once with RESOURCE_EXHAUSTED; an ended stream frees its slot; other keys and users are not counted', async () => {
    await hub.stop();
    hub = newHub(10_000, 2);
    const first = await openStream(SCOPE, 'key-1');
    const second = await openStream(SCOPE, 'key-1');
    const third = await openStream(SCOPE, 'key-1');
    assert.equal(third.closed?.code, 'RESOURCE_EXHAUSTED');
    assert.match(third.closed?.reason ?? '', /already has 2 open streams/);
    assert.equal(third.messages.length, 0);
    assert.equal(hub.stats().streams, 2);
    // Another key and a user (no key) have slots of their own.
    assert.equal((await openStream(OTHER, 'key-2')).closed, null);
    const user = new FakeSink();
    user.handle = hub.open(SCOPE, {}, user);
    await settle();
    assert.equal(user.closed, null);

    first.handle!.cancel();
    const fourth = await openStream(SCOPE, 'key-1');
    assert.equal(fourth.closed, null);
    assert.equal(fourth.messages[0]?.payload.fullSnapshot, true);
    assert.equal(second.closed, null);
  });
});
