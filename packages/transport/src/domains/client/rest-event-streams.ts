import type { ServerResponse } from 'node:http';
import { RateLimitedError, type EnvironmentScope, type Flag } from '@switchyard/core';
import type { SendOutcome, SyncCloseCode, SyncHub, SyncMessage, SyncPayload, SyncSink, SyncStreamHandle } from '@switchyard/services';
import type { ChannelTokens } from './rest-channel-tokens.ts';
import { ClientViewChanges, isClientVisible } from './rest-client-view-changes.ts';

export interface BrowserStreamLimits {
  /** A comment line this often on every quiet stream (proxies and the idle sweep cut silent ones). */
  heartbeatMs: number;
  /** Open streams of one client key on this instance. */
  maxPerKey: number;
  /** Open streams of one client key from one client address on this instance. */
  maxPerKeyAndAddress: number;
}

/** Who opens a stream: the checked client key, its address and the page's origin (echoed for CORS). */
export interface BrowserStreamCaller {
  sdkKeyId: string;
  /** The client key as presented (sealed in the token): checked again after a resync. */
  rawKey: string;
  /** The key's own expiry: an open stream ends with it. */
  keyExpiresAtMs: number | null;
  address: string;
  origin: string | undefined;
}

/** What the browser is told to wait before reconnecting after the stream ends (SSE `retry`). */
const RECONNECT_MS = 2_000;
/** Seconds the stock provider waits with a hidden page before closing its stream (OFREP default). */
export const INACTIVITY_DELAY_SEC = 120;

const HEARTBEAT = ':\n\n';

/**
 * The browser event streams of client keys on this instance (docs/client-side.md "7. Streaming").
 *
 * Each stream joins the environment's channel of the sync hub as one more stream, so a
 * definition change is loaded once per environment for sync and browser streams alike (in a
 * gateway: from FlagService.Sync). What a browser stream writes is only a notice,
 * `{"type":"refetchEvaluation","etag":...}`, and only when the change touches what a client key
 * sees (ClientViewChanges); the browser then asks the bulk OFREP route again. The hub ends a
 * stream at shutdown (UNAVAILABLE); this class ends it when its key is revoked (or changed) or
 * expires, and keeps the per-key and per-(key, address) caps and the heartbeats.
 */
export class BrowserStreams {
  private readonly streams = new Set<BrowserStream>();
  private readonly byKey = new Map<string, Set<BrowserStream>>();
  private readonly unsubscribe: () => void;
  private readonly perKey = new Map<string, number>();
  private readonly perKeyAndAddress = new Map<string, number>();
  private readonly perEnvironment = new Map<string, number>();
  private readonly view: ClientViewChanges;
  private timer: NodeJS.Timeout | null = null;
  /** Keys being checked again after a resync: one check per key, however many streams it has. */
  private readonly rechecks = new Map<string, Promise<void>>();

  constructor(
    private readonly sync: Pick<SyncHub, 'open'>,
    private readonly verifier: { onRevoked(listener: (sdkKeyId: string) => void): () => void; verifySdkKey(rawKey: string): Promise<{ kind: string }> },
    readonly tokens: ChannelTokens,
    readonly limits: BrowserStreamLimits,
    options: { isVisible?: (flag: Flag) => boolean; now?: () => number } = {},
  ) {
    this.view = new ClientViewChanges(options.isVisible ?? isClientVisible);
    this.now = options.now ?? Date.now;
    // Heard on every instance for a revocation, and for a change of a client key's settings: its
    // streams end either way; the browser reconnects with its token, and the key is checked anew
    // (a revoked one: 401). The hub's own revocation handling is not used for these streams: it
    // would refuse a key for minutes after any change of its settings.
    this.unsubscribe = verifier.onRevoked((sdkKeyId) => {
      for (const stream of [...(this.byKey.get(sdkKeyId) ?? [])]) stream.close('UNAUTHENTICATED', 'the client key was revoked or changed');
    });
  }

  private readonly now: () => number;

  stats(): { streams: number } {
    return { streams: this.streams.size };
  }

  /**
   * Refuses a stream over a cap with 429 (RateLimitedError); call right before `open`, in the same
   * turn, so no other stream of the key slips in between.
   */
  admit(caller: BrowserStreamCaller): void {
    if ((this.perKey.get(caller.sdkKeyId) ?? 0) >= this.limits.maxPerKey) {
      throw new RateLimitedError(`this client key already has ${this.limits.maxPerKey} open event streams on this server`, 5);
    }
    if ((this.perKeyAndAddress.get(addressKey(caller)) ?? 0) >= this.limits.maxPerKeyAndAddress) {
      throw new RateLimitedError(`this client key already has ${this.limits.maxPerKeyAndAddress} open event streams from this address`, 5);
    }
  }

  /** Starts the event stream on `response` (headers not yet sent) and joins the environment's channel. */
  open(scope: EnvironmentScope, caller: BrowserStreamCaller, response: ServerResponse): void {
    this.admit(caller);
    const stream = new BrowserStream(scope.environmentId, caller, response, this.view, (ended) => this.forget(ended), () => this.recheck(caller));
    this.streams.add(stream);
    increment(this.perKey, caller.sdkKeyId);
    increment(this.perKeyAndAddress, addressKey(caller));
    increment(this.perEnvironment, scope.environmentId);
    let keyStreams = this.byKey.get(caller.sdkKeyId);
    if (!keyStreams) this.byKey.set(caller.sdkKeyId, (keyStreams = new Set()));
    keyStreams.add(stream);
    stream.start();
    stream.handle = this.sync.open(scope, {}, stream);
    this.startHeartbeats();
  }

  /** Ends every stream (the hub's stop does it too: this is for a hub that is not stopped). */
  stop(): void {
    this.unsubscribe();
    for (const stream of [...this.streams]) stream.close('UNAVAILABLE', 'the server is shutting down; reconnect');
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * After a resync (notifications were lost, so a revocation may have been missed too) a key is
   * checked again, once for all its streams; a key no longer valid ends them.
   */
  private recheck(caller: BrowserStreamCaller): void {
    if (this.rechecks.has(caller.sdkKeyId)) return;
    const check = this.verifier.verifySdkKey(caller.rawKey).then(
      () => {},
      () => {
        for (const stream of [...(this.byKey.get(caller.sdkKeyId) ?? [])]) stream.close('UNAUTHENTICATED', 'the client key is no longer valid');
      },
    );
    this.rechecks.set(caller.sdkKeyId, check);
    void check.finally(() => this.rechecks.delete(caller.sdkKeyId));
  }

  private startHeartbeats(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.beat(), this.limits.heartbeatMs);
    this.timer.unref();
  }

  private beat(): void {
    const now = this.now();
    for (const stream of this.streams) {
      if (stream.caller.keyExpiresAtMs !== null && stream.caller.keyExpiresAtMs <= now) stream.close('UNAUTHENTICATED', 'the client key has expired');
      else stream.heartbeat();
    }
  }

  private forget(stream: BrowserStream): void {
    if (!this.streams.delete(stream)) return;
    decrement(this.perKey, stream.caller.sdkKeyId);
    const keyStreams = this.byKey.get(stream.caller.sdkKeyId);
    keyStreams?.delete(stream);
    if (keyStreams?.size === 0) this.byKey.delete(stream.caller.sdkKeyId);
    decrement(this.perKeyAndAddress, addressKey(stream.caller));
    if (decrement(this.perEnvironment, stream.environmentId) === 0) this.view.forget(stream.environmentId);
    if (this.streams.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}

const addressKey = (caller: BrowserStreamCaller): string => `${caller.sdkKeyId} ${caller.address}`;

function increment(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function decrement(counts: Map<string, number>, key: string): number {
  const left = (counts.get(key) ?? 1) - 1;
  if (left <= 0) counts.delete(key);
  else counts.set(key, left);
  return left;
}

/** The notice the stock OFREP web provider acts on (ADR-0008 `refetchEvaluation`), built once per change. */
const notices = new WeakMap<SyncPayload, string>();
function noticeOf(message: SyncMessage): string {
  let notice = notices.get(message.payload);
  if (notice === undefined) {
    notice = `data: {"type":"refetchEvaluation","etag":"${message.payload.serverTimestampMs.toString(36)}"}\n\n`;
    notices.set(message.payload, notice);
  }
  return notice;
}

/** One open event stream: the hub's sink, writing straight to the socket's response. */
class BrowserStream implements SyncSink {
  handle: SyncStreamHandle | null = null;
  private ended = false;
  private readonly onDrain = () => this.handle?.drained();
  private readonly onClose = () => this.end();

  constructor(
    readonly environmentId: string,
    readonly caller: BrowserStreamCaller,
    private readonly response: ServerResponse,
    private readonly view: ClientViewChanges,
    private readonly onEnd: (stream: BrowserStream) => void,
    private readonly onResync: () => void,
  ) {}

  start(): void {
    const headers: Record<string, string> = {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store, no-transform',
      // nginx and others buffer responses by default; a buffered event stream is no stream.
      'x-accel-buffering': 'no',
    };
    if (this.caller.origin !== undefined) {
      headers['access-control-allow-origin'] = this.caller.origin;
      headers.vary = 'Origin';
    }
    this.response.writeHead(200, headers);
    this.response.on('drain', this.onDrain);
    this.response.on('close', this.onClose);
    // The headers and a first line at once: the browser's `open` fires now, not at the first notice.
    this.response.write(`retry: ${RECONNECT_MS}\n${HEARTBEAT}`);
  }

  send(message: SyncMessage): SendOutcome {
    // Every payload goes through the view, in order, even when this stream writes nothing for it.
    const changed = this.view.changesClientView(message.payload);
    // The first message is the state the browser just fetched: no news.
    if (this.ended || message.sequenceNumber === 1 || !changed) return 'sent';
    if (message.payload.fullSnapshot) this.onResync();
    return this.response.write(noticeOf(message)) ? 'sent' : 'client_behind';
  }

  heartbeat(): void {
    // A client that does not read gets nothing more: its socket then goes silent and the idle
    // sweep (HTTP_IDLE_TIMEOUT_MS) closes it, as the hub's stall limit would.
    if (this.ended || this.response.writableNeedDrain) return;
    this.response.write(HEARTBEAT);
  }

  close(_code: SyncCloseCode, _reason: string): void {
    if (this.ended) return;
    this.end();
    this.response.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.response.off('drain', this.onDrain);
    this.response.off('close', this.onClose);
    this.handle?.cancel();
    this.onEnd(this);
  }
}
