import { randomUUID } from 'node:crypto';
import type { SdkLogger } from '../logger.ts';
import { backoffDelayMs, outcomeOfStatus, retryAfterMs, type AttemptOutcome, type RetryPolicy } from './retry-policy.ts';

/** The server's limits per request (docs/decisions.md "Limits"): 10,000 entries and 1 MiB. */
export const SERVER_MAX_ENTRIES = 10_000;
/** Below the server's 1 MiB so headers and rounding never matter. */
export const MAX_BODY_BYTES = 1_000_000;

/** One entry, serialised once when it is queued. */
interface QueuedItem {
  json: string;
  bytes: number;
  seq: number;
  tag: string | undefined;
}

export interface DeliveryQueueOptions {
  /** Route under the environment (`events/batch` or `exposures`) and the body field. */
  route: 'events/batch' | 'exposures';
  field: 'events' | 'exposures';
  /** Plural noun for log lines. */
  noun: string;
  baseUrl: string;
  sdkKey: string;
  environmentId: () => string | undefined;
  maxBatchSize: number;
  maxQueueSize: number;
  retry: RetryPolicy;
  fetch: typeof fetch;
  logger: SdkLogger;
  now: () => number;
  /** Told the tags of entries that will not be delivered (the exposure dedup forgets them). */
  onDropped?: (tags: string[]) => void;
}

interface AttemptResult {
  outcome: AttemptOutcome;
  status?: number;
  text?: string;
  retryAfterMs?: number;
  error?: string;
}

/** Rejected (key, reason, field) triples are logged once each; past this many, no more are remembered. */
const MAX_LOGGED_REJECTED_KEYS = 1_000;

/** One rejected entry as the SDK logs it: the server's reason and field when it sends them. */
interface RejectedEntry {
  key: string;
  reason?: string;
  field?: string;
}

/**
 * The distinct (key, reason, field) of an answer's `rejected`; from `rejected_keys` alone (no
 * reason) when the server is older than the `rejected` field. Anything malformed is skipped.
 */
function rejectedEntries(rejected: unknown, rejectedKeys: unknown): RejectedEntry[] {
  if (Array.isArray(rejected)) {
    return rejected.flatMap((entry: unknown) => {
      if (typeof entry !== 'object' || entry === null) return [];
      const { key, reason, field } = entry as Record<string, unknown>;
      if (typeof key !== 'string' || typeof reason !== 'string') return [];
      return [typeof field === 'string' && field !== '' ? { key, reason, field } : { key, reason }];
    });
  }
  return Array.isArray(rejectedKeys) ? rejectedKeys.filter((key): key is string => typeof key === 'string').map((key) => ({ key })) : [];
}

/**
 * A bounded FIFO of one kind of entry, delivered in batches to one ingest route, one request at a
 * time. Every batch carries its own Idempotency-Key, sent again on each retry of that batch, so a
 * batch whose answer was lost is stored once (docs/decisions.md "Idempotency-Key").
 */
export class DeliveryQueue {
  private pending: QueuedItem[] = [];
  private inFlightCount = 0;
  private inFlight: Promise<void> | undefined;
  /** Sequence number of the last entry queued, and of the last one delivered or given up. */
  private enqueuedSeq = 0;
  private settledSeq = 0;
  /** Flushes waiting: a backoff sleep keeps the process alive only while someone waits for it. */
  private waiting = 0;
  private sleepTimer: NodeJS.Timeout | undefined;
  private overflowing = false;
  private readonly loggedRejected = new Set<string>();
  private closed = false;

  dropped = 0;
  sent = 0;
  failedAttempts = 0;

  constructor(private readonly options: DeliveryQueueOptions) {}

  get queued(): number {
    return this.pending.length + this.inFlightCount;
  }

  /** Queues one entry; false (and counted as dropped) when closed or full. `tag` identifies it to onDropped. */
  enqueue(entry: object, tag?: string): boolean {
    if (this.closed) {
      this.dropped++;
      return false;
    }
    if (this.queued >= this.options.maxQueueSize) {
      this.dropped++;
      if (!this.overflowing) {
        this.overflowing = true;
        this.options.logger.warn(`${this.options.noun} queue full (${this.options.maxQueueSize}): new ${this.options.noun} are dropped until it drains`);
      }
      return false;
    }
    const json = JSON.stringify(entry);
    const bytes = Buffer.byteLength(json);
    if (bytes > MAX_BODY_BYTES - 64) {
      this.dropped++;
      this.options.logger.warn(`one of the ${this.options.noun} is too large to send (${bytes} bytes): dropped`);
      return false;
    }
    this.overflowing = false;
    this.pending.push({ json, bytes, seq: ++this.enqueuedSeq, tag });
    if (this.pending.length >= this.options.maxBatchSize) void this.pump();
    return true;
  }

  /** Resolves once every entry queued before the call was delivered or given up (see flush in event-delivery). */
  async flush(): Promise<void> {
    const target = this.enqueuedSeq;
    this.waiting++;
    this.sleepTimer?.ref();
    try {
      while (this.settledSeq < target) {
        if (this.currentEnvironment() === undefined) return;
        await this.pump();
      }
    } finally {
      this.waiting--;
    }
  }

  /** From now on, new entries are dropped (counted); what is queued can still be flushed. */
  stopAccepting(): void {
    this.closed = true;
  }

  /** Drops what is still queued: after a final flush, only entries waiting for an unknown environment. */
  discardUndelivered(): void {
    if (this.pending.length === 0) return;
    this.options.logger.warn(`closed with ${this.pending.length} ${this.options.noun} undelivered (environment not known yet): dropped`);
    this.giveUp(this.pending);
    this.pending = [];
    this.settledSeq = this.enqueuedSeq;
  }

  private currentEnvironment(): string | undefined {
    try {
      return this.options.environmentId();
    } catch {
      return undefined;
    }
  }

  /** Starts sending the next batch unless one is already on its way; resolves when that batch is settled. */
  private pump(): Promise<void> {
    if (this.inFlight === undefined) {
      this.inFlight = this.sendNext().then(
        (sent) => {
          this.inFlight = undefined;
          // A full batch is waiting: send it now rather than at the next interval.
          if (sent && this.pending.length >= this.options.maxBatchSize) void this.pump();
        },
        () => {
          this.inFlight = undefined;
        },
      );
    }
    return this.inFlight;
  }

  /** The oldest entries that fit in one request: at most maxBatchSize, at most MAX_BODY_BYTES. */
  private takeBatch(): QueuedItem[] {
    let count = 0;
    let bytes = 32;
    while (count < this.pending.length && count < this.options.maxBatchSize) {
      const item = this.pending[count]!;
      if (count > 0 && bytes + item.bytes + 1 > MAX_BODY_BYTES) break;
      bytes += item.bytes + 1;
      count++;
    }
    return this.pending.splice(0, count);
  }

  /** Sends one batch with its retries; false when there was nothing it could send. */
  private async sendNext(): Promise<boolean> {
    const environmentId = this.currentEnvironment();
    if (environmentId === undefined || this.pending.length === 0) return false;
    const batch = this.takeBatch();
    this.inFlightCount = batch.length;
    const { retry, noun, logger } = this.options;
    try {
      const url = `${this.options.baseUrl.replace(/\/+$/, '')}/v1/environments/${encodeURIComponent(environmentId)}/${this.options.route}`;
      const body = `{"${this.options.field}":[${batch.map((item) => item.json).join(',')}]}`;
      const idempotencyKey = randomUUID();
      for (let attempt = 1; ; attempt++) {
        const result = await this.attempt(url, body, idempotencyKey);
        if (result.outcome === 'delivered') {
          this.delivered(batch, result.text ?? '');
          return true;
        }
        this.failedAttempts++;
        const why = result.status !== undefined ? `HTTP ${result.status}` : (result.error ?? 'network error');
        if (result.outcome === 'give_up' || attempt >= retry.maxAttempts) {
          const detail = result.outcome === 'give_up' ? errorCode(result.text) : undefined;
          logger.warn(`gave up delivering ${batch.length} ${noun} after ${attempt} attempt(s): ${why}`, {
            status: result.status,
            attempts: attempt,
            ...(detail === undefined ? {} : { code: detail }),
          });
          this.giveUp(batch);
          return true;
        }
        const delayMs = result.retryAfterMs ?? backoffDelayMs(retry, attempt);
        logger.debug(`delivering ${batch.length} ${noun} failed (${why}); retry ${attempt} in ${delayMs} ms`, { status: result.status, attempt });
        await this.sleep(delayMs);
      }
    } catch (error) {
      // Not a delivery failure but a bug or a bad environment id: the batch must still settle, or flush would wait forever.
      logger.error(`could not send ${batch.length} ${noun}: ${error instanceof Error ? error.name : 'error'}`);
      this.giveUp(batch);
      return true;
    } finally {
      this.inFlightCount = 0;
      this.settledSeq = batch[batch.length - 1]!.seq;
    }
  }

  private async attempt(url: string, body: string, idempotencyKey: string): Promise<AttemptResult> {
    const fetchFn = this.options.fetch;
    const { retry } = this.options;
    try {
      const response = await fetchFn(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sdk-key': this.options.sdkKey, 'idempotency-key': idempotencyKey },
        body,
        signal: AbortSignal.timeout(retry.requestTimeoutMs),
      });
      const text = await response.text();
      const outcome = outcomeOfStatus(response.status);
      const result: AttemptResult = { outcome, status: response.status, text };
      if (outcome === 'retry') {
        const after = retryAfterMs(response.headers.get('retry-after'), retry, this.options.now());
        if (after !== undefined) result.retryAfterMs = after;
      }
      return result;
    } catch (error) {
      // Never the request itself: its headers hold the SDK key.
      return { outcome: 'retry', error: describeError(error) };
    }
  }

  /** Counts the server's answer: accepted entries are sent; rejected ones dropped, each key and reason logged once. */
  private delivered(batch: QueuedItem[], text: string): void {
    let accepted = batch.length;
    let rejected: RejectedEntry[] = [];
    try {
      const answer = JSON.parse(text) as { accepted_count?: unknown; rejected_keys?: unknown; rejected?: unknown };
      if (typeof answer.accepted_count === 'number') accepted = Math.max(0, Math.min(batch.length, answer.accepted_count));
      rejected = rejectedEntries(answer.rejected, answer.rejected_keys);
    } catch {
      // A 2xx without the documented body: the entries were taken.
    }
    this.sent += accepted;
    this.dropped += batch.length - accepted;
    const fresh = new Map<string, RejectedEntry>();
    for (const entry of rejected) {
      const id = `${entry.key}\u0000${entry.reason ?? ''}\u0000${entry.field ?? ''}`;
      if (!this.loggedRejected.has(id) && !fresh.has(id)) fresh.set(id, entry);
    }
    if (fresh.size > 0) {
      const entries = [...fresh.values()];
      this.options.logger.warn(`the server rejected ${this.options.noun} (see docs/contract.md "Why an entry is rejected"); logged once per key and reason`, {
        rejected_keys: [...new Set(entries.map((entry) => entry.key))],
        rejected: entries,
      });
      for (const id of fresh.keys()) if (this.loggedRejected.size < MAX_LOGGED_REJECTED_KEYS) this.loggedRejected.add(id);
    }
  }

  private giveUp(items: QueuedItem[]): void {
    this.dropped += items.length;
    const tags = items.flatMap((item) => (item.tag === undefined ? [] : [item.tag]));
    if (tags.length > 0) this.options.onDropped?.(tags);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.sleepTimer = setTimeout(() => {
        this.sleepTimer = undefined;
        resolve();
      }, ms);
      if (this.waiting === 0) this.sleepTimer.unref();
    });
  }
}

/** The stable `code` of an `{error, code}` answer, if that is what the body is. */
function errorCode(text: string | undefined): string | undefined {
  try {
    const body = JSON.parse(text ?? '') as { code?: unknown };
    return typeof body.code === 'string' ? body.code : undefined;
  } catch {
    return undefined;
  }
}

/** `ECONNREFUSED`, `TimeoutError`, ...: a name, not a message that could quote the request. */
function describeError(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: unknown } }).cause;
    if (cause !== undefined && typeof cause.code === 'string') return cause.code;
    return error.name;
  }
  return 'network error';
}
