import { chunkEntries, retryAfterMs, type ContextTokenSource, type ErrorListener } from './batch-sender.ts';
import { randomId, type FetchLike, type TimersLike } from './platform.ts';

/** At most this many distinct (flag, variant, reason) keys between two summaries (the server's bound on one summary). */
export const MAX_SUMMARY_KEYS = 1000;

/** One entry of a summary as the route takes it (docs/insights.md "SDK summaries"). */
export interface SummaryCountEntry {
  flag_key: string;
  variant_key: string;
  reason: string;
  count: number;
}

interface Cell {
  n: number;
}

/**
 * Flag reads counted per (flag, variant, reason) since the last take: nested Maps of counters
 * incremented in place (no key string built per read), at most MAX_SUMMARY_KEYS keys.
 */
export class EvaluationCounts {
  private flags = new Map<string, Map<string, Map<string, Cell>>>();
  private keys = 0;
  private startMs = 0;
  dropped = 0;

  constructor(private readonly now: () => number) {}

  count(flagKey: string, variantKey: string, reason: string): void {
    if (typeof flagKey !== 'string' || flagKey === '' || flagKey.length > 256) return;
    let variants = this.flags.get(flagKey);
    if (variants === undefined) {
      variants = new Map();
      this.flags.set(flagKey, variants);
    }
    let reasons = variants.get(variantKey);
    if (reasons === undefined) {
      reasons = new Map();
      variants.set(variantKey, reasons);
    }
    const cell = reasons.get(reason);
    if (cell !== undefined) {
      cell.n++;
      return;
    }
    if (this.keys >= MAX_SUMMARY_KEYS) {
      this.dropped++;
      return;
    }
    if (this.keys === 0) this.startMs = this.now();
    this.keys++;
    reasons.set(reason, { n: 1 });
  }

  get size(): number {
    return this.keys;
  }

  /** What was counted, and since when; the counter starts again empty. */
  take(): { startMs: number; entries: SummaryCountEntry[] } | undefined {
    if (this.keys === 0) return undefined;
    const flags = this.flags;
    this.flags = new Map();
    this.keys = 0;
    const entries: SummaryCountEntry[] = [];
    for (const [flagKey, variants] of flags) {
      for (const [variantKey, reasons] of variants) for (const [reason, cell] of reasons) entries.push({ flag_key: flagKey, variant_key: variantKey, reason, count: cell.n });
    }
    return { startMs: this.startMs, entries };
  }
}

export interface SummarySenderOptions {
  url: string;
  clientKey: string;
  contextToken?: ContextTokenSource | undefined;
  fetch: FetchLike;
  timers: TimersLike;
  /** Time between summaries (default 60 s). */
  intervalMs: number;
  now: () => number;
  onError?: ErrorListener | undefined;
}

interface PendingSummary {
  idempotencyKey: string;
  body: string;
  count: number;
}

/**
 * Sends the page's evaluation counts to `POST /v1/environments/{env_id}/evaluation-summaries`
 * every `intervalMs`, and with keepalive when the page is hidden or left. Each summary (at most
 * 100 entries and 30 KiB, as every client route) has its own Idempotency-Key, kept while it is
 * resent after a network failure, a 5xx or a 429, so a summary whose answer was lost counts once.
 */
export class SummarySender {
  readonly counts: EvaluationCounts;
  private pending: PendingSummary[] = [];
  private timer: unknown;
  private pausedUntil = 0;
  private sending: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: SummarySenderOptions) {
    this.counts = new EvaluationCounts(options.now);
    this.schedule();
  }

  count(flagKey: string, variantKey: string, reason: string): void {
    if (!this.closed) this.counts.count(flagKey, variantKey, reason);
  }

  /** Sends the summaries waiting and what is counted now; with keepalive (the page is going away) nothing is kept. */
  flush(options: { keepalive?: boolean } = {}): Promise<void> {
    if (options.keepalive) return this.send(true);
    this.sending = this.sending.then(() => this.send(false)).catch(() => undefined);
    return this.sending;
  }

  close(): Promise<void> {
    const last = this.flush({ keepalive: true });
    this.closed = true;
    if (this.timer !== undefined) this.options.timers.clearTimeout(this.timer);
    this.timer = undefined;
    return last;
  }

  private schedule(): void {
    if (this.timer !== undefined || this.closed) return;
    this.timer = this.options.timers.setTimeout(() => {
      this.timer = undefined;
      void this.flush().then(() => this.schedule());
    }, Math.max(this.options.intervalMs, this.pausedUntil - this.options.now()));
  }

  private takeSummaries(): void {
    const taken = this.counts.take();
    if (taken === undefined) return;
    const endMs = Math.max(taken.startMs, this.options.now());
    const body = (entries: unknown[]) => ({ start_ms: taken.startMs, end_ms: endMs, counts: entries });
    for (const chunk of chunkEntries(taken.entries, body).chunks) {
      this.pending.push({ idempotencyKey: randomId(), body: JSON.stringify(body(chunk)), count: chunk.length });
    }
  }

  private async send(keepalive: boolean): Promise<void> {
    this.takeSummaries();
    if (this.pending.length === 0) return;
    if (!keepalive && this.options.now() < this.pausedUntil) return;
    const summaries = this.pending;
    this.pending = [];
    let token: string | undefined | null;
    try {
      token = await this.options.contextToken?.();
    } catch {
      token = undefined;
    }
    for (let i = 0; i < summaries.length; i++) {
      const summary = summaries[i]!;
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': this.options.clientKey, 'idempotency-key': summary.idempotencyKey };
      if (typeof token === 'string' && token !== '') headers.authorization = `Bearer ${token}`;
      let status: number;
      let retryAfter: string | null = null;
      try {
        const response = await this.options.fetch(this.options.url, { method: 'POST', headers, body: summary.body, ...(keepalive ? { keepalive: true } : {}) });
        status = response.status;
        retryAfter = response.headers.get('retry-after');
      } catch {
        status = 0;
      }
      if (status >= 200 && status < 300) continue;
      if (status === 0 || status === 429 || status >= 500) {
        // Kept with its Idempotency-Key for the next flush (not when the page is going away).
        if (status === 429) this.pausedUntil = this.options.now() + retryAfterMs(retryAfter, this.options.now());
        if (!keepalive) this.pending = [...summaries.slice(i), ...this.pending].slice(-10);
        return;
      }
      try {
        this.options.onError?.({ route: 'evaluation-summaries', status, message: `the server refused an evaluation summary with ${status}`, dropped: summary.count });
      } catch {
        // A listener's own failure never reaches the page.
      }
    }
  }
}
