import type { EventDefinition, Exposure, MetricEvent, MetricValueType } from '../model/entities.ts';
import type { DrainedCounts } from '../insights/evaluation-counter.ts';
import type { EnvironmentScope } from './scopes.ts';

export interface EventDefinitionRepository {
  /** @throws ALREADY_EXISTS. */
  create(scope: EnvironmentScope, input: { key: string; description: string; valueType: MetricValueType; clientAllowed?: boolean }): Promise<EventDefinition>;
  get(scope: EnvironmentScope, key: string): Promise<EventDefinition | null>;
  list(scope: EnvironmentScope): Promise<EventDefinition[]>;
  /** @throws NOT_FOUND. */
  update(scope: EnvironmentScope, key: string, patch: { description?: string; valueType?: MetricValueType; clientAllowed?: boolean }): Promise<EventDefinition>;
  /** @throws NOT_FOUND. */
  delete(scope: EnvironmentScope, key: string): Promise<void>;
}

/** Append-only metric events. insert resolves only once the rows are committed. */
export interface EventRepository {
  insert(scope: EnvironmentScope, events: Array<Omit<MetricEvent, 'environmentId'>>): Promise<number>;
  count(scope: EnvironmentScope, filter?: { metricKey?: string }): Promise<number>;
  /** Newest receipt time of any event of the environment, 0 when none (for results staleness). */
  lastReceivedAtMs(scope: EnvironmentScope): Promise<number>;
}

/** Append-only exposures (who saw which variant). */
export interface ExposureRepository {
  insert(scope: EnvironmentScope, exposures: Array<Omit<Exposure, 'environmentId'>>): Promise<number>;
  count(scope: EnvironmentScope, filter?: { flagKey?: string }): Promise<number>;
  lastReceivedAtMs(scope: EnvironmentScope): Promise<number>;
}

/** Remembers answers to batch requests that carried an Idempotency-Key (24 h). */
export interface IdempotencyRepository {
  /** The stored answer, or null when the key is new or expired. */
  get(scope: EnvironmentScope, key: string, nowMs: number): Promise<unknown | null>;
  /**
   * Stores the answer unless an unexpired one exists (`expiresAtMs <= nowMs` counts as expired and
   * is replaced); returns the answer that is stored now. Race-safe: concurrent callers with the same
   * key all get the one answer that won. `nowMs` defaults to the wall clock; it is a parameter so
   * that the expiry rule uses the same clock as `get`.
   */
  putIfAbsent(scope: EnvironmentScope, key: string, answer: unknown, expiresAtMs: number, nowMs?: number): Promise<unknown>;
  /**
   * Stores `rows` and the answer in ONE transaction unless an unexpired answer exists for the key
   * (then nothing at all is written). Returns the answer stored now and whether this call stored
   * it. Race-safe across instances: of concurrent callers with the same key exactly one stores its
   * rows; the others wait for it and get its answer. NOT_FOUND (nothing written) when the
   * environment is not in the scope.
   */
  storeOnce(
    scope: EnvironmentScope,
    key: string,
    rows: IdempotentRows,
    answer: unknown,
    expiresAtMs: number,
    nowMs?: number,
  ): Promise<{ answer: unknown; stored: boolean }>;
  /**
   * Adds a gateway's evaluation count report (docs/insights.md "Exactness") at most once per `key`
   * (its report id): in ONE transaction, the key is claimed in every environment the report names
   * (each resolved in the org and project it is named with) unless an unexpired claim exists there,
   * and only the counts and last evaluations of the environments claimed now are added
   * (InsightsRepository.addCounts' rules otherwise). A report sent again — a retry whose first
   * answer was lost, even a concurrent one — adds nothing. Returns how many count rows were written.
   */
  storeCountsOnce(key: string, report: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>, expiresAtMs: number, nowMs?: number): Promise<number>;
  /**
   * Deletes at most `limit` expired answers (`expiresAtMs <= nowMs`), earliest expiry first, across
   * every environment (maintenance, not a tenant call); returns how many. Live answers stay.
   */
  pruneExpired(nowMs: number, limit: number): Promise<number>;
}

/** What a request with an Idempotency-Key stores together with its answer. */
export interface IdempotentRows {
  events?: Array<Omit<MetricEvent, 'environmentId'>>;
  exposures?: Array<Omit<Exposure, 'environmentId'>>;
  /** An SDK's evaluation summary (docs/insights.md "SDK summaries"): added to the environment's hourly counts. */
  evaluationCounts?: SummaryCounts;
}

/** One SDK summary's counts, all in one environment and one UTC hour (the scope's). */
export interface SummaryCounts {
  /** The UTC hour the counts are added to (epoch ms, a multiple of 3,600,000). */
  hourMs: number;
  /** The flags' last evaluation time this summary moves forward to (epoch ms). */
  atMs: number;
  counts: Array<{ flagKey: string; variantKey: string; reason: string; count: number }>;
  /**
   * A client key's summary: only flags a client key can evaluate (client-visible, not archived;
   * docs/client-side.md "What a client sees") are counted, the others dropped like unknown flags.
   */
  clientVisibleOnly?: boolean;
}
