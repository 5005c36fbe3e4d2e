import type { EnvironmentScope, SdkKey } from '@switchyard/core';
import type { DefinitionSnapshots } from '../evaluation/definition-snapshots.ts';
import { definitionState, diffStates, isEmptyChange, type DefinitionState } from './definition-diff.ts';
import type { SyncStream } from './sync-stream.ts';
import type { SyncPayload } from './sync-types.ts';

/**
 * Streams written per event-loop turn. Handing a message to 10,000 streams takes 100 ms or more;
 * in slices, REST requests are served in between and the first slices' bytes leave meanwhile.
 */
const BROADCAST_SLICE = 1000;

/**
 * Hands a message to each stream (`send` answers whether it did), yielding to the event loop after
 * every BROADCAST_SLICE streams served.
 */
async function inSlices(streams: readonly SyncStream[], send: (stream: SyncStream) => boolean): Promise<void> {
  let sent = 0;
  for (const stream of streams) {
    if (send(stream) && ++sent % BROADCAST_SLICE === 0) await new Promise((resolve) => setImmediate(resolve));
  }
}

export interface ChannelDeps {
  snapshots: Pick<DefinitionSnapshots, 'get'>;
  /** The active keys of an environment (only their ids are read). */
  sdkKeys: { list(scope: EnvironmentScope): Promise<ReadonlyArray<Pick<SdkKey, 'id'>>> };
  onError: (error: unknown, scope: EnvironmentScope) => void;
}

function fullPayload(scope: EnvironmentScope, state: DefinitionState): SyncPayload {
  return {
    environmentId: scope.environmentId,
    projectId: scope.projectId,
    experimentFlagKeys: state.experimentFlagKeys,
    features: state.features,
    fullSnapshot: true,
    serverTimestampMs: state.loadedAtMs,
    flags: [...state.flags.values()].map((entry) => entry.document),
    segments: [...state.segments.values()].map((entry) => entry.document),
    removedFlagKeys: [],
    removedSegmentKeys: [],
  };
}

/**
 * The streams of one environment and the state they were last sent.
 *
 * All work runs in one loop per environment, one step at a time, so that every stream sees the
 * same order: (1) if a change was announced, reload the snapshot once and send the difference
 * from the last state to every live stream (or the full state after a resync); (2) send the
 * current full state to the streams that joined meanwhile, which makes them live. A stream that
 * joins while a change is being loaded therefore starts from the newer state and never receives a
 * difference against a state it did not see. Changes announced during a load are coalesced into
 * one more round.
 */
export class EnvironmentChannel {
  readonly streams = new Set<SyncStream>();
  private waiting: SyncStream[] = [];
  private state: DefinitionState | null = null;
  private snapshot: SyncPayload | null = null;
  private changed = false;
  private resync = false;
  private running = false;

  constructor(
    readonly scope: EnvironmentScope,
    private readonly deps: ChannelDeps,
  ) {}

  add(stream: SyncStream): void {
    this.streams.add(stream);
    this.waiting.push(stream);
    this.kick();
  }

  /**
   * Definitions changed. `resync`: changes may have been missed (the database notification
   * connection was lost), so every stream gets a full snapshot and SDK keys are checked again.
   */
  markChanged(resync: boolean): void {
    this.changed = true;
    if (resync) this.resync = true;
    this.kick();
  }

  /** The full current state, built once per state and shared by every stream that needs it. */
  snapshotPayload(): SyncPayload {
    if (!this.state) throw new Error('no state loaded yet');
    this.snapshot ??= fullPayload(this.scope, this.state);
    return this.snapshot;
  }

  private kick(): void {
    if (this.running) return;
    this.running = true;
    // Never inside the caller: open() returns its handle before the stream's first send.
    queueMicrotask(() => void this.run());
  }

  private async run(): Promise<void> {
    try {
      while (this.changed || this.waiting.length > 0) {
        if (this.changed || this.state === null) await this.refresh();
        const newcomers = this.waiting;
        this.waiting = [];
        if (newcomers.length === 0) continue;
        // Sliced like a broadcast: thousands of clients reconnecting together (a restarted
        // instance) all join during the first load.
        const snapshot = this.snapshotPayload();
        await inSlices(newcomers, (stream) => {
          if (stream.closed) return false;
          stream.live = true;
          stream.deliver(snapshot);
          return true;
        });
      }
    } catch (error) {
      this.deps.onError(error, this.scope);
      // Without a state we can vouch for, streams would drift silently: end them, and a
      // reconnecting client starts over from a fresh snapshot.
      this.waiting = [];
      this.state = null;
      this.snapshot = null;
      for (const stream of [...this.streams]) stream.close('UNAVAILABLE', 'definitions could not be loaded; reconnect');
    } finally {
      // Synchronously after the loop's last check: a change announced later starts a new run.
      this.running = false;
    }
  }

  private async refresh(): Promise<void> {
    const resync = this.resync;
    this.changed = false;
    this.resync = false;
    const next = definitionState(await this.deps.snapshots.get(this.scope));
    const previous = this.state;
    if (resync && previous !== null) await this.closeRevokedKeyStreams();
    this.state = next;
    this.snapshot = null;
    // No previous state: nobody is live yet, the newcomers get the snapshot below.
    if (previous === null) return;
    if (resync) {
      await this.broadcast(this.snapshotPayload());
      return;
    }
    const changes = diffStates(previous, next);
    if (isEmptyChange(changes)) return;
    await this.broadcast({
      environmentId: this.scope.environmentId,
      projectId: this.scope.projectId,
      experimentFlagKeys: next.experimentFlagKeys,
      features: next.features,
      fullSnapshot: false,
      serverTimestampMs: next.loadedAtMs,
      flags: changes.flags,
      segments: changes.segments,
      removedFlagKeys: changes.removedFlagKeys,
      removedSegmentKeys: changes.removedSegmentKeys,
    });
  }

  /**
   * Sends to every live stream, yielding between slices. The next change waits for this one to
   * be handed to all streams, so each stream still sees changes in order. A stream that drains
   * meanwhile gets the snapshot of the new state and then this change again: applying a change
   * twice leaves the same state.
   */
  private async broadcast(payload: SyncPayload): Promise<void> {
    await inSlices([...this.streams], (stream) => {
      if (!stream.live) return false;
      stream.deliver(payload);
      return true;
    });
  }

  /** Revocations announced while the notification connection was down were missed: ask the database. */
  private async closeRevokedKeyStreams(): Promise<void> {
    if (![...this.streams].some((stream) => stream.holder.sdkKeyId !== undefined)) return;
    const active = new Set((await this.deps.sdkKeys.list(this.scope)).map((key) => key.id));
    for (const stream of [...this.streams]) {
      const keyId = stream.holder.sdkKeyId;
      if (keyId !== undefined && !active.has(keyId)) stream.close('UNAUTHENTICATED', 'the SDK key was revoked');
    }
  }
}
