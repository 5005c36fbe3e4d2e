import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { SYNC_PROTOS_JSON } from '../generated/sync-protos.ts';
import type { SdkLogger } from '../logger.ts';
import { Backoff } from './backoff.ts';
import { decodeSyncMessage, type DefinitionUpdate, type SyncResponseMessage } from './decode-sync-message.ts';

/** grpc-js statuses after which reconnecting cannot help: the key (or its environment) is refused. */
const REFUSALS: ReadonlySet<number> = new Set([grpc.status.UNAUTHENTICATED, grpc.status.PERMISSION_DENIED, grpc.status.NOT_FOUND]);

let syncClientConstructor: grpc.ServiceClientConstructor | undefined;

/** FlagSyncService's client class, loaded once from the generated descriptor (no .proto file at run time). */
function flagSyncServiceClient(): grpc.ServiceClientConstructor {
  if (!syncClientConstructor) {
    const definition = protoLoader.fromJSON(SYNC_PROTOS_JSON, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as { svc: { flags: { v1: { FlagSyncService: grpc.ServiceClientConstructor } } } };
    syncClientConstructor = loaded.svc.flags.v1.FlagSyncService;
  }
  return syncClientConstructor;
}

export interface SyncConnectionOptions {
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
  private readonly client: grpc.Client;
  private readonly backoff: Backoff;
  private call: grpc.ClientReadableStream<SyncResponseMessage> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private expectedSequence = 1;
  private stopped = false;
  /** Streams opened so far (tests count them to see there is no reconnect storm). */
  connectAttempts = 0;

  constructor(
    private readonly options: SyncConnectionOptions,
    private readonly listener: SyncListener,
  ) {
    const credentials = options.secure ? grpc.credentials.createSsl(options.ca ?? null) : grpc.credentials.createInsecure();
    const Client = flagSyncServiceClient();
    this.client = new Client(options.target, credentials, {
      // Our own backoff decides when to try again; grpc-js's should not add to it much.
      'grpc.initial_reconnect_backoff_ms': 250,
      'grpc.max_reconnect_backoff_ms': 5_000,
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
    });
    this.backoff = new Backoff({ ...options.backoff, now: options.now, random: options.random });
  }

  start(): void {
    if (this.stopped || this.call || this.retryTimer) return;
    this.open();
  }

  /** Ends the stream and any scheduled reconnect, and closes the channel. */
  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const call = this.call;
    this.call = undefined;
    call?.removeAllListeners();
    call?.on('error', () => {});
    call?.cancel();
    this.client.close();
  }

  private open(): void {
    this.connectAttempts++;
    this.expectedSequence = 1;
    const metadata = new grpc.Metadata();
    metadata.set('x-sdk-key', this.options.sdkKey);
    const method = (this.client as unknown as Record<string, (request: unknown, metadata: grpc.Metadata) => grpc.ClientReadableStream<SyncResponseMessage>>).SyncDefinitions!;
    const call = method.call(this.client, { environment_id: this.options.environmentId ?? '' }, metadata);
    this.call = call;
    let ended = false;
    const end = (status: grpc.status, details: string): void => {
      if (ended || this.call !== call) return;
      ended = true;
      this.call = undefined;
      this.ended(status, details);
    };
    call.on('data', (message: SyncResponseMessage) => {
      if (this.call !== call) return;
      let update: DefinitionUpdate;
      try {
        update = decodeSyncMessage(message);
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
    });
    call.on('error', (error: grpc.ServiceError) => end(error.code, error.details));
    call.on('status', (status: grpc.StatusObject) => end(status.code, status.details));
  }

  /** Drops a stream we can no longer trust and schedules a fresh one (a new full snapshot). */
  private abandon(call: grpc.ClientReadableStream<SyncResponseMessage>, reason: string): void {
    this.options.logger.warn(`sync stream dropped: ${reason}`);
    this.call = undefined;
    call.removeAllListeners();
    call.on('error', () => {});
    call.cancel();
    this.ended(grpc.status.ABORTED, reason);
  }

  private ended(status: grpc.status, details: string): void {
    if (this.stopped) return;
    const name = grpc.status[status] ?? String(status);
    if (REFUSALS.has(status)) {
      this.stopped = true;
      this.client.close();
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
