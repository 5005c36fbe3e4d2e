import { DomainError, type EnvironmentScope } from '@switchyard/core';

/** Writes the rows of one environment atomically (all or none); resolves only once they are committed. */
export type WriteRows<Row> = (scope: EnvironmentScope, rows: Row[]) => Promise<unknown>;

export interface BatchingWriterOptions {
  /** How long the first waiting rows wait for company before they are written (default 2 ms). */
  maxDelayMs?: number;
  /** Waiting rows of one environment that start its write at once (default 5,000). */
  maxRows?: number;
  /**
   * Writes of one environment in flight at once (default 1). Above 1, rows that arrive while the
   * database works on one write start another on a second connection instead of waiting for it:
   * more of PostgreSQL's cores work on one busy environment, at the price of more, smaller writes.
   */
  maxConcurrentWrites?: number;
}

/** What the writer has done so far: for tests and metrics. */
export interface BatchingWriterStats {
  /** Calls to write(): one per client request. */
  requests: number;
  /** Rows handed to write(). */
  rows: number;
  /** Writes issued (one per environment per flush): fewer than requests under concurrency. */
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
 * collects them per environment and writes each environment's rows with ONE call of the write
 * function (in PostgreSQL one INSERT statement, see PgIngestWrites):
 * - the first waiting rows wait at most `maxDelayMs` for company, or not at all once their
 *   environment has `maxRows` waiting;
 * - while an environment has `maxConcurrentWrites` transactions in flight (default 1), its newer
 *   rows wait for one to end and then go together: under load the batches grow with the
 *   database's latency instead of the number of transactions growing with the number of
 *   requests. Environments write concurrently.
 *
 * Guarantees:
 * 1. write() resolves only after the write holding its rows committed: nothing is acknowledged
 *    that is not durable.
 * 2. A failed write rejects every request in it, and none of their rows is stored (the write is
 *    atomic). A request's rows are never split over two writes.
 */
export class BatchingWriter<Row> {
  private readonly maxDelayMs: number;
  private readonly maxRows: number;
  private readonly maxConcurrentWrites: number;
  /** Rows waiting, by environment. */
  private readonly pending = new Map<string, Group<Row>>();
  /** Writes in flight, by environment. */
  private readonly inFlight = new Map<string, number>();
  /** Every write in flight (flush waits for them). */
  private readonly writing = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private readonly counters: BatchingWriterStats = { requests: 0, rows: 0, writes: 0, failedWrites: 0 };

  constructor(
    private readonly writeRows: WriteRows<Row>,
    options: BatchingWriterOptions = {},
  ) {
    this.maxDelayMs = options.maxDelayMs ?? 2;
    this.maxRows = options.maxRows ?? 5_000;
    this.maxConcurrentWrites = Math.max(1, options.maxConcurrentWrites ?? 1);
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
      if (group.rows.length >= this.maxRows) this.start(id);
      else this.timer ??= setTimeout(() => this.flushNow(), this.maxDelayMs);
    });
  }

  /** Writes whatever waits and resolves when nothing is waiting or in flight any more. */
  async flush(): Promise<void> {
    while (this.pending.size > 0 || this.writing.size > 0) {
      this.flushNow();
      await Promise.allSettled([...this.writing]);
    }
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
    for (const id of [...this.pending.keys()]) this.start(id);
  }

  /**
   * Starts the environment's waiting rows unless it already has maxConcurrentWrites writes in
   * flight (the end of one starts them).
   */
  private start(id: string): void {
    const writes = this.inFlight.get(id) ?? 0;
    if (writes >= this.maxConcurrentWrites) return;
    const group = this.pending.get(id);
    if (!group) return;
    this.pending.delete(id);
    this.inFlight.set(id, writes + 1);
    const written = this.writeGroup(group).finally(() => {
      this.writing.delete(written);
      const left = (this.inFlight.get(id) ?? 1) - 1;
      if (left > 0) this.inFlight.set(id, left);
      else this.inFlight.delete(id);
      this.start(id);
    });
    this.writing.add(written);
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
