import type { ErrorCode, Flag, Segment } from '@switchyard/core';

/**
 * What one sync message says about an environment. A payload is built once per change (or per
 * snapshot) and shared by every stream of the environment; only the sequence number is per stream,
 * so a transport can encode the payload once and reuse the bytes.
 */
export interface SyncPayload {
  environmentId: string;
  /** The environment's project: SDKs bucket splits with it (docs/contract.md "Bucketing"). */
  projectId: string;
  /** Flags under an ACTIVE experiment, in key order: the complete set in every payload. */
  experimentFlagKeys: readonly string[];
  /**
   * The evaluation features the environment's definitions use (core's evaluationFeaturesOf),
   * sorted: the complete set in every payload (docs/contract.md "Sync stream", `features`).
   */
  features: readonly string[];
  /** True: the complete state, which replaces whatever the client held. */
  fullSnapshot: boolean;
  /** When the definitions this payload reflects were read (epoch ms). */
  serverTimestampMs: number;
  /** Active flags added or changed (all of them in a full snapshot), in key order. */
  flags: readonly Flag[];
  /** Segments added or changed (all of them in a full snapshot), in key order. */
  segments: readonly Segment[];
  removedFlagKeys: readonly string[];
  removedSegmentKeys: readonly string[];
}

/** One message of one stream: 1 for the first, then +1 per message. */
export interface SyncMessage {
  sequenceNumber: number;
  payload: SyncPayload;
}

/** How a stream ends (a domain error code; the transport maps it to its own status). */
export type SyncCloseCode = Extract<ErrorCode, 'UNAUTHENTICATED' | 'PERMISSION_DENIED' | 'RESOURCE_EXHAUSTED' | 'UNAVAILABLE' | 'INTERNAL'>;

/**
 * What became of a message handed to a sink (it always takes it):
 * - `sent`: there is room for more;
 * - `client_behind`: the stream's own send buffer is full because the client reads slower than
 *   changes come. The hub sends nothing more until `drained()`, and ends the stream with
 *   RESOURCE_EXHAUSTED if that takes longer than its stall limit;
 * - `server_busy`: the transport holds the message back for a limit of its own (e.g. memory for
 *   all streams). The hub waits for `drained()` likewise, but it is not the client's fault, so no
 *   stall clock runs (until the transport reports `clientBehind()`).
 */
export type SendOutcome = 'sent' | 'client_behind' | 'server_busy';

/**
 * The transport side of one open stream, as the hub sees it.
 */
export interface SyncSink {
  send(message: SyncMessage): SendOutcome;
  /** Ends the stream with this status. Called at most once; no send follows. */
  close(code: SyncCloseCode, reason: string): void;
}

/** The hub's handle on an open stream, for the transport's events. */
export interface SyncStreamHandle {
  /** The transport can take messages again after a `send` that was not `sent`. */
  drained(): void;
  /** A message held back (`server_busy`) went out and found the client's buffer full: start the stall clock. */
  clientBehind(): void;
  /** The client went away: forget the stream (its sink is not closed). */
  cancel(): void;
}

/** Who holds a stream: an SDK key's streams end when the key is revoked. */
export interface SyncHolder {
  sdkKeyId?: string;
  /** Open streams this holder's key may hold here (default: the hub's maxStreamsPerKey); browser streams of client keys have their own cap. */
  maxStreams?: number;
  /** A stream opened with a bearer token: it lasts only as long as this session. */
  session?: { userId: string; orgId: string; sessionId: string };
}
