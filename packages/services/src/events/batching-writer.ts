import { DomainError, type EnvironmentScope } from '@switchyard/core';

/** Writes the rows of one environment in one transaction; resolves only once they are committed. */
export type WriteRows<Row> = (scope: EnvironmentScope, rows: Row[]) => Promise<unknown>;

export interface BatchingWriterOptions {
  /** How long the first waiting rows wait for company before they are written (default 2 ms). */
  maxDelayMs?: number;
  /** Waiting rows (all environments) that trigger a write at once (default 5,000). */
  maxRows?: number;
}

/** What the writer has done so far: for tests and metrics. */
export interface BatchingWriterStats {
  /** Calls to write(): one per client request. */
  requests: number;
  /** Rows handed to write(). */
  rows: number;
  /** Transactions issued (one per environment per flush): fewer than requests under concurrency. */
  writes: number;
  /** Of those, the ones that failed (every request in them was rejected). */
  failedWrites: number;
}

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

interface Group<Row> {
  scope: EnvironmentScope;
  rows: Row[];
  waiters: Waiter[];
}

/**
 * Group commit for append-only rows. Concurrent requests hand their rows to write(); the writer
 * collects them for at most `maxDelayMs` (or until `maxRows` wait) and then writes each
 * environment's rows with ONE call of the write function (one transaction of multi-row INSERTs).
 *
 * Guarantees:
 * 1. write() resolves only after the transaction holding its rows committed: nothing is
 *    acknowledged that is not durable.
 * 2. A failed transaction rejects every request in it, and none of their rows is stored (one
 *    transaction). A request's rows are never split over two transactions.
 * 3. Transactions of different environments run concurrently (bounded by the pool); a slow
 *    flush does not hold back the next one.
 */
export class BatchingWriter<Row> {
  private readonly maxDelayMs: number;
  private readonly maxRows: number;
  private pending = new Map<string, Group<Row>>();
  private pendingRows = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  private closed = false;
  private readonly counters: BatchingWriterStats = { requests: 0, rows: 0, writes: 0, failedWrites: 0 };

  constructor(
    private readonly writeRows: WriteRows<Row>,
    options: BatchingWriterOptions = {},
  ) {
    this.maxDelayMs = options.maxDelayMs ?? 2;
    this.maxRows = options.maxRows ?? 5_000;
  }

  /** A copy of the counters. */
  get stats(): BatchingWriterStats {
    return { ...this.counters };
  }

  /**
   * Queues the rows of one request; resolves once they are committed, rejects with the write's
   * error (nothing of the request stored). UNAVAILABLE once the writer is closed.
   */
  write(scope: EnvironmentScope, rows: readonly Row[]): Promise<void> {
    if (this.closed) return Promise.reject(new DomainError('UNAVAILABLE', 'the server is shutting down; retry later'));
    if (rows.length === 0) return Promise.resolve();
    this.counters.requests += 1;
    this.counters.rows += rows.length;
    return new Promise<void>((resolve, reject) => {
      const id = `${scope.orgId}/${scope.projectId}/${scope.environmentId}`;
      let group = this.pending.get(id);
      if (!group) {
        group = { scope, rows: [], waiters: [] };
        this.pending.set(id, group);
      }
      // A loop, not push(...rows): a 10,000-row spread can overflow the argument limit.
      for (const row of rows) group.rows.push(row);
      group.waiters.push({ resolve, reject });
      this.pendingRows += rows.length;
      if (this.pendingRows >= this.maxRows) this.flushNow();
      else this.timer ??= setTimeout(() => this.flushNow(), this.maxDelayMs);
    });
  }

  /** Writes whatever waits now and resolves when every transaction in flight has ended. */
  async flush(): Promise<void> {
    this.flushNow();
    await Promise.allSettled([...this.inFlight]);
  }

  /** Refuses new rows, then flushes (call before the pool closes). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private flushNow(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.pending.size === 0) return;
    const groups = this.pending;
    this.pending = new Map();
    this.pendingRows = 0;
    for (const group of groups.values()) {
      const written = this.writeGroup(group);
      this.inFlight.add(written);
      void written.finally(() => this.inFlight.delete(written));
    }
  }

  private async writeGroup(group: Group<Row>): Promise<void> {
    this.counters.writes += 1;
    try {
      await this.writeRows(group.scope, group.rows);
    } catch (error) {
      this.counters.failedWrites += 1;
      for (const waiter of group.waiters) waiter.reject(error);
      return;
    }
    for (const waiter of group.waiters) waiter.resolve();
  }
}
