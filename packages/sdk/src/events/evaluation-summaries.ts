import { randomUUID } from 'node:crypto';
import { consoleLogger, type SdkLogger } from '../logger.ts';
import { DEFAULT_RETRY_POLICY, backoffDelayMs, outcomeOfStatus, retryAfterMs, type RetryPolicy } from './retry-policy.ts';

/** Defaults of EvaluationSummaries (docs/sdk.md "Evaluation counts"). */
export const EVALUATION_SUMMARY_DEFAULTS = Object.freeze({
  intervalMs: 60_000,
  /** The server's bound on one summary's entries (docs/insights.md "SDK summaries"). */
  maxEntries: 1_000,
});

/** One summary as the route takes it (POST /v1/environments/{env_id}/evaluation-summaries). */
export interface EvaluationSummary {
  start_ms: number;
  end_ms: number;
  counts: Array<{ flag_key: string; variant_key: string; reason: string; count: number }>;
}

/** One key's count, incremented in place (no Map.set per evaluation). */
interface Cell {
  n: number;
}

/** The server's bound on one entry's count: a larger one is split. */
const MAX_ENTRY_COUNT = 1_000_000_000;

/**
 * Evaluations counted per (flag, variant, reason) since the last take(): nested Maps of counters
 * incremented in place, so counting a key already held builds no string and allocates nothing,
 * and the key counted last is remembered (a repeat is three identity compares). At most
 * `maxEntries` distinct keys (the server's bound on one summary); an evaluation needing a new key
 * beyond that is counted in `dropped` only.
 */
export class EvaluationSummaryCounter {
  private flags = new Map<string, Map<string, Map<string, Cell>>>();
  private entries = 0;
  private startMs = 0;
  // The key counted last and its cell: an application evaluating the same flag for the same
  // answer again (the common case) costs three identity compares and an increment.
  private lastFlag: string | undefined;
  private lastVariant: string | undefined;
  private lastReason: string | undefined;
  private lastCell: Cell | undefined;
  dropped = 0;

  constructor(
    private readonly maxEntries: number = EVALUATION_SUMMARY_DEFAULTS.maxEntries,
    private readonly now: () => number = Date.now,
  ) {}

  count(flagKey: string, variantKey: string, reason: string): void {
    if (flagKey === this.lastFlag && variantKey === this.lastVariant && reason === this.lastReason) {
      this.lastCell!.n++;
      return;
    }
    let variants = this.flags.get(flagKey);
    if (variants === undefined) {
      if (this.entries >= this.maxEntries) {
        this.dropped++;
        return;
      }
      variants = new Map();
      this.flags.set(flagKey, variants);
    }
    let reasons = variants.get(variantKey);
    if (reasons === undefined) {
      reasons = new Map();
      variants.set(variantKey, reasons);
    }
    let cell = reasons.get(reason);
    if (cell === undefined) {
      if (this.entries >= this.maxEntries) {
        this.dropped++;
        return;
      }
      if (this.entries === 0) this.startMs = this.now();
      this.entries++;
      cell = { n: 0 };
      reasons.set(reason, cell);
    }
    cell.n++;
    this.lastFlag = flagKey;
    this.lastVariant = variantKey;
    this.lastReason = reason;
    this.lastCell = cell;
  }

  /** Distinct keys held. */
  get size(): number {
    return this.entries;
  }

  /** What was counted since the last take, as a summary (undefined: nothing); the counter starts again empty. */
  take(): EvaluationSummary | undefined {
    if (this.entries === 0) return undefined;
    const flags = this.flags;
    const startMs = this.startMs;
    this.flags = new Map();
    this.entries = 0;
    this.lastFlag = this.lastVariant = this.lastReason = undefined;
    this.lastCell = undefined;
    const counts: EvaluationSummary['counts'] = [];
    for (const [flagKey, variants] of flags) {
      for (const [variantKey, reasons] of variants) {
        for (const [reason, { n: count }] of reasons) {
          for (let left = count; left > 0; left -= MAX_ENTRY_COUNT) counts.push({ flag_key: flagKey, variant_key: variantKey, reason, count: Math.min(left, MAX_ENTRY_COUNT) });
        }
      }
    }
    const endMs = Math.max(startMs, this.now());
    return { start_ms: startMs, end_ms: endMs, counts };
  }
}

export interface EvaluationSummariesOptions {
  baseUrl: string;
  /** Sent as `x-sdk-key`; never logged. */
  sdkKey: string;
  /** The key's environment; counts wait while this returns undefined. */
  environmentId: () => string | undefined;
  /** Time between summaries (default 60,000 ms). The timer never keeps the process alive. */
  intervalMs?: number;
  fetch?: typeof fetch;
  logger?: SdkLogger;
  now?: () => number;
  retry?: Partial<RetryPolicy>;
}

export interface EvaluationSummaryStats {
  /** Evaluations in summaries the server committed. */
  sentEvaluations: number;
  /** Evaluations not counted: past the key bound, or in a summary given up after its retries. */
  droppedEvaluations: number;
}

/**
 * Counts the client's evaluations and sends them to `POST /v1/environments/{env_id}/evaluation-summaries`
 * every `intervalMs` and on flush/close (docs/sdk.md "Evaluation counts"). Each summary keeps one
 * Idempotency-Key across its retries (the retry policy of event delivery), so a resend after a
 * lost answer counts once. One summary in flight at a time. count() never throws.
 */
export class EvaluationSummaries {
  readonly counter: EvaluationSummaryCounter;
  private readonly logger: SdkLogger;
  private readonly retry: RetryPolicy;
  private readonly timer: NodeJS.Timeout;
  private sending: Promise<void> = Promise.resolve();
  private closed = false;
  private sent = 0;
  private givenUp = 0;

  constructor(private readonly options: EvaluationSummariesOptions) {
    this.logger = options.logger ?? consoleLogger;
    this.retry = { ...DEFAULT_RETRY_POLICY, ...Object.fromEntries(Object.entries(options.retry ?? {}).filter(([, v]) => v !== undefined)) };
    this.counter = new EvaluationSummaryCounter(EVALUATION_SUMMARY_DEFAULTS.maxEntries, options.now ?? Date.now);
    const interval = options.intervalMs !== undefined && options.intervalMs >= 1 ? options.intervalMs : EVALUATION_SUMMARY_DEFAULTS.intervalMs;
    this.timer = setInterval(() => void this.flush(), interval);
    this.timer.unref();
  }

  count(flagKey: string, variantKey: string, reason: string): void {
    // A key the server would refuse (the whole summary with it) is not counted.
    if (!this.closed && typeof flagKey === 'string' && flagKey.length > 0 && flagKey.length <= 256) this.counter.count(flagKey, variantKey, reason);
  }

  /** Sends what is counted now (after the summary in flight). Never rejects. */
  flush(): Promise<void> {
    this.sending = this.sending.then(() => this.sendOnce()).catch(() => undefined);
    return this.sending;
  }

  /** Sends the last summary, then counts nothing more. Idempotent. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      clearInterval(this.timer);
    }
    await this.flush();
  }

  stats(): EvaluationSummaryStats {
    return { sentEvaluations: this.sent, droppedEvaluations: this.givenUp + this.counter.dropped };
  }

  private async sendOnce(): Promise<void> {
    const environmentId = this.options.environmentId();
    if (environmentId === undefined) return;
    const summary = this.counter.take();
    if (summary === undefined) return;
    const evaluations = summary.counts.reduce((sum, c) => sum + c.count, 0);
    const url = `${this.options.baseUrl.replace(/\/+$/, '')}/v1/environments/${encodeURIComponent(environmentId)}/evaluation-summaries`;
    const body = JSON.stringify(summary);
    const idempotencyKey = randomUUID();
    const fetchFn = this.options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    const now = this.options.now ?? Date.now;
    for (let attempt = 1; ; attempt++) {
      let status: number | undefined;
      let wait: number | undefined;
      try {
        const response = await fetchFn(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-sdk-key': this.options.sdkKey, 'idempotency-key': idempotencyKey },
          body,
          signal: AbortSignal.timeout(this.retry.requestTimeoutMs),
        });
        await response.text();
        status = response.status;
        const outcome = outcomeOfStatus(status);
        if (outcome === 'delivered') {
          this.sent += evaluations;
          return;
        }
        if (outcome === 'give_up') attempt = this.retry.maxAttempts;
        else wait = retryAfterMs(response.headers.get('retry-after'), this.retry, now());
      } catch {
        // A network error or timeout (never logged with the request: its headers hold the key).
      }
      if (attempt >= this.retry.maxAttempts) {
        this.givenUp += evaluations;
        this.logger.warn(`gave up sending an evaluation summary (${evaluations} evaluations) after ${attempt} attempt(s)`, { status });
        return;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait ?? backoffDelayMs(this.retry, attempt));
        // A background retry never keeps the process alive; close() waits for it.
        if (!this.closed) timer.unref();
      });
    }
  }
}
