import type { FetchLike, TimersLike } from './platform.ts';

/** Limits of the client routes (docs/client-side.md "5. Exposures and events" and "6. Limits"). */
export const MAX_ENTRIES_PER_REQUEST = 100;
/** Client-route bodies are at most 32 KiB; a little room is kept. */
export const MAX_BODY_BYTES = 30 * 1024;

/** Where a rejected or failed send is reported (a logger, your monitoring). Never throws into the page. */
export type ErrorListener = (error: SendError) => void;

export interface SendError {
  /** `exposures` or `events`. */
  route: string;
  /** The HTTP status, or 0 when the request did not complete. */
  status: number;
  message: string;
  /** Entries given up on. */
  dropped: number;
}

/** The signed context token to send as `Authorization: Bearer`, when the client key requires one. */
export type ContextTokenSource = () => string | undefined | null | Promise<string | undefined | null>;

export interface BatchSenderOptions {
  /** Full URL of the route. */
  url: string;
  route: string;
  /** The JSON body for a chunk of entries, e.g. `{exposures: entries}`. */
  body: (entries: unknown[]) => unknown;
  clientKey: string;
  contextToken?: ContextTokenSource | undefined;
  fetch: FetchLike;
  timers: TimersLike;
  flushIntervalMs: number;
  /** Entries kept while the server is unreachable or limiting; the oldest go first beyond it. */
  maxQueued: number;
  now: () => number;
  onError?: ErrorListener | undefined;
}

/** UTF-8 length of a string without TextEncoder (not in the ES library's types). */
function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/**
 * Splits entries into request bodies the client routes accept: at most 100 entries and 30 KiB
 * each. An entry too large to send alone is left out (the route would refuse its request).
 */
export function chunkEntries(entries: readonly unknown[], body: (entries: unknown[]) => unknown): { chunks: unknown[][]; oversized: number } {
  const chunks: unknown[][] = [];
  const envelope = utf8Length(JSON.stringify(body([])));
  let current: unknown[] = [];
  let size = envelope;
  let oversized = 0;
  for (const entry of entries) {
    const entrySize = utf8Length(JSON.stringify(entry)) + 1; // the comma
    if (envelope + entrySize > MAX_BODY_BYTES) {
      oversized++;
      continue;
    }
    if (current.length === MAX_ENTRIES_PER_REQUEST || size + entrySize > MAX_BODY_BYTES) {
      chunks.push(current);
      current = [];
      size = envelope;
    }
    current.push(entry);
    size += entrySize;
  }
  if (current.length > 0) chunks.push(current);
  return { chunks, oversized };
}

/** `Retry-After` in milliseconds: seconds or an HTTP date; 5 s when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number {
  if (header !== null && /^\s*\d+\s*$/.test(header)) return Number(header) * 1000;
  const date = header === null ? NaN : Date.parse(header);
  return Number.isFinite(date) ? Math.max(0, date - now) : 5000;
}

/**
 * A queue of entries for one client route, sent in batches: on a timer, when a batch is full,
 * and (with `keepalive`) when the page goes away. A 429 pauses sending for `Retry-After` and keeps
 * the entries; a network failure or 5xx keeps them for the next flush; any other refusal (400,
 * 401, 403, 413) drops them and tells `onError`, since sending them again cannot succeed.
 */
export class BatchSender {
  private queue: unknown[] = [];
  private timer: unknown;
  private pausedUntil = 0;
  private sending: Promise<void> | undefined;
  private closed = false;

  constructor(private readonly options: BatchSenderOptions) {}

  get pending(): number {
    return this.queue.length;
  }

  add(entry: unknown): void {
    if (this.closed) return;
    this.queue.push(entry);
    if (this.queue.length > this.options.maxQueued) {
      const dropped = this.queue.length - this.options.maxQueued;
      this.queue.splice(0, dropped);
      this.report(0, `more than ${this.options.maxQueued} entries waiting; the oldest were dropped`, dropped);
    }
    // A full batch goes at once (one flush per batch: a flush takes everything queued by then).
    if (this.queue.length % MAX_ENTRIES_PER_REQUEST === 0) void this.flush();
    else this.schedule();
  }

  /**
   * Sends everything queued (unless the server asked to wait). With `keepalive` (the page is going
   * away) the requests outlive the page and nothing is kept for later.
   */
  flush(options: { keepalive?: boolean } = {}): Promise<void> {
    if (options.keepalive) return this.send(true);
    // One flush at a time: a timer flush during a running one waits for it, then sends what is left.
    const run = (this.sending ?? Promise.resolve()).then(() => this.send(false));
    const tracked: Promise<void> = run.then(
      () => this.settled(tracked),
      () => this.settled(tracked),
    );
    this.sending = tracked;
    return run;
  }

  private settled(which: Promise<void>): void {
    if (this.sending === which) this.sending = undefined;
  }

  /** Stops the timer; what is queued is sent once more, with keepalive. */
  close(): Promise<void> {
    const last = this.flush({ keepalive: true });
    this.closed = true;
    this.unschedule();
    return last;
  }

  private schedule(): void {
    if (this.timer !== undefined || this.closed) return;
    const delay = Math.max(this.options.flushIntervalMs, this.pausedUntil - this.options.now());
    this.timer = this.options.timers.setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, delay);
  }

  private unschedule(): void {
    if (this.timer === undefined) return;
    this.options.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private async headers(): Promise<Record<string, string>> {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'x-api-key': this.options.clientKey };
    const token = await this.options.contextToken?.();
    if (typeof token === 'string' && token !== '') headers.authorization = `Bearer ${token}`;
    return headers;
  }

  private async send(keepalive: boolean): Promise<void> {
    if (this.queue.length === 0) return;
    if (!keepalive && this.options.now() < this.pausedUntil) {
      this.schedule();
      return;
    }
    this.unschedule();
    const entries = this.queue;
    this.queue = [];
    const { chunks, oversized } = chunkEntries(entries, this.options.body);
    if (oversized > 0) this.report(0, `${oversized} entries larger than ${MAX_BODY_BYTES} bytes were dropped`, oversized);
    let headers: Record<string, string>;
    try {
      headers = await this.headers();
    } catch (error) {
      this.keep(chunks.flat(), keepalive);
      this.report(0, `the context token could not be had: ${String(error)}`, keepalive ? entries.length : 0);
      return;
    }
    for (let i = 0; i < chunks.length; i++) {
      const chunk = chunks[i]!;
      let response;
      try {
        response = await this.options.fetch(this.options.url, { method: 'POST', headers, body: JSON.stringify(this.options.body(chunk)), ...(keepalive ? { keepalive: true } : {}) });
      } catch (error) {
        this.keep(chunks.slice(i).flat(), keepalive);
        this.report(0, `the request failed: ${String(error)}`, keepalive ? chunks.slice(i).flat().length : 0);
        return;
      }
      if (response.status >= 200 && response.status < 300) continue;
      if (response.status === 429) {
        this.pausedUntil = this.options.now() + retryAfterMs(response.headers.get('retry-after'), this.options.now());
        this.keep(chunks.slice(i).flat(), keepalive);
        return;
      }
      if (response.status >= 500) {
        this.keep(chunks.slice(i).flat(), keepalive);
        this.report(response.status, `the server answered ${response.status}`, keepalive ? chunks.slice(i).flat().length : 0);
        return;
      }
      this.report(response.status, `the server refused ${chunk.length} entries with ${response.status}`, chunk.length);
    }
  }

  /** Puts unsent entries back in front (not when the page is going away: there is no later). */
  private keep(entries: unknown[], keepalive: boolean): void {
    if (keepalive || entries.length === 0) return;
    this.queue = [...entries, ...this.queue].slice(-this.options.maxQueued);
    this.schedule();
  }

  private report(status: number, message: string, dropped: number): void {
    try {
      this.options.onError?.({ route: this.options.route, status, message, dropped });
    } catch {
      // A listener's own failure never reaches the page.
    }
  }
}
