import type { DrainedCounts, EvaluationCounter } from '@switchyard/core';

/** Default pause between two flushes (INSIGHTS_FLUSH_MS; docs/insights.md "Counting"). */
export const DEFAULT_INSIGHTS_FLUSH_MS = 60_000;

/** Thrown by a write that wrote part of a drain: only `unwritten` is put back (the rest must not be written twice). */
export class PartialWriteError extends Error {
  constructor(
    readonly unwritten: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>,
    readonly cause: unknown,
  ) {
    super(`evaluation counts partly written: ${(cause as Error)?.message ?? String(cause)}`);
  }
}

export interface EvaluationCountFlusherOptions {
  /** Pause between two flushes (default one minute). */
  intervalMs?: number;
  /** Told of every failed write (the counts are put back and written by the next flush). */
  onError?: (error: unknown) => void;
  /** Told how many evaluations the counter's key bound turned away since the last flush (when any). */
  onDropped?: (dropped: number) => void;
  /**
   * Whether the write holds something of its own to send again (a gateway's CountReportSender):
   * then a flush writes even when nothing new was counted.
   */
  holdsUnsent?: () => boolean;
}

/**
 * Writes what an EvaluationCounter holds every `intervalMs` and at stop(): the server writes each
 * drain in one statement (InsightsService.write), a gateway sends it over the hop. One flush at a
 * time; a drain whose write fails is put back into the counter (bounded by its key bound) and goes
 * with the next flush.
 *
 * A gateway's write (CountReportSender) keeps a report whose call failed and sends it again with
 * its id, which the services apply once. This process's own write, one statement, that fails after
 * the database committed it (a connection lost at commit) would be written again: rare, and the
 * counts are a measure of use, not a ledger (docs/insights.md "Exactness").
 */
export class EvaluationCountFlusher {
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;
  private stopped = false;
  readonly intervalMs: number;

  constructor(
    private readonly counter: Pick<EvaluationCounter, 'drain' | 'restore'>,
    private readonly write: (drained: DrainedCounts) => Promise<unknown>,
    private readonly options: EvaluationCountFlusherOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? DEFAULT_INSIGHTS_FLUSH_MS;
    if (!(this.intervalMs > 0)) throw new RangeError('intervalMs must be positive');
  }

  start(): void {
    if (this.stopped || this.timer !== null) return;
    this.timer = setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  /** Writes what the counter holds now (after the flush in progress, if any). */
  async flush(): Promise<void> {
    while (this.flushing !== null) await this.flushing;
    const run = this.flushOnce();
    this.flushing = run;
    try {
      await run;
    } finally {
      if (this.flushing === run) this.flushing = null;
    }
  }

  /** No more scheduled flushes; the counts held are written once more. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  private async flushOnce(): Promise<void> {
    const drained = this.counter.drain();
    if (drained.dropped > 0) this.options.onDropped?.(drained.dropped);
    if (drained.counts.length === 0 && drained.lastEvaluated.length === 0 && this.options.holdsUnsent?.() !== true) return;
    try {
      await this.write(drained);
    } catch (error) {
      this.counter.restore({ ...(error instanceof PartialWriteError ? error.unwritten : drained), dropped: 0 });
      this.options.onError?.(error);
    }
  }
}
