import { authorize, invalidArgument, isKeyPrincipal, permissionDenied, type EnvironmentScope, type Principal, type SdkKey } from '@switchyard/core';
import type { CredentialVerifier } from '../auth/credential-verifier.ts';
import { userPrincipalOf, type SessionRegistry } from '../auth/session-registry.ts';
import { requireAllowed } from '../authorization.ts';
import type { DefinitionSnapshots } from '../evaluation/definition-snapshots.ts';
import type { ScopeResolver } from '../scopes.ts';
import { EnvironmentChannel } from './environment-channel.ts';
import { SyncStream } from './sync-stream.ts';
import type { SyncCloseCode, SyncHolder, SyncSink, SyncStreamHandle } from './sync-types.ts';

export interface SyncHubDeps {
  snapshots: Pick<DefinitionSnapshots, 'get' | 'onChange'>;
  scopes: Pick<ScopeResolver, 'environment'>;
  verifier: Pick<CredentialVerifier, 'onRevoked'>;
  /**
   * Ends bearer-token streams whose session ended (logout, password change, removal) or whose
   * rights no longer reach the environment (a role or bindings change).
   */
  sessions: Pick<SessionRegistry, 'onChanged' | 'currentAccess'>;
  /** The active keys of an environment (only their ids are read). */
  sdkKeys: { list(scope: EnvironmentScope): Promise<ReadonlyArray<Pick<SdkKey, 'id'>>> };
}

export interface SyncHubOptions {
  /** How long a stream may stay unread (its transport buffer full) before RESOURCE_EXHAUSTED. */
  maxStallMs?: number;
  /** Told about failures to load definitions (the affected streams are closed with UNAVAILABLE). */
  onError?: (error: unknown, scope: EnvironmentScope) => void;
  /**
   * Open streams one SDK key may hold in this hub; one more is ended with RESOURCE_EXHAUSTED, and
   * a slot is free again as soon as a stream ends. Bounds what a leaked or looping key can cost.
   */
  maxStreamsPerKey?: number;
}

export interface SyncHubStats {
  streams: number;
  environments: number;
  /** Streams whose transport buffer is full right now. */
  congested: number;
}

/** Default of SyncHubOptions.maxStallMs. */
export const DEFAULT_MAX_STALL_MS = 30_000;

/** Default of SyncHubOptions.maxStreamsPerKey (every replica of an app usually shares one key). */
export const DEFAULT_MAX_STREAMS_PER_KEY = 1_000;

/**
 * How long a revoked key id is remembered. A stream whose key was checked just before the
 * revocation, but registered just after it, is refused on registration.
 */
const REVOKED_MEMORY_MS = 5 * 60_000;

/**
 * The definitions sync streams of this process, independent of any transport (docs/contract.md "Sync stream", docs/decisions.md "Sync stream").
 *
 * Each environment with open streams has a channel holding the state last sent. A definition
 * change — announced on every instance by DefinitionSnapshots, whatever instance made it — makes
 * the channel reload once and send only the difference to all its streams; a lost notification
 * connection makes it send full snapshots. Revoking an SDK key ends that key's streams with
 * UNAUTHENTICATED; `stop()` ends all streams with UNAVAILABLE.
 */
/**
 * Why a definitions stream is opened: `sync` (SDKs, gateways for server keys and users) or
 * `client_evaluation` (a gateway answering a client key, which itself never receives definitions).
 */
export type SyncPurpose = 'sync' | 'client_evaluation';

export class SyncHub {
  private readonly channels = new Map<string, EnvironmentChannel>();
  private readonly streamsByKey = new Map<string, Set<SyncStream>>();
  /** Bearer-token streams by user id. */
  private readonly streamsByUser = new Map<string, Set<SyncStream>>();
  /** The environment each bearer-token stream syncs, re-authorized when its user's rights change. */
  private readonly scopeOf = new WeakMap<SyncStream, EnvironmentScope>();
  private readonly unsubscribers: Array<() => void> = [];
  private readonly recentlyRevoked = new Map<string, number>();
  private readonly maxStallMs: number;
  private readonly maxStreamsPerKey: number;
  private readonly onError: (error: unknown, scope: EnvironmentScope) => void;
  private stopped = false;

  constructor(
    private readonly deps: SyncHubDeps,
    options: SyncHubOptions = {},
  ) {
    this.maxStallMs = options.maxStallMs ?? DEFAULT_MAX_STALL_MS;
    this.maxStreamsPerKey = options.maxStreamsPerKey ?? DEFAULT_MAX_STREAMS_PER_KEY;
    this.onError = options.onError ?? (() => {});
  }

  start(): void {
    this.unsubscribers.push(
      this.deps.snapshots.onChange((change) => {
        if (change.environmentId !== undefined) this.channels.get(change.environmentId)?.markChanged(change.resync === true);
        else if (change.projectId !== undefined) {
          for (const channel of this.channels.values()) if (channel.scope.projectId === change.projectId) channel.markChanged(false);
        } else {
          for (const channel of this.channels.values()) channel.markChanged(true);
        }
      }),
      this.deps.verifier.onRevoked((sdkKeyId) => {
        this.rememberRevoked(sdkKeyId);
        for (const stream of [...(this.streamsByKey.get(sdkKeyId) ?? [])]) stream.close('UNAUTHENTICATED', 'the SDK key was revoked');
      }),
      this.deps.sessions.onChanged((userId) => {
        const users = userId === null ? [...this.streamsByUser.keys()] : [userId];
        for (const user of users) for (const stream of [...(this.streamsByUser.get(user) ?? [])]) void this.recheckSession(stream);
      }),
    );
  }

  /**
   * Ends a bearer-token stream whose session has ended or whose user left the org
   * (UNAUTHENTICATED), or whose role and bindings no longer allow syncing its environment
   * (PERMISSION_DENIED: an `{editor, staging}` binding stops a production stream at once).
   */
  private async recheckSession(stream: SyncStream): Promise<void> {
    const session = stream.holder.session;
    if (!session) return;
    let access;
    try {
      // issuedAtMs 0: the token is older than any state, so only the stored sessions decide.
      access = await this.deps.sessions.currentAccess({ ...session, issuedAtMs: 0 });
    } catch {
      stream.close('UNAUTHENTICATED', 'the session has ended');
      return;
    }
    const scope = this.scopeOf.get(stream);
    if (scope && !authorize(userPrincipalOf({ ...session, isSystem: false }, access), 'flag.sync', scope).allowed) {
      stream.close('PERMISSION_DENIED', 'the role bindings no longer allow syncing this environment');
    }
  }

  /**
   * The environment a caller may sync: an SDK key only its own (another id is PERMISSION_DENIED,
   * an empty one means its own); a user an environment of its org (else NOT_FOUND). A client key
   * may sync nothing: PERMISSION_DENIED, its empty id included (docs/client-side.md "Keys").
   */
  async authorize(principal: Principal, environmentId: string, purpose: SyncPurpose = 'sync'): Promise<EnvironmentScope> {
    const id = environmentId === '' && isKeyPrincipal(principal) ? principal.environmentId : environmentId;
    if (id === '') throw invalidArgument('environment_id is required', 'environment_id');
    if (purpose === 'client_evaluation') {
      // Only the internal FlagService.SyncForClientEvaluation asks this, for a gateway that
      // evaluates for a client key: the key must be one, allowed to evaluate there.
      if (principal.kind !== 'client_key') throw permissionDenied('this stream is for client keys; use Sync');
      requireAllowed(principal, 'flag.client_evaluate', { orgId: principal.orgId, environmentId: id });
      return { orgId: principal.orgId, projectId: principal.projectId, environmentId: principal.environmentId };
    }
    const scope = await this.deps.scopes.environment(principal, id);
    requireAllowed(principal, 'flag.sync', { orgId: scope.orgId, projectId: scope.projectId, environmentId: scope.environmentId });
    return scope;
  }

  /**
   * Opens a stream on an authorized environment: the sink gets the full snapshot (sequence 1)
   * as soon as it is loaded, then every change. The transport reports 'drain' and cancellation on
   * the returned handle.
   */
  open(scope: EnvironmentScope, holder: SyncHolder, sink: SyncSink): SyncStreamHandle {
    const refusal = this.refusal(holder);
    let channel = this.channels.get(scope.environmentId);
    if (!channel) {
      channel = new EnvironmentChannel(scope, { snapshots: this.deps.snapshots, sdkKeys: this.deps.sdkKeys, onError: this.onError });
      // A refused stream never joins, so its environment is not kept either.
      if (!refusal) this.channels.set(scope.environmentId, channel);
    }
    const owner = channel;
    const stream = new SyncStream(holder, sink, owner, this.maxStallMs, (ended) => this.forget(owner, ended));
    if (refusal) {
      stream.close(refusal.code, refusal.reason);
      return stream;
    }
    if (holder.sdkKeyId !== undefined) addTo(this.streamsByKey, holder.sdkKeyId, stream);
    if (holder.session !== undefined) {
      addTo(this.streamsByUser, holder.session.userId, stream);
      this.scopeOf.set(stream, scope);
    }
    owner.add(stream);
    return stream;
  }

  /** Why a new stream of `holder` is ended at once, or null when it may open. */
  private refusal(holder: SyncHolder): { code: SyncCloseCode; reason: string } | null {
    if (this.stopped) return { code: 'UNAVAILABLE', reason: 'the server is shutting down; reconnect' };
    if (holder.sdkKeyId === undefined) return null;
    if (this.recentlyRevoked.has(holder.sdkKeyId)) return { code: 'UNAUTHENTICATED', reason: 'the SDK key was revoked' };
    const cap = holder.maxStreams ?? this.maxStreamsPerKey;
    if ((this.streamsByKey.get(holder.sdkKeyId)?.size ?? 0) >= cap) {
      return { code: 'RESOURCE_EXHAUSTED', reason: `this SDK key already has ${cap} open streams on this server` };
    }
    return null;
  }

  stats(): SyncHubStats {
    let streams = 0;
    let congested = 0;
    for (const channel of this.channels.values()) {
      streams += channel.streams.size;
      for (const stream of channel.streams) if (stream.isCongested) congested++;
    }
    return { streams, environments: this.channels.size, congested };
  }

  /** Ends every stream with UNAVAILABLE (clients reconnect elsewhere) and refuses new ones. */
  stop(): Promise<void> {
    this.stopped = true;
    for (const unsubscribe of this.unsubscribers.splice(0)) unsubscribe();
    for (const channel of [...this.channels.values()]) {
      for (const stream of [...channel.streams]) stream.close('UNAVAILABLE', 'the server is shutting down; reconnect');
    }
    return Promise.resolve();
  }

  private rememberRevoked(sdkKeyId: string): void {
    const now = Date.now();
    for (const [id, at] of this.recentlyRevoked) {
      if (now - at < REVOKED_MEMORY_MS) break; // insertion order is time order
      this.recentlyRevoked.delete(id);
    }
    this.recentlyRevoked.delete(sdkKeyId);
    this.recentlyRevoked.set(sdkKeyId, now);
  }

  private forget(channel: EnvironmentChannel, stream: SyncStream): void {
    channel.streams.delete(stream);
    // The state of an environment nobody streams is not kept; the next stream loads it afresh.
    if (channel.streams.size === 0 && this.channels.get(channel.scope.environmentId) === channel) this.channels.delete(channel.scope.environmentId);
    if (stream.holder.sdkKeyId !== undefined) removeFrom(this.streamsByKey, stream.holder.sdkKeyId, stream);
    if (stream.holder.session !== undefined) removeFrom(this.streamsByUser, stream.holder.session.userId, stream);
  }
}

function addTo(index: Map<string, Set<SyncStream>>, id: string, stream: SyncStream): void {
  let streams = index.get(id);
  if (!streams) index.set(id, (streams = new Set()));
  streams.add(stream);
}

function removeFrom(index: Map<string, Set<SyncStream>>, id: string, stream: SyncStream): void {
  const streams = index.get(id);
  streams?.delete(stream);
  if (streams?.size === 0) index.delete(id);
}
