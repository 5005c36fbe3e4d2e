import * as grpc from '@grpc/grpc-js';
import type { SendOutcome, SyncCloseCode, SyncMessage, SyncSink, SyncStreamHandle } from '@switchyard/services';
import { GRPC_STATUS_BY_CODE } from '../../grpc/grpc-errors.ts';
import type { Logger } from '../../logging.ts';
import type { SyncEncoder, SyncShape } from './messages.ts';

/** Default of WriteBudget.maxBytes: what all sync streams together may have written but not yet flushed. */
export const DEFAULT_SYNC_WRITE_BUDGET_BYTES = 128 * 1024 * 1024;

/**
 * Bytes handed to grpc-js by sync streams and not yet flushed to their sockets, across the process.
 *
 * grpc-js copies every message it is given into a buffer of its own until the socket takes it. A
 * full snapshot for every stream at once — after a lost database notification connection, or when
 * thousands of clients reconnect together — would otherwise allocate streams × snapshot size in one
 * go (10,000 × 300 KiB is 3 GB). Over the budget, a stream's message waits (without a copy: it
 * shares the encoded payload) until earlier messages have been flushed.
 */
export class WriteBudget {
  private inFlight = 0;
  /**
   * Sinks holding a message until there is room, in arrival order: a queue read from `head`, with
   * `waiting` telling which entries still wait (a sink that left is skipped when reached). Not one
   * Set iterated from its start: deleted entries stay in a Set's storage until it is rehashed, so
   * each room made would walk past every sink resumed before it, O(n²) when a resync holds back a
   * message for each of 50,000 streams.
   */
  private queue: Array<GrpcSyncSink | undefined> = [];
  private head = 0;
  private readonly waiting = new Set<GrpcSyncSink>();

  constructor(readonly maxBytes: number = DEFAULT_SYNC_WRITE_BUDGET_BYTES) {}

  get exhausted(): boolean {
    return this.inFlight >= this.maxBytes;
  }

  get bytesInFlight(): number {
    return this.inFlight;
  }

  /** Sinks holding a message for room in the budget. */
  get waitingSinks(): number {
    return this.waiting.size;
  }

  take(bytes: number): void {
    this.inFlight += bytes;
  }

  give(bytes: number): void {
    this.inFlight -= bytes;
    while (!this.exhausted && this.head < this.queue.length) {
      const sink = this.queue[this.head];
      // Cleared, so a resumed sink is not kept alive by the queue.
      this.queue[this.head] = undefined;
      this.head += 1;
      // Gone from `waiting`: the sink left (its stream ended) after it queued.
      if (sink === undefined || !this.waiting.delete(sink)) continue;
      // May queue the sink again (its next message) or give bytes back (re-entering this loop).
      sink.resume();
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  wait(sink: GrpcSyncSink): void {
    if (this.waiting.has(sink)) return;
    this.waiting.add(sink);
    this.queue.push(sink);
  }

  leave(sink: GrpcSyncSink): void {
    if (!this.waiting.delete(sink)) return;
    // An ended sink stays queued, with its held message, until the queue reaches it: while the
    // budget stays exhausted, streams opened and closed in a loop would grow the queue without
    // bound. Compacted once the ended entries outnumber the waiting ones (amortised O(1)).
    if (this.queue.length - this.head > 2 * this.waiting.size + 1024) {
      this.queue = this.queue.slice(this.head).filter((queued) => queued !== undefined && this.waiting.has(queued));
      this.head = 0;
    }
  }

  /** Entries in the queue, ended sinks not yet skipped included (tests bound it). */
  get queuedEntries(): number {
    return this.queue.length - this.head;
  }
}

/**
 * A grpc-js server stream as the hub's sink. `send` answers `client_behind` when grpc-js's buffer
 * for the stream is full (`write()` false) and `server_busy` when the process-wide write budget is;
 * the hub then waits for `drained()`, reported here when the message held back has been written or
 * when grpc-js emits 'drain'.
 */
export class GrpcSyncSink implements SyncSink {
  handle: SyncStreamHandle | null = null;
  /** The message held back while the budget is exhausted (at most one: the hub waits for drained()). */
  private held: SyncMessage | null = null;
  /** Bytes of this stream counted in the budget. */
  private outstanding = 0;
  private ended = false;

  constructor(
    private readonly call: grpc.ServerWritableStream<unknown, unknown>,
    private readonly shape: SyncShape,
    private readonly encoder: SyncEncoder,
    private readonly budget: WriteBudget,
    private readonly logger: Logger,
    private readonly environmentId: string,
    /** Told about every message handed to grpc-js (metrics). */
    private readonly onMessage: () => void = () => {},
  ) {
    call.on('drain', () => this.handle?.drained());
    // The client went away: whatever grpc-js still holds for it is freed with the call.
    call.on('cancelled', () => {
      this.release();
      this.handle?.cancel();
    });
    // The status went out (the hub ended the stream): the same.
    call.on('finish', () => {
      this.release();
      this.handle?.cancel();
    });
  }

  send(message: SyncMessage): SendOutcome {
    // A cancelled call drops writes; "sent" keeps the hub from waiting for a drain that never comes.
    if (this.ended || this.call.cancelled) return 'sent';
    if (this.budget.exhausted) {
      this.held = message;
      this.budget.wait(this);
      return 'server_busy';
    }
    return this.write(message) ? 'sent' : 'client_behind';
  }

  /** There is room in the budget again: write the held message. */
  resume(): void {
    const message = this.held;
    this.held = null;
    if (!message || this.ended || this.call.cancelled) return;
    // When grpc-js's own buffer is full now, its 'drain' reports drained() later.
    if (this.write(message)) this.handle?.drained();
    else this.handle?.clientBehind();
  }

  close(code: SyncCloseCode, reason: string): void {
    this.logger.debug({ environment_id: this.environmentId, code, reason }, 'sync stream closed');
    this.release();
    if (this.call.cancelled) return;
    // grpc-js ends the call with this status once the messages already written are sent.
    this.call.emit('error', { code: GRPC_STATUS_BY_CODE[code], details: reason });
  }

  private write(message: SyncMessage): boolean {
    const encoded = this.encoder.message(message.sequenceNumber, message.payload, this.shape);
    const bytes = encoded.body.length;
    this.outstanding += bytes;
    this.budget.take(bytes);
    this.onMessage();
    return this.call.write(encoded, () => {
      if (this.ended) return;
      this.outstanding -= bytes;
      this.budget.give(bytes);
    });
  }

  /**
   * The stream is over for us: stop counting its bytes. A client that never reads keeps grpc-js's
   * bounded buffer for it until its connection ends; it must not hold the budget of all others.
   */
  private release(): void {
    if (this.ended) return;
    this.ended = true;
    this.held = null;
    this.budget.leave(this);
    const bytes = this.outstanding;
    this.outstanding = 0;
    if (bytes > 0) this.budget.give(bytes);
  }
}
