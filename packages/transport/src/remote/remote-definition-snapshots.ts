import * as grpc from '@grpc/grpc-js';
import { DomainError, type EnvironmentScope, type Flag } from '@switchyard/core';
import { DefinitionStore, decodeSyncMessage, type SegmentMessage, type SyncResponseMessage } from '@switchyard/sdk/definitions';
import { buildEnvironmentSnapshot, type SnapshotChange, type EnvironmentSnapshot } from '@switchyard/services';
import { loadProto, lookup } from '../grpc/proto.ts';
import type { Logger } from '../logging.ts';
import { actorKindOf, credentialMetadata, credentialOf } from './forwarded-credential.ts';
import { SERVICES_CHANNEL_OPTIONS } from './services-channel.ts';
import { domainErrorFromServices, servicesUnavailable } from './grpc-status-errors.ts';

const FlagServiceClient = lookup<grpc.ServiceClientConstructor>(loadProto('svc/flags/v1/flags.proto'), 'svc.flags.v1.FlagService');

/** FlagService.Sync as grpc-js hands its messages over: segments split by kind (flags.proto). */
type InternalSyncMessage = Omit<SyncResponseMessage, 'segments'> & {
  rule_segments?: Array<NonNullable<SegmentMessage['rule_segment']>>;
  list_segments?: Array<NonNullable<SegmentMessage['list_segment']>>;
};

interface SyncClient {
  Sync(request: { environment_id: string }, metadata: grpc.Metadata): grpc.ClientReadableStream<InternalSyncMessage>;
  SyncForClientEvaluation(request: { environment_id: string }, metadata: grpc.Metadata): grpc.ClientReadableStream<InternalSyncMessage>;
  close(): void;
}

export interface RemoteDefinitionSnapshotsOptions {
  /** An environment nobody evaluated in for this long has its stream closed (default 10 min). */
  idleTimeoutMs?: number;
  /** Streams held at once; opening one more closes the least recently used (default 10,000). */
  maxEnvironments?: number;
  /** How long get() waits for a new stream's full snapshot before answering UNAVAILABLE (default 5 s). */
  firstSnapshotTimeoutMs?: number;
  now?: () => number;
  /** Told about streams that end and definitions that could not be read; never given a credential. */
  logger?: Pick<Logger, 'debug' | 'warn'>;
}

/** One environment followed over its own FlagService.Sync stream. */
interface HeldEnvironment {
  readonly environmentId: string;
  /** A copy of the opening caller's scope: a snapshot must not keep that caller's credential reachable. */
  readonly scope: EnvironmentScope;
  readonly call: grpc.ClientReadableStream<InternalSyncMessage>;
  /** The SDK's store: it applies full snapshots and deltas exactly as an SDK does. */
  readonly store: DefinitionStore;
  nextSequence: number;
  /** Settles with the first full snapshot, or with why the stream failed before it. */
  readonly first: Promise<EnvironmentSnapshot>;
  settleFirst: ((snapshot: EnvironmentSnapshot | DomainError) => void) | undefined;
  firstTimer: NodeJS.Timeout | undefined;
  snapshot: EnvironmentSnapshot | undefined;
  lastUsedMs: number;
  /** Set by current() (the hot path, which reads no clock); the idle sweep turns it into lastUsedMs. */
  usedSinceSweep: boolean;
  /** forget() came before the first snapshot: that snapshot answers the callers waiting for it, then the stream closes. */
  forgotten: boolean;
  closed: boolean;
}

const byKey = (a: Flag, b: Flag): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** The internal message with its segments in the one list the SDK's decoder reads. */
function asSdkMessage(message: InternalSyncMessage): SyncResponseMessage {
  const segments: SegmentMessage[] = [];
  for (const rule_segment of message.rule_segments ?? []) segments.push({ segment: 'rule_segment', rule_segment });
  for (const list_segment of message.list_segments ?? []) segments.push({ segment: 'list_segment', list_segment });
  return { ...message, segments };
}

/**
 * A gateway's definitions (it has no database): per environment, one FlagService.Sync stream to
 * the services, followed like an SDK follows its stream (docs/contract.md "Sync stream"), and an
 * EnvironmentSnapshot rebuilt from it per message. It offers what EvaluationService and SyncHub
 * read of DefinitionSnapshots (get, current, onChange), so a gateway evaluates with no gRPC call
 * per request.
 *
 * A stream is opened by the first get() of its environment, with the credential of that caller
 * (forwarded-credential.ts), and shared by everyone after: the gateway authorizes each caller for
 * the environment before asking for its snapshot. A refusal before the first snapshot answers
 * every caller waiting on that stream, and nothing is kept, so the next get() tries again with its
 * own caller's credential. Whenever a stream ends — its key revoked, the services shutting down,
 * a sequence gap, idleness, forget() — the environment is dropped and onChange told, so the next
 * get() opens a fresh stream, with its own caller's credential, from a fresh full snapshot.
 */
export class RemoteDefinitionSnapshots {
  private readonly client: SyncClient;
  private readonly held = new Map<string, HeldEnvironment>();
  /** Every open stream: the held ones and those forgotten while their first snapshot is on its way. */
  private readonly open = new Set<HeldEnvironment>();
  private readonly listeners = new Set<(change: SnapshotChange) => void>();
  private readonly idleTimeoutMs: number;
  private readonly maxEnvironments: number;
  private readonly firstSnapshotTimeoutMs: number;
  private readonly now: () => number;
  private readonly logger: Pick<Logger, 'debug' | 'warn'> | undefined;
  private sweeper: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(address: string, credentials: grpc.ChannelCredentials, options: RemoteDefinitionSnapshotsOptions = {}) {
    this.idleTimeoutMs = options.idleTimeoutMs ?? 10 * 60_000;
    this.maxEnvironments = options.maxEnvironments ?? 10_000;
    this.firstSnapshotTimeoutMs = options.firstSnapshotTimeoutMs ?? 5_000;
    this.now = options.now ?? Date.now;
    this.logger = options.logger;
    this.client = new FlagServiceClient(address, credentials, {
      ...SERVICES_CHANNEL_OPTIONS,
      // A full snapshot of a large environment is one message.
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
    }) as unknown as SyncClient;
  }

  /** Starts closing the streams of idle environments. */
  start(): void {
    if (this.sweeper || this.stopped) return;
    this.sweeper = setInterval(() => this.sweep(), Math.max(10, Math.min(60_000, this.idleTimeoutMs / 4)));
    this.sweeper.unref();
  }

  /** Closes every stream and the channel; get() answers UNAVAILABLE from then on. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const entry of [...this.open]) this.close(entry, { notify: false });
    this.client.close();
  }

  /**
   * The environment's snapshot: the one held, or the first full snapshot of a new stream. Rejects
   * with the services' refusal (UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND) or UNAVAILABLE.
   */
  async get(scope: EnvironmentScope): Promise<EnvironmentSnapshot> {
    if (this.stopped) throw servicesUnavailable();
    const entry = this.held.get(scope.environmentId) ?? this.openStream(scope);
    entry.lastUsedMs = this.now();
    return entry.snapshot ?? entry.first;
  }

  /** The held snapshot, if there is one (the evaluate hot path: no await). */
  current(environmentId: string): EnvironmentSnapshot | undefined {
    const entry = this.held.get(environmentId);
    if (!entry) return undefined;
    entry.usedSinceSweep = true;
    return entry.snapshot;
  }

  /** Called with `{environmentId}` after each change applied and each environment dropped. */
  onChange(listener: (change: SnapshotChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Drops the environment `id`, or every held environment of the project `id`, and closes their
   * streams. A gateway calls it after forwarding a definitions write, so that its next evaluation
   * reads a full snapshot taken after the write (read-your-writes through one gateway) instead of
   * waiting for the change to come down the old stream.
   */
  forget(id: string): void {
    for (const entry of [...this.held.values()]) {
      if (entry.environmentId !== id && entry.scope.projectId !== id) continue;
      if (entry.snapshot) {
        this.close(entry, { notify: true });
      } else {
        // Its callers asked before the write was acknowledged: the snapshot on its way answers
        // them, but nobody after.
        this.held.delete(entry.environmentId);
        entry.forgotten = true;
      }
    }
  }

  /** Environments with an open stream (loaded or loading). */
  environmentCount(): number {
    return this.held.size;
  }

  private openStream(scope: EnvironmentScope): HeldEnvironment {
    const credential = credentialOf(scope);
    // Every scope a gateway builds is linked to its caller's credential: a missing one is a bug.
    if (!credential) throw new DomainError('INTERNAL', 'no credential is linked to the evaluation scope');
    this.makeRoom();
    const environmentId = scope.environmentId;
    let settle: (value: EnvironmentSnapshot | DomainError) => void = () => {};
    const first = new Promise<EnvironmentSnapshot>((resolve, reject) => {
      settle = (value) => (value instanceof DomainError ? reject(value) : resolve(value));
    });
    // Nobody may be waiting (a forgotten or evicted stream): its failure must not go unhandled.
    first.catch(() => {});
    // A client key may not sync; the services give a gateway answering one the definitions through
    // their own stream for that (docs/client-side.md "Keys").
    const metadata = credentialMetadata(credential);
    const call =
      actorKindOf(scope) === 'client_key'
        ? this.client.SyncForClientEvaluation({ environment_id: environmentId }, metadata)
        : this.client.Sync({ environment_id: environmentId }, metadata);
    const entry: HeldEnvironment = {
      environmentId,
      scope: { orgId: scope.orgId, projectId: scope.projectId, environmentId },
      call,
      store: new DefinitionStore(environmentId),
      nextSequence: 1,
      first,
      settleFirst: settle,
      firstTimer: setTimeout(() => this.close(entry, { notify: false, error: servicesUnavailable() }), this.firstSnapshotTimeoutMs),
      snapshot: undefined,
      lastUsedMs: this.now(),
      usedSinceSweep: false,
      forgotten: false,
      closed: false,
    };
    this.held.set(environmentId, entry);
    this.open.add(entry);
    call.on('data', (message: InternalSyncMessage) => this.received(entry, message));
    // Every end, error or not, comes as 'status' too; that is where it is handled.
    call.on('error', () => {});
    call.on('status', (status: grpc.StatusObject) => this.ended(entry, status));
    return entry;
  }

  private received(entry: HeldEnvironment, message: InternalSyncMessage): void {
    if (entry.closed) return;
    const update = decodeSyncMessage(asSdkMessage(message));
    const wrongStart = entry.snapshot === undefined && !update.fullSnapshot;
    const otherEnvironment = update.environmentId !== '' && update.environmentId !== entry.environmentId;
    if (update.sequenceNumber !== entry.nextSequence || wrongStart || otherEnvironment) {
      // A lost message leaves the store behind the services: start over with a fresh stream.
      this.logger?.warn({ environment_id: entry.environmentId, expected: entry.nextSequence, got: update.sequenceNumber }, 'definitions stream out of sequence; dropped');
      this.close(entry, { notify: true, error: servicesUnavailable() });
      return;
    }
    entry.nextSequence++;
    if (update.problems.length > 0) {
      this.logger?.warn({ environment_id: entry.environmentId, problems: update.problems }, 'definitions the gateway could not read are left out');
    }
    entry.store.apply(update);
    // Deltas append to the store's maps; evaluation answers every flag in key order.
    const flags = [...entry.store.flags.values()].sort(byKey);
    const loadedAtMs = update.serverTimestampMs > 0 ? update.serverTimestampMs : this.now();
    // A new snapshot per message: a reader holding the previous one never sees half of a change.
    const snapshot = buildEnvironmentSnapshot(entry.scope, flags, entry.store.segments.values(), entry.store.experimentFlagKeys, loadedAtMs, entry.store.features);
    const isFirst = entry.snapshot === undefined;
    entry.snapshot = snapshot;
    if (isFirst) {
      clearTimeout(entry.firstTimer);
      entry.settleFirst?.(snapshot);
      entry.settleFirst = undefined;
      if (entry.forgotten) this.close(entry, { notify: false });
      return;
    }
    // A full snapshot after the first: the services resynchronised (they may have missed changes).
    this.notify(entry.environmentId, update.fullSnapshot);
  }

  /** The services ended the stream (revoked key, shutdown, a slow reader) or the connection broke. */
  private ended(entry: HeldEnvironment, status: grpc.StatusObject): void {
    if (entry.closed) return;
    this.logger?.debug({ environment_id: entry.environmentId, code: grpc.status[status.code], details: status.details }, 'definitions stream ended');
    // Revocations may have been missed until a new stream is open: its listeners resync.
    this.close(entry, { notify: entry.snapshot !== undefined && !entry.forgotten, resync: true, error: domainErrorFromServices(status), cancel: false });
  }

  /** Ends the environment's stream and drops it; callers still waiting for its first snapshot get `error`. */
  private close(entry: HeldEnvironment, how: { notify: boolean; resync?: boolean; error?: DomainError; cancel?: boolean }): void {
    if (entry.closed) return;
    entry.closed = true;
    clearTimeout(entry.firstTimer);
    if (this.held.get(entry.environmentId) === entry) this.held.delete(entry.environmentId);
    this.open.delete(entry);
    if (how.cancel !== false) entry.call.cancel();
    entry.settleFirst?.(how.error ?? servicesUnavailable());
    entry.settleFirst = undefined;
    // The next get() opens a new stream whose first snapshot listeners diff against what they hold.
    if (how.notify) this.notify(entry.environmentId, how.resync === true);
  }

  private notify(environmentId: string, resync: boolean): void {
    for (const listener of this.listeners) listener({ environmentId, resync });
  }

  /** Closes the streams of environments unused for idleTimeoutMs (evaluations mark use through current() or get()). */
  private sweep(): void {
    const now = this.now();
    for (const entry of [...this.held.values()]) {
      if (entry.usedSinceSweep) {
        entry.usedSinceSweep = false;
        entry.lastUsedMs = now;
      } else if (entry.snapshot && now - entry.lastUsedMs >= this.idleTimeoutMs) {
        this.close(entry, { notify: true });
      }
    }
  }

  /** At the limit, closes the least recently used loaded environment; when all are still loading, refuses. */
  private makeRoom(): void {
    if (this.held.size < this.maxEnvironments) return;
    const now = this.now();
    let victim: HeldEnvironment | undefined;
    for (const entry of this.held.values()) {
      if (!entry.snapshot) continue;
      const lastUse = entry.usedSinceSweep ? now : entry.lastUsedMs;
      if (!victim || lastUse < (victim.usedSinceSweep ? now : victim.lastUsedMs)) victim = entry;
    }
    if (!victim) throw new DomainError('RESOURCE_EXHAUSTED', 'too many environments are loading at once; retry later');
    this.close(victim, { notify: true });
  }
}
