import protobuf from 'protobufjs/light.js';
import { SYNC_PROTOS_JSON } from '../generated/sync-protos.ts';
import type { SdkLogger } from '../logger.ts';
import { Backoff } from './backoff.ts';
import { decodeSyncMessage, type DefinitionUpdate, type SyncResponseMessage } from './decode-sync-message.ts';
import { GrpcStatus, grpcStatusName, openServerStream, type ServerStream } from './grpc-stream.ts';

/** Statuses after which reconnecting cannot help: the key (or its environment) is refused. */
const REFUSALS: ReadonlySet<number> = new Set([GrpcStatus.UNAUTHENTICATED, GrpcStatus.PERMISSION_DENIED, GrpcStatus.NOT_FOUND]);

const SYNC_PATH = '/svc.flags.v1.FlagSyncService/SyncDefinitions';
/** The largest sync message accepted (a full snapshot of a large environment). */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/**
 * The request and response types, loaded once from the generated descriptor (no .proto file at
 * run time), and read as @grpc/proto-loader used to hand them over (decode-sync-message.ts expects
 * that shape): snake_case names, int64 as numbers, enums as names, defaults filled in, oneofs named.
 */
let syncTypes: { request: protobuf.Type; response: protobuf.Type } | undefined;
function types(): { request: protobuf.Type; response: protobuf.Type } {
  if (!syncTypes) {
    const root = protobuf.Root.fromJSON(SYNC_PROTOS_JSON as protobuf.INamespace);
    root.resolveAll();
    syncTypes = { request: root.lookupType('svc.flags.v1.SyncRequest'), response: root.lookupType('svc.flags.v1.SyncResponse') };
  }
  return syncTypes;
}
const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: String, defaults: true, oneofs: true };

export interface SyncConnectionOptions {
  /** `host:port`. */
  target: string;
  secure: boolean;
  ca: Buffer | undefined;
  sdkKey: string;
  environmentId: string | undefined;
  backoff: { baseDelayMs: number; maxDelayMs: number; resetAfterMs: number };
  logger: SdkLogger;
  now: () => number;
  random: () => number;
}

/** What the connection reports to its owner. */
export interface SyncListener {
  /** A message in order (the first of each stream is a full snapshot). */
  update(update: DefinitionUpdate): void;
  /** The stream is gone; a reconnect is scheduled in `retryInMs`. */
  disconnected(reason: string, retryInMs: number): void;
  /** The server refused the key or environment: no reconnect ever. */
  refused(status: string, reason: string): void;
}

/**
 * The SDK's one FlagSyncService.SyncDefinitions stream, kept open: a stream that ends or fails
 * (other than by a refusal) is opened again after a backoff delay, and every new stream starts
 * with a full snapshot. Sequence numbers must go 1, 2, 3, ...; a gap means a message was lost, so
 * the stream is dropped and a new one (a fresh snapshot) opened.
 */
export class SyncConnection {
  private readonly backoff: Backoff;
  private call: ServerStream | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private expectedSequence = 1;
  private stopped = false;
  /** Streams opened so far (tests count them to see there is no reconnect storm). */
  connectAttempts = 0;

  constructor(
    private readonly options: SyncConnectionOptions,
    private readonly listener: SyncListener,
  ) {
    this.backoff = new Backoff({ ...options.backoff, now: options.now, random: options.random });
  }

  start(): void {
    if (this.stopped || this.call || this.retryTimer) return;
    this.open();
  }

  /** Ends the stream (and its connection) and any scheduled reconnect. */
  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const call = this.call;
    this.call = undefined;
    call?.cancel();
  }

  private open(): void {
    this.connectAttempts++;
    this.expectedSequence = 1;
    const { request, response } = types();
    let ended = false;
    const call: ServerStream = openServerStream(
      {
        authority: `${this.options.secure ? 'https' : 'http'}://${this.options.target}`,
        ca: this.options.ca,
        path: SYNC_PATH,
        metadata: { 'x-sdk-key': this.options.sdkKey },
        request: request.encode(request.fromObject({ environment_id: this.options.environmentId ?? '' })).finish(),
        maxMessageBytes: MAX_MESSAGE_BYTES,
      },
      {
        message: (bytes) => this.received(call, bytes, response),
        end: (status, details) => {
          if (ended || this.call !== call) return;
          ended = true;
          this.call = undefined;
          this.ended(status, details);
        },
      },
    );
    this.call = call;
  }

  private received(call: ServerStream, bytes: Uint8Array, response: protobuf.Type): void {
    if (this.call !== call) return;
    let update: DefinitionUpdate;
    try {
      update = decodeSyncMessage(response.toObject(response.decode(bytes), TO_OBJECT) as SyncResponseMessage);
    } catch (error) {
      this.abandon(call, `a sync message could not be decoded: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    if (update.sequenceNumber !== this.expectedSequence || (this.expectedSequence === 1 && !update.fullSnapshot)) {
      this.abandon(call, `sequence gap: expected ${this.expectedSequence}, got ${update.sequenceNumber}`);
      return;
    }
    this.expectedSequence++;
    if (update.sequenceNumber === 1) this.backoff.connected();
    for (const problem of update.problems) this.options.logger.warn(problem);
    this.listener.update(update);
  }

  /** Drops a stream we can no longer trust and schedules a fresh one (a new full snapshot). */
  private abandon(call: ServerStream, reason: string): void {
    this.options.logger.warn(`sync stream dropped: ${reason}`);
    this.call = undefined;
    call.cancel();
    this.ended(GrpcStatus.ABORTED, reason);
  }

  private ended(status: number, details: string): void {
    if (this.stopped) return;
    const name = grpcStatusName(status);
    if (REFUSALS.has(status)) {
      this.stopped = true;
      this.listener.refused(name, details);
      return;
    }
    const delay = this.backoff.nextDelayMs();
    const reason = `${name}: ${details || 'stream ended'}`;
    this.options.logger.info('sync stream lost; reconnecting', { status: name, retry_in_ms: delay });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      if (!this.stopped) this.open();
    }, delay);
    this.listener.disconnected(reason, delay);
  }
}
