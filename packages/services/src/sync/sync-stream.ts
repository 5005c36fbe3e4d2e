import type { SendOutcome, SyncCloseCode, SyncHolder, SyncPayload, SyncSink, SyncStreamHandle } from './sync-types.ts';

/** What a stream needs of its environment's channel. */
export interface SnapshotSource {
  /** The full state last sent to the environment's streams. */
  snapshotPayload(): SyncPayload;
}

/**
 * One open stream: its sequence numbers and its flow control.
 *
 * Backpressure: when the transport cannot take more, the stream stops receiving changes (they are
 * not queued here, so a slow client costs at most the transport's bounded buffer) and remembers
 * that it missed some. When the transport drains it gets one full snapshot of the current state
 * instead of the changes it missed. A client whose own buffer stays full for `maxStallMs` is
 * closed with RESOURCE_EXHAUSTED; waiting for the server's own limits does not count.
 */
export class SyncStream implements SyncStreamHandle {
  private sequence = 0;
  /** Set when the first snapshot goes out; changes before that are not this stream's. */
  live = false;
  closed = false;
  private congested = false;
  private missed = false;
  private stallTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly holder: SyncHolder,
    private readonly sink: SyncSink,
    private readonly source: SnapshotSource,
    private readonly maxStallMs: number,
    private readonly onEnd: (stream: SyncStream) => void,
  ) {}

  get isCongested(): boolean {
    return this.congested;
  }

  /** Sends a payload with this stream's next sequence number, unless the client is behind. */
  deliver(payload: SyncPayload): void {
    if (this.closed) return;
    if (this.congested) {
      this.missed = true;
      return;
    }
    this.sequence += 1;
    let outcome: SendOutcome;
    try {
      outcome = this.sink.send({ sequenceNumber: this.sequence, payload });
    } catch {
      // A transport that cannot encode or write is broken for this stream only.
      this.close('INTERNAL', 'the stream failed');
      return;
    }
    if (outcome === 'sent') return;
    this.congested = true;
    if (outcome === 'client_behind') this.clientBehind();
  }

  clientBehind(): void {
    if (this.closed || !this.congested || this.stallTimer) return;
    this.stallTimer = setTimeout(() => this.close('RESOURCE_EXHAUSTED', `the client did not read for ${this.maxStallMs} ms; reconnect`), this.maxStallMs);
    this.stallTimer.unref();
  }

  drained(): void {
    if (this.closed || !this.congested) return;
    this.congested = false;
    this.clearTimer();
    if (this.missed) {
      this.missed = false;
      this.deliver(this.source.snapshotPayload());
    }
  }

  cancel(): void {
    if (this.closed) return;
    this.closed = true;
    this.clearTimer();
    this.onEnd(this);
  }

  close(code: SyncCloseCode, reason: string): void {
    if (this.closed) return;
    this.cancel();
    this.sink.close(code, reason);
  }

  private clearTimer(): void {
    if (this.stallTimer) clearTimeout(this.stallTimer);
    this.stallTimer = null;
  }
}
