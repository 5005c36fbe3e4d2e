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
  readonly variant: string;
  readonly reason: string;
  n: number;
}

/** A flag's counts: its first few (variant, reason) keys in a short array, the rest in nested Maps. */
interface FlagCells {
  cells: Cell[];
  more: Map<string, Map<string, Cell>> | undefined;
}

/** Keys per flag looked up by scanning (a flag has a handful of variants and reasons: faster than hashing). */
const SCANNED_CELLS = 8;

/** The server's bound on one entry's count: a larger one is split. */
const MAX_ENTRY_COUNT = 1_000_000_000;

/**
 * Evaluations counted per (flag, variant, reason) since the last take(). Built for the evaluation
 * path (issue 40: at most 3% of an evaluation; bench/README.md "sdk"): the flag counted last is
 * remembered (an application evaluating one flag in a loop skips the Map), each flag's first
 * eight (variant, reason) keys are scanned with identity compares (variant keys come from the
 * definitions and reasons are constants, so they are the same strings each time), and the count
 * is incremented in place: no key string built, nothing allocated for a key already held. At most
 * `maxEntries` distinct keys (the server's bound on one summary); an evaluation needing a new key
 * beyond that is counted in `dropped` only.
 */
export class EvaluationSummaryCounter {
  private flags = new Map<string, FlagCells>();
  private entries = 0;
  private startMs = 0;
  private lastFlag: string | undefined;
  private lastCells: FlagCells | undefined;
  dropped = 0;

  constructor(
    private readonly maxEntries: number = EVALUATION_SUMMARY_DEFAULTS.maxEntries,
    private readonly now: () => number = Date.now,
  ) {}

  count(flagKey: string, variantKey: string, reason: string): void {
    let flag = this.lastCells;
    // The flag counted last: no Map lookup, and nothing stored (no write barrier on the hot path).
    // (lastFlag is undefined exactly when lastCells is: an undefined flagKey from JavaScript misses.)
    if (flagKey !== this.lastFlag || flag === undefined) {
      flag = this.flags.get(flagKey);
      if (flag === undefined) {
        // A key the server would refuse (the whole summary with it) is not counted.
        if (typeof flagKey !== 'string' || flagKey.length === 0 || flagKey.length > 256) return;
        if (this.entries >= this.maxEntries) {
          this.dropped++;
          return;
        }
        flag = { cells: [], more: undefined };
        this.flags.set(flagKey, flag);
      }
      this.lastFlag = flagKey;
      this.lastCells = flag;
    }
    const cells = flag.cells;
    for (let i = 0; i < cells.length; i++) {
      const cell = cells[i]!;
      if (cell.variant === variantKey && cell.reason === reason) {
        cell.n++;
        return;
      }
    }
    const held = flag.more?.get(variantKey)?.get(reason);
    if (held !== undefined) {
      held.n++;
      return;
    }
    if (this.entries >= this.maxEntries) {
      this.dropped++;
      return;
    }
    if (this.entries === 0) this.startMs = this.now();
    this.entries++;
    const cell: Cell = { variant: variantKey, reason, n: 1 };
    if (cells.length < SCANNED_CELLS) {
      cells.push(cell);
      return;
    }
    flag.more ??= new Map();
    let reasons = flag.more.get(variantKey);
    if (reasons === undefined) {
      reasons = new Map();
      flag.more.set(variantKey, reasons);
    }
    reasons.set(reason, cell);
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
    this.lastFlag = undefined;
    this.lastCells = undefined;
    const counts: EvaluationSummary['counts'] = [];
    const add = (flagKey: string, cell: Cell) => {
      for (let left = cell.n; left > 0; left -= MAX_ENTRY_COUNT) counts.push({ flag_key: flagKey, variant_key: cell.variant, reason: cell.reason, count: Math.min(left, MAX_ENTRY_COUNT) });
    };
    for (const [flagKey, flag] of flags) {
      for (const cell of flag.cells) add(flagKey, cell);
      if (flag.more !== undefined) for (const reasons of flag.more.values()) for (const cell of reasons.values()) add(flagKey, cell);
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

  /** Counts one evaluation (the client calls `counter.count` itself, one call less on its path). */
  count(flagKey: string, variantKey: string, reason: string): void {
    this.counter.count(flagKey, variantKey, reason);
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
