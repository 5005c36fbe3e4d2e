import { consoleLogger, type SdkLogger } from '../logger.ts';
import { DeliveryQueue, SERVER_MAX_ENTRIES } from './delivery-queue.ts';
import { ExposureDedup } from './exposure-dedup.ts';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-policy.ts';

/** Defaults of EventDelivery (docs/sdk.md "Event delivery"). */
export const EVENT_DELIVERY_DEFAULTS = Object.freeze({
  flushIntervalMs: 5_000,
  maxBatchSize: 500,
  maxQueueSize: 10_000,
  exposureDedupEntries: 10_000,
  exposureDedupTtlMs: 60 * 60 * 1000,
});

export interface EventDeliveryOptions {
  /** REST base URL of the server, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** Sent as `x-sdk-key`; never logged. */
  sdkKey: string;
  /** The environment of the key; entries wait in the queue while this returns undefined. */
  environmentId: () => string | undefined;
  /** Time between background flushes (default 5,000 ms). The timer never keeps the process alive. */
  flushIntervalMs?: number;
  /** Entries per request (default 500, at most 10,000); a full batch is sent at once. */
  maxBatchSize?: number;
  /** Entries held per kind, in flight included (default 10,000); beyond it new ones are dropped. */
  maxQueueSize?: number;
  fetch?: typeof fetch;
  logger?: SdkLogger;
  now?: () => number;
  /** Retry tuning; see RetryPolicy for the defaults. */
  retry?: Partial<RetryPolicy>;
  /** Exposure dedup bounds (default 10,000 entries, each remembered for 1 h). */
  exposureDedup?: { maxEntries?: number; ttlMs?: number };
}

/** A metric event as the SDK hands it over (the fields of `POST .../events/batch`). */
export interface TrackedEvent {
  metric_key: string;
  context_type: string;
  context_key: string;
  value?: number | boolean;
  timestamp_ms: number;
}

/** Who saw which variant (the fields of `POST .../exposures`). */
export interface RecordedExposure {
  flag_key: string;
  variant_key: string;
  context_type: string;
  context_key: string;
  timestamp_ms: number;
  /** The rule whose percentage allocation served the variant; '' when none did (exposureRuleOf). */
  rule_id?: string;
}

export interface EventDeliveryStats {
  /** Waiting or in flight. */
  queuedEvents: number;
  queuedExposures: number;
  /** Not stored and never will be: queue full, closed, given up after retries, or rejected by the server. */
  droppedEvents: number;
  droppedExposures: number;
  /** Stored by the server (its accepted_count). */
  sentEvents: number;
  sentExposures: number;
  /** Requests that failed (each retry counts). */
  failedAttempts: number;
}

const positiveInt = (value: number | undefined, fallback: number): number =>
  value !== undefined && Number.isFinite(value) && value >= 1 ? Math.floor(value) : fallback;

/**
 * Delivers metric events to `POST /v1/environments/{env_id}/events/batch` and exposures to
 * `POST /v1/environments/{env_id}/exposures`: batched (by size, by interval, on flush/close),
 * each batch under its own Idempotency-Key kept across retries, retried with capped exponential
 * backoff on 5xx, 408, 429 and network errors, in bounded queues. Exposures are deduplicated per
 * (flag, context type, context key, variant). track and recordExposure never throw.
 * Guarantees and numbers: docs/sdk.md "Event delivery".
 */
export class EventDelivery {
  private readonly events: DeliveryQueue;
  private readonly exposures: DeliveryQueue;
  private readonly dedup: ExposureDedup;
  private readonly logger: SdkLogger;
  private readonly timer: NodeJS.Timeout;
  private closing: Promise<void> | undefined;
  private warnedInvalid = false;

  constructor(options: EventDeliveryOptions) {
    this.logger = options.logger ?? consoleLogger;
    const now = options.now ?? Date.now;
    const retry: RetryPolicy = { ...DEFAULT_RETRY_POLICY, ...definedOnly(options.retry ?? {}) };
    retry.maxAttempts = positiveInt(retry.maxAttempts, DEFAULT_RETRY_POLICY.maxAttempts);
    const shared = {
      baseUrl: options.baseUrl,
      sdkKey: options.sdkKey,
      environmentId: options.environmentId,
      maxBatchSize: Math.min(SERVER_MAX_ENTRIES, positiveInt(options.maxBatchSize, EVENT_DELIVERY_DEFAULTS.maxBatchSize)),
      maxQueueSize: positiveInt(options.maxQueueSize, EVENT_DELIVERY_DEFAULTS.maxQueueSize),
      retry,
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      logger: this.logger,
      now,
    } as const;
    this.dedup = new ExposureDedup(
      positiveInt(options.exposureDedup?.maxEntries, EVENT_DELIVERY_DEFAULTS.exposureDedupEntries),
      positiveInt(options.exposureDedup?.ttlMs, EVENT_DELIVERY_DEFAULTS.exposureDedupTtlMs),
      now,
    );
    this.events = new DeliveryQueue({ ...shared, route: 'events/batch', field: 'events', noun: 'events' });
    this.exposures = new DeliveryQueue({
      ...shared,
      route: 'exposures',
      field: 'exposures',
      noun: 'exposures',
      // An exposure that was not delivered may be recorded again by the next evaluation.
      onDropped: (tags) => tags.forEach((tag) => this.dedup.forget(tag)),
    });
    const interval = positiveInt(options.flushIntervalMs, EVENT_DELIVERY_DEFAULTS.flushIntervalMs);
    this.timer = setInterval(() => void this.flush(), interval);
    this.timer.unref();
  }

  /** Queues one metric event. Never throws; an event without a metric_key is dropped (the server would refuse its whole batch). */
  track(event: TrackedEvent): void {
    try {
      if (!isNonEmptyString(event?.metric_key)) {
        this.invalid('an event without a metric_key');
        this.events.dropped++;
        return;
      }
      const entry: Record<string, unknown> = {
        metric_key: event.metric_key,
        context_type: event.context_type,
        context_key: event.context_key,
        timestamp_ms: event.timestamp_ms,
      };
      if (event.value !== undefined) entry.value = event.value;
      this.events.enqueue(entry);
    } catch {
      this.events.dropped++;
    }
  }

  /** Queues one exposure unless the same one was recorded recently. Never throws. */
  recordExposure(exposure: RecordedExposure): void {
    try {
      if (this.closing !== undefined) {
        this.exposures.dropped++;
        return;
      }
      if (!isNonEmptyString(exposure?.flag_key) || !isNonEmptyString(exposure.variant_key)) {
        this.invalid('an exposure without a flag_key or variant_key');
        this.exposures.dropped++;
        return;
      }
      const key = ExposureDedup.keyOf(exposure.flag_key, String(exposure.context_type), String(exposure.context_key), exposure.variant_key, exposure.rule_id);
      if (this.dedup.seen(key)) return;
      const entry = {
        flag_key: exposure.flag_key,
        variant_key: exposure.variant_key,
        context_type: exposure.context_type,
        context_key: exposure.context_key,
        timestamp_ms: exposure.timestamp_ms,
        ...(exposure.rule_id === undefined ? {} : { rule_id: exposure.rule_id }),
      };
      if (!this.exposures.enqueue(entry, key)) this.dedup.forget(key);
    } catch {
      this.exposures.dropped++;
    }
  }

  /**
   * Resolves when every event and exposure queued before the call was delivered or given up
   * (retries included). Entries waiting for an unknown environment stay queued. Never rejects.
   */
  async flush(): Promise<void> {
    await Promise.all([this.events.flush(), this.exposures.flush()]).catch(() => undefined);
  }

  /** Flushes, then stops: later track/recordExposure calls are dropped (counted). Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.timer);
      this.events.stopAccepting();
      this.exposures.stopAccepting();
      await this.flush();
      this.events.discardUndelivered();
      this.exposures.discardUndelivered();
      this.dedup.clear();
    })();
    return this.closing;
  }

  stats(): EventDeliveryStats {
    return {
      queuedEvents: this.events.queued,
      queuedExposures: this.exposures.queued,
      droppedEvents: this.events.dropped,
      droppedExposures: this.exposures.dropped,
      sentEvents: this.events.sent,
      sentExposures: this.exposures.sent,
      failedAttempts: this.events.failedAttempts + this.exposures.failedAttempts,
    };
  }

  private invalid(what: string): void {
    if (this.warnedInvalid) return;
    this.warnedInvalid = true;
    this.logger.warn(`dropped ${what} (logged once)`);
  }
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value !== '';
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as Partial<T>;
}
