import type { SdkLogger } from '../logger.ts';
import { MembershipCache } from './membership-cache.ts';

/** The most queries one list-check batch request carries (the server's limit). */
export const MAX_LIST_CHECKS_PER_REQUEST = 1000;

export interface MembershipQuery {
  segment_key: string;
  context_key: string;
  context_type: string;
}

export interface ListCheckerOptions {
  baseUrl: string;
  sdkKey: string;
  environmentId: () => string | undefined;
  cache: MembershipCache;
  fetch: typeof fetch;
  logger: SdkLogger;
  requestTimeoutMs?: number;
  now?: () => number;
}

/** After a failed request, lookups answer "unknown" without asking for this long (no request storm while the server is down). */
const FAILURE_PAUSE_MS = 1_000;

/**
 * Asks the server about list-segment membership: POST
 * /v1/environments/{env}/segments/list-check/batch with the SDK key, answers cached in the
 * MembershipCache. Lookups requested in the same tick are coalesced into one request (split at
 * 1,000 queries); a lookup already on its way is shared, not asked twice.
 */
export class ListChecker {
  private pending = new Map<string, { query: MembershipQuery; waiters: Array<(member: boolean | undefined) => void> }>();
  private inFlight = new Map<string, Promise<boolean | undefined>>();
  private scheduled = false;
  /** Cache generation: answers to a request sent before a segment changed are not cached. */
  private generation = 0;
  private closed = false;
  private pausedUntil = 0;
  /** Requests sent so far (tests check the batching). */
  requests = 0;

  constructor(private readonly options: ListCheckerOptions) {}

  /** The answer, from the cache or the server; undefined when the server could not tell. Never rejects. */
  check(query: MembershipQuery): Promise<boolean | undefined> {
    const cached = this.options.cache.get(query.segment_key, query.context_key);
    if (cached !== undefined) return Promise.resolve(cached);
    if (this.closed || this.now() < this.pausedUntil) return Promise.resolve(undefined);
    const key = MembershipCache.keyOf(query.segment_key, query.context_key);
    const flying = this.inFlight.get(key);
    if (flying) return flying;
    const promise = new Promise<boolean | undefined>((resolve) => {
      const entry = this.pending.get(key);
      if (entry) entry.waiters.push(resolve);
      else this.pending.set(key, { query, waiters: [resolve] });
    });
    this.inFlight.set(key, promise);
    void promise.then(() => {
      if (this.inFlight.get(key) === promise) this.inFlight.delete(key);
    });
    this.schedule();
    return promise;
  }

  /** Fire and forget: fetch the answer into the cache (sync evaluation met an unknown membership). */
  prefetch(query: MembershipQuery): void {
    void this.check(query);
  }

  /** Segments changed: cached answers and answers on their way are no longer to be trusted. */
  invalidate(segmentKeys: Iterable<string> | 'all'): void {
    this.generation++;
    if (segmentKeys === 'all') this.options.cache.clear();
    else this.options.cache.dropSegments(segmentKeys);
    // Requests on their way still answer their callers, but no longer fill the cache.
    this.inFlight.clear();
  }

  close(): void {
    this.closed = true;
    for (const { waiters } of this.pending.values()) for (const resolve of waiters) resolve(undefined);
    this.pending.clear();
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // setImmediate, not a microtask: everything an evaluation pass asks in this tick joins one request.
    setImmediate(() => {
      this.scheduled = false;
      void this.send();
    });
  }

  private async send(): Promise<void> {
    const batch = [...this.pending.values()];
    this.pending.clear();
    for (let start = 0; start < batch.length; start += MAX_LIST_CHECKS_PER_REQUEST) {
      void this.sendChunk(batch.slice(start, start + MAX_LIST_CHECKS_PER_REQUEST));
    }
  }

  private async sendChunk(chunk: Array<{ query: MembershipQuery; waiters: Array<(member: boolean | undefined) => void> }>): Promise<void> {
    const generation = this.generation;
    let answers: Array<boolean | undefined> = chunk.map(() => undefined);
    const environmentId = this.options.environmentId();
    if (!this.closed && environmentId) {
      try {
        this.requests++;
        const response = await this.options.fetch(`${this.options.baseUrl}/v1/environments/${encodeURIComponent(environmentId)}/segments/list-check/batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-sdk-key': this.options.sdkKey },
          body: JSON.stringify(chunk.map((entry) => entry.query)),
          signal: AbortSignal.timeout(this.options.requestTimeoutMs ?? 10_000),
        });
        if (response.ok) {
          const body = (await response.json()) as Array<{ is_member?: unknown }>;
          if (Array.isArray(body) && body.length === chunk.length) answers = body.map((answer) => (typeof answer?.is_member === 'boolean' ? answer.is_member : undefined));
          else this.options.logger.warn('list-check answer has the wrong shape', { expected: chunk.length });
        } else {
          // 404: a segment unknown to the server (deleted meanwhile); others: try again next time.
          this.options.logger.warn('list-check failed', { status: response.status });
          if (response.status !== 404) this.pausedUntil = this.now() + FAILURE_PAUSE_MS;
          await response.body?.cancel().catch(() => {});
        }
      } catch (error) {
        this.options.logger.warn('list-check request failed', { error: error instanceof Error ? error.message : String(error) });
        this.pausedUntil = this.now() + FAILURE_PAUSE_MS;
      }
    }
    chunk.forEach((entry, i) => {
      const member = answers[i];
      if (member !== undefined && generation === this.generation && !this.closed) this.options.cache.set(entry.query.segment_key, entry.query.context_key, member);
      for (const resolve of entry.waiters) resolve(member);
    });
  }
}
